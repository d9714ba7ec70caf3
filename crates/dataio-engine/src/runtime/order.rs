//! The orders of sized sources and what they are built on: which rank of
//! which world and host reads ([`Shard`]), how a source is stored
//! ([`Layout`]), the two-level order of a sharded source ([`ShardOrder`]),
//! and the host partition of that order ([`assign`], [`HostOrder`]). The
//! schedule (one rank's positions) and the mix (draws over sources) both
//! build on this module; it depends on neither.
//!
//! ## The host partition
//!
//! A sharded source read by many hosts would have every host fetch every
//! shard if ranks took interleaved positions of one global order (each
//! window of that order holds samples of a few shards, and every rank takes
//! a share of every window): store traffic x hosts. Instead the shards are
//! assigned to a fixed number `C` of *canonical hosts* (partitions, by
//! sample count, fixed for a seed: [`assign`]); each partition has its own
//! two-level order ([`ShardOrder::partition`]), and each physical host reads
//! only its partitions' shards:
//!
//! * `C` a multiple of the host count `H`: host `h` reads partitions
//!   `h, h + H, ...`, merged round-robin; its `L` local ranks take
//!   interleaved positions of that stream. Each shard is fetched by one host.
//! * `H` a multiple of `C`: the `H / C` hosts of partition `p` (hosts
//!   `p, p + C, ...`) share its stream, their ranks interleaved. Exact, but
//!   each shard of `p` is then fetched by each of those hosts.
//! * Otherwise (say 4 -> 3 hosts) every rank takes interleaved positions of
//!   all partitions merged: every sample once, shards fetched by many hosts.
//!
//! The progress of an epoch is what each partition has consumed
//! ([`HostOrder::progress`]): a resume on the same layout continues each
//! rank's position; a resume on another host count continues each
//! partition from where it stood, so the rest of the epoch holds exactly
//! the samples the old layout would have delivered. With one canonical
//! host and one physical host this is the two-level order of the whole
//! source, position for position (tested).

use crate::base::error::{Error, Result};
use crate::base::rng::{key, Permutation};
use std::collections::BinaryHeap;

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

/// How a sharded source is laid out: samples per shard, in storage order,
/// the shuffle window in samples, and the spread: over how many consecutive
/// windows each shard's samples are spread (1: shards one after another;
/// `k`: `k` times as many shards mixed in each window, see [`ShardOrder`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub counts: Vec<u64>,
    pub window: u64,
    pub spread: u64,
}

impl Layout {
    /// Shards one after another (spread 1).
    pub fn new(counts: Vec<u64>, window: u64) -> Layout {
        Layout { counts, window, spread: 1 }
    }

    pub fn with_spread(mut self, spread: u64) -> Layout {
        self.spread = spread.max(1);
        self
    }
}

/// Streams read in rounds (round `r` takes element `r` of every stream
/// that has one), with `before(r)` the elements before round `r`: the round
/// of element `q` (the largest `r <= max` with `before(r) <= q`) and its
/// rank in that round.
fn round_of(q: u64, max: u64, before: impl Fn(u64) -> u64) -> (u64, u64) {
    let (mut lo, mut hi) = (0u64, max);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if before(mid) <= q {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    (lo, q - before(lo))
}

/// Consecutive shards of an epoch's shard order read side by side: their
/// samples interleaved in rounds (round `r` holds sample `r` of every member
/// with more than `r` samples), so each member is read front to back while
/// the stripe's stream advances through all of them at once. Members are
/// kept largest first (ties in epoch order): round `r` is then a prefix of
/// them, and a position maps to its sample in O(log) without a table.
#[derive(Debug, Clone)]
struct Stripe {
    /// Stream position of the stripe's first sample.
    start: u64,
    /// Member shard ids, by count descending.
    members: Vec<u32>,
    /// Their counts (descending).
    counts: Vec<u64>,
    /// `tail[i]`: the sum of `counts[i..]` (len members + 1).
    tail: Vec<u64>,
}

impl Stripe {
    fn new(start: u64, mut members: Vec<(u64, u32)>) -> Stripe {
        // Stable: equal counts keep the epoch order.
        members.sort_by_key(|&(c, _)| std::cmp::Reverse(c));
        let counts: Vec<u64> = members.iter().map(|m| m.0).collect();
        let mut tail = vec![0u64; counts.len() + 1];
        for i in (0..counts.len()).rev() {
            tail[i] = tail[i + 1] + counts[i];
        }
        Stripe { start, members: members.into_iter().map(|m| m.1).collect(), counts, tail }
    }

    fn len(&self) -> u64 {
        self.tail[0]
    }

    /// Samples before round `r`: every member gives min(count, r).
    fn before(&self, r: u64) -> u64 {
        let at_least = self.counts.partition_point(|&c| c >= r);
        r * at_least as u64 + self.tail[at_least]
    }

    /// (shard, sample inside it) at stripe position `t` (< len).
    fn at(&self, t: u64) -> (u32, u64) {
        if self.members.len() == 1 {
            return (self.members[0], t);
        }
        let (r, rank) = round_of(t, self.counts[0] - 1, |r| self.before(r));
        (self.members[rank as usize], r)
    }
}

/// The two-level order of a sharded source for one (seed, epoch): a keyed
/// permutation of the shards, read in stripes (with spread 1 one shard after
/// another; with spread `k`, about `k` windows' worth of shards side by
/// side, see [`Stripe`]), cut into windows of `window` samples, and a keyed
/// permutation inside each window. Each shard is still read once, front to
/// back; with spread `k` a window holds about `1/k` of each shard of its
/// stripe, so it mixes `k` times as many shards, and `k` times as many are
/// open (and cached) at once.
#[derive(Debug, Clone)]
pub struct ShardOrder {
    n: u64,
    window: u64,
    /// None: no window shuffle (an unseeded partition in storage order).
    seed: Option<u64>,
    /// The canonical partition (0 for a whole source): keys its windows.
    salt: u64,
    epoch: u64,
    /// The epoch's shards in stripes, in stream order (empty shards left out).
    stripes: Vec<Stripe>,
    /// `base[s]`: the record index of shard `s`'s first sample (storage order).
    base: Vec<u64>,
}

impl ShardOrder {
    pub fn new(layout: &Layout, seed: u64, epoch: u64) -> Result<Self> {
        let order = Self::shard_permutation(layout, Some(seed), epoch)?;
        Ok(Self::build(layout, Some(seed), epoch, 0, order))
    }

    /// The order of the shards of canonical partition `part` (see
    /// [`assign`]): the epoch's shard permutation restricted to them, then
    /// windows as in [`ShardOrder::new`], keyed by the partition too. Without
    /// a seed, the partition's shards in storage order, unshuffled.
    pub fn partition(layout: &Layout, seed: Option<u64>, epoch: u64, assignment: &[u32], part: u32) -> Result<Self> {
        Ok(Self::partitions(layout, seed, epoch, assignment, part as u64 + 1)?.swap_remove(part as usize))
    }

    /// [`ShardOrder::partition`] of partitions `0..parts` at once (one
    /// permutation of the shards for all of them).
    pub fn partitions(
        layout: &Layout,
        seed: Option<u64>,
        epoch: u64,
        assignment: &[u32],
        parts: u64,
    ) -> Result<Vec<Self>> {
        let all = Self::shard_permutation(layout, seed, epoch)?;
        let mut orders: Vec<Vec<u32>> = vec![Vec::new(); parts as usize];
        for s in all {
            if let Some(o) = orders.get_mut(assignment[s as usize] as usize) {
                o.push(s);
            }
        }
        Ok(orders.into_iter().enumerate().map(|(p, order)| Self::build(layout, seed, epoch, p as u64, order)).collect())
    }

    fn shard_permutation(layout: &Layout, seed: Option<u64>, epoch: u64) -> Result<Vec<u32>> {
        let shards = layout.counts.len();
        if shards > u32::MAX as usize {
            return Err(Error::invalid(format!("{shards} shards are more than one source can order")));
        }
        Ok(match seed {
            Some(seed) if shards > 0 => {
                let p = Permutation::new(shards as u64, key(&[seed, 0x0053_4841_5244]), epoch);
                (0..shards as u64).map(|k| p.apply(k) as u32).collect()
            }
            _ => (0..shards as u32).collect(),
        })
    }

    fn build(layout: &Layout, seed: Option<u64>, epoch: u64, salt: u64, order: Vec<u32>) -> Self {
        let mut base = Vec::with_capacity(layout.counts.len());
        let mut total = 0u64;
        for &c in &layout.counts {
            base.push(total);
            total += c;
        }
        let window = layout.window.max(1);
        let stripes = Self::stripes(layout, window, &order);
        let n = stripes.last().map(|s| s.start + s.len()).unwrap_or(0);
        ShardOrder { n, window, seed, salt, epoch, stripes, base }
    }

    /// The shards of `order` cut into stripes: one shard each with spread 1
    /// (the order of earlier versions); with spread `k`, consecutive shards
    /// until a stripe holds at least `k` shards and `k` windows of samples
    /// (a remainder too small for a stripe of its own joins the last one),
    /// so that a window holds about `1/k` of each shard of its stripe.
    fn stripes(layout: &Layout, window: u64, order: &[u32]) -> Vec<Stripe> {
        let k = layout.spread.max(1);
        let shards: Vec<(u64, u32)> =
            order.iter().map(|&s| (layout.counts[s as usize], s)).filter(|&(c, _)| c > 0).collect();
        let mut rest = vec![(0u64, 0u64); shards.len() + 1];
        for i in (0..shards.len()).rev() {
            rest[i] = (rest[i + 1].0 + 1, rest[i + 1].1 + shards[i].0);
        }
        let enough = |(count, samples): (u64, u64)| count >= k && samples >= k.saturating_mul(window);
        let mut out = Vec::new();
        let (mut at, mut i) = (0u64, 0usize);
        while i < shards.len() {
            let mut j = i + 1;
            if k > 1 {
                let mut held = (1u64, shards[i].0);
                while j < shards.len() && !enough(held) {
                    held = (held.0 + 1, held.1 + shards[j].0);
                    j += 1;
                }
                if !enough(rest[j]) {
                    j = shards.len();
                }
            }
            let stripe = Stripe::new(at, shards[i..j].to_vec());
            at += stripe.len();
            out.push(stripe);
            i = j;
        }
        out
    }

    pub fn len(&self) -> u64 {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The record index at position `g` (< n) of this order.
    pub fn apply(&self, g: u64) -> u64 {
        let block = g / self.window;
        let lo = block * self.window;
        let len = self.window.min(self.n - lo);
        let inside = match self.seed {
            Some(seed) => Permutation::new(len, key(&[seed, block, 0x5749_4e44 + self.salt]), self.epoch).apply(g - lo),
            None => g - lo,
        };
        let s = lo + inside;
        let k = self.stripes.partition_point(|st| st.start <= s) - 1;
        let (shard, at) = self.stripes[k].at(s - self.stripes[k].start);
        self.base[shard as usize] + at
    }

    /// The shard holding record `index` (storage order).
    pub fn shard_of(&self, index: u64) -> usize {
        self.base.partition_point(|&b| b <= index) - 1
    }
}

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
    pub fn check(&self, shard: &Shard) -> Result<()> {
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
struct Merge {
    parts: Vec<usize>,
    starts: Vec<u64>,
    lens: Vec<u64>,
    total: u64,
}

impl Merge {
    fn new(parts: Vec<usize>, starts: Vec<u64>, lens: Vec<u64>) -> Merge {
        let total = lens.iter().sum();
        Merge { parts, starts, lens, total }
    }

    /// Elements before round `t` (each partition gives one per round while it lasts).
    fn before(&self, t: u64) -> u64 {
        self.lens.iter().map(|&l| l.min(t)).sum()
    }

    /// The round of element `q` and its rank among that round's partitions.
    fn round_of(&self, q: u64) -> (u64, u64) {
        round_of(q, self.lens.iter().copied().max().unwrap_or(0), |t| self.before(t))
    }

    /// (partition, position in it) of element `q` (< total).
    fn at(&self, q: u64) -> (usize, u64) {
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
    fn consumed(&self, q: u64) -> Vec<u64> {
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
        shard: Shard,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::schedule::Schedule;
    use std::collections::{BTreeMap, BTreeSet};

    fn layout(counts: &[u64], window: u64) -> Layout {
        Layout::new(counts.to_vec(), window)
    }

    fn shard_of(l: &Layout, index: u64) -> usize {
        let mut at = 0;
        for (s, &c) in l.counts.iter().enumerate() {
            if index < at + c {
                return s;
            }
            at += c;
        }
        unreachable!()
    }

    /// Every rank's records of one run: rank -> records.
    fn run(
        l: &Layout,
        seed: Option<u64>,
        epoch: u64,
        of: u64,
        pad: bool,
        hosts: Hosts,
        offsets: &[u64],
    ) -> Vec<Vec<u64>> {
        (0..of)
            .map(|id| {
                let o = HostOrder::new(l, seed, epoch, Shard { id, of, pad }, hosts, offsets).unwrap();
                (0..o.count()).map(|p| o.index_at(p)).collect()
            })
            .collect()
    }

    #[test]
    fn a_spread_order_is_a_bijection_and_reads_each_shard_front_to_back() {
        for counts in [vec![5u64, 0, 7, 1, 0, 9, 30, 2], vec![3], vec![100; 13], vec![0, 2], vec![1; 50], vec![0, 0]] {
            for spread in 1..=5u64 {
                for window in [1u64, 4, 64] {
                    let l = Layout::new(counts.clone(), window).with_spread(spread);
                    let n: u64 = counts.iter().sum();
                    let o = ShardOrder::new(&l, 7, 1).unwrap();
                    let got: Vec<u64> = (0..n).map(|g| o.apply(g)).collect();
                    let mut sorted = got.clone();
                    sorted.sort();
                    assert_eq!(sorted, (0..n).collect::<Vec<_>>(), "{counts:?} spread {spread} window {window}");
                    if window == 1 {
                        // No shuffle inside windows of one: the stream itself,
                        // where each shard's samples come in storage order.
                        for s in 0..counts.len() {
                            let mine: Vec<u64> = got.iter().copied().filter(|&r| o.shard_of(r) == s).collect();
                            assert!(
                                mine.windows(2).all(|w| w[0] < w[1]),
                                "{counts:?} spread {spread}: shard {s} {mine:?}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_spread_of_k_mixes_k_times_the_shards_in_a_window() {
        // 40 shards of 50, windows of 100: one after another a window holds
        // 2-3 shards; spread 4 reads 8 shards side by side (4 windows of
        // samples), so each window holds a quarter of each of them.
        let distinct = |spread: u64| -> Vec<usize> {
            let l = Layout::new(vec![50; 40], 100).with_spread(spread);
            let o = ShardOrder::new(&l, 3, 0).unwrap();
            (0..20u64)
                .map(|w| (w * 100..(w + 1) * 100).map(|g| o.shard_of(o.apply(g))).collect::<BTreeSet<_>>().len())
                .collect()
        };
        assert!(distinct(1).iter().all(|&d| d <= 3), "{:?}", distinct(1));
        assert!(distinct(4).iter().all(|&d| d == 8), "{:?}", distinct(4));
        // Shards larger than a window: spread k puts k of them in each window.
        let l = Layout::new(vec![1000; 12], 100).with_spread(3);
        let o = ShardOrder::new(&l, 3, 0).unwrap();
        for w in 0..30u64 {
            let shards: BTreeSet<usize> = (w * 100..(w + 1) * 100).map(|g| o.shard_of(o.apply(g))).collect();
            assert_eq!(shards.len(), 3, "window {w}");
        }
    }

    #[test]
    fn a_stripe_maps_positions_to_rounds() {
        // Members of 3, 1 and 2 samples: rounds (a0 c0 b0) (a1 c1) (a2).
        let s = Stripe::new(10, vec![(3, 7), (1, 8), (2, 9)]);
        assert_eq!(s.len(), 6);
        let got: Vec<(u32, u64)> = (0..6).map(|t| s.at(t)).collect();
        assert_eq!(got, vec![(7, 0), (9, 0), (8, 0), (7, 1), (9, 1), (7, 2)]);
    }

    #[test]
    fn a_merge_visits_each_element_once_and_counts_what_it_consumed() {
        for lens in [vec![3u64, 0, 5, 1], vec![7], vec![0, 0], vec![2, 2, 2], vec![10, 1, 4]] {
            let starts: Vec<u64> = (0..lens.len() as u64).map(|j| j * 100).collect();
            let m = Merge::new((0..lens.len()).collect(), starts.clone(), lens.clone());
            let seen: Vec<(usize, u64)> = (0..m.total).map(|q| m.at(q)).collect();
            let set: BTreeSet<_> = seen.iter().copied().collect();
            assert_eq!(set.len() as u64, m.total, "{lens:?}");
            for q in 0..=m.total {
                let mut expect = vec![0u64; lens.len()];
                for &(p, _) in &seen[..q as usize] {
                    expect[p] += 1;
                }
                assert_eq!(m.consumed(q), expect, "{lens:?} q={q}");
            }
            // Round-robin: each partition's elements come in order.
            for j in 0..lens.len() {
                let mine: Vec<u64> = seen.iter().filter(|e| e.0 == j).map(|e| e.1).collect();
                assert_eq!(mine, (starts[j]..starts[j] + lens[j]).collect::<Vec<_>>());
            }
        }
    }

    #[test]
    fn one_host_of_one_is_the_global_order_of_today() {
        let l = layout(&[7, 11, 0, 30, 2, 9], 8);
        let n = 59;
        for (of, pad, seed) in [(1u64, false, Some(4u64)), (3, false, Some(4)), (4, true, Some(9)), (2, false, None)] {
            for id in 0..of {
                let shard = Shard { id, of, pad };
                let mut old = Schedule::with_layout(n, Some(&l), seed, 2, shard, 0, 0).unwrap();
                let new = HostOrder::new(&l, seed, 2, shard, Hosts::default(), &[]).unwrap();
                let old: Vec<u64> = old.take(u64::MAX).into_iter().map(|p| p.1).collect();
                let new: Vec<u64> = (0..new.count()).map(|p| new.index_at(p)).collect();
                assert_eq!(old, new, "of {of} pad {pad} rank {id}");
            }
        }
    }

    #[test]
    fn each_shard_is_read_by_one_host_and_every_sample_once() {
        for spread in [1u64, 3] {
            each_shard_once(&layout(&[40; 16], 64).with_spread(spread));
        }
    }

    fn each_shard_once(l: &Layout) {
        let l = l.clone();
        let n = 640;
        for h in [1u64, 2, 4, 8] {
            let of = h * 2;
            let ranks = run(&l, Some(1), 3, of, false, Hosts { count: h, canonical: h }, &[]);
            let mut all: Vec<u64> = ranks.iter().flatten().copied().collect();
            all.sort();
            assert_eq!(all, (0..n).collect::<Vec<_>>(), "{h} hosts");
            let mut readers: BTreeMap<usize, BTreeSet<u64>> = BTreeMap::new();
            for (rank, recs) in ranks.iter().enumerate() {
                for &r in recs {
                    readers.entry(shard_of(&l, r)).or_default().insert(rank as u64 / 2);
                }
            }
            assert!(readers.values().all(|hosts| hosts.len() == 1), "{h} hosts: {readers:?}");
            // Equal shares when the shards split evenly.
            assert!(ranks.iter().all(|r| r.len() == ranks[0].len()));
        }
    }

    #[test]
    fn pad_gives_every_rank_the_same_count_from_its_own_hosts_shards() {
        // 3 partitions of unequal size (shards of 5, 9, 13 samples).
        let l = layout(&[5, 9, 13, 9, 5], 4);
        let hosts = Hosts { count: 3, canonical: 3 };
        let ranks = run(&l, Some(2), 0, 6, true, hosts, &[]);
        let counts: BTreeSet<usize> = ranks.iter().map(|r| r.len()).collect();
        assert_eq!(counts.len(), 1, "{counts:?}");
        let distinct: BTreeSet<u64> = ranks.iter().flatten().copied().collect();
        assert_eq!(distinct.len(), 41);
        for h in 0..3 {
            let shards: BTreeSet<usize> = ranks[h * 2..h * 2 + 2].iter().flatten().map(|&r| shard_of(&l, r)).collect();
            for other in (0..3).filter(|&o| o != h) {
                let theirs: BTreeSet<usize> =
                    ranks[other * 2..other * 2 + 2].iter().flatten().map(|&r| shard_of(&l, r)).collect();
                assert!(shards.is_disjoint(&theirs), "hosts {h} and {other} share shards");
            }
        }
    }

    #[test]
    fn deterministic_and_epochs_differ_within_a_fixed_partition() {
        let l = layout(&[25; 12], 30);
        let hosts = Hosts { count: 4, canonical: 4 };
        let a = run(&l, Some(5), 1, 4, false, hosts, &[]);
        assert_eq!(a, run(&l, Some(5), 1, 4, false, hosts, &[]));
        let b = run(&l, Some(5), 2, 4, false, hosts, &[]);
        assert_ne!(a, b);
        // The same shards per host every epoch (a host's cache needs its share only).
        for (x, y) in a.iter().zip(&b) {
            let sx: BTreeSet<usize> = x.iter().map(|&r| shard_of(&l, r)).collect();
            let sy: BTreeSet<usize> = y.iter().map(|&r| shard_of(&l, r)).collect();
            assert_eq!(sx, sy);
        }
    }

    /// Runs `old` hosts (2 ranks each) for `steps` records per rank, then
    /// resumes on `new` hosts from the progress: returns (consumed before,
    /// read after) and checks every sample comes exactly once.
    fn elastic(old: u64, new: u64, steps: u64) -> (Vec<u64>, Vec<u64>) {
        let l = layout(&[30, 30, 30, 30, 30, 30, 30, 30, 20, 20, 20, 20], 16);
        let n: u64 = l.counts.iter().sum();
        let canonical = old;
        let before: Vec<HostOrder> = (0..old * 2)
            .map(|id| {
                HostOrder::new(
                    &l,
                    Some(3),
                    0,
                    Shard { id, of: old * 2, pad: false },
                    Hosts { count: old, canonical },
                    &[],
                )
                .unwrap()
            })
            .collect();
        let mut seen: Vec<u64> = before.iter().flat_map(|o| (0..steps.min(o.count())).map(|p| o.index_at(p))).collect();
        let consumed = seen.clone();
        let progress = before[0].progress(steps);
        assert!(before.iter().all(|o| o.progress(steps) == progress), "every rank reports the same progress");
        let after = run(&l, Some(3), 0, new * 2, false, Hosts { count: new, canonical }, &progress);
        let rest: Vec<u64> = after.into_iter().flatten().collect();
        seen.extend(&rest);
        seen.sort();
        assert_eq!(seen, (0..n).collect::<Vec<_>>(), "{old} -> {new} hosts");
        (consumed, rest)
    }

    #[test]
    fn elastic_resume_keeps_every_sample_once_and_the_partitions_streams() {
        for (old, new) in [(4, 2), (2, 4), (4, 3), (4, 8), (4, 1), (1, 3)] {
            elastic(old, new, 13);
        }
        // Fewer hosts that divide the canonical count: each shard of the rest
        // of the epoch is still read by one host.
        let l = layout(&[30, 30, 30, 30, 30, 30, 30, 30, 20, 20, 20, 20], 16);
        let first =
            HostOrder::new(&l, Some(3), 0, Shard { id: 0, of: 8, pad: false }, Hosts { count: 4, canonical: 4 }, &[])
                .unwrap();
        let progress = first.progress(13);
        let after = run(&l, Some(3), 0, 4, false, Hosts { count: 2, canonical: 4 }, &progress);
        let mut readers: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
        for (rank, recs) in after.iter().enumerate() {
            for &r in recs {
                readers.entry(shard_of(&l, r)).or_default().insert(rank / 2);
            }
        }
        assert!(readers.values().all(|h| h.len() == 1), "{readers:?}");
    }

    #[test]
    fn hosts_must_split_the_world_evenly() {
        let l = layout(&[4; 4], 4);
        let e = HostOrder::new(&l, None, 0, Shard { id: 0, of: 6, pad: false }, Hosts { count: 4, canonical: 4 }, &[])
            .unwrap_err();
        assert!(e.to_string().contains("does not split evenly"), "{e}");
        let e = HostOrder::new(&l, None, 0, Shard { id: 0, of: 2, pad: false }, Hosts { count: 2, canonical: 2 }, &[1])
            .unwrap_err();
        assert!(e.to_string().contains("canonical"), "{e}");
    }
}
