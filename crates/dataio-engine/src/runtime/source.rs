//! Where records come from. The binding layer implements [`RecordSource`]
//! over Python sequences and iterables (one GIL acquisition per chunk).

use super::record::Record;
use crate::base::error::Result;
use crate::order::Layout;
use crate::order::MixSpec;

#[allow(clippy::len_without_is_empty)] // `len` is None for unsized sources
pub trait RecordSource: Send {
    /// The number of records, for sized sources (needed for shuffle and padding).
    fn len(&self) -> Option<u64>;
    /// Records at these indices (sized sources only).
    fn get(&mut self, indices: &[u64]) -> Result<Vec<Record>>;
    /// The next records in order, at most `max`; empty at the end.
    fn next_chunk(&mut self, max: usize) -> Result<Vec<Record>>;
    /// Restart from the beginning (a new epoch of an iterable source).
    fn rewind(&mut self) -> Result<()>;
    /// A sized source stored in shards declares them: its epoch order is
    /// then shuffled two-level (see [`crate::order::ShardOrder`]).
    fn layout(&self) -> Option<Layout> {
        None
    }
    /// A mixed source (`dataio.mix`) declares its parts, weights and stop
    /// rule: its epoch is the mix's draws over the concatenated records.
    fn mix(&self) -> Option<MixSpec> {
        None
    }
    /// Records the planner will ask for, in order: a source may start
    /// fetching what they live in (shards) ahead of `get`. The first `soon`
    /// come within the next few batches (worth keeping open).
    fn will_need(&mut self, _indices: &[u64], _soon: usize) {}
    /// Every record this run of the epoch will read, in order, once before
    /// the first: a source may learn when it is done with what it stores
    /// (a shard's last record), to let it go first. `soon` is as in
    /// `will_need`: reads closer than that keep what they read open.
    fn epoch_reads(&mut self, _indices: &mut dyn Iterator<Item = u64>, _soon: usize) {}
}

/// An in-memory source, for tests and for record lists built natively.
pub struct VecSource {
    records: Vec<Record>,
    pos: usize,
    sized: bool,
}

impl VecSource {
    pub fn new(records: Vec<Record>) -> Self {
        VecSource { records, pos: 0, sized: true }
    }

    /// The same records, but pretending to be an unsized stream.
    pub fn stream(records: Vec<Record>) -> Self {
        VecSource { records, pos: 0, sized: false }
    }
}

impl RecordSource for VecSource {
    fn len(&self) -> Option<u64> {
        self.sized.then_some(self.records.len() as u64)
    }
    fn get(&mut self, indices: &[u64]) -> Result<Vec<Record>> {
        Ok(indices.iter().map(|&i| self.records[i as usize].clone()).collect())
    }
    fn next_chunk(&mut self, max: usize) -> Result<Vec<Record>> {
        let end = (self.pos + max).min(self.records.len());
        let out = self.records[self.pos..end].to_vec();
        self.pos = end;
        Ok(out)
    }
    fn rewind(&mut self) -> Result<()> {
        self.pos = 0;
        Ok(())
    }
}
