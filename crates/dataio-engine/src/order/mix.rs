//! Mixing several record sources in set proportions.
//!
//! A mixed source is the concatenation of its sources (record index
//! `base[s] + i` is record `i` of source `s`) with an order that draws from
//! each source in proportion to its weight. Draws are arithmetic: the k-th
//! draw of source `s` sits at time `(k + phase[s]) / w[s]` (weights summed
//! to one, phases keyed by the seed), and position `p` of the mixed stream
//! is the p-th smallest of those times. So which source position `p` draws
//! from is a pure function of (seed, p) and the weights, never of timing or
//! workers, and after `P` draws every source has had `w[s]·P` of them,
//! within `S + 1` (`S` sources). The loader's positions are that stream
//! shuffled inside aligned blocks of [`MIX_BLOCK`] (keyed by seed, epoch and
//! block), so each block holds the proportions and ranks, which take every
//! W-th position, keep them too; the shuffle moves which source a position
//! draws from, while each source's draws keep their order (so a restarted
//! source's own epochs stay contiguous). Each source is shuffled by its own keyed
//! order (its shard layout's two-level order, or a flat permutation), keyed
//! by the seed, the source and the source's own epoch, which advances each
//! time the source is exhausted and restarted.
//!
//! What ends a mixed epoch ([`Stop`]): the first source exhausted, all
//! exhausted (the others restart in their next epochs meanwhile), or a fixed
//! number of draws, with the stream continuing across mixed epochs.

use super::layout::Layout;
use super::shard_order::ShardOrder;
use crate::base::error::{Error, Result};
use crate::base::rng::{key, mix64, Permutation};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Draws shuffled together: each aligned block of this many positions holds
/// each source's share (within `S + 1`), in a keyed order.
pub const MIX_BLOCK: u64 = 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    FirstExhausted,
    AllExhausted,
    /// This many draws per mixed epoch; the stream continues across epochs.
    Samples(u64),
}

/// One mixed source: its length and, when stored in shards, its layout.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    pub len: u64,
    pub layout: Option<Layout>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct MixSpec {
    pub parts: Vec<Part>,
    pub weights: Vec<f64>,
    pub stop: Stop,
}

impl MixSpec {
    pub fn check(&self) -> Result<()> {
        if self.parts.is_empty() {
            return Err(Error::invalid("mix needs at least one source"));
        }
        if self.weights.len() != self.parts.len() {
            return Err(Error::invalid(format!(
                "mix has {} sources but {} weights",
                self.parts.len(),
                self.weights.len()
            )));
        }
        for (s, &w) in self.weights.iter().enumerate() {
            if !w.is_finite() || w < 0.0 {
                return Err(Error::invalid(format!("mix source {s}: weight {w} must be a finite number >= 0")));
            }
        }
        if self.weights.iter().all(|&w| w == 0.0) {
            return Err(Error::invalid("mix weights are all zero"));
        }
        for (s, p) in self.parts.iter().enumerate() {
            if p.len == 0 && self.weights[s] > 0.0 {
                return Err(Error::invalid(format!("mix source {s} is empty")));
            }
        }
        if self.stop == Stop::Samples(0) {
            return Err(Error::invalid("mix stop=N needs N >= 1"));
        }
        Ok(())
    }

    /// Records in the concatenation of the sources.
    pub fn total(&self) -> u64 {
        self.parts.iter().map(|p| p.len).sum()
    }
}

/// The draws of a mix for one seed (`epoch` only selects the sources' orders).
#[derive(Debug, Clone)]
pub struct MixOrder {
    spec: MixSpec,
    w: Vec<f64>,
    phase: Vec<f64>,
    base: Vec<u64>,
    total: u64,
    seed: u64,
    shuffled: bool,
    epoch: u64,
    /// Draws per mixed epoch.
    len: u64,
    /// Shard sources' orders by (source, source epoch).
    orders: Orders,
    /// Recent blocks' draws (see [`MixOrder::block`]).
    blocks: Blocks,
}

/// Blocks' draws made so far, by block (see [`MixOrder::block`]).
type Blocks = Arc<Mutex<HashMap<u64, Arc<Vec<(usize, u64)>>>>>;

/// Shard orders made so far, by (source, source epoch).
type Orders = Arc<Mutex<HashMap<(usize, u64), Arc<ShardOrder>>>>;

impl MixOrder {
    pub fn new(spec: MixSpec, seed: Option<u64>, epoch: u64) -> Result<MixOrder> {
        spec.check()?;
        let sum: f64 = spec.weights.iter().sum();
        let w: Vec<f64> = spec.weights.iter().map(|x| x / sum).collect();
        let s0 = seed.unwrap_or(0);
        let phase: Vec<f64> = (0..w.len())
            .map(|s| (mix64(key(&[s0, s as u64, 0x4d49_5850])) >> 11) as f64 * (1.0 / (1u64 << 53) as f64))
            .collect();
        let mut base = Vec::with_capacity(spec.parts.len());
        let mut total = 0;
        for p in &spec.parts {
            base.push(total);
            total += p.len;
        }
        let mut m = MixOrder {
            spec,
            w,
            phase,
            base,
            total,
            seed: s0,
            shuffled: seed.is_some(),
            epoch,
            len: 0,
            orders: Arc::new(Mutex::new(HashMap::new())),
            blocks: Arc::new(Mutex::new(HashMap::new())),
        };
        m.len = m.epoch_len();
        Ok(m)
    }

    /// Draws of source `s` at times `<= t`.
    fn count_le(&self, s: usize, t: f64) -> u64 {
        let x = t * self.w[s] - self.phase[s];
        if self.w[s] == 0.0 || x < 0.0 {
            0
        } else {
            x.floor() as u64 + 1
        }
    }

    fn time(&self, s: usize, k: u64) -> f64 {
        (k as f64 + self.phase[s]) / self.w[s]
    }

    fn total_le(&self, t: f64) -> u64 {
        (0..self.w.len()).map(|s| self.count_le(s, t)).sum()
    }

    /// The position of draw `k` of source `s` in the endless stream.
    fn position_of(&self, s: usize, k: u64) -> u64 {
        let t = self.time(s, k);
        let mut before = k;
        for o in 0..self.w.len() {
            if o == s || self.w[o] == 0.0 {
                continue;
            }
            // Draws of `o` strictly before t, or at t when `o` sorts first.
            let at_or_before = self.count_le(o, t);
            let tie = at_or_before > 0 && self.time(o, at_or_before - 1) == t;
            before += if tie && o > s { at_or_before - 1 } else { at_or_before };
        }
        before
    }

    fn epoch_len(&self) -> u64 {
        let ends = || {
            (0..self.w.len()).filter(|&s| self.w[s] > 0.0).map(|s| self.position_of(s, self.spec.parts[s].len - 1) + 1)
        };
        match self.spec.stop {
            Stop::Samples(n) => n,
            Stop::FirstExhausted => ends().min().unwrap_or(0),
            Stop::AllExhausted => ends().max().unwrap_or(0),
        }
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Which source position `p` of the endless stream draws from, and
    /// that source's draw number.
    pub fn draw(&self, p: u64) -> (usize, u64) {
        let wmin = self.w.iter().copied().filter(|&x| x > 0.0).fold(f64::INFINITY, f64::min);
        let (mut lo, mut hi) = (-1.0f64, (p as f64 + 2.0) / wmin + 1.0);
        // The smallest time at which p + 1 draws have happened.
        for _ in 0..200 {
            let mid = lo + (hi - lo) / 2.0;
            if mid <= lo || mid >= hi {
                break;
            }
            if self.total_le(mid) > p {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        // Draws in (lo, hi]: usually one; ties sorted by (time, source).
        let mut fresh: Vec<(f64, usize, u64)> = Vec::new();
        for s in 0..self.w.len() {
            let (a, b) = (self.count_le(s, lo), self.count_le(s, hi));
            for k in a..b {
                fresh.push((self.time(s, k), s, k));
            }
        }
        fresh.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
        let skip = (p - self.total_le(lo)) as usize;
        let (_, s, k) = fresh[skip.min(fresh.len() - 1)];
        (s, k)
    }

    /// (source, its draw number) at each position of block `block` of this
    /// mixed epoch. Which source a position draws from is shuffled inside
    /// the block, so ranks taking every W-th position each get the
    /// proportions (the draws' pattern is regular: 50/50 is a, b, a, b, ...
    /// which two ranks would otherwise split by source); each source's own
    /// draws then fill its positions in their stream order, so a source's
    /// draws are delivered in order and its own epochs stay contiguous (a
    /// small source restarted inside a block does not interleave two of its
    /// epochs). Built once per block (a block's draws, then a cache hit).
    fn block(&self, block: u64) -> Arc<Vec<(usize, u64)>> {
        if let Some(b) = self.blocks.lock().unwrap().get(&block) {
            return b.clone();
        }
        let lo = block * MIX_BLOCK;
        let n = MIX_BLOCK.min(self.len.max(lo + 1) - lo);
        let start = match self.spec.stop {
            Stop::Samples(len) => self.epoch * len,
            _ => 0,
        } + lo;
        let stream: Vec<(usize, u64)> = (0..n).map(|i| self.draw(start + i)).collect();
        let perm = Permutation::new(n, key(&[self.seed, self.epoch, block, 0x4d42_4c4b]), 0);
        // Each source's draws of the block, in stream order (ascending).
        let mut queues: Vec<std::collections::VecDeque<u64>> = vec![Default::default(); self.w.len()];
        for &(s, k) in &stream {
            queues[s].push_back(k);
        }
        let out: Vec<(usize, u64)> = (0..n)
            .map(|i| {
                let s = stream[perm.apply(i) as usize].0;
                (s, queues[s].pop_front().expect("one draw per position of the source"))
            })
            .collect();
        let out = Arc::new(out);
        let mut blocks = self.blocks.lock().unwrap();
        if blocks.len() > 16 {
            blocks.clear();
        }
        blocks.insert(block, out.clone());
        out
    }

    /// (source, its draw number) at position `p` of this mixed epoch.
    pub fn source_at(&self, p: u64) -> (usize, u64) {
        let b = self.block(p / MIX_BLOCK);
        b[(p % MIX_BLOCK) as usize]
    }

    /// The record (an index of the concatenation, plus `total` for each
    /// earlier restart of the source inside this epoch, so a sample drawn
    /// twice gets other random draws) at position `p` of mixed epoch `epoch`.
    pub fn record_at(&self, p: u64) -> u64 {
        let (s, q) = self.source_at(p);
        self.member(s, q)
    }

    /// The record that draw `q` of source `s` reads: its own keyed order
    /// for the source epoch `q div len` (restarts also keyed by the mixed
    /// epoch when exhaustion ends epochs), plus `total` per restart inside
    /// this mixed epoch.
    fn member(&self, s: usize, q: u64) -> u64 {
        let restarting = !matches!(self.spec.stop, Stop::Samples(_));
        let len = self.spec.parts[s].len;
        let wrap = q / len;
        let source_epoch = if restarting { key(&[self.epoch, wrap]) } else { wrap };
        let i = q % len;
        let inside = if !self.shuffled {
            i
        } else {
            let skey = key(&[self.seed, s as u64, 0x5352_4345]);
            match &self.spec.parts[s].layout {
                Some(l) => self.shard_order(s, l, skey, source_epoch).map(|o| o.apply(i)).unwrap_or(i),
                None => Permutation::new(len, skey, source_epoch).apply(i),
            }
        };
        self.base[s] + inside + if restarting { wrap * self.total } else { 0 }
    }

    /// A shard source's order for one of its epochs, built once (O(shards)).
    fn shard_order(&self, s: usize, l: &Layout, skey: u64, epoch: u64) -> Result<Arc<ShardOrder>> {
        let mut cache = self.orders.lock().unwrap();
        if let Some(o) = cache.get(&(s, epoch)) {
            return Ok(o.clone());
        }
        if cache.len() > 64 {
            cache.clear();
        }
        let o = Arc::new(ShardOrder::new(l, skey, epoch)?);
        cache.insert((s, epoch), o.clone());
        Ok(o)
    }

    /// Per source, its draws among the first `x` positions of the stream.
    fn counts_before(&self, x: u64) -> Vec<u64> {
        if x == 0 {
            return vec![0; self.w.len()];
        }
        let (s, k) = self.draw(x - 1);
        let t = self.time(s, k);
        (0..self.w.len())
            .map(|o| {
                let c = self.count_le(o, t);
                if o > s && c > 0 && self.time(o, c - 1) == t {
                    c - 1
                } else {
                    c
                }
            })
            .collect()
    }

    /// Per source, after `p` positions of this mixed epoch: its draws in
    /// this epoch, and its own epoch (how often it was restarted).
    pub fn progress(&self, p: u64) -> Vec<(u64, u64)> {
        let start = match self.spec.stop {
            Stop::Samples(n) => self.epoch * n,
            _ => 0,
        };
        // Whole blocks by counting; the positions of a partial block one by one.
        let whole = p / MIX_BLOCK * MIX_BLOCK;
        let (before, mut after) = (self.counts_before(start), self.counts_before(start + whole));
        for x in whole..p {
            after[self.source_at(x).0] += 1;
        }
        (0..self.w.len()).map(|s| (after[s] - before[s], after[s] / self.spec.parts[s].len.max(1))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(lens: &[u64], weights: &[f64], stop: Stop) -> MixSpec {
        MixSpec { parts: lens.iter().map(|&len| Part { len, layout: None }).collect(), weights: weights.to_vec(), stop }
    }

    #[test]
    fn draws_follow_the_weights_within_the_bound() {
        let m = MixOrder::new(spec(&[1000, 1000, 1000], &[0.6, 0.3, 0.1], Stop::Samples(5000)), Some(3), 0).unwrap();
        let mut counts = [0u64; 3];
        for p in 0..5000u64 {
            let (s, k) = m.draw(p);
            assert_eq!(k, counts[s], "draws of a source come in order");
            counts[s] += 1;
            for (o, &c) in counts.iter().enumerate() {
                let want = m.w[o] * (p + 1) as f64;
                assert!((c as f64 - want).abs() <= 4.0, "p={p} source {o}: {c} vs {want}");
            }
        }
    }

    #[test]
    fn stop_rules_and_every_record_of_a_first_exhausted_epoch() {
        let first = MixOrder::new(spec(&[10, 50], &[0.5, 0.5], Stop::FirstExhausted), Some(1), 0).unwrap();
        assert!((19..=21).contains(&first.len()), "{}", first.len());
        let all = MixOrder::new(spec(&[10, 50], &[0.5, 0.5], Stop::AllExhausted), Some(1), 0).unwrap();
        assert!((99..=101).contains(&all.len()), "{}", all.len());
        // all_exhausted: the big source once, the small one restarted (new keys).
        let recs: Vec<u64> = (0..all.len()).map(|p| all.record_at(p)).collect();
        let big: Vec<u64> = recs.iter().copied().filter(|&r| r % 60 >= 10).collect();
        let mut sorted = big.clone();
        sorted.sort();
        assert_eq!(sorted, (10..60).collect::<Vec<_>>());
        assert!(recs.iter().any(|&r| r >= 60), "restarts of the small source get fresh indices");
        let n = MixOrder::new(spec(&[10, 50], &[0.5, 0.5], Stop::Samples(7)), Some(1), 0).unwrap();
        assert_eq!(n.len(), 7);
    }

    #[test]
    fn samples_stop_continues_the_stream_across_epochs() {
        let sp = spec(&[30, 30], &[1.0, 1.0], Stop::Samples(20));
        let e0: Vec<u64> = (0..20).map(|p| MixOrder::new(sp.clone(), Some(2), 0).unwrap().record_at(p)).collect();
        let e1: Vec<u64> = (0..20).map(|p| MixOrder::new(sp.clone(), Some(2), 1).unwrap().record_at(p)).collect();
        let e2: Vec<u64> = (0..20).map(|p| MixOrder::new(sp.clone(), Some(2), 2).unwrap().record_at(p)).collect();
        // 60 draws over three epochs: each source's 30 records exactly once.
        let mut all: Vec<u64> = e0.iter().chain(&e1).chain(&e2).copied().collect();
        all.sort();
        assert_eq!(all, (0..60).collect::<Vec<_>>());
        let progress = MixOrder::new(sp, Some(2), 1).unwrap().progress(20);
        assert_eq!(progress.iter().map(|p| p.0).sum::<u64>(), 20);
    }

    #[test]
    fn a_restarted_source_is_reshuffled_every_time() {
        let m = MixOrder::new(spec(&[40, 10], &[0.5, 0.5], Stop::AllExhausted), Some(4), 0).unwrap();
        let cycles: Vec<Vec<u64>> =
            (0..3).map(|c| (0..10).map(|q| (m.member(1, c * 10 + q) - 40) % m.total).collect()).collect();
        for c in &cycles {
            let mut sorted = c.clone();
            sorted.sort();
            assert_eq!(sorted, (0..10).collect::<Vec<_>>());
        }
        assert!(cycles[0] != cycles[1] && cycles[1] != cycles[2]);
        // Another mixed epoch starts the source with another order.
        let next = MixOrder::new(spec(&[40, 10], &[0.5, 0.5], Stop::AllExhausted), Some(4), 1).unwrap();
        assert_ne!(
            (0..10).map(|q| next.member(1, q)).collect::<Vec<_>>(),
            (0..10).map(|q| m.member(1, q)).collect::<Vec<_>>()
        );
    }

    #[test]
    fn each_sources_draws_come_in_order_so_its_own_epochs_stay_contiguous() {
        // A small source drawn many times over (its own epochs restart inside
        // blocks) beside a large one.
        let m = MixOrder::new(spec(&[10, 3000], &[0.3, 0.7], Stop::AllExhausted), Some(4), 1).unwrap();
        let mut last = [None::<u64>; 2];
        for p in 0..m.len() {
            let (s, k) = m.source_at(p);
            assert!(last[s].is_none_or(|l| k == l + 1), "source {s}: draw {k} after {:?} at {p}", last[s]);
            last[s] = Some(k);
        }
        // Every window of the small source's size holds one own epoch at most twice over:
        // each of its records once per own epoch, in order of own epochs.
        let small: Vec<u64> = (0..m.len()).filter(|&p| m.source_at(p).0 == 0).map(|p| m.record_at(p)).collect();
        for (e, chunk) in small.chunks(10).enumerate() {
            let mut ids: Vec<u64> = chunk.iter().map(|r| r % m.total).collect();
            ids.sort();
            if chunk.len() == 10 {
                assert_eq!(ids, (0..10).collect::<Vec<_>>(), "own epoch {e} of the small source");
            }
        }
        // Ranks still get the proportions from every block.
        let share = |rank: u64| (rank..m.len()).step_by(4).filter(|&p| m.source_at(p).0 == 0).count() as f64;
        let per_rank = m.len() as f64 / 4.0;
        for r in 0..4 {
            assert!((share(r) / per_rank - 0.3).abs() < 0.02, "rank {r}: {}", share(r) / per_rank);
        }
    }

    #[test]
    fn bad_specs_are_refused() {
        for (s, msg) in [
            (spec(&[3, 3], &[1.0], Stop::FirstExhausted), "2 sources but 1 weights"),
            (spec(&[3], &[-1.0], Stop::FirstExhausted), "weight -1"),
            (spec(&[3], &[f64::NAN], Stop::FirstExhausted), "finite"),
            (spec(&[3, 3], &[0.0, 0.0], Stop::FirstExhausted), "all zero"),
            (spec(&[3, 0], &[1.0, 1.0], Stop::FirstExhausted), "source 1 is empty"),
        ] {
            let e = MixOrder::new(s, None, 0).unwrap_err().to_string();
            assert!(e.contains(msg), "{e} lacks {msg}");
        }
    }
}
