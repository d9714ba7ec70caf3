//! The epoch order of one rank: which record comes at each position.
//!
//! Global order: position `g` of the epoch holds record `perm(g)` (keyed by
//! seed and epoch) or `g` without a seed. Ranks interleave: rank `r` of `W`
//! takes global positions `r, r + W, r + 2W, ...`, so shards are disjoint and
//! together cover the epoch. With `pad`, the global order is extended to a
//! multiple of `W` by wrapping around to its start, so every rank gets
//! `ceil(n / W)` records. Nothing here holds per-record state.
//!
//! A source stored in shards (tar, TFRecord, parquet row groups) declares a
//! [`Layout`]: its per-shard sample counts and a shuffle window. Its global
//! order is then two-level ([`ShardOrder`]): a keyed permutation of the
//! shards, concatenated, cut into windows of `window` samples, and a keyed
//! permutation inside each window. A shard is read front to back within at
//! most two consecutive windows, yet every batch mixes the shards of its
//! window. It is still a pure function of (seed, epoch, position), so ranks,
//! resume and elastic resume work on it unchanged; what it holds grows with
//! the number of shards, not of samples.

use super::hosts::{HostOrder, Hosts};
use super::layout::Layout;
use super::mix::{MixOrder, MixSpec};
use super::rank::Rank;
use super::shard_order::ShardOrder;
use crate::base::error::{Error, Result};
use crate::base::rng::Permutation;

#[derive(Debug, Clone)]
enum Order {
    Identity,
    Flat(Permutation),
    Sharded(ShardOrder),
    Mixed(MixOrder),
    /// A sharded source partitioned by host: the rank's own order.
    Hosted(HostOrder),
}

#[derive(Debug, Clone)]
pub struct Schedule {
    n: u64,
    perm: Order,
    shard: Rank,
    /// Global positions before this offset were consumed before an elastic
    /// resume; ranks interleave over what remains.
    offset: u64,
    count: u64,
    next: u64,
}

impl Schedule {
    /// The order of a sized source of `n` records, starting at this rank's
    /// position `start` (resume).
    pub fn sized(n: u64, seed: Option<u64>, epoch: u64, shard: Rank, start: u64) -> Result<Self> {
        Self::resumed(n, seed, epoch, shard, 0, start)
    }

    /// Like [`Schedule::sized`], after `offset` global positions were
    /// consumed, possibly by a different number of ranks (elastic resume).
    pub fn resumed(n: u64, seed: Option<u64>, epoch: u64, shard: Rank, offset: u64, start: u64) -> Result<Self> {
        Self::with_layout(n, None, seed, epoch, shard, offset, start)
    }

    /// The order of a mixed source: the epoch is the mix's draws (see
    /// [`MixOrder`]), split across ranks and resumed like any other.
    pub fn mixed(spec: MixSpec, seed: Option<u64>, epoch: u64, shard: Rank, offset: u64, start: u64) -> Result<Self> {
        let order = MixOrder::new(spec, seed, epoch)?;
        let mut s = Self::with_layout(order.len(), None, None, epoch, shard, offset, start)?;
        s.perm = Order::Mixed(order);
        Ok(s)
    }

    /// Like [`Schedule::resumed`], for a source that declares its [`Layout`]
    /// (shuffled two-level when there is a seed).
    pub fn with_layout(
        n: u64,
        layout: Option<&Layout>,
        seed: Option<u64>,
        epoch: u64,
        shard: Rank,
        offset: u64,
        start: u64,
    ) -> Result<Self> {
        shard.check()?;
        if let Some(l) = layout {
            let total: u64 = l.counts.iter().sum();
            if total != n {
                return Err(Error::invalid(format!(
                    "the source's shard counts add up to {total} samples, but it has {n} records"
                )));
            }
        }
        if offset > n {
            return Err(Error::invalid(format!("resume offset {offset} is past the end of the epoch ({n} records)")));
        }
        let count = shard.count(n - offset);
        if start > count {
            return Err(Error::invalid(format!(
                "resume position {start} is past the end of this rank's epoch ({count} records)"
            )));
        }
        let perm = match (seed.filter(|_| n > 0), layout) {
            (None, _) => Order::Identity,
            (Some(s), None) => Order::Flat(Permutation::new(n, s, epoch)),
            (Some(s), Some(l)) => Order::Sharded(ShardOrder::new(l, s, epoch)?),
        };
        Ok(Schedule { n, perm, shard, offset, count, next: start })
    }

    /// The order of a sharded source read by several hosts (or resumed
    /// from per-partition progress): see [`HostOrder`]. `offsets` are what
    /// each canonical partition consumed before this run (empty: none).
    #[allow(clippy::too_many_arguments)]
    pub fn hosted(
        n: u64,
        layout: &Layout,
        seed: Option<u64>,
        epoch: u64,
        shard: Rank,
        hosts: Hosts,
        offsets: &[u64],
        start: u64,
    ) -> Result<Self> {
        let total: u64 = layout.counts.iter().sum();
        if total != n {
            return Err(Error::invalid(format!(
                "the source's shard counts add up to {total} samples, but it has {n} records"
            )));
        }
        let order = HostOrder::new(layout, seed, epoch, shard, hosts, offsets)?;
        let count = order.count();
        if start > count {
            return Err(Error::invalid(format!(
                "resume position {start} is past the end of this rank's epoch ({count} records)"
            )));
        }
        Ok(Schedule { n, perm: Order::Hosted(order), shard, offset: 0, count, next: start })
    }

    /// Per canonical partition, what is consumed once every rank has read
    /// `pos` records (host-partitioned orders only).
    pub fn progress(&self, pos: u64) -> Option<Vec<u64>> {
        match &self.perm {
            Order::Hosted(o) => Some(o.progress(pos)),
            _ => None,
        }
    }

    /// The record index at this rank's position `pos`.
    pub fn index_at(&self, pos: u64) -> u64 {
        if let Order::Hosted(o) = &self.perm {
            return o.index_at(pos);
        }
        let mut g = self.offset + self.shard.id + pos * self.shard.of;
        if g >= self.n {
            g %= self.n;
        }
        match &self.perm {
            Order::Identity => g,
            Order::Flat(p) => p.apply(g),
            Order::Sharded(o) => o.apply(g),
            Order::Mixed(m) => m.record_at(g),
            Order::Hosted(_) => unreachable!("answered above"),
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
                let mut s = Schedule::sized(n, Some(9), 2, Rank { id: r, of: w, pad: false }, 0).unwrap();
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
            .map(|r| Schedule::sized(10, None, 0, Rank { id: r, of: 4, pad: true }, 0).unwrap().count())
            .collect();
        assert_eq!(counts, vec![3, 3, 3, 3]);
        let counts: Vec<u64> = (0..4).map(|r| Rank { id: r, of: 4, pad: false }.count(10)).collect();
        assert_eq!(counts, vec![3, 3, 2, 2]);
    }

    #[test]
    fn resume_continues_the_same_order() {
        let full: Vec<_> = Schedule::sized(50, Some(1), 0, Rank::default(), 0).unwrap().take(50);
        let tail: Vec<_> = Schedule::sized(50, Some(1), 0, Rank::default(), 20).unwrap().take(50);
        assert_eq!(&full[20..], &tail[..]);
    }

    #[test]
    fn elastic_resume_covers_the_rest_exactly_once() {
        // 4 ranks consume 3 records each, then the job resumes on 3 ranks.
        let n = 50;
        let mut seen: Vec<u64> = (0..4u64)
            .flat_map(|r| Schedule::sized(n, Some(7), 1, Rank { id: r, of: 4, pad: false }, 0).unwrap().take(3))
            .map(|p| p.1)
            .collect();
        for r in 0..3 {
            let mut s = Schedule::resumed(n, Some(7), 1, Rank { id: r, of: 3, pad: false }, 12, 0).unwrap();
            seen.extend(s.take(u64::MAX).into_iter().map(|p| p.1));
        }
        seen.sort();
        assert_eq!(seen, (0..n).collect::<Vec<_>>());
    }

    fn layout(counts: &[u64], window: u64) -> Layout {
        Layout::new(counts.to_vec(), window)
    }

    #[test]
    fn shard_order_is_a_bijection_with_empty_and_uneven_shards() {
        for (counts, window) in [(vec![5u64, 0, 7, 1, 0, 9], 4u64), (vec![3], 10), (vec![100; 13], 64), (vec![0, 2], 1)]
        {
            let l = layout(&counts, window);
            let n: u64 = counts.iter().sum();
            for epoch in 0..3 {
                let o = ShardOrder::new(&l, 5, epoch).unwrap();
                let mut got: Vec<u64> = (0..n).map(|g| o.apply(g)).collect();
                got.sort();
                assert_eq!(got, (0..n).collect::<Vec<_>>(), "{counts:?} window {window}");
            }
        }
    }

    #[test]
    fn a_window_touches_few_shards_and_epochs_differ() {
        // 40 shards of 50: windows of 100 samples span at most 3 shards.
        let l = layout(&[50; 40], 100);
        let o = ShardOrder::new(&l, 1, 0).unwrap();
        for w in 0..20u64 {
            let shards: BTreeSet<usize> = (w * 100..(w + 1) * 100).map(|g| o.shard_of(o.apply(g))).collect();
            assert!(shards.len() <= 3, "window {w} spans {shards:?}");
        }
        let e0: Vec<u64> = (0..2000).map(|g| o.apply(g)).collect();
        let e1: Vec<u64> = (0..2000).map(|g| ShardOrder::new(&l, 1, 1).unwrap().apply(g)).collect();
        assert_ne!(e0, e1);
        assert_ne!(e0, (0..2000).collect::<Vec<_>>());
    }

    #[test]
    fn sharded_schedules_split_and_resume_like_flat_ones() {
        let l = layout(&[7, 11, 0, 30, 2], 8);
        let n = 50;
        let mut all = Vec::new();
        for r in 0..3 {
            let mut s =
                Schedule::with_layout(n, Some(&l), Some(4), 2, Rank { id: r, of: 3, pad: false }, 0, 0).unwrap();
            all.extend(s.take(u64::MAX).into_iter().map(|p| p.1));
        }
        all.sort();
        assert_eq!(all, (0..n).collect::<Vec<_>>());
        let full = Schedule::with_layout(n, Some(&l), Some(4), 0, Rank::default(), 0, 0).unwrap().take(n);
        let tail = Schedule::with_layout(n, Some(&l), Some(4), 0, Rank::default(), 0, 17).unwrap().take(n);
        assert_eq!(&full[17..], &tail[..]);
        assert!(Schedule::with_layout(51, Some(&l), Some(4), 0, Rank::default(), 0, 0).is_err());
    }

    #[test]
    fn bad_shards_are_refused() {
        assert!(Rank { id: 4, of: 4, pad: false }.check().unwrap_err().to_string().contains("out of range"));
        assert!(Rank { id: 0, of: 0, pad: false }.check().is_err());
    }
}
