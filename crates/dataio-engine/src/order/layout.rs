//! How a sized source is stored: [`Layout`].

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
