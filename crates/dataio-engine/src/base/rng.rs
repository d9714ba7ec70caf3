//! Determinism: keyed random streams and a keyed permutation.
//!
//! Both are counter-based (SplitMix64 finalizers over keyed counters), so a
//! value depends only on its key — (seed, epoch, record index, op) — never
//! on thread timing, concurrency, `order` or the number of ranks. They are
//! written here rather than taken from `rand` because `rand` does not promise
//! the same values across versions, and checkpoints must replay bit for bit.

/// SplitMix64's output function: a strong 64-bit mixer.
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Hashes a sequence of words into one key.
pub fn key(parts: &[u64]) -> u64 {
    let mut h = 0x9e37_79b9_7f4a_7c15u64;
    for &p in parts {
        h = mix64(h ^ mix64(p.wrapping_add(0x632b_e59b_d9b4_e019)));
    }
    h
}

/// A random stream keyed by (seed, epoch, record index, op).
#[derive(Debug, Clone)]
pub struct Stream {
    key: u64,
    counter: u64,
}

impl Stream {
    pub fn new(seed: u64, epoch: u64, index: u64, op: u64) -> Self {
        Stream { key: key(&[seed, epoch, index, op]), counter: 0 }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.counter += 1;
        mix64(self.key.wrapping_add(self.counter.wrapping_mul(0x9e37_79b9_7f4a_7c15)))
    }

    /// Uniform in [0, 1) with 53 bits.
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    pub fn range_f64(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.uniform()
    }

    /// Uniform integer in [0, n) (n > 0), without modulo bias worth noting (128-bit multiply).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    pub fn bernoulli(&mut self, p: f64) -> bool {
        self.uniform() < p
    }
}

/// A bijection of [0, n) keyed by (seed, epoch): a balanced Feistel network
/// over the next power of four, with cycle-walking back into range. O(1)
/// state, O(1) expected time per index; works for any n up to 2^62.
#[derive(Debug, Clone)]
pub struct Permutation {
    n: u64,
    half_bits: u32,
    keys: [u64; 4],
}

impl Permutation {
    pub fn new(n: u64, seed: u64, epoch: u64) -> Self {
        let bits = (64 - n.saturating_sub(1).leading_zeros()).max(2);
        let half_bits = bits.div_ceil(2);
        let base = key(&[seed, epoch, 0x5045_524d]);
        let keys = [mix64(base ^ 1), mix64(base ^ 2), mix64(base ^ 3), mix64(base ^ 4)];
        Permutation { n, half_bits, keys }
    }

    fn round(&self, x: u64) -> u64 {
        let mask = (1u64 << self.half_bits) - 1;
        let (mut l, mut r) = (x >> self.half_bits, x & mask);
        for k in self.keys {
            let f = mix64(r ^ k) & mask;
            (l, r) = (r, l ^ f);
        }
        (l << self.half_bits) | r
    }

    /// The record at position `i` of the shuffled order.
    pub fn apply(&self, i: u64) -> u64 {
        debug_assert!(i < self.n);
        let mut x = self.round(i);
        while x >= self.n {
            x = self.round(x);
        }
        x
    }

    pub fn len(&self) -> u64 {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permutation_is_a_bijection_for_many_sizes() {
        for n in [1u64, 2, 3, 7, 10, 100, 1000, 4097] {
            let p = Permutation::new(n, 42, 0);
            let mut seen = vec![false; n as usize];
            for i in 0..n {
                let j = p.apply(i) as usize;
                assert!(!seen[j], "n={n}: {j} twice");
                seen[j] = true;
            }
        }
    }

    #[test]
    fn permutation_depends_on_seed_and_epoch_only() {
        let a: Vec<u64> = (0..50).map(|i| Permutation::new(50, 1, 0).apply(i)).collect();
        let b: Vec<u64> = (0..50).map(|i| Permutation::new(50, 1, 0).apply(i)).collect();
        let c: Vec<u64> = (0..50).map(|i| Permutation::new(50, 1, 1).apply(i)).collect();
        let d: Vec<u64> = (0..50).map(|i| Permutation::new(50, 2, 0).apply(i)).collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_ne!(a, d);
        assert_ne!(a, (0..50).collect::<Vec<_>>());
    }

    #[test]
    fn a_billion_records_need_no_table() {
        let p = Permutation::new(1_000_000_000, 7, 3);
        let x = p.apply(999_999_999);
        assert!(x < 1_000_000_000);
    }

    #[test]
    fn streams_are_keyed_and_uniform_enough() {
        let mut s = Stream::new(1, 2, 3, 4);
        let mut t = Stream::new(1, 2, 3, 4);
        assert_eq!(s.next_u64(), t.next_u64());
        let mut u = Stream::new(1, 2, 4, 4);
        assert_ne!(Stream::new(1, 2, 3, 4).next_u64(), u.next_u64());
        let mean: f64 = (0..10000).map(|_| s.uniform()).sum::<f64>() / 10000.0;
        assert!((mean - 0.5).abs() < 0.02, "{mean}");
        assert!((0..1000).all(|_| s.below(7) < 7));
    }
}
