//! The executor: one coordinator thread per loader forms batches from the
//! schedule, admits at most `concurrency` records at a time, and hands each
//! record to the process-wide pools (remote reads on the IO runtime, decode
//! and transform on the CPU pool). Finished batches wait, at most
//! `prefetch` of them ahead of the consumer, in a channel; the consumer
//! reorders them (submit order) or takes them as they come (completion).

use super::batch::{Batch, BatchBuilder, RowMeta};
use super::delivery::Delivery;
use super::native_ops::{self, StoreObject};
use super::planner::{self, Explicit, PlanOptions, PlannedSource, Planner};
use super::record::{Record, Value};
use super::slot::{decoder_name, eval_field_pred, run_slot, Dest, ExternalOps, SampleKey, SlotInput, SlotOut};
use super::source::RecordSource;
use crate::base::error::{Error, Result, RowContext};
use crate::host::pools;
use crate::io::backend::Backend;
use crate::io::registry;
use crate::plan::{Plan, Shape};
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use futures::FutureExt;
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub struct Options {
    /// What decides which batches an epoch has (seed, epoch, shard, start).
    pub plan: PlanOptions,
    pub concurrency: usize,
    pub completion_order: bool,
    pub skip_errors: bool,
    /// Batches ready ahead of the consumer; `None` takes the plan's.
    pub prefetch: Option<usize>,
    /// Sizes and versions of the objects ranged decoders read, kept across
    /// the runs that share it (a Python `Loader`'s epochs); `None`: a `head`
    /// per read object.
    pub metas: Option<Arc<ObjectMetas>>,
    /// End positions (rank positions) of batches a previous run of this
    /// epoch delivered past its resume position (`order="completion"`):
    /// they are not run again. Sorted.
    pub skip_ends: Vec<u64>,
}

/// The size and version of each object a ranged decoder read, from one
/// `head` each: a loader's later epochs read the same objects without
/// asking again (a video dataset's clip per file per epoch was a HEAD per
/// clip over S3). An object is taken as it was at its first read for the
/// loader's life, as a shard dataset's listing is; a changed object shows
/// as a read past its end or a typed decode error, never as silent data
/// from another version (the video index is keyed by the same version).
#[derive(Debug, Default)]
pub struct ObjectMetas {
    map: Mutex<std::collections::HashMap<String, (u64, String)>>,
}

impl ObjectMetas {
    /// The most objects kept (about 100 bytes each); past it the map starts over.
    pub const MAX: usize = 1 << 18;

    pub fn get(&self, uri: &str) -> Option<(u64, String)> {
        self.map.lock().unwrap().get(uri).cloned()
    }

    pub fn put(&self, uri: &str, size: u64, version: &str) {
        let mut m = self.map.lock().unwrap();
        if m.len() >= Self::MAX {
            m.clear();
        }
        m.insert(uri.to_string(), (size, version.to_string()));
    }

    pub fn len(&self) -> usize {
        self.map.lock().unwrap().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            plan: PlanOptions::default(),
            concurrency: 16,
            completion_order: false,
            skip_errors: false,
            prefetch: None,
            metas: None,
            skip_ends: Vec::new(),
        }
    }
}

/// A counting gate that a closing loader can open for everyone.
///
/// One thread acquires (the coordinator); many release. A release wakes the
/// waiter only when it is waiting and `slack` places are free, so a full
/// gate over short tasks costs one wake-up per `slack` releases instead of a
/// futex wake per release (on 2 cores over short captions, the gate was 17%
/// of the loader's CPU: docs/benchmark.md "Tokenization").
struct Gate {
    state: Mutex<GateState>,
    cv: Condvar,
    cap: usize,
    slack: usize,
}

struct GateState {
    count: usize,
    waiting: bool,
}

impl Gate {
    fn new(cap: usize) -> Self {
        let cap = cap.max(1);
        Gate {
            state: Mutex::new(GateState { count: 0, waiting: false }),
            cv: Condvar::new(),
            cap,
            slack: (cap / 8).max(1),
        }
    }
    /// Waits for room; false when the loader stopped meanwhile.
    fn acquire(&self, stop: &AtomicBool) -> bool {
        let mut s = self.state.lock().unwrap();
        while s.count >= self.cap {
            if stop.load(Ordering::Acquire) {
                return false;
            }
            s.waiting = true;
            s = self.cv.wait_timeout(s, Duration::from_millis(50)).unwrap().0;
        }
        s.count += 1;
        true
    }
    fn release(&self) {
        let mut s = self.state.lock().unwrap();
        s.count = s.count.saturating_sub(1);
        if s.waiting && s.count + self.slack <= self.cap {
            s.waiting = false;
            drop(s);
            self.cv.notify_one();
        }
    }
    /// Wakes the waiter (the loader is closing).
    fn open(&self) {
        self.state.lock().unwrap().waiting = false;
        self.cv.notify_all();
    }
    fn current(&self) -> usize {
        self.state.lock().unwrap().count
    }
}

/// Counters cheap enough to leave on (relaxed atomics).
#[derive(Default)]
pub struct Counters {
    pub records_admitted: AtomicU64,
    pub records_done: AtomicU64,
    pub records_failed: AtomicU64,
    pub bytes_read: AtomicU64,
    pub fetch_ns: AtomicU64,
    pub decode_ns: AtomicU64,
    pub batches_built: AtomicU64,
    pub batches_delivered: AtomicU64,
    pub source_ns: AtomicU64,
    pub wait_ns: AtomicU64,
}

/// A snapshot of a loader's counters and queues.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    pub records_admitted: u64,
    pub records_done: u64,
    pub records_failed: u64,
    pub bytes_read: u64,
    pub fetch_seconds: f64,
    pub decode_seconds: f64,
    pub source_seconds: f64,
    pub consumer_wait_seconds: f64,
    pub batches_built: u64,
    pub batches_delivered: u64,
    pub records_in_flight: usize,
    pub batches_in_window: usize,
    pub batches_ready: usize,
    pub elapsed_seconds: f64,
    /// A mixed source: per part, (records read, seconds their reads took).
    pub part_reads: Vec<(u64, f64)>,
}

enum Msg {
    Batch(u64, Result<Batch>),
    Done(u64),
    Failed(Error),
}

struct Shared {
    plan: Arc<Plan>,
    opts: Options,
    external: Option<Arc<dyn ExternalOps>>,
    stop: AtomicBool,
    admission: Gate,
    window: Gate,
    counters: Counters,
    tx: Sender<Msg>,
    /// A mixed source's parts: where each starts in the concatenation, and
    /// per part the records read and the seconds their reads took.
    parts: Option<PartReads>,
}

struct PartReads {
    bases: Vec<u64>,
    total: u64,
    records: Vec<AtomicU64>,
    read_ns: Vec<AtomicU64>,
}

impl PartReads {
    fn new(spec: &crate::order::MixSpec) -> PartReads {
        let mut bases = Vec::new();
        let mut total = 0;
        for p in &spec.parts {
            bases.push(total);
            total += p.len;
        }
        let n = bases.len();
        PartReads {
            bases,
            total,
            records: (0..n).map(|_| AtomicU64::new(0)).collect(),
            read_ns: (0..n).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    fn add(&self, index: u64, ns: u64) {
        if self.total == 0 {
            return;
        }
        let i = index % self.total;
        let part = self.bases.partition_point(|&b| b <= i).saturating_sub(1);
        self.records[part].fetch_add(1, Ordering::Relaxed);
        self.read_ns[part].fetch_add(ns, Ordering::Relaxed);
    }
}

impl Shared {
    fn read_took(&self, index: u64, ns: u64) {
        self.counters.fetch_ns.fetch_add(ns, Ordering::Relaxed);
        if let Some(p) = &self.parts {
            p.add(index, ns);
        }
    }
}

pub struct Loader {
    shared: Arc<Shared>,
    rx: Receiver<Msg>,
    coordinator: Option<JoinHandle<()>>,
    reorder: BTreeMap<u64, Result<Batch>>,
    next_seq: u64,
    delivered: u64,
    total: Option<u64>,
    failed: Option<Error>,
    started: Instant,
    /// The resume position: after the longest delivered prefix of batches.
    delivery: Delivery,
    rank_count: Option<u64>,
}

/// What `next` found.
pub enum Next {
    Batch(Batch),
    End,
    Timeout,
}

impl Loader {
    /// Runs `plan` over `source`: batches are formed by the plan's shape
    /// stage (see [`planner::planner`]).
    pub fn start(
        plan: Arc<Plan>,
        source: Box<dyn RecordSource>,
        opts: Options,
        external: Option<Arc<dyn ExternalOps>>,
    ) -> Result<Loader> {
        let parts = source.mix().map(|m| PartReads::new(&m));
        let planner = planner::planner(&plan, source, &opts.plan)?;
        Self::run(plan, planner, opts, external, parts)
    }

    /// Runs batches planned elsewhere (by a trainer's planner, for a worker):
    /// each comes out as it would from [`Loader::start`] over the same records.
    pub fn start_planned(
        plan: Arc<Plan>,
        source: Box<dyn PlannedSource>,
        opts: Options,
        external: Option<Arc<dyn ExternalOps>>,
    ) -> Result<Loader> {
        Self::run(plan, Box::new(Explicit::new(source)), opts, external, None)
    }

    fn run(
        plan: Arc<Plan>,
        planner: Box<dyn Planner>,
        opts: Options,
        external: Option<Arc<dyn ExternalOps>>,
        parts: Option<PartReads>,
    ) -> Result<Loader> {
        super::slot::prepare_native_ops(&plan)?;
        let rank_count = planner.rank_count();
        let per_batch = match plan.shape {
            Shape::Batch { size, .. } => size,
            Shape::GroupBy { .. } => 1,
        };
        let prefetch = opts.prefetch.unwrap_or(plan.prefetch);
        let window = prefetch + opts.concurrency.div_ceil(per_batch).max(1);
        let (tx, rx) = crossbeam_channel::unbounded();
        let shared = Arc::new(Shared {
            plan: plan.clone(),
            admission: Gate::new(opts.concurrency),
            window: Gate::new(window),
            opts: opts.clone(),
            external,
            stop: AtomicBool::new(false),
            counters: Counters::default(),
            tx,
            parts,
        });
        let sh = shared.clone();
        let coordinator = std::thread::Builder::new()
            .name("dataio-coordinator".into())
            .spawn(move || {
                let mut planner = planner;
                let result = catch_unwind(AssertUnwindSafe(|| coordinate(&sh, &mut *planner)));
                match result {
                    Ok(Ok(n)) => {
                        let _ = sh.tx.send(Msg::Done(n));
                    }
                    Ok(Err(e)) => {
                        let _ = sh.tx.send(Msg::Failed(e));
                    }
                    Err(_) => {
                        let _ = sh.tx.send(Msg::Failed(Error::invalid("internal error: the coordinator panicked")));
                    }
                }
            })
            .map_err(|e| Error::invalid(format!("cannot start the loader thread: {e}")))?;
        Ok(Loader {
            shared,
            rx,
            coordinator: Some(coordinator),
            reorder: BTreeMap::new(),
            next_seq: 0,
            delivered: 0,
            total: None,
            failed: None,
            started: Instant::now(),
            delivery: Delivery::new(opts.plan.start, 0),
            rank_count,
        })
    }

    /// The next batch, waiting at most `timeout`.
    pub fn next(&mut self, timeout: Duration) -> Result<Next> {
        if let Some(e) = &self.failed {
            return Err(clone_err(e));
        }
        let t0 = Instant::now();
        let deadline = t0 + timeout;
        loop {
            let ready = if self.shared.opts.completion_order {
                self.reorder.pop_first().map(|(_, b)| b)
            } else {
                self.reorder.remove(&self.next_seq)
            };
            if let Some(result) = ready {
                self.next_seq += 1;
                self.delivered += 1;
                self.shared.window.release();
                self.shared.counters.wait_ns.fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
                return match result {
                    Ok(b) => {
                        self.shared.counters.batches_delivered.fetch_add(1, Ordering::Relaxed);
                        self.delivery.delivered(b.seq, b.end_position);
                        Ok(Next::Batch(b))
                    }
                    Err(e) => {
                        self.failed = Some(clone_err(&e));
                        self.close();
                        Err(e)
                    }
                };
            }
            if self.total.is_some_and(|t| self.delivered >= t) {
                return Ok(Next::End);
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(Next::Timeout);
            }
            match self.rx.recv_timeout(deadline - now) {
                Ok(Msg::Batch(seq, b)) => {
                    self.reorder.insert(seq, b);
                }
                Ok(Msg::Done(n)) => self.total = Some(n),
                Ok(Msg::Failed(e)) => {
                    self.failed = Some(clone_err(&e));
                    self.close();
                    return Err(e);
                }
                Err(RecvTimeoutError::Timeout) => return Ok(Next::Timeout),
                Err(RecvTimeoutError::Disconnected) => return Ok(Next::End),
            }
        }
    }

    /// Stops all work: no new records are admitted, tasks in flight skip
    /// their work, and every queued batch (and its buffers) is dropped.
    pub fn close(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        self.shared.admission.open();
        self.shared.window.open();
        if let Some(h) = self.coordinator.take() {
            let _ = h.join();
        }
        self.reorder.clear();
        while self.rx.try_recv().is_ok() {}
    }

    pub fn is_closed(&self) -> bool {
        self.shared.stop.load(Ordering::Acquire)
    }

    /// This rank's position after the last delivered batch.
    pub fn position(&self) -> u64 {
        self.delivery.position()
    }

    /// End positions of the batches this run delivered past
    /// [`Loader::position`] (`order="completion"`): with the position, what
    /// a resume must not deliver again.
    pub fn ahead_ends(&self) -> Vec<u64> {
        self.delivery.ahead_ends()
    }

    /// Records this rank gets this epoch (sized sources).
    pub fn rank_count(&self) -> Option<u64> {
        self.rank_count
    }

    pub fn stats(&self) -> Stats {
        let c = &self.shared.counters;
        let ns = |a: &AtomicU64| a.load(Ordering::Relaxed) as f64 / 1e9;
        Stats {
            records_admitted: c.records_admitted.load(Ordering::Relaxed),
            records_done: c.records_done.load(Ordering::Relaxed),
            records_failed: c.records_failed.load(Ordering::Relaxed),
            bytes_read: c.bytes_read.load(Ordering::Relaxed),
            fetch_seconds: ns(&c.fetch_ns),
            decode_seconds: ns(&c.decode_ns),
            source_seconds: ns(&c.source_ns),
            consumer_wait_seconds: ns(&c.wait_ns),
            batches_built: c.batches_built.load(Ordering::Relaxed),
            batches_delivered: c.batches_delivered.load(Ordering::Relaxed),
            records_in_flight: self.shared.admission.current(),
            batches_in_window: self.shared.window.current(),
            batches_ready: self.reorder.len() + self.rx.len(),
            elapsed_seconds: self.started.elapsed().as_secs_f64(),
            part_reads: match &self.shared.parts {
                Some(p) => p
                    .records
                    .iter()
                    .zip(&p.read_ns)
                    .map(|(r, t)| (r.load(Ordering::Relaxed), t.load(Ordering::Relaxed) as f64 / 1e9))
                    .collect(),
                None => Vec::new(),
            },
        }
    }
}

impl Drop for Loader {
    fn drop(&mut self) {
        self.close();
    }
}

fn clone_err(e: &Error) -> Error {
    match e {
        Error::Row { context, source } => Error::Row { context: context.clone(), source: Box::new(clone_err(source)) },
        Error::Foreign { kind, message, uri, payload } => {
            Error::Foreign { kind: *kind, message: message.clone(), uri: uri.clone(), payload: payload.clone() }
        }
        other => Error::Foreign {
            kind: other.kind(),
            message: other.to_string(),
            uri: None,
            payload: crate::base::error::ForeignPayload(Arc::new(())),
        },
    }
}

/// Takes planned batches and dispatches their rows. Returns the number of
/// batches formed.
fn coordinate(sh: &Arc<Shared>, planner: &mut dyn Planner) -> Result<u64> {
    let plan = sh.plan.clone();
    let mut seq = 0u64;
    loop {
        if sh.stop.load(Ordering::Acquire) {
            break;
        }
        let t0 = Instant::now();
        let planned = planner.next()?;
        sh.counters.source_ns.fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
        let Some(planned) = planned else { break };
        // Delivered by the run this one resumes (ahead of its position).
        if sh.opts.skip_ends.binary_search(&planned.end_position).is_ok() {
            continue;
        }
        if !sh.window.acquire(&sh.stop) {
            break;
        }
        let metas: Vec<RowMeta> = planned
            .rows
            .iter()
            .map(|r| RowMeta {
                index: r.index,
                position: r.position,
                key: r.record.key(r.index),
                context: r.record.context.clone(),
            })
            .collect();
        let builder = Arc::new(BatchBuilder::new(seq, &plan, metas, planned.end_position));
        sh.counters.batches_built.fetch_add(1, Ordering::Relaxed);
        for (row, r) in planned.rows.into_iter().enumerate() {
            if !sh.admission.acquire(&sh.stop) {
                // Closing: account for the rows never dispatched.
                if builder.row_done() {
                    return Ok(seq);
                }
                continue;
            }
            sh.counters.records_admitted.fetch_add(1, Ordering::Relaxed);
            dispatch(sh.clone(), builder.clone(), row, r.index, r.record);
        }
        seq += 1;
    }
    Ok(seq)
}

/// What a slot's field holds, once looked at.
enum Input {
    Ready(SlotInput),
    /// A URI whose backend reads from memory (`Capabilities::mapped`): read
    /// inline on the CPU thread that decodes it.
    Inline(Arc<dyn Backend>, String),
    /// A URI whose reads wait on a network: fetched on the IO runtime first.
    Remote(Arc<dyn Backend>, String),
    /// A URI a ranged plugin decoder reads itself, by range, on the CPU
    /// thread that decodes it (nothing is fetched first).
    Ranged(Arc<dyn Backend>, String),
    Missing,
}

fn classify(plan: &Plan, rec: &Record, idx: u64) -> Vec<Result<Input>> {
    plan.slots
        .iter()
        .map(|slot| {
            if let Some(b) = &rec.broken {
                return Err(Error::corrupt(&b.0, &b.1, b.2.clone()).in_row(RowContext {
                    key: rec.key(idx),
                    index: idx,
                    slot: slot.name.clone(),
                    op: "read".into(),
                    uri: Some(b.0.clone()),
                }));
            }
            if let Some(pred) = &slot.active_when {
                if !eval_field_pred(pred, rec) {
                    return Ok(Input::Missing);
                }
            }
            match rec.get(&slot.field) {
                None | Some(Value::Null) if slot.optional => Ok(Input::Missing),
                None => Err(Error::invalid(format!("the record has no field {:?}", slot.field))),
                Some(Value::Null) => Err(Error::invalid(format!(
                    "field {:?} is None (make the slot optional=True to allow that)",
                    slot.field
                ))),
                Some(Value::Str(s))
                    if takes_text(&slot.decoder)
                        || (matches!(slot.decoder, crate::plan::Decoder::Bytes) && !looks_like_uri(s)) =>
                {
                    Ok(Input::Ready(SlotInput::Data(bytes::Bytes::copy_from_slice(s.as_bytes()))))
                }
                Some(Value::Str(s)) => registry::backend_for(s).map(|(b, _)| {
                    if reads_ranges(&slot.decoder) {
                        Input::Ranged(b, s.clone())
                    } else if b.capabilities().mapped {
                        Input::Inline(b, s.clone())
                    } else {
                        Input::Remote(b, s.clone())
                    }
                }),
                Some(Value::Bytes(b)) => Ok(Input::Ready(SlotInput::Data(b.clone()))),
                Some(v) => Ok(Input::Ready(SlotInput::Scalar(v.clone()))),
            }
            .map_err(|e: Error| {
                e.in_row(RowContext {
                    key: rec.key(idx),
                    index: idx,
                    slot: slot.name.clone(),
                    op: "read".into(),
                    uri: None,
                })
            })
        })
        .collect()
}

/// Whether a string field under `decode_bytes()` names something to read
/// (then its bytes are the object's) rather than being the value itself (then
/// its UTF-8 bytes are): a URI with a scheme (`s3://b/k`, `file:///x`), or a
/// path that says it is one, absolute or with a directory in it (`/data/a`,
/// `./a.bin`, `~/a`, `images/a.jpg`). Labels and text (`"0"`, `"cat"`,
/// `"a cat on a mat"`) are values; a file in the current directory is read
/// as `./name`. Every other decoder reads any string field as a URI.
pub fn looks_like_uri(s: &str) -> bool {
    if let Some((scheme, _)) = s.split_once("://") {
        let mut chars = scheme.chars();
        return chars.next().is_some_and(|c| c.is_ascii_alphabetic())
            && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    }
    if s.starts_with("file:") {
        return true;
    }
    !s.is_empty() && !s.chars().any(char::is_whitespace) && (s.starts_with('~') || s.contains('/'))
}

/// A string field read as a URI that was not found: say so, naming the field,
/// so that a label read as a path is recognisable in the error.
fn note_read_as_uri(e: Error, field: &str) -> Error {
    match e {
        Error::NotFound { uri, detail } => {
            let note = format!("field {field:?} was read as a URI");
            let detail = if detail.is_empty() { note } else { format!("{detail}; {note}") };
            Error::NotFound { uri, detail }
        }
        e => e,
    }
}

/// Whether the slot's decoder is a native plugin op of text values (a string field is its input).
fn takes_text(decoder: &crate::plan::Decoder) -> bool {
    match decoder {
        crate::plan::Decoder::External { name, .. } => native_ops::get(name).is_some_and(|op| op.takes_text()),
        _ => false,
    }
}

/// Whether the slot's decoder is a native plugin op that reads its input by range.
fn reads_ranges(decoder: &crate::plan::Decoder) -> bool {
    match decoder {
        crate::plan::Decoder::External { name, .. } => native_ops::get(name).is_some_and(|op| op.reads_ranges()),
        _ => false,
    }
}

fn dispatch(sh: Arc<Shared>, builder: Arc<BatchBuilder>, row: usize, idx: u64, rec: Record) {
    let inputs = classify(&sh.plan, &rec, idx);
    let remote = inputs.iter().any(|i| matches!(i, Ok(Input::Remote(..))));
    if !remote {
        let pools = pools::get();
        pools.cpu.spawn(move || process(&sh, &builder, row, idx, &rec, inputs));
        return;
    }
    let pools = pools::get();
    pools.io.spawn(async move {
        let t0 = Instant::now();
        let mut fetched = Vec::with_capacity(inputs.len());
        for (si, input) in inputs.into_iter().enumerate() {
            fetched.push(match input {
                Ok(Input::Remote(b, u)) if !sh.stop.load(Ordering::Acquire) => match b.read_all(&u).await {
                    Ok(data) => {
                        sh.counters.bytes_read.fetch_add(data.len() as u64, Ordering::Relaxed);
                        Ok(Input::Ready(SlotInput::Data(data)))
                    }
                    Err(e) => Err(note_read_as_uri(e, &sh.plan.slots[si].field).in_row(RowContext {
                        key: rec.key(idx),
                        index: idx,
                        slot: sh.plan.slots[si].name.clone(),
                        op: "read".into(),
                        uri: Some(u),
                    })),
                },
                other => other,
            });
        }
        sh.read_took(idx, t0.elapsed().as_nanos() as u64);
        pools::get().cpu.spawn(move || process(&sh, &builder, row, idx, &rec, fetched));
    });
}

fn process(
    sh: &Arc<Shared>,
    builder: &Arc<BatchBuilder>,
    row: usize,
    idx: u64,
    rec: &Record,
    inputs: Vec<Result<Input>>,
) {
    if !sh.stop.load(Ordering::Acquire) {
        let outcome = catch_unwind(AssertUnwindSafe(|| process_row(sh, builder, row, idx, rec, inputs)));
        let err = match outcome {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(e),
            Err(_) => Some(Error::invalid("internal error: a kernel panicked").in_row(RowContext {
                key: rec.key(idx),
                index: idx,
                ..Default::default()
            })),
        };
        if let Some(e) = err {
            sh.counters.records_failed.fetch_add(1, Ordering::Relaxed);
            builder.fail(row, e);
        }
        sh.counters.records_done.fetch_add(1, Ordering::Relaxed);
    }
    sh.admission.release();
    if builder.row_done() {
        if sh.stop.load(Ordering::Acquire) {
            return;
        }
        let seq = builder.seq;
        let first_position = builder.rows.first().map(|r| r.position).unwrap_or(0);
        let mut result = builder.finish(sh.opts.skip_errors);
        if let Ok(batch) = &mut result {
            if !sh.plan.batch_ops.is_empty() {
                let seed = sh.opts.plan.seed.unwrap_or(0);
                if let Err(e) =
                    super::batch_ops::apply(&sh.plan.batch_ops, batch, seed, sh.opts.plan.epoch, first_position)
                {
                    result = Err(e);
                }
            }
        }
        let _ = sh.tx.send(Msg::Batch(seq, result));
    }
}

fn process_row(
    sh: &Arc<Shared>,
    builder: &BatchBuilder,
    row: usize,
    idx: u64,
    rec: &Record,
    inputs: Vec<Result<Input>>,
) -> Result<()> {
    let plan = &sh.plan;
    for (si, (slot, input)) in plan.slots.iter().zip(inputs).enumerate() {
        let ctx = |op: &str, uri: Option<String>| RowContext {
            key: rec.key(idx),
            index: idx,
            slot: slot.name.clone(),
            op: op.to_string(),
            uri,
        };
        let (input, uri) = match input? {
            Input::Missing => continue,
            Input::Ready(i) => (i, rec.origin.as_deref().map(str::to_string)),
            Input::Inline(b, u) => {
                let t0 = Instant::now();
                // A mapped backend's read completes on its first poll.
                let read = b.read_all(&u);
                let data = match read.now_or_never() {
                    Some(r) => r,
                    None => pools::block_on(b.read_all(&u)),
                }
                .map_err(|e| note_read_as_uri(e, &slot.field).in_row(ctx("read", Some(u.clone()))))?;
                sh.read_took(idx, t0.elapsed().as_nanos() as u64);
                sh.counters.bytes_read.fetch_add(data.len() as u64, Ordering::Relaxed);
                (SlotInput::Data(data), Some(u))
            }
            Input::Ranged(b, u) => {
                let known = sh.opts.metas.as_ref().and_then(|m| m.get(&u));
                let (size, version) = match known {
                    Some(k) => k,
                    None => {
                        let (size, version) = StoreObject::head(&*b, &u)
                            .map_err(|e| note_read_as_uri(e, &slot.field).in_row(ctx("read", Some(u.clone()))))?;
                        if let Some(m) = &sh.opts.metas {
                            m.put(&u, size, &version);
                        }
                        (size, version)
                    }
                };
                let counters = sh.clone();
                let counted = Arc::new(move |n: u64| {
                    counters.counters.bytes_read.fetch_add(n, Ordering::Relaxed);
                });
                let object = StoreObject::new(b, u.clone(), size, version, counted);
                (SlotInput::Object(Arc::new(object)), Some(u))
            }
            Input::Remote(_, u) => unreachable!("remote input {u} should have been fetched"),
        };
        let key =
            SampleKey { seed: sh.opts.plan.seed.unwrap_or(0), epoch: sh.opts.plan.epoch, index: idx, slot: si as u64 };
        let t0 = Instant::now();
        // SAFETY: this task owns `row` until it calls row_done.
        let dest_row = unsafe { builder.row_mut(si, row) };
        let dest = Dest { row: dest_row, expect_shape: builder.static_shape(si) };
        let out = run_slot(slot, input, rec, key, sh.external.as_deref(), dest);
        sh.counters.decode_ns.fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
        match out {
            Ok(SlotOut::Written) => builder.mark_written(si, row),
            Ok(SlotOut::Tensor(t)) => {
                if builder.static_shape(si).is_some() {
                    return Err(Error::invalid("static slot produced a loose tensor")
                        .in_row(ctx(decoder_name(&slot.decoder), uri)));
                }
                builder.put_tensor(si, row, t)
            }
            // A plugin op that failed named itself (slot::plugin_op_failed);
            // any other error names its op (Error::Decode) or the decoder's.
            Err(Error::Row { context, source }) => {
                return Err(Error::Row { context: Box::new(ctx(&context.op, uri)), source });
            }
            Err(e) => {
                let op = match &e {
                    Error::Decode { op, .. } | Error::Encode { op, .. } => op.clone(),
                    _ => decoder_name(&slot.decoder).to_string(),
                };
                return Err(e.in_row(ctx(&op, uri)));
            }
        }
    }
    Ok(())
}
