//! The two-level order of a sharded source: [`ShardOrder`] (a keyed order
//! of the shards, read in stripes, cut into shuffled windows).

use super::layout::Layout;
use crate::base::error::{Error, Result};
use crate::base::rng::{key, Permutation};

/// Streams read in rounds (round `r` takes element `r` of every stream
/// that has one), with `before(r)` the elements before round `r`: the round
/// of element `q` (the largest `r <= max` with `before(r) <= q`) and its
/// rank in that round.
pub(super) fn round_of(q: u64, max: u64, before: impl Fn(u64) -> u64) -> (u64, u64) {
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
pub(super) struct Stripe {
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
    pub(super) fn new(start: u64, mut members: Vec<(u64, u32)>) -> Stripe {
        // Stable: equal counts keep the epoch order.
        members.sort_by_key(|&(c, _)| std::cmp::Reverse(c));
        let counts: Vec<u64> = members.iter().map(|m| m.0).collect();
        let mut tail = vec![0u64; counts.len() + 1];
        for i in (0..counts.len()).rev() {
            tail[i] = tail[i + 1] + counts[i];
        }
        Stripe { start, members: members.into_iter().map(|m| m.1).collect(), counts, tail }
    }

    pub(super) fn len(&self) -> u64 {
        self.tail[0]
    }

    /// Samples before round `r`: every member gives min(count, r).
    fn before(&self, r: u64) -> u64 {
        let at_least = self.counts.partition_point(|&c| c >= r);
        r * at_least as u64 + self.tail[at_least]
    }

    /// (shard, sample inside it) at stripe position `t` (< len).
    pub(super) fn at(&self, t: u64) -> (u32, u64) {
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
