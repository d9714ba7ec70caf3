//! The orders, against brute force.

use super::hosts::Merge;
use super::shard_order::Stripe;
use super::*;
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
fn run(l: &Layout, seed: Option<u64>, epoch: u64, of: u64, pad: bool, hosts: Hosts, offsets: &[u64]) -> Vec<Vec<u64>> {
    (0..of)
        .map(|id| {
            let o = HostOrder::new(l, seed, epoch, Rank { id, of, pad }, hosts, offsets).unwrap();
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
                        assert!(mine.windows(2).all(|w| w[0] < w[1]), "{counts:?} spread {spread}: shard {s} {mine:?}");
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
            let shard = Rank { id, of, pad };
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
            HostOrder::new(&l, Some(3), 0, Rank { id, of: old * 2, pad: false }, Hosts { count: old, canonical }, &[])
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
        HostOrder::new(&l, Some(3), 0, Rank { id: 0, of: 8, pad: false }, Hosts { count: 4, canonical: 4 }, &[])
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
    let e = HostOrder::new(&l, None, 0, Rank { id: 0, of: 6, pad: false }, Hosts { count: 4, canonical: 4 }, &[])
        .unwrap_err();
    assert!(e.to_string().contains("does not split evenly"), "{e}");
    let e = HostOrder::new(&l, None, 0, Rank { id: 0, of: 2, pad: false }, Hosts { count: 2, canonical: 2 }, &[1])
        .unwrap_err();
    assert!(e.to_string().contains("canonical"), "{e}");
}
