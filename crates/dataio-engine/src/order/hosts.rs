//! The host partition of a sharded source's order (see the module doc of
//! [`super`]): [`Hosts`], [`assign`] and one rank's [`HostOrder`].

use super::layout::Layout;
use super::rank::Rank;
use super::shard_order::{round_of, ShardOrder};
use crate::base::error::{Error, Result};
use crate::base::rng::{key, Permutation};
use std::collections::BinaryHeap;

/// Hosts of a run: how many physical hosts read the source (the world's
/// ranks split evenly over them, host-major: rank `r` is on host
/// `r / (of / count)`), and how many canonical hosts partition it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hosts {
    pub count: u64,
    pub canonical: u64,
}

impl Default for Hosts {
    fn default() -> Self {
        Hosts { count: 1, canonical: 1 }
    }
}

impl Hosts {
    pub fn check(&self, shard: &Rank) -> Result<()> {
        if self.count == 0 || self.canonical == 0 {
            return Err(Error::invalid("shard: 'hosts' and 'canonical_hosts' must be >= 1"));
        }
        if !shard.of.is_multiple_of(self.count) {
            return Err(Error::invalid(format!(
                "shard: a world of {} ranks does not split evenly over {} hosts (each host must run the same number of ranks)",
                shard.of, self.count
            )));
        }
        if self.canonical > u32::MAX as u64 {
            return Err(Error::invalid("shard: too many canonical hosts"));
        }
        Ok(())
    }

    /// Whether the order is the host partition (anything but one host of one).
    pub fn partitioned(&self) -> bool {
        self.count > 1 || self.canonical > 1
    }
}

/// The canonical partition of each shard: shards (in a keyed order, by
/// size, largest first) each to the partition with the fewest samples so
/// far, lowest id on ties. Fixed for a seed, so a host reads the same
/// shards every epoch and its cache needs only its share of the dataset.
pub fn assign(counts: &[u64], canonical: u64, seed: Option<u64>) -> Vec<u32> {
    let n = counts.len() as u64;
    let mut shards: Vec<u64> = match seed {
        Some(seed) if n > 0 => {
            let p = Permutation::new(n, key(&[seed, 0x484f_5354]), 0);
            (0..n).map(|k| p.apply(k)).collect()
        }
        _ => (0..n).collect(),
    };
    shards.sort_by_key(|&s| std::cmp::Reverse(counts[s as usize]));
    let mut heap: BinaryHeap<std::cmp::Reverse<(u64, u32)>> =
        (0..canonical.max(1) as u32).map(|p| std::cmp::Reverse((0u64, p))).collect();
    let mut out = vec![0u32; counts.len()];
    for s in shards {
        let std::cmp::Reverse((load, p)) = heap.pop().expect("at least one partition");
        out[s as usize] = p;
        heap.push(std::cmp::Reverse((load + counts[s as usize], p)));
    }
    out
}

/// Several partition streams merged round-robin: element `q` is the next
/// element of the next partition that still has one. `lens[j]` elements
/// of partition `j`, starting at its position `starts[j]`.
#[derive(Debug, Clone)]
pub(super) struct Merge {
    parts: Vec<usize>,
    starts: Vec<u64>,
    lens: Vec<u64>,
    pub(super) total: u64,
}

impl Merge {
    pub(super) fn new(parts: Vec<usize>, starts: Vec<u64>, lens: Vec<u64>) -> Merge {
        let total = lens.iter().sum();
        Merge { parts, starts, lens, total }
    }

    /// Elements before round `t` (each partition gives one per round while it lasts).
    pub(super) fn before(&self, t: u64) -> u64 {
        self.lens.iter().map(|&l| l.min(t)).sum()
    }

    /// The round of element `q` and its rank among that round's partitions.
    pub(super) fn round_of(&self, q: u64) -> (u64, u64) {
        round_of(q, self.lens.iter().copied().max().unwrap_or(0), |t| self.before(t))
    }

    /// (partition, position in it) of element `q` (< total).
    pub(super) fn at(&self, q: u64) -> (usize, u64) {
        let (t, mut k) = self.round_of(q);
        for (j, &l) in self.lens.iter().enumerate() {
            if l > t {
                if k == 0 {
                    return (self.parts[j], self.starts[j] + t);
                }
                k -= 1;
            }
        }
        unreachable!("element {q} of a merge of {}", self.total)
    }

    /// Elements of each partition among the first `q` (<= total).
    pub(super) fn consumed(&self, q: u64) -> Vec<u64> {
        if q >= self.total {
            return self.lens.clone();
        }
        let (t, mut k) = self.round_of(q);
        self.lens
            .iter()
            .map(|&l| {
                let mut c = l.min(t);
                if l > t && k > 0 {
                    c += 1;
                    k -= 1;
                }
                c
            })
            .collect()
    }
}

/// A group of ranks reading the same partitions (see the module doc).
#[derive(Debug, Clone)]
struct Group {
    merge: Merge,
    ranks: u64,
}

/// One rank's order over a source partitioned by host (see the module doc).
#[derive(Debug, Clone)]
pub struct HostOrder {
    streams: Vec<ShardOrder>,
    /// Consumed before this run, per canonical partition.
    offsets: Vec<u64>,
    groups: Vec<Group>,
    /// This rank's group and its index among the group's ranks.
    group: usize,
    rank: u64,
    count: u64,
    pad: bool,
    /// For padding a group whose partitions have nothing left: all of them from the start.
    whole: Merge,
}

impl HostOrder {
    /// `offsets`: what each canonical partition had consumed before this
    /// run (empty for none).
    pub fn new(
        layout: &Layout,
        seed: Option<u64>,
        epoch: u64,
        shard: Rank,
        hosts: Hosts,
        offsets: &[u64],
    ) -> Result<HostOrder> {
        shard.check()?;
        hosts.check(&shard)?;
        let c = hosts.canonical;
        let assignment = assign(&layout.counts, c, seed);
        let streams = ShardOrder::partitions(layout, seed, epoch, &assignment, c)?;
        let offsets = if offsets.is_empty() { vec![0; c as usize] } else { offsets.to_vec() };
        if offsets.len() as u64 != c {
            return Err(Error::invalid(format!(
                "resume: {} partition offsets for {c} canonical hosts (the checkpoint was taken with another canonical host count)",
                offsets.len()
            )));
        }
        for (p, (&o, s)) in offsets.iter().zip(&streams).enumerate() {
            if o > s.len() {
                return Err(Error::invalid(format!(
                    "resume: partition {p} consumed {o} samples, but holds {} this epoch",
                    s.len()
                )));
            }
        }
        let h = hosts.count;
        let local = shard.of / h;
        let (host, l) = (shard.id / local, shard.id % local);
        let merge_of = |parts: Vec<usize>| {
            let starts = parts.iter().map(|&p| offsets[p]).collect();
            let lens = parts.iter().map(|&p| streams[p].len() - offsets[p]).collect();
            Merge::new(parts, starts, lens)
        };
        let (groups, group, rank) = if c.is_multiple_of(h) {
            let groups = (0..h)
                .map(|g| Group {
                    merge: merge_of((g..c).step_by(h as usize).map(|p| p as usize).collect()),
                    ranks: local,
                })
                .collect();
            (groups, host as usize, l)
        } else if h.is_multiple_of(c) {
            let k = h / c;
            let groups = (0..c).map(|p| Group { merge: merge_of(vec![p as usize]), ranks: k * local }).collect();
            (groups, (host % c) as usize, (host / c) * local + l)
        } else {
            (vec![Group { merge: merge_of((0..c as usize).collect()), ranks: shard.of }], 0, shard.id)
        };
        let mine = &groups[group];
        let count = if shard.pad {
            groups.iter().map(|g| g.merge.total.div_ceil(g.ranks)).max().unwrap_or(0)
        } else if rank < mine.merge.total {
            (mine.merge.total - rank).div_ceil(mine.ranks)
        } else {
            0
        };
        let all: Vec<usize> = (0..c as usize).collect();
        let whole = Merge::new(all.clone(), vec![0; all.len()], streams.iter().map(|s| s.len()).collect());
        Ok(HostOrder { streams, offsets, groups, group, rank, count, pad: shard.pad, whole })
    }

    /// Records this rank reads this run.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The record index at this rank's position `pos` (< count).
    pub fn index_at(&self, pos: u64) -> u64 {
        let g = &self.groups[self.group];
        let q = pos * g.ranks + self.rank;
        let (p, at) = if q < g.merge.total {
            g.merge.at(q)
        } else if g.merge.total > 0 {
            // pad: wrap inside this group's own stream (its hosts' shards).
            g.merge.at(q % g.merge.total)
        } else {
            debug_assert!(self.pad);
            let from_own: u64 = g.merge.parts.iter().map(|&p| self.streams[p].len()).sum();
            if from_own > 0 {
                let own = Merge::new(
                    g.merge.parts.clone(),
                    vec![0; g.merge.parts.len()],
                    g.merge.parts.iter().map(|&p| self.streams[p].len()).collect(),
                );
                own.at(q % from_own)
            } else {
                self.whole.at(q % self.whole.total.max(1))
            }
        };
        self.streams[p].apply(at)
    }

    /// What each canonical partition has consumed once every rank has read
    /// `pos` records of this run (the offsets a resume on any layout starts from).
    pub fn progress(&self, pos: u64) -> Vec<u64> {
        let mut out = self.offsets.clone();
        for g in &self.groups {
            let q = pos.saturating_mul(g.ranks).min(g.merge.total);
            for (j, c) in g.merge.consumed(q).into_iter().enumerate() {
                out[g.merge.parts[j]] += c;
            }
        }
        out
    }

    /// Samples of each canonical partition this epoch.
    pub fn partition_lens(&self) -> Vec<u64> {
        self.streams.iter().map(|s| s.len()).collect()
    }
}
