//! Batch formation: which records form each batch of an epoch, in submit
//! order, before anything is read or decoded.
//!
//! The executor asks a [`Planner`] for the next [`PlannedBatch`] and then
//! dispatches its rows. Keeping formation apart from execution is what lets
//! another process run the same batch: a planned batch carries each row's
//! record index (the key of every random draw) and schedule position (the
//! key of batch transforms, and the resume point), so whoever executes it
//! produces the same output bit for bit (see `Loader::start_planned`).
//!
//! Four planners:
//! * [`Scheduled`]: `batch()` over a sized source: the keyed permutation and
//!   shard interleave of [`Schedule`], records fetched by index;
//! * [`Streamed`]: `batch()` over a one-pass source, in arrival order;
//! * [`Grouped`]: `group_by(key)`: one batch per distinct key, in the order
//!   each key first arrived, with a bounded set of open groups;
//! * [`Explicit`]: batches planned elsewhere (a trainer), executed here.

use super::record::{Record, Value};
use super::source::RecordSource;
use crate::base::error::{Error, Result};
use crate::order::{Hosts, Rank, Schedule};
use crate::plan::{Plan, Shape};
use std::collections::{HashMap, HashSet, VecDeque};

/// One row of a planned batch.
#[derive(Debug, Clone)]
pub struct PlannedRow {
    /// The record's index: its place in a sized source, or its arrival
    /// position in a stream. Random ops are keyed by it.
    pub index: u64,
    /// This rank's schedule position of the row (the row's ordinal in this
    /// rank's share of the epoch).
    pub position: u64,
    pub record: Record,
}

/// The records of one batch, decided before any of them is read.
#[derive(Debug, Clone)]
pub struct PlannedBatch {
    /// Submit order within the epoch (after any resume skip).
    pub seq: u64,
    pub rows: Vec<PlannedRow>,
    /// The resume point after this batch: the schedule position after its
    /// last row for `batch()`, the number of groups up to and including it
    /// for `group_by`.
    pub end_position: u64,
}

/// Yields an epoch's batches in submit order.
pub trait Planner: Send {
    fn next(&mut self) -> Result<Option<PlannedBatch>>;
    /// Records this rank gets this epoch, when the source is sized.
    fn rank_count(&self) -> Option<u64> {
        None
    }
}

/// Batches planned by someone else (one item per batch).
pub trait PlannedSource: Send {
    fn next_planned(&mut self) -> Result<Option<PlannedBatch>>;
}

/// The planner for `plan` over `source` with the loader's options.
/// What decides the batches of an epoch: the planner reads these and
/// nothing else of a loader's options.
#[derive(Clone, Debug, Default)]
pub struct PlanOptions {
    pub seed: Option<u64>,
    pub epoch: u64,
    pub shard: Rank,
    /// This rank's schedule position to start from (resume).
    pub start: u64,
    /// Global positions consumed before an elastic resume (see `Schedule::resumed`).
    pub global_offset: u64,
    /// Physical and canonical hosts (see [`crate::order`]); one of
    /// each reads a sharded source as one global order.
    pub hosts: Hosts,
    /// Per canonical partition, what was consumed before this run (a
    /// resume of a host-partitioned order; empty for none).
    pub partition_offsets: Vec<u64>,
}

pub fn planner(plan: &Plan, source: Box<dyn RecordSource>, opts: &PlanOptions) -> Result<Box<dyn Planner>> {
    opts.shard.check()?;
    opts.hosts.check(&opts.shard)?;
    let len = source.len();
    if opts.seed.is_some() && len.is_none() {
        return Err(Error::invalid("seed= needs a sized record source (len() and indexing: a list, parquet_records, tar_records, tfrecord_records), not a one-pass iterable"));
    }
    if opts.shard.pad && len.is_none() {
        return Err(Error::invalid("shard pad=True needs a sized sequence of records (len() and indexing)"));
    }
    Ok(match (&plan.shape, len) {
        (Shape::GroupBy { .. }, _) if opts.seed.is_some() => {
            return Err(Error::invalid("group_by keeps the arrival order of its key, so it cannot be combined with seed= shuffling; shuffle in the sampler instead"));
        }
        (Shape::GroupBy { key, max_open_groups }, _) => Box::new(Grouped {
            stream: StreamReader::new(source, 64, opts.shard),
            key: key.clone(),
            max_open: (*max_open_groups).max(1),
            open: VecDeque::new(),
            open_index: HashMap::new(),
            first_open: 0,
            evicted: HashSet::new(),
            ready: VecDeque::new(),
            skip: opts.start,
            rank_pos: 0,
            seq: 0,
        }),
        (Shape::Batch { size, drop_last }, Some(n)) => {
            let layout = source.layout();
            let hosted = opts.hosts.partitioned() || !opts.partition_offsets.is_empty();
            let schedule = match (source.mix(), &layout) {
                (Some(spec), _) => {
                    Schedule::mixed(spec, opts.seed, opts.epoch, opts.shard, opts.global_offset, opts.start)?
                }
                (None, Some(l)) if hosted => {
                    if opts.global_offset != 0 {
                        return Err(Error::invalid(
                            "a host-partitioned order resumes from partition offsets, not a global offset",
                        ));
                    }
                    Schedule::hosted(
                        n,
                        l,
                        opts.seed,
                        opts.epoch,
                        opts.shard,
                        opts.hosts,
                        &opts.partition_offsets,
                        opts.start,
                    )?
                }
                (None, _) => Schedule::with_layout(
                    n,
                    layout.as_ref(),
                    opts.seed,
                    opts.epoch,
                    opts.shard,
                    opts.global_offset,
                    opts.start,
                )?,
            };
            // Sharded sources hear of the records a window ahead, so their
            // shards are fetched before the batches that read them are formed.
            // A host's ranks share its partitions' windows (one per partition it reads).
            let local = if hosted { (opts.shard.of / opts.hosts.count.max(1)).max(1) } else { opts.shard.of };
            let per_host = if hosted { (opts.hosts.canonical / opts.hosts.count.max(1)).max(1) } else { 1 };
            // A mix of sharded sources reads ahead as one alone does: by the
            // widest window among its sources.
            let window = layout.as_ref().map(|l| l.window).or_else(|| {
                source.mix().and_then(|m| m.parts.iter().filter_map(|p| p.layout.as_ref().map(|l| l.window)).max())
            });
            let window_per_rank = window.map(|w| (w * per_host).div_ceil(local)).unwrap_or(0);
            let lookahead = window.map(|_| window_per_rank.max(*size as u64 * 4)).unwrap_or(0);
            Box::new(Scheduled {
                schedule,
                source,
                size: *size,
                drop_last: *drop_last,
                seq: 0,
                lookahead,
                hinted: 0,
                window_per_rank,
            })
        }
        (Shape::Batch { size, drop_last }, None) => {
            let mut stream = StreamReader::new(source, (*size).max(16), opts.shard);
            stream.to_skip = opts.start;
            Box::new(Streamed { stream, size: *size, drop_last: *drop_last, rank_pos: opts.start, seq: 0 })
        }
    })
}

/// `batch()` over a sized source.
pub struct Scheduled {
    schedule: Schedule,
    source: Box<dyn RecordSource>,
    size: usize,
    drop_last: bool,
    seq: u64,
    /// Positions ahead of the current one that the source hears of (0: none).
    lookahead: u64,
    /// This rank's positions the source has heard of, up to here.
    hinted: u64,
    /// The shuffle window in this rank's positions.
    window_per_rank: u64,
}

impl Planner for Scheduled {
    fn next(&mut self) -> Result<Option<PlannedBatch>> {
        self.hint_ahead();
        let picks = self.schedule.take(self.size as u64);
        if picks.is_empty() || (self.drop_last && picks.len() < self.size) {
            return Ok(None);
        }
        let indices: Vec<u64> = picks.iter().map(|p| p.1).collect();
        let records = self.source.get(&indices)?;
        if records.len() != indices.len() {
            return Err(Error::invalid(format!(
                "the record source returned {} records for {} indices",
                records.len(),
                indices.len()
            )));
        }
        let rows: Vec<PlannedRow> = picks
            .iter()
            .zip(records)
            .map(|(&(position, index), record)| PlannedRow { index, position, record })
            .collect();
        Ok(Some(self.emit(rows)))
    }

    fn rank_count(&self) -> Option<u64> {
        Some(self.schedule.count())
    }
}

impl Scheduled {
    /// Tells the source which records come next (a lookahead from the
    /// current position), again each time half of it has been consumed.
    fn hint_ahead(&mut self) {
        if self.lookahead == 0 {
            return;
        }
        let pos = self.schedule.position();
        let count = self.schedule.count();
        let soon = (self.window_per_rank + 2 * self.size as u64) as usize;
        if self.hinted == 0 {
            let schedule = &self.schedule;
            self.source.epoch_reads(&mut (pos..count).map(|p| schedule.index_at(p)), soon);
        }
        if self.hinted >= count || self.hinted > pos + self.lookahead / 2 {
            return;
        }
        // From the current position: the source keeps open what these need.
        let to = (pos + self.lookahead).min(count);
        let upcoming: Vec<u64> = (pos..to).map(|p| self.schedule.index_at(p)).collect();
        self.hinted = to;
        self.source.will_need(&upcoming, soon);
    }

    fn emit(&mut self, rows: Vec<PlannedRow>) -> PlannedBatch {
        let end_position = rows.last().map(|r| r.position + 1).unwrap_or(0);
        let seq = self.seq;
        self.seq += 1;
        PlannedBatch { seq, rows, end_position }
    }
}

/// `batch()` over a one-pass source, in arrival order.
pub struct Streamed {
    stream: StreamReader,
    size: usize,
    drop_last: bool,
    rank_pos: u64,
    seq: u64,
}

impl Planner for Streamed {
    fn next(&mut self) -> Result<Option<PlannedBatch>> {
        let mut rows = Vec::with_capacity(self.size);
        while rows.len() < self.size {
            let Some((index, record)) = self.stream.next()? else { break };
            rows.push(PlannedRow { index, position: self.rank_pos, record });
            self.rank_pos += 1;
        }
        if rows.is_empty() || (self.drop_last && rows.len() < self.size) {
            return Ok(None);
        }
        let seq = self.seq;
        self.seq += 1;
        Ok(Some(PlannedBatch { seq, rows, end_position: self.rank_pos }))
    }
}

/// A group key: record values compared exactly (floats by their bits).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum GroupKey {
    Null,
    Bool(bool),
    Int(i64),
    Float(u64),
    Str(String),
    Bytes(Vec<u8>),
}

impl From<&Value> for GroupKey {
    fn from(v: &Value) -> Self {
        match v {
            Value::Null => GroupKey::Null,
            Value::Bool(b) => GroupKey::Bool(*b),
            Value::Int(i) => GroupKey::Int(*i),
            Value::Float(f) => GroupKey::Float(f.to_bits()),
            Value::Str(s) => GroupKey::Str(s.clone()),
            Value::Bytes(b) => GroupKey::Bytes(b.to_vec()),
        }
    }
}

/// `group_by(key)`: one batch per distinct key, emitted in the order each
/// key first arrived.
///
/// A group stays open while records may still join it. At most
/// `max_open_groups` are open at once: when another key arrives, the oldest
/// open group is emitted (it is next in arrival order anyway). A record whose
/// key belongs to a group emitted that way is an error naming the key and the
/// knob, never a silent second batch. At the end of the stream every open
/// group is emitted. With contiguous keys (`from_sampler`, `collate()`) a group
/// is complete when the next key arrives; `max_open_groups=1` emits it then.
///
/// Resume counts groups: `start` groups are formed again (their records are
/// re-read, not decoded) and dropped, so the decisions above replay exactly.
pub struct Grouped {
    stream: StreamReader,
    key: String,
    max_open: usize,
    /// Open groups in arrival order; group ordinal `first_open + i` at `i`.
    open: VecDeque<(GroupKey, Vec<PlannedRow>)>,
    open_index: HashMap<GroupKey, u64>,
    first_open: u64,
    /// Keys of groups emitted to make room (their return is an error).
    evicted: HashSet<GroupKey>,
    ready: VecDeque<(u64, Vec<PlannedRow>)>,
    /// Groups to drop (resume).
    skip: u64,
    rank_pos: u64,
    seq: u64,
}

impl Grouped {
    /// Emits the oldest open group; `evict` remembers its key (it was closed
    /// early, so a record with that key must not come back).
    fn close_oldest(&mut self, evict: bool) {
        let Some((key, rows)) = self.open.pop_front() else { return };
        self.open_index.remove(&key);
        if evict {
            self.evicted.insert(key);
        }
        self.ready.push_back((self.first_open, rows));
        self.first_open += 1;
    }
}

impl Planner for Grouped {
    fn next(&mut self) -> Result<Option<PlannedBatch>> {
        loop {
            while let Some((ordinal, rows)) = self.ready.pop_front() {
                if ordinal < self.skip {
                    continue;
                }
                let seq = self.seq;
                self.seq += 1;
                return Ok(Some(PlannedBatch { seq, rows, end_position: ordinal + 1 }));
            }
            let Some((index, record)) = self.stream.next()? else {
                // End of the stream: every open group, in arrival order.
                if self.open.is_empty() {
                    return Ok(None);
                }
                while !self.open.is_empty() {
                    self.close_oldest(false);
                }
                continue;
            };
            let key = self.key.as_str();
            let value = record.get(key).ok_or_else(|| {
                Error::invalid(format!(
                    "group_by({key:?}): record {} (position {index}) has no field {key:?}",
                    record.key(index)
                ))
            })?;
            let k = GroupKey::from(value);
            let shown = value.display();
            let row = PlannedRow { index, position: self.rank_pos, record };
            self.rank_pos += 1;
            if let Some(&ordinal) = self.open_index.get(&k) {
                self.open[(ordinal - self.first_open) as usize].1.push(row);
                continue;
            }
            if self.evicted.contains(&k) {
                return Err(Error::invalid(format!(
                    "group_by({key:?}): key {} came back at position {index} (record {}) after its group was \
                     emitted to keep at most max_open_groups={} groups open; raise group_by(..., max_open_groups=) \
                     or bring the records of each key closer together",
                    shown,
                    row.record.key(index),
                    self.max_open
                )));
            }
            if self.open.len() == self.max_open {
                self.close_oldest(true);
            }
            self.open_index.insert(k.clone(), self.first_open + self.open.len() as u64);
            self.open.push_back((k, vec![row]));
        }
    }
}

/// Batches planned elsewhere; `seq` is renumbered in the order they come.
pub struct Explicit {
    source: Box<dyn PlannedSource>,
    seq: u64,
}

impl Explicit {
    pub fn new(source: Box<dyn PlannedSource>) -> Self {
        Explicit { source, seq: 0 }
    }
}

impl Planner for Explicit {
    fn next(&mut self) -> Result<Option<PlannedBatch>> {
        let Some(mut b) = self.source.next_planned()? else { return Ok(None) };
        if b.rows.is_empty() {
            return Err(Error::invalid(format!("planned batch {} has no rows", b.seq)));
        }
        b.seq = self.seq;
        self.seq += 1;
        Ok(Some(b))
    }
}

/// Reads a one-pass source in chunks, keeping this rank's records.
struct StreamReader {
    source: Box<dyn RecordSource>,
    buffered: VecDeque<Record>,
    exhausted: bool,
    pos: u64,
    to_skip: u64,
    chunk: usize,
    shard: Rank,
}

impl StreamReader {
    fn new(source: Box<dyn RecordSource>, chunk: usize, shard: Rank) -> Self {
        StreamReader { source, buffered: VecDeque::new(), exhausted: false, pos: 0, to_skip: 0, chunk, shard }
    }

    /// The next (stream position, record) of this rank, after any resume skip.
    fn next(&mut self) -> Result<Option<(u64, Record)>> {
        loop {
            if self.buffered.is_empty() {
                if self.exhausted {
                    return Ok(None);
                }
                let more = self.source.next_chunk(self.chunk)?;
                if more.is_empty() {
                    self.exhausted = true;
                    return Ok(None);
                }
                self.buffered.extend(more);
            }
            let rec = self.buffered.pop_front().expect("non-empty");
            let pos = self.pos;
            self.pos += 1;
            if pos % self.shard.of == self.shard.id {
                if self.to_skip > 0 {
                    self.to_skip -= 1;
                    continue;
                }
                return Ok(Some((pos, rec)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::compile;
    use crate::runtime::source::VecSource;

    fn grouped(keys: &[&str], max_open: usize, start: u64) -> Result<Vec<(Vec<u64>, u64)>> {
        let plan = compile(&format!(
            r#"{{"version":1,"slots":[{{"name":"x","ops":[{{"op":"decode_bytes"}}]}}],
               "shape":{{"kind":"group_by","key":"g","max_open_groups":{max_open}}}}}"#
        ))
        .unwrap();
        let recs = keys.iter().map(|k| Record::new(vec![("g".into(), Value::Str(k.to_string()))])).collect();
        let opts = PlanOptions { start, ..Default::default() };
        let mut p = planner(&plan, Box::new(VecSource::stream(recs)), &opts)?;
        let mut out = Vec::new();
        while let Some(b) = p.next()? {
            out.push((b.rows.iter().map(|r| r.index).collect(), b.end_position));
        }
        Ok(out)
    }

    #[test]
    fn group_by_emits_one_batch_per_distinct_key_in_first_arrival_order() {
        let got = grouped(&["a", "b", "a", "c", "b", "a"], 8, 0).unwrap();
        assert_eq!(got, vec![(vec![0, 2, 5], 1), (vec![1, 4], 2), (vec![3], 3)]);
    }

    #[test]
    fn a_full_set_of_open_groups_emits_the_oldest_and_a_returning_key_is_an_error() {
        let got = grouped(&["a", "a", "b", "c", "c"], 2, 0).unwrap();
        assert_eq!(got, vec![(vec![0, 1], 1), (vec![2], 2), (vec![3, 4], 3)]);
        let e = grouped(&["a", "b", "c", "a"], 2, 0).unwrap_err().to_string();
        assert!(e.contains("key a came back") && e.contains("max_open_groups=2"), "{e}");
    }

    #[test]
    fn resume_skips_whole_groups() {
        let all = grouped(&["a", "b", "a", "c", "b", "a", "d"], 8, 0).unwrap();
        let tail = grouped(&["a", "b", "a", "c", "b", "a", "d"], 8, 2).unwrap();
        assert_eq!(&all[2..], &tail[..]);
    }
}
