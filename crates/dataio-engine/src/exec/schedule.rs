//! The epoch order of one rank: which record comes at each position.
//!
//! Global order: position `g` of the epoch holds record `perm(g)` (keyed by
//! seed and epoch) or `g` without a seed. Ranks interleave: rank `r` of `W`
//! takes global positions `r, r + W, r + 2W, ...`, so shards are disjoint and
//! together cover the epoch. With `pad`, the global order is extended to a
//! multiple of `W` by wrapping around to its start, so every rank gets
//! `ceil(n / W)` records. Nothing here holds per-record state.

use crate::error::{Error, Result};
use crate::rng::Permutation;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub id: u64,
    pub of: u64,
    pub pad: bool,
}

impl Default for Shard {
    fn default() -> Self {
        Shard { id: 0, of: 1, pad: false }
    }
}

impl Shard {
    pub fn check(&self) -> Result<()> {
        if self.of == 0 {
            return Err(Error::invalid("shard: 'of' (the world size) must be >= 1"));
        }
        if self.id >= self.of {
            return Err(Error::invalid(format!(
                "shard: id {} is out of range for a world of {} (ids are 0..{})",
                self.id,
                self.of,
                self.of - 1
            )));
        }
        Ok(())
    }

    /// Records this rank gets in an epoch of `n`.
    pub fn count(&self, n: u64) -> u64 {
        if self.pad {
            n.div_ceil(self.of)
        } else if self.id < n {
            (n - self.id).div_ceil(self.of)
        } else {
            0
        }
    }
}

#[derive(Debug, Clone)]
pub struct Schedule {
    n: u64,
    perm: Option<Permutation>,
    shard: Shard,
    /// Global positions before this offset were consumed before an elastic
    /// resume; ranks interleave over what remains.
    offset: u64,
    count: u64,
    next: u64,
}

impl Schedule {
    /// The order of a sized source of `n` records, starting at this rank's
    /// position `start` (resume).
    pub fn sized(n: u64, seed: Option<u64>, epoch: u64, shard: Shard, start: u64) -> Result<Self> {
        Self::resumed(n, seed, epoch, shard, 0, start)
    }

    /// Like [`Schedule::sized`], after `offset` global positions were
    /// consumed, possibly by a different number of ranks (elastic resume).
    pub fn resumed(n: u64, seed: Option<u64>, epoch: u64, shard: Shard, offset: u64, start: u64) -> Result<Self> {
        shard.check()?;
        if offset > n {
            return Err(Error::invalid(format!("resume offset {offset} is past the end of the epoch ({n} records)")));
        }
        let count = shard.count(n - offset);
        if start > count {
            return Err(Error::invalid(format!(
                "resume position {start} is past the end of this rank's epoch ({count} records)"
            )));
        }
        let perm = seed.filter(|_| n > 0).map(|s| Permutation::new(n, s, epoch));
        Ok(Schedule { n, perm, shard, offset, count, next: start })
    }

    /// The record index at this rank's position `pos`.
    pub fn index_at(&self, pos: u64) -> u64 {
        let mut g = self.offset + self.shard.id + pos * self.shard.of;
        if g >= self.n {
            g %= self.n;
        }
        match &self.perm {
            Some(p) => p.apply(g),
            None => g,
        }
    }

    /// The next `k` (position, record index) pairs.
    pub fn take(&mut self, k: u64) -> Vec<(u64, u64)> {
        let end = (self.next + k).min(self.count);
        let out = (self.next..end).map(|p| (p, self.index_at(p))).collect();
        self.next = end;
        out
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn position(&self) -> u64 {
        self.next
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn shards_are_disjoint_and_cover_the_epoch() {
        for (n, w) in [(10u64, 3u64), (12, 4), (5, 8), (1000, 7)] {
            let mut all = BTreeSet::new();
            let mut total = 0;
            for r in 0..w {
                let mut s = Schedule::sized(n, Some(9), 2, Shard { id: r, of: w, pad: false }, 0).unwrap();
                let got = s.take(u64::MAX);
                total += got.len();
                all.extend(got.into_iter().map(|(_, i)| i));
            }
            assert_eq!(total as u64, n);
            assert_eq!(all, (0..n).collect());
        }
    }

    #[test]
    fn padding_gives_every_rank_the_same_count() {
        let counts: Vec<u64> = (0..4)
            .map(|r| Schedule::sized(10, None, 0, Shard { id: r, of: 4, pad: true }, 0).unwrap().count())
            .collect();
        assert_eq!(counts, vec![3, 3, 3, 3]);
        let counts: Vec<u64> = (0..4).map(|r| Shard { id: r, of: 4, pad: false }.count(10)).collect();
        assert_eq!(counts, vec![3, 3, 2, 2]);
    }

    #[test]
    fn resume_continues_the_same_order() {
        let full: Vec<_> = Schedule::sized(50, Some(1), 0, Shard::default(), 0).unwrap().take(50);
        let tail: Vec<_> = Schedule::sized(50, Some(1), 0, Shard::default(), 20).unwrap().take(50);
        assert_eq!(&full[20..], &tail[..]);
    }

    #[test]
    fn elastic_resume_covers_the_rest_exactly_once() {
        // 4 ranks consume 3 records each, then the job resumes on 3 ranks.
        let n = 50;
        let mut seen: Vec<u64> = (0..4u64)
            .flat_map(|r| Schedule::sized(n, Some(7), 1, Shard { id: r, of: 4, pad: false }, 0).unwrap().take(3))
            .map(|p| p.1)
            .collect();
        for r in 0..3 {
            let mut s = Schedule::resumed(n, Some(7), 1, Shard { id: r, of: 3, pad: false }, 12, 0).unwrap();
            seen.extend(s.take(u64::MAX).into_iter().map(|p| p.1));
        }
        seen.sort();
        assert_eq!(seen, (0..n).collect::<Vec<_>>());
    }

    #[test]
    fn bad_shards_are_refused() {
        assert!(Shard { id: 4, of: 4, pad: false }.check().unwrap_err().to_string().contains("out of range"));
        assert!(Shard { id: 0, of: 0, pad: false }.check().is_err());
    }
}
