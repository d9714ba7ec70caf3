//! Many shards as one sized record source.
//!
//! [`ShardSet::open`] learns every shard's sample count, in parallel, so the
//! set knows its size and per-shard counts without holding any sample: what
//! stays in memory is a count and an index handle per shard; a shard's
//! member table is loaded only while the shard is open. Records are served
//! from a bounded set of open shards; their member bytes are slices of the
//! shard's payload (a map of a local file or of a cache entry), handed to
//! the decoders as they are.
//!
//! A count comes, cheapest first, from a shard index written beside the
//! shards (webdataset's `wids-shard-index-v1`, read by the caller and handed
//! over as [`GivenCounts`]: opening then fetches no shard), from the kept
//! index of an earlier run on this host, or from building the shard's member
//! table, which reads the whole shard. With given counts the member table is
//! built when the shard is first read for an epoch, and a table that
//! disagrees with the given count is a typed error naming the shard and the
//! index: the epoch's order was planned on that count.

use super::cache::ShardCache;
use super::index::{identity, Format, IndexStore, Samples, ShardIndex};
use crate::base::error::{Error, Result};
use crate::io::backend::{Backend, ObjectMeta};
use crate::io::registry::backend_for;
use crate::order::Layout;
use crate::runtime::{Record, RecordSource, Value};
use bytes::Bytes;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// How a [`ShardSet`] reads.
#[derive(Debug, Clone)]
pub struct ShardSetOptions {
    pub format: Format,
    /// Gunzip payloads: `None` decides by the name (`.gz`, `.tgz`).
    pub gunzip: Option<bool>,
    pub check_crc: bool,
    /// Shuffle window in samples (see [`crate::order::ShardOrder`]).
    pub window: u64,
    /// Windows each shard's samples are spread over (see [`Layout`]).
    pub spread: u64,
    /// Where kept indexes live (created private; see [`IndexStore`]).
    pub index_dir: std::path::PathBuf,
    /// The cache for remote shards; `None` reads them into memory per open.
    pub cache: Option<ShardCache>,
    /// Shards indexed at once when the set opens.
    pub parallelism: usize,
    /// How CSV rows become fields (the columns read as typed values).
    pub csv: std::sync::Arc<crate::kernels::formats::csv::CsvSpec>,
}

/// Sample counts (and sizes, where known) from a shard index written beside
/// the shards, so that opening a set reads no shard.
#[derive(Debug, Clone, Default)]
pub struct GivenCounts {
    /// The index's URI, named in every error about a count it gave.
    pub source: String,
    /// Samples per shard, in the order of the set's URIs.
    pub counts: Vec<u64>,
    /// Bytes per shard as the index recorded them (`filesize`), when it did:
    /// a shard of another size has changed since the index was written.
    pub sizes: Vec<Option<u64>>,
}

struct Shard {
    uri: String,
    identity: String,
    /// The stored object's size (compressed, for gzip shards).
    size: u64,
    count: u64,
    gz: bool,
    /// Mapped (local) shards are read where they are, never cached.
    mapped: bool,
}

#[derive(Clone)]
struct Open {
    payload: Bytes,
    index: Arc<ShardIndex>,
    /// A shard read by member ranges (`ShardSet::open_ranged`): per sample,
    /// whether its wanted members were fetched (the rest of the payload is
    /// zeros). `None`: the whole payload is there.
    fetched: Option<Arc<Vec<bool>>>,
}

#[derive(Default)]
struct Counters {
    shards_opened: AtomicU64,
    bytes_read: AtomicU64,
    prefetched: AtomicU64,
    /// Requests to the store, by kind (a `head` of a shard; a whole read).
    heads: AtomicU64,
    gets: AtomicU64,
    /// Shards fetched again within one epoch of this process (see `fetched`).
    refetched: AtomicU64,
    /// Reopens served from memory (`ShardSource::parked`), not the store.
    unparked: AtomicU64,
    /// The stored bytes of the shards the last epoch read at once at its
    /// peak (each from its first record to its last): the cache budget that
    /// fetches each of them once.
    working_set: AtomicU64,
    /// Payload bytes of the records served, each its shard's payload over
    /// its count (in thousandths of a byte): what the store traffic paid for.
    delivered_milli: AtomicU64,
    /// Of `delivered_milli`, what is not yet added to the host's counter.
    unreported_milli: AtomicU64,
    /// The host's cache counters (added, delivered) when the set opened.
    host_added_at_open: AtomicU64,
    host_delivered_at_open: AtomicU64,
}

/// Delivered bytes a process adds to its host's counter at a time (and
/// whenever its figures are read).
const REPORT_DELIVERED_EVERY: u64 = 4 << 20;

/// How members are fetched by range: neighbours (a sample's members, the
/// tar headers between them) share a request, but the store's usual 1 MiB
/// gap would read the members a plan skips too.
fn member_ranges(b: &dyn Backend) -> crate::io::ranges::RangePolicy {
    crate::io::ranges::RangePolicy { gap: 8 << 10, ..crate::io::ranges::RangePolicy::for_backend(b) }
}

/// A shard to read by member ranges: its member table, the spans to
/// fetch (sorted, disjoint) and which samples they serve.
struct RangedPlan {
    index: ShardIndex,
    spans: Vec<(u64, u64)>,
    fetched: Vec<bool>,
}

/// The shards of one dataset, indexed.
pub struct ShardSet {
    shards: Vec<Shard>,
    base: Vec<u64>,
    total: u64,
    opts: ShardSetOptions,
    store: IndexStore,
    counters: Arc<Counters>,
    /// The shard index the counts came from, when they came from one.
    counted_by: Option<String>,
    /// Shards `record()` opened lately, most recent last: Python's
    /// `records[i]` (planning for Ray, record maps) reads sample after sample
    /// of the same few shards, and must not check and reopen a shard (a
    /// `head`, its member table) per sample.
    recent: Mutex<VecDeque<(usize, Open)>>,
    /// Which epoch of this set is being read: bumped by every
    /// [`ShardSet::source`] (one per epoch).
    generation: AtomicU64,
    /// Per shard, the generation its identity was last checked against the
    /// store in (0: never): a remote shard is asked about once per epoch,
    /// however often its stripe reopens it.
    checked: Vec<AtomicU64>,
    /// Per shard, the generation it was last fetched from the store in: a
    /// second fetch within one is counted (`refetched`) and named.
    fetched: Vec<AtomicU64>,
    /// The last few shards fetched twice in one epoch (for the report).
    refetched_uris: Mutex<VecDeque<String>>,
}

/// Runs `f` over `0..n` on up to `threads` threads and returns the results
/// in order; the first error in that order wins, after every item ran (work
/// done for the others is kept, e.g. a count in the index store).
fn in_parallel<T: Send>(n: usize, threads: usize, f: impl Fn(usize) -> Result<T> + Sync) -> Result<Vec<T>> {
    let next = AtomicUsize::new(0);
    let out: Mutex<Vec<Option<Result<T>>>> = Mutex::new((0..n).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..threads.clamp(1, n.max(1)) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    break;
                }
                let r = f(i);
                out.lock().unwrap()[i] = Some(r);
            });
        }
    });
    out.into_inner().unwrap().into_iter().map(|r| r.expect("every item visited")).collect()
}

fn zst_by_name(uri: &str) -> bool {
    uri.split(['?', '#']).next().unwrap_or(uri).ends_with(".zst")
}

fn gz_by_name(uri: &str) -> bool {
    let path = uri.split(['?', '#']).next().unwrap_or(uri);
    path.ends_with(".gz") || path.ends_with(".tgz") || path.ends_with(".gzip")
}

impl ShardSet {
    /// Counts `uris` (or loads their kept counts) and returns the set.
    /// `known[i]`, when given, is shard i's (size, etag) from a listing,
    /// which spares a `head` per shard; a shard without one is asked.
    pub fn open(uris: Vec<String>, known: Vec<Option<(u64, String)>>, opts: ShardSetOptions) -> Result<Arc<ShardSet>> {
        Self::open_with(uris, known, None, opts, &|_, _| {})
    }

    /// [`ShardSet::open`], with counts from a shard index when `given`, and
    /// `before_counting(shards, bytes)` called once, before any shard is
    /// read, when some shards have neither a given nor a kept count and must
    /// be read whole to be counted (`bytes`: their stored size, all told).
    ///
    /// Opening is in two passes: first every shard's identity (a listing's
    /// or a `head`) and the counts that need no read, then, only for the
    /// shards left, the member tables. So a caller can say what the second
    /// pass will cost before it starts, and a set whose counts are all given
    /// or kept fetches no shard at all.
    pub fn open_with(
        uris: Vec<String>,
        known: Vec<Option<(u64, String)>>,
        given: Option<GivenCounts>,
        opts: ShardSetOptions,
        before_counting: &(dyn Fn(usize, u64) + Sync),
    ) -> Result<Arc<ShardSet>> {
        if uris.is_empty() {
            return Err(Error::invalid("a shard source needs at least one shard"));
        }
        if let Some(g) = &given {
            if g.counts.len() != uris.len() || (!g.sizes.is_empty() && g.sizes.len() != uris.len()) {
                return Err(Error::invalid(format!(
                    "the shard index {} gives {} counts for {} shards",
                    g.source,
                    g.counts.len(),
                    uris.len()
                )));
            }
        }
        let store = IndexStore::open(&opts.index_dir)?;
        let probe = ShardSet {
            shards: Vec::new(),
            base: Vec::new(),
            total: 0,
            opts: opts.clone(),
            store: store.clone(),
            counters: Arc::new(Counters::default()),
            counted_by: given.as_ref().map(|g| g.source.clone()),
            recent: Mutex::default(),
            generation: AtomicU64::new(1),
            checked: Vec::new(),
            fetched: Vec::new(),
            refetched_uris: Mutex::default(),
        };
        let threads = opts.parallelism;
        // Pass 1: identities, and the counts that cost no shard read.
        let found: Vec<(Shard, Option<u64>)> = in_parallel(uris.len(), threads, |i| {
            let shard = probe.identify(&uris[i], known.get(i).cloned().flatten())?;
            let kept = store.try_load_count(&shard.uri, opts.format, &shard.identity)?;
            let Some(g) = &given else { return Ok((shard, kept)) };
            let n = g.counts[i];
            if let Some(Some(size)) = g.sizes.get(i) {
                if *size != shard.size {
                    return Err(Error::corrupt(
                        &shard.uri,
                        "shard",
                        format!(
                            "it is {} bytes, the shard index {} says {size} (filesize): the shard changed since the \
                             index was written; write the index again (`python -m dataio index`)",
                            shard.size, g.source
                        ),
                    ));
                }
            }
            // A count this host already took from the shard's own bytes
            // outranks the index: a disagreement is caught here, free.
            if let Some(k) = kept.filter(|&k| k != n) {
                return Err(probe.disagrees(&shard.uri, k, n));
            }
            Ok((shard, Some(n)))
        })?;
        let (mut shards, counts): (Vec<Shard>, Vec<Option<u64>>) = found.into_iter().unzip();
        // Pass 2: build the member tables of the shards left.
        let todo: Vec<usize> = (0..shards.len()).filter(|&i| counts[i].is_none()).collect();
        if !todo.is_empty() {
            before_counting(todo.len(), todo.iter().map(|&i| shards[i].size).sum());
        }
        let built = in_parallel(todo.len(), threads, |j| probe.count_one(&shards[todo[j]]))?;
        for (i, n) in counts.into_iter().enumerate() {
            if let Some(n) = n {
                shards[i].count = n;
            }
        }
        for (&i, n) in todo.iter().zip(built) {
            shards[i].count = n;
        }
        let mut base = Vec::with_capacity(shards.len());
        let mut total = 0u64;
        for s in &shards {
            base.push(total);
            total += s.count;
        }
        let ShardSet { counters, counted_by, .. } = probe;
        if let Some(cache) = &opts.cache {
            counters.host_added_at_open.store(cache.host_bytes_added(), Ordering::Relaxed);
            counters.host_delivered_at_open.store(cache.host_bytes_delivered(), Ordering::Relaxed);
        }
        let n = shards.len();
        Ok(Arc::new(ShardSet {
            shards,
            base,
            total,
            opts,
            store,
            counters,
            counted_by,
            recent: Mutex::default(),
            generation: AtomicU64::new(1),
            checked: (0..n).map(|_| AtomicU64::new(0)).collect(),
            fetched: (0..n).map(|_| AtomicU64::new(0)).collect(),
            refetched_uris: Mutex::default(),
        }))
    }

    fn meta(&self, uri: &str) -> Result<(Arc<dyn Backend>, ObjectMeta)> {
        let (b, _) = backend_for(uri)?;
        if !b.capabilities().mapped {
            self.counters.heads.fetch_add(1, Ordering::Relaxed);
        }
        let meta = crate::host::pools::block_on(b.head(uri))?;
        Ok((b, meta))
    }

    /// A shard's identity and size (from `known`, or a `head`); count 0.
    fn identify(&self, uri: &str, known: Option<(u64, String)>) -> Result<Shard> {
        let (b, _) = backend_for(uri)?;
        let (size, id) = match known {
            Some((size, etag)) => (size, identity(size, Some(&etag), None)),
            None => {
                if !b.capabilities().mapped {
                    self.counters.heads.fetch_add(1, Ordering::Relaxed);
                }
                let meta = crate::host::pools::block_on(b.head(uri))?;
                (meta.size, identity(meta.size, meta.etag.as_deref(), meta.mtime))
            }
        };
        let gz = self.opts.gunzip.unwrap_or_else(|| gz_by_name(uri));
        let mapped = b.capabilities().mapped;
        Ok(Shard { uri: uri.to_string(), identity: id, size, count: 0, gz, mapped })
    }

    /// Counts a shard by building its member table from its whole payload
    /// (through the cache when it is remote), and keeps the table.
    fn count_one(&self, shard: &Shard) -> Result<u64> {
        let (b, _) = backend_for(&shard.uri)?;
        let payload = self.payload(shard, &b)?;
        let index =
            ShardIndex::build(&shard.uri, self.opts.format, shard.identity.clone(), &payload, self.opts.check_crc)?;
        self.store.save(&shard.uri, &index)?;
        Ok(index.len() as u64)
    }

    /// The error for a shard whose own bytes hold `actual` samples where
    /// the shard index it was counted by says `said`.
    fn disagrees(&self, uri: &str, actual: u64, said: u64) -> Error {
        let index = self.counted_by.as_deref().unwrap_or("(none)");
        Error::corrupt(
            uri,
            "shard",
            format!(
                "it holds {actual} samples, the shard index {index} says {said} (nsamples): the index is stale or \
                 was written for other shards; write it again (`python -m dataio index`)"
            ),
        )
    }

    /// The shard's payload: mapped in place, from the cache, or fetched.
    fn payload(&self, shard: &Shard, b: &Arc<dyn Backend>) -> Result<Bytes> {
        let fetch = || -> Result<Bytes> {
            let raw = crate::host::pools::block_on(b.read_all(&shard.uri))?;
            if !shard.mapped {
                self.counters.bytes_read.fetch_add(raw.len() as u64, Ordering::Relaxed);
                self.counters.gets.fetch_add(1, Ordering::Relaxed);
                self.note_fetch(shard);
            }
            if shard.gz {
                crate::io::archive::gunzip(&shard.uri, &raw, crate::io::archive::DEFAULT_MAX_GUNZIP)
            } else if zst_by_name(&shard.uri) && self.opts.gunzip.is_none() {
                crate::io::archive::unzstd(&shard.uri, &raw, crate::io::archive::DEFAULT_MAX_GUNZIP)
            } else {
                Ok(raw)
            }
        };
        match (&self.opts.cache, shard.mapped) {
            (Some(cache), false) => cache.get(&shard.uri, &shard.identity, fetch),
            _ => fetch(),
        }
    }

    /// Counts a second fetch of `shard` within this epoch, and keeps its URI.
    fn note_fetch(&self, shard: &Shard) {
        let Some(i) = self.shards.iter().position(|s| std::ptr::eq(s, shard)) else { return };
        let Some(slot) = self.fetched.get(i) else { return };
        let gen = self.generation.load(Ordering::Relaxed);
        if slot.swap(gen, Ordering::Relaxed) == gen {
            self.counters.refetched.fetch_add(1, Ordering::Relaxed);
            let mut uris = self.refetched_uris.lock().unwrap_or_else(|p| p.into_inner());
            uris.push_back(shard.uri.clone());
            while uris.len() > 8 {
                uris.pop_front();
            }
        }
    }

    /// The stored bytes of the shards this process's last epoch read at
    /// once at its peak (see `epoch_reads`), 0 before one started.
    pub fn working_set(&self) -> u64 {
        self.counters.working_set.load(Ordering::Relaxed)
    }

    /// Requests to the store by kind (heads, whole reads), shards fetched
    /// twice within an epoch, and the last few of those.
    /// Reopens served from memory instead of a second fetch (shards kept while
    /// the cache could not hold them).
    pub fn unparked(&self) -> u64 {
        self.counters.unparked.load(Ordering::Relaxed)
    }

    pub fn requests(&self) -> (u64, u64, u64, Vec<String>) {
        let c = &self.counters;
        let uris = self.refetched_uris.lock().unwrap_or_else(|p| p.into_inner()).iter().cloned().collect();
        (c.heads.load(Ordering::Relaxed), c.gets.load(Ordering::Relaxed), c.refetched.load(Ordering::Relaxed), uris)
    }

    /// Opens shard `i`: its payload and its index, checked against each other.
    fn open_shard(&self, i: usize) -> Result<Open> {
        let shard = &self.shards[i];
        let b = self.checked_backend(i)?;
        let index = self.store.try_load(&shard.uri, self.opts.format, &shard.identity)?;
        let payload = self.payload(shard, &b)?;
        let index = match index {
            Some(i) => i,
            None => {
                let i = ShardIndex::build(
                    &shard.uri,
                    self.opts.format,
                    shard.identity.clone(),
                    &payload,
                    self.opts.check_crc,
                )?;
                let _ = self.store.save(&shard.uri, &i);
                i
            }
        };
        if index.payload_len == payload.len() as u64 && index.len() as u64 != shard.count && self.counted_by.is_some() {
            return Err(self.disagrees(&shard.uri, index.len() as u64, shard.count));
        }
        if index.payload_len != payload.len() as u64 || index.len() as u64 != shard.count {
            return Err(Error::corrupt(
                &shard.uri,
                "shard",
                format!(
                    "its index says {} samples in {} bytes, the shard has {} bytes (truncated or replaced)",
                    shard.count,
                    index.payload_len,
                    payload.len()
                ),
            ));
        }
        self.counters.shards_opened.fetch_add(1, Ordering::Relaxed);
        Ok(Open { payload, index: Arc::new(index), fetched: None })
    }

    /// How to open shard `i` by the ranges of the members `fields` names of
    /// the samples `reads` (local indices) holds, when the plan skips some
    /// members and the ranges fetch less than half the shard: a remote,
    /// uncompressed tar shard whose member table is kept (an earlier epoch
    /// or `python -m dataio index` built it) and that no cache entry holds.
    /// `None`: open it whole. Asks the store nothing.
    fn ranged_plan(&self, i: usize, fields: &[String], reads: &[u32]) -> Result<Option<RangedPlan>> {
        let shard = &self.shards[i];
        let zst = zst_by_name(&shard.uri) && self.opts.gunzip.is_none();
        let plain = !(shard.gz || zst);
        let cached = self.opts.cache.as_ref().is_some_and(|c| c.contains(&shard.uri, &shard.identity));
        if shard.mapped || !plain || cached || self.opts.format != Format::Tar || reads.is_empty() {
            return Ok(None);
        }
        let Some(index) = self.store.try_load(&shard.uri, self.opts.format, &shard.identity)? else {
            return Ok(None);
        };
        let Samples::Tar(samples) = &index.samples else { return Ok(None) };
        if index.len() as u64 != shard.count || index.payload_len != shard.size {
            return Ok(None); // opened whole, where the disagreement is a typed error
        }
        let mut fetched = vec![false; samples.len()];
        let mut spans: Vec<(u64, u64)> = Vec::new();
        let mut skipped = false;
        for &k in reads {
            let Some(sample) = samples.get(k as usize) else { return Ok(None) };
            if std::mem::replace(&mut fetched[k as usize], true) {
                continue;
            }
            for (ext, off, n) in &sample.members {
                if !fields.contains(ext) {
                    skipped = true;
                } else if *n > 0 {
                    spans.push((*off, *n));
                }
            }
        }
        // Only a plan that skips members reads by range: one reading every
        // member of some samples (a rank's share) fetches whole shards, one
        // request each, shared with the host's other ranks through the cache.
        if !skipped {
            return Ok(None);
        }
        spans.sort_unstable();
        if spans.windows(2).any(|w| w[0].0 + w[0].1 > w[1].0) {
            return Ok(None);
        }
        let (b, _) = backend_for(&shard.uri)?;
        let policy = member_ranges(&*b);
        let bytes: u64 = crate::io::ranges::plan(&spans, &policy).iter().map(|r| r.len).sum();
        if bytes.saturating_mul(2) > shard.size {
            return Ok(None);
        }
        Ok(Some(RangedPlan { index, spans, fetched }))
    }

    /// Opens shard `i` by the ranges `plan` names (see [`Self::ranged_plan`]).
    fn open_ranged(&self, i: usize, plan: RangedPlan) -> Result<Open> {
        let shard = &self.shards[i];
        let b = self.checked_backend(i)?;
        let policy = member_ranges(&*b);
        // Zeroed memory: the pages no member lands in are never touched.
        let mut buf = vec![0u8; plan.index.payload_len as usize];
        let mut rest: &mut [u8] = &mut buf;
        let mut at = 0u64;
        let mut ranges: Vec<(u64, &mut [u8])> = Vec::with_capacity(plan.spans.len());
        for &(off, n) in &plan.spans {
            let (_, tail) = std::mem::take(&mut rest).split_at_mut((off - at) as usize);
            let (piece, tail) = tail.split_at_mut(n as usize);
            ranges.push((off, piece));
            rest = tail;
            at = off + n;
        }
        let stats =
            crate::host::pools::block_on(crate::io::ranges::read_ranges_into(&*b, &shard.uri, ranges, &policy))?;
        self.counters.bytes_read.fetch_add(stats.fetched, Ordering::Relaxed);
        self.counters.gets.fetch_add(stats.requests as u64, Ordering::Relaxed);
        self.counters.shards_opened.fetch_add(1, Ordering::Relaxed);
        Ok(Open { payload: Bytes::from(buf), index: Arc::new(plan.index), fetched: Some(Arc::new(plan.fetched)) })
    }

    /// The backend of shard `i`, its identity checked against the store
    /// (a changed shard is a typed error).
    fn checked_backend(&self, i: usize) -> Result<Arc<dyn Backend>> {
        let shard = &self.shards[i];
        // A remote shard's identity is asked of the store once per epoch:
        // reopened within it (its stripe comes round again), the cache
        // entry, named by that identity, is what was checked.
        let gen = self.generation.load(Ordering::Relaxed);
        Ok(match self.checked.get(i) {
            Some(c) if !shard.mapped && c.load(Ordering::Relaxed) == gen => backend_for(&shard.uri)?.0,
            _ => {
                let (b, meta) = self.meta(&shard.uri)?;
                let now = identity(meta.size, meta.etag.as_deref(), meta.mtime);
                if now != shard.identity {
                    return Err(Error::corrupt(
                        &shard.uri,
                        "shard",
                        format!(
                            "it changed since it was indexed ({} then, {now} now); open the source again",
                            shard.identity
                        ),
                    ));
                }
                if let Some(c) = self.checked.get(i) {
                    c.store(gen, Ordering::Relaxed);
                }
                b
            }
        })
    }

    pub fn len(&self) -> u64 {
        self.total
    }

    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    pub fn uris(&self) -> Vec<String> {
        self.shards.iter().map(|s| s.uri.clone()).collect()
    }

    pub fn counts(&self) -> Vec<u64> {
        self.shards.iter().map(|s| s.count).collect()
    }

    /// Stored bytes per shard (compressed, for gzip shards), as a listing or
    /// a `head` gave them when the set opened.
    pub fn sizes(&self) -> Vec<u64> {
        self.shards.iter().map(|s| s.size).collect()
    }

    /// The shard index the counts came from, if any.
    pub fn counted_by(&self) -> Option<&str> {
        self.counted_by.as_deref()
    }

    pub fn layout(&self) -> Layout {
        Layout::new(self.counts(), self.opts.window).with_spread(self.opts.spread)
    }

    pub fn options(&self) -> &ShardSetOptions {
        &self.opts
    }

    /// (shard, sample within it) of record `index`.
    pub fn locate(&self, index: u64) -> Result<(usize, usize)> {
        if index >= self.total {
            return Err(Error::invalid(format!("record {index} is out of range ({} samples)", self.total)));
        }
        let s = self.base.partition_point(|&b| b <= index) - 1;
        // Skip empty shards that start at the same place.
        let mut s = s;
        while self.shards[s].count == 0 {
            s += 1;
        }
        Ok((s, (index - self.base[s]) as usize))
    }

    /// Counters: shards opened, bytes read from the store, shards fetched ahead.
    pub fn counter_values(&self) -> (u64, u64, u64) {
        let c = &self.counters;
        (
            c.shards_opened.load(Ordering::Relaxed),
            c.bytes_read.load(Ordering::Relaxed),
            c.prefetched.load(Ordering::Relaxed),
        )
    }

    /// Store traffic against delivery: (payload bytes of the records this
    /// process served, each a share of its shard; and, with a cache, what
    /// every process of the host added to the cache and served since this
    /// set opened). The host's ratio is 1 when each shard it reads is
    /// fetched once.
    pub fn traffic(&self) -> (u64, Option<(u64, u64)>) {
        let c = &self.counters;
        self.report_delivered(0);
        let delivered = c.delivered_milli.load(Ordering::Relaxed) / 1000;
        let host = self.opts.cache.as_ref().map(|cache| {
            (
                cache.host_bytes_added().saturating_sub(c.host_added_at_open.load(Ordering::Relaxed)),
                cache.host_bytes_delivered().saturating_sub(c.host_delivered_at_open.load(Ordering::Relaxed)),
            )
        });
        (delivered, host)
    }

    /// Counts `milli` more delivered, and adds what is unreported to the
    /// host's counter once it reaches [`REPORT_DELIVERED_EVERY`] (or now, for 0).
    fn report_delivered(&self, milli: u64) {
        let c = &self.counters;
        c.delivered_milli.fetch_add(milli, Ordering::Relaxed);
        let pending = c.unreported_milli.fetch_add(milli, Ordering::Relaxed) + milli;
        if pending > 0 && (milli == 0 || pending / 1000 >= REPORT_DELIVERED_EVERY) {
            if let Some(cache) = &self.opts.cache {
                let taken = c.unreported_milli.swap(0, Ordering::Relaxed);
                cache.count_delivered(taken / 1000);
                // Keep the fraction of a byte for next time.
                c.unreported_milli.fetch_add(taken % 1000, Ordering::Relaxed);
            }
        }
    }

    /// Shards open at once: a window reads about `spread * window`
    /// samples' worth of shards.
    fn max_open(&self) -> usize {
        let avg = (self.total / self.shards.len().max(1) as u64).max(1);
        let spread = self.opts.spread.max(1);
        ((spread * self.opts.window).div_ceil(avg) as usize + 3).max(4).max(spread as usize + 3)
    }

    /// A record source over the set that reads `fields`, keeping at most
    /// `max_open` shards open.
    pub fn source(self: &Arc<Self>, fields: Vec<String>) -> ShardSource {
        let max_open = self.max_open();
        self.generation.fetch_add(1, Ordering::Relaxed);
        ShardSource {
            set: self.clone(),
            fields,
            open: HashMap::new(),
            lru: VecDeque::new(),
            max_open,
            fetching: Arc::new(Mutex::new(HashSet::new())),
            upcoming: HashSet::new(),
            cursor: 0,
            remaining: HashMap::new(),
            runs: HashMap::new(),
            consumed: 0,
            ahead: HashSet::new(),
            base: std::time::SystemTime::now(),
            parked: HashMap::new(),
            parked_bytes: 0,
            reads: HashMap::new(),
            ranged: HashMap::new(),
        }
    }

    /// One record with every member (for Python's `records[i]`).
    pub fn record(self: &Arc<Self>, index: u64) -> Result<Record> {
        let (s, k) = self.locate(index)?;
        let hit = {
            let mut recent = self.recent.lock().unwrap_or_else(|p| p.into_inner());
            let at = recent.iter().position(|(i, _)| *i == s);
            at.and_then(|at| recent.remove(at)).inspect(|entry| recent.push_back(entry.clone()))
        };
        let open = match hit {
            Some((_, open)) => open,
            None => {
                let open = self.open_shard(s)?;
                let mut recent = self.recent.lock().unwrap_or_else(|p| p.into_inner());
                recent.push_back((s, open.clone()));
                while recent.len() > self.max_open() {
                    recent.pop_front();
                }
                open
            }
        };
        let record = make_record(&self.shards[s], &open, k, None, &self.opts.csv)?;
        if let Some(b) = &record.broken {
            return Err(Error::corrupt(&b.0, &b.1, b.2.clone()));
        }
        self.report_delivered(open.payload.len() as u64 * 1000 / self.shards[s].count.max(1));
        Ok(record)
    }
}

/// Builds sample `k` of an open shard, with only `fields` (all when None).
fn make_record(
    shard: &Shard,
    open: &Open,
    k: usize,
    fields: Option<&[String]>,
    csv: &crate::kernels::formats::csv::CsvSpec,
) -> Result<Record> {
    let wanted = |name: &str| fields.is_none_or(|f| f.iter().any(|x| x == name));
    let mut out: Vec<(String, Value)> = Vec::new();
    let origin;
    let mut broken = None;
    match &open.index.samples {
        Samples::Tar(samples) => {
            let s = &samples[k];
            origin = format!("{}#{}", shard.uri, s.key);
            for (name, v) in [("key", &s.key), ("__key__", &s.key), ("__url__", &shard.uri), ("__shard__", &shard.uri)]
            {
                if wanted(name) {
                    out.push((name.to_string(), Value::Str(v.clone())));
                }
            }
            for (ext, off, n) in &s.members {
                if wanted(ext) {
                    out.push((ext.clone(), Value::Bytes(open.payload.slice(*off as usize..(*off + *n) as usize))));
                }
            }
        }
        Samples::TfRecord(spans) => {
            let (off, n) = spans[k];
            let body = open.payload.slice(off as usize..(off + n) as usize);
            origin = format!("{}#{k}", shard.uri);
            let features = crate::kernels::formats::tfrecord::parse_example(&shard.uri, k, &body)?;
            let mut has_key = false;
            for (name, f) in features {
                has_key |= name == "key";
                if !wanted(&name) {
                    continue;
                }
                let value = match feature_value(&body, f) {
                    // A text key names the record (row keys, errors).
                    Value::Bytes(b) if name == "key" => match std::str::from_utf8(&b) {
                        Ok(text) => Value::Str(text.to_string()),
                        Err(_) => Value::Bytes(b),
                    },
                    v => v,
                };
                out.push((name, value));
            }
            if !has_key && wanted("key") {
                out.push(("key".into(), Value::Str(origin.clone())));
            }
            if wanted("__url__") {
                out.push(("__url__".into(), Value::Str(shard.uri.clone())));
            }
        }
        Samples::Jsonl(lines) => {
            use crate::kernels::formats::jsonl;
            let (off, n) = lines[k];
            let line = jsonl::line_number(&open.payload, off);
            origin = format!("{}#L{line}", shard.uri);
            let fields = match jsonl::parse_line(&shard.uri, line, &open.payload[off as usize..(off + n) as usize]) {
                Ok(f) => f.into_iter().map(|(k, v)| (k, Value::from_json(v))).collect(),
                // The row fails, not the batch: skip skips it (see Record::broken).
                Err(Error::Corrupt { uri, what, detail }) => {
                    broken = Some(Arc::new((uri, what, detail)));
                    Vec::new()
                }
                Err(e) => return Err(e),
            };
            let has_key = fields.iter().any(|(name, v)| name == "key" && matches!(v, Value::Str(_)));
            out.extend(fields.into_iter().filter(|(name, _)| wanted(name)));
            if !has_key && wanted("key") {
                out.retain(|(name, _)| name != "key");
                out.push(("key".into(), Value::Str(origin.clone())));
            }
            if wanted("__url__") {
                out.push(("__url__".into(), Value::Str(shard.uri.clone())));
            }
        }
        Samples::Csv { header, rows } => {
            use crate::kernels::formats::csv as csvfmt;
            let (off, n) = rows[k];
            let line = csvfmt::line_number(&open.payload, off);
            origin = format!("{}#L{line}", shard.uri);
            let text = &open.payload[off as usize..(off + n) as usize];
            let fields = match csvfmt::parse_row(&shard.uri, line, header, text, csv) {
                Ok(f) => f
                    .into_iter()
                    .map(|(k, v)| {
                        let v = match v {
                            csvfmt::Value::Null => Value::Null,
                            csvfmt::Value::Bool(b) => Value::Bool(b),
                            csvfmt::Value::Int(i) => Value::Int(i),
                            csvfmt::Value::Float(x) => Value::Float(x),
                            csvfmt::Value::Str(t) => Value::Str(t),
                            csvfmt::Value::Bytes(b) => Value::Bytes(Bytes::from(b)),
                        };
                        (k, v)
                    })
                    .collect(),
                // The row fails, not the batch: skip skips it (see Record::broken).
                Err(Error::Corrupt { uri, what, detail }) => {
                    broken = Some(Arc::new((uri, what, detail)));
                    Vec::new()
                }
                Err(e) => return Err(e),
            };
            let has_key = fields.iter().any(|(name, v)| name == "key" && matches!(v, Value::Str(_)));
            out.extend(fields.into_iter().filter(|(name, _)| wanted(name)));
            if !has_key && wanted("key") {
                out.retain(|(name, _)| name != "key");
                out.push(("key".into(), Value::Str(origin.clone())));
            }
            if wanted("__url__") {
                out.push(("__url__".into(), Value::Str(shard.uri.clone())));
            }
        }
    }
    Ok(Record { fields: out, context: None, origin: Some(Arc::from(origin)), broken })
}

/// Single values as they are; lists as their little-endian bytes
/// (int64 / float32 each; byte strings concatenated).
fn feature_value(body: &Bytes, f: crate::kernels::formats::tfrecord::Feature<'_>) -> Value {
    use crate::kernels::formats::tfrecord::Feature;
    match f {
        Feature::Bytes(v) if v.len() == 1 => Value::Bytes(body.slice_ref(v[0])),
        Feature::Int64(v) if v.len() == 1 => Value::Int(v[0]),
        Feature::Float(v) if v.len() == 1 => Value::Float(v[0] as f64),
        Feature::Bytes(v) => Value::Bytes(Bytes::from(v.concat())),
        Feature::Int64(v) => Value::Bytes(Bytes::from(v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>())),
        Feature::Float(v) => Value::Bytes(Bytes::from(v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>())),
    }
}

/// The record source the executor reads: a bounded set of open shards.
pub struct ShardSource {
    set: Arc<ShardSet>,
    fields: Vec<String>,
    open: HashMap<usize, Open>,
    /// Open shards, least recently used first.
    lru: VecDeque<usize>,
    max_open: usize,
    /// Shards being fetched ahead (remote, cached).
    fetching: Arc<Mutex<HashSet<usize>>>,
    /// Shards of the records the planner said come next (`will_need`):
    /// open shards outside them and the current batch are closed, so their
    /// cache entries can be evicted.
    upcoming: HashSet<usize>,
    /// Next record of a sequential read (`next_chunk`, for group_by).
    cursor: u64,
    /// Per shard, the records this epoch will still read of it (from
    /// `epoch_reads`): at 0 its cache entry is retired (evicted first).
    remaining: HashMap<usize, u64>,
    /// Per shard, where its later runs of reads begin (records read before
    /// each, counted from the run's start): a closed shard's cache entry is
    /// ordered for eviction by the first of them (see `mark`).
    runs: HashMap<usize, VecDeque<u64>>,
    /// Records handed out by `get` in this run.
    consumed: u64,
    /// Shards fetched ahead and not opened yet.
    ahead: HashSet<usize>,
    /// When this run's `epoch_reads` came: the base of `wanted_at`.
    base: std::time::SystemTime,
    /// Remote shards closed between their runs that no cache will serve when
    /// they come back (not cached: they did not fit, or `cache=False`; or
    /// the cache is below the working set and may evict them first): kept
    /// here while the epoch reads them again, up to the working set (at most
    /// [`MAX_PARKED`]), so a reopen is not another fetch. The farthest next
    /// use goes first.
    parked: HashMap<usize, Open>,
    parked_bytes: u64,
    /// Per shard, the samples (local indices) this epoch reads of it (from
    /// `epoch_reads`): what a ranged open fetches.
    reads: HashMap<usize, Vec<u32>>,
    /// Per shard, how it opens this epoch, once decided: by member ranges
    /// (`Some`, until opened) or whole (`None`).
    ranged: HashMap<usize, Option<RangedPlan>>,
}

/// The most payload bytes a source keeps parked (see `ShardSource::parked`).
const MAX_PARKED: u64 = 2 << 30;

impl ShardSource {
    fn ensure_open(&mut self, s: usize) -> Result<()> {
        if self.open.contains_key(&s) {
            self.lru.retain(|&x| x != s);
            self.lru.push_back(s);
            return Ok(());
        }
        while self.open.len() >= self.max_open {
            let Some(old) = self.lru.pop_front() else { break };
            self.close(old);
        }
        let o = match self.parked.remove(&s) {
            Some(o) => {
                self.parked_bytes -= o.payload.len() as u64;
                self.set.counters.unparked.fetch_add(1, Ordering::Relaxed);
                o
            }
            None => match self.ranged_plan(s)? {
                Some(plan) => self.set.open_ranged(s, plan)?,
                None => self.set.open_shard(s)?,
            },
        };
        self.ahead.remove(&s);
        self.open.insert(s, o);
        self.lru.push_back(s);
        Ok(())
    }
}

impl ShardSource {
    /// Shard `s`'s ranged plan for this epoch, taken (decided once: a shard
    /// opened whole, or whose plan was used, opens whole after).
    fn ranged_plan(&mut self, s: usize) -> Result<Option<RangedPlan>> {
        if !self.ranged.contains_key(&s) {
            let plan = match self.reads.get(&s) {
                Some(reads) => self.set.ranged_plan(s, &self.fields, reads)?,
                None => None,
            };
            self.ranged.insert(s, plan);
        }
        Ok(self.ranged.get_mut(&s).and_then(Option::take))
    }

    /// Whether shard `s` will open by member ranges (read-ahead skips it).
    fn opens_ranged(&mut self, s: usize) -> bool {
        if !self.ranged.contains_key(&s) {
            let plan = match self.reads.get(&s) {
                Some(reads) => self.set.ranged_plan(s, &self.fields, reads).ok().flatten(),
                None => None,
            };
            self.ranged.insert(s, plan);
        }
        self.ranged.get(&s).is_some_and(Option::is_some)
    }

    /// Closes open shard `s`: parked when it is in no cache and read again
    /// later, and its cache entry ordered for eviction.
    fn close(&mut self, s: usize) {
        self.lru.retain(|&x| x != s);
        let Some(o) = self.open.remove(&s) else { return };
        self.park(s, o);
        self.mark(s);
    }

    fn park(&mut self, s: usize, o: Open) {
        if o.fetched.is_some() {
            return; // a ranged open is fetched again by ranges, small by construction
        }
        let shard = &self.set.shards[s];
        let Some(at) = self.next_use(s) else { return };
        // A cache that holds the working set serves reopens; one below it
        // may evict this shard before its next run, so it is kept too.
        let ws = self.set.working_set();
        let served =
            self.set.opts.cache.as_ref().is_some_and(|c| c.budget() >= ws && c.contains(&shard.uri, &shard.identity));
        if shard.mapped || served {
            return;
        }
        let size = o.payload.len() as u64;
        let budget = self.set.working_set().min(MAX_PARKED);
        while self.parked_bytes + size > budget {
            let far = self.parked.keys().copied().max_by_key(|&p| self.next_use(p).unwrap_or(u64::MAX));
            match far {
                Some(p) if self.next_use(p).unwrap_or(u64::MAX) > at => {
                    if let Some(old) = self.parked.remove(&p) {
                        self.parked_bytes -= old.payload.len() as u64;
                    }
                }
                _ => return,
            }
        }
        self.parked_bytes += size;
        self.parked.insert(s, o);
    }

    /// The record (of this run) at which shard `s` is next read, if this epoch reads it again.
    fn next_use(&self, s: usize) -> Option<u64> {
        self.remaining.get(&s)?;
        Some(self.runs.get(&s).and_then(|r| r.front()).copied().unwrap_or(self.consumed))
    }

    /// Orders closed shard `s`'s cache entry for eviction: retired when this
    /// epoch is done with it, else by how far ahead its next read is.
    fn mark(&self, s: usize) {
        let Some(cache) = &self.set.opts.cache else { return };
        let shard = &self.set.shards[s];
        if shard.mapped || self.remaining.is_empty() {
            return;
        }
        match self.next_use(s) {
            Some(at) => cache.wanted_at(&shard.uri, &shard.identity, self.base, at),
            None => cache.retire(&shard.uri, &shard.identity),
        }
    }
}

impl RecordSource for ShardSource {
    fn len(&self) -> Option<u64> {
        Some(self.set.total)
    }

    fn get(&mut self, indices: &[u64]) -> Result<Vec<Record>> {
        let mut out = Vec::with_capacity(indices.len());
        let mut current = HashSet::new();
        for &i in indices {
            let (s, k) = self.set.locate(i)?;
            self.ensure_open(s)?;
            if self.open[&s].fetched.as_ref().is_some_and(|f| !f.get(k).copied().unwrap_or(false)) {
                // A sample the epoch's reads did not name (its plan changed): the shard whole.
                self.open.remove(&s);
                self.ranged.insert(s, None);
                let whole = self.set.open_shard(s)?;
                self.open.insert(s, whole);
            }
            current.insert(s);
            let open = &self.open[&s];
            out.push(make_record(&self.set.shards[s], open, k, Some(&self.fields), &self.set.opts.csv)?);
            let share = open.payload.len() as u64 * 1000 / self.set.shards[s].count.max(1);
            self.set.report_delivered(share);
            self.consumed += 1;
            if let Some(r) = self.runs.get_mut(&s) {
                while r.front().is_some_and(|&at| at < self.consumed) {
                    r.pop_front();
                }
            }
            if let Some(left) = self.remaining.get_mut(&s) {
                *left = left.saturating_sub(1);
                if *left == 0 {
                    self.remaining.remove(&s);
                    // Done with it this epoch: closed now, its entry first to go.
                    self.open.remove(&s);
                    if let Some(p) = self.parked.remove(&s) {
                        self.parked_bytes -= p.payload.len() as u64;
                    }
                    self.lru.retain(|&x| x != s);
                    current.remove(&s);
                    if let Some(cache) = &self.set.opts.cache {
                        let shard = &self.set.shards[s];
                        if !shard.mapped {
                            cache.retire(&shard.uri, &shard.identity);
                        }
                    }
                }
            }
        }
        if !self.upcoming.is_empty() {
            let keep: Vec<usize> =
                self.lru.iter().copied().filter(|s| current.contains(s) || self.upcoming.contains(s)).collect();
            let closed: Vec<usize> = self.open.keys().copied().filter(|s| !keep.contains(s)).collect();
            for s in closed {
                self.close(s);
            }
            self.lru = keep.into();
        }
        Ok(out)
    }

    fn next_chunk(&mut self, max: usize) -> Result<Vec<Record>> {
        let end = (self.cursor + max as u64).min(self.set.total);
        let indices: Vec<u64> = (self.cursor..end).collect();
        self.cursor = end;
        self.get(&indices)
    }

    fn rewind(&mut self) -> Result<()> {
        self.cursor = 0;
        Ok(())
    }

    fn layout(&self) -> Option<Layout> {
        Some(self.set.layout())
    }

    fn epoch_reads(&mut self, indices: &mut dyn Iterator<Item = u64>, soon: usize) {
        self.remaining.clear();
        self.runs.clear();
        self.parked.clear();
        self.parked_bytes = 0;
        self.reads.clear();
        self.ranged.clear();
        self.consumed = 0;
        self.base = std::time::SystemTime::now();
        // Reads of a shard closer than `soon` apart are one run (the shard
        // stays open through it: `will_need` keeps it); a later one starts
        // another, and between them its cache entry waits by next use.
        let gap = (soon as u64).max(1);
        let mut last: HashMap<usize, u64> = HashMap::new();
        let mut first: HashMap<usize, u64> = HashMap::new();
        for (p, i) in indices.enumerate() {
            let p = p as u64;
            if let Ok((s, k)) = self.set.locate(i) {
                self.reads.entry(s).or_default().push(k as u32);
                *self.remaining.entry(s).or_insert(0) += 1;
                first.entry(s).or_insert(p);
                if last.insert(s, p).is_none_or(|prev| p - prev > gap) {
                    self.runs.entry(s).or_default().push_back(p);
                }
            }
        }
        // The working set: the most stored bytes of shards between their
        // first and last record at one position, plus the largest shard (a
        // shard past its last record stays held a little longer, by the
        // batches in flight, while the next is fetched). A cache that holds
        // it fetches each shard once (eviction goes by next use).
        let mut events: Vec<(u64, bool, u64)> = Vec::with_capacity(2 * first.len());
        for (&s, &f) in &first {
            let size = self.set.shards[s].size;
            events.push((f, true, size));
            events.push((last[&s] + 1, false, size));
        }
        events.sort_unstable_by_key(|&(at, opens, _)| (at, opens));
        let largest = first.keys().map(|&s| self.set.shards[s].size).max().unwrap_or(0);
        let (mut now, mut peak) = (0u64, largest);
        for (_, opens, size) in events {
            if opens {
                now += size;
                peak = peak.max(now + largest);
            } else {
                now -= size;
            }
        }
        self.set.counters.working_set.store(peak, Ordering::Relaxed);
        // Entries kept from earlier epochs: ordered by this epoch's first reads.
        if let Some(cache) = &self.set.opts.cache {
            for (&s, r) in &self.runs {
                let shard = &self.set.shards[s];
                if !shard.mapped && cache.contains(&shard.uri, &shard.identity) {
                    cache.wanted_at(&shard.uri, &shard.identity, self.base, r.front().copied().unwrap_or(0));
                }
            }
        }
    }

    fn will_need(&mut self, indices: &[u64], soon: usize) {
        let mut shards: Vec<usize> = Vec::new();
        self.upcoming.clear();
        for (n, &i) in indices.iter().enumerate() {
            if let Ok((s, _)) = self.set.locate(i) {
                if n < soon {
                    self.upcoming.insert(s);
                }
                if !shards.contains(&s) && !self.open.contains_key(&s) {
                    shards.push(s);
                }
            }
        }
        let Some(cache) = self.set.opts.cache.clone() else { return };
        // Below the working set, read-ahead would only evict what is about
        // to be read: shards are fetched when opened.
        if cache.is_short() {
            return;
        }
        for s in shards {
            if self.opens_ranged(s) {
                continue; // fetched by its members' ranges when opened, never whole
            }
            let shard = &self.set.shards[s];
            if shard.mapped || cache.contains(&shard.uri, &shard.identity) {
                continue;
            }
            // Only into the room the working set leaves (and free now):
            // read-ahead that evicted a shard the epoch comes back to was
            // the second fetch of issue 44 (14 of 24 shards at 3/4 of the
            // dataset, spread 2; 1 without read-ahead).
            let ahead: u64 = self.ahead.iter().map(|&a| self.set.shards[a].size).sum();
            if self.set.working_set() + ahead + shard.size > cache.budget() || !cache.has_room(shard.size) {
                break;
            }
            self.ahead.insert(s);
            if !self.fetching.lock().unwrap().insert(s) {
                continue;
            }
            let set = self.set.clone();
            let fetching = self.fetching.clone();
            let (base, next) = (self.base, self.next_use(s).unwrap_or(self.consumed));
            std::thread::spawn(move || {
                let shard = &set.shards[s];
                if let Ok((b, _)) = backend_for(&shard.uri) {
                    // Errors surface when the shard is opened for real.
                    if set.payload(shard, &b).is_ok() {
                        set.counters.prefetched.fetch_add(1, Ordering::Relaxed);
                        if let Some(cache) = &set.opts.cache {
                            cache.wanted_at(&shard.uri, &shard.identity, base, next);
                        }
                    }
                }
                fetching.lock().unwrap().remove(&s);
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::abi_backend::{AbiBackend, AbiBackendRef};
    use crate::io::testing::MemExport;
    use std::sync::atomic::AtomicUsize;

    /// A remote-style store (no local path, so shards go through the
    /// cache) under its own scheme, registered once for these tests.
    fn store() -> Arc<dyn Backend> {
        static B: std::sync::OnceLock<Arc<dyn Backend>> = std::sync::OnceLock::new();
        B.get_or_init(|| {
            let table = dataio_abi::export(MemExport::default());
            // SAFETY: a fresh table from `export`, owned by the adapter from here on.
            let b: Arc<dyn Backend> =
                Arc::new(AbiBackendRef(Arc::new(unsafe { AbiBackend::from_raw(table) }.unwrap())));
            crate::io::registry::register("shardsrctest", b.clone());
            b
        })
        .clone()
    }

    /// Puts a tar shard of `n` samples at `uri`; returns its size.
    fn put_shard(uri: &str, n: usize) -> u64 {
        let mut t = tar::Builder::new(Vec::new());
        for i in 0..n {
            for (ext, data) in [("jpg", format!("J{i}")), ("cls", format!("{i}"))] {
                let mut h = tar::Header::new_gnu();
                h.set_size(data.len() as u64);
                h.set_mode(0o644);
                h.set_cksum();
                t.append_data(&mut h, format!("s/{i:04}.{ext}"), data.as_bytes()).unwrap();
            }
        }
        let data = t.into_inner().unwrap();
        let size = data.len() as u64;
        crate::host::pools::block_on(store().put(uri, Bytes::from(data))).unwrap();
        size
    }

    fn options(dir: &std::path::Path) -> ShardSetOptions {
        ShardSetOptions {
            format: Format::Tar,
            gunzip: None,
            check_crc: true,
            window: 16,
            spread: 1,
            index_dir: dir.join("index"),
            cache: Some(ShardCache::new(dir.join("cache"), 1 << 30).unwrap()),
            parallelism: 4,
            csv: Default::default(),
        }
    }

    fn given(source: &str, counts: Vec<u64>, sizes: Vec<Option<u64>>) -> Option<GivenCounts> {
        Some(GivenCounts { source: source.to_string(), counts, sizes })
    }

    #[test]
    fn counts_from_an_index_open_without_reading_a_shard() {
        let dir = tempfile::tempdir().unwrap();
        let uris: Vec<String> = (0..3).map(|i| format!("shardsrctest://a/given-{i}.tar")).collect();
        let sizes: Vec<Option<u64>> = [4, 0, 7].iter().zip(&uris).map(|(&n, u)| Some(put_shard(u, n))).collect();
        let asked = AtomicUsize::new(0);
        let note = |_: usize, _: u64| {
            asked.fetch_add(1, Ordering::Relaxed);
        };
        let set = ShardSet::open_with(
            uris.clone(),
            vec![],
            given("shardsrctest://a/index.json", vec![4, 0, 7], sizes),
            options(dir.path()),
            &note,
        )
        .unwrap();
        assert_eq!((set.counts(), set.len(), asked.load(Ordering::Relaxed)), (vec![4, 0, 7], 11, 0));
        assert_eq!(set.counter_values(), (0, 0, 0), "opening fetched a shard");
        assert_eq!(set.opts.cache.as_ref().unwrap().stats.bytes_fetched.load(Ordering::Relaxed), 0);
        // The member table is built when the shard is read, once.
        let mut src = set.source(vec!["key".into(), "cls".into()]);
        let recs = src.get(&[4, 10, 5]).unwrap();
        let keys: Vec<&Value> = recs.iter().map(|r| &r.fields[0].1).collect();
        assert_eq!(keys, [&Value::Str("s/0000".into()), &Value::Str("s/0006".into()), &Value::Str("s/0001".into())]);
        let (opened, read, _) = set.counter_values();
        assert_eq!((opened, read), (1, set.sizes()[2]));
    }

    #[test]
    fn records_one_by_one_open_each_shard_once_and_count_their_delivery() {
        let dir = tempfile::tempdir().unwrap();
        let uris: Vec<String> = (0..3).map(|i| format!("shardsrctest://r/rec-{i}.tar")).collect();
        let sizes: Vec<Option<u64>> = uris.iter().map(|u| Some(put_shard(u, 20))).collect();
        let set = ShardSet::open_with(
            uris.clone(),
            vec![],
            given("shardsrctest://r/index.json", vec![20; 3], sizes),
            options(dir.path()),
            &|_, _| {},
        )
        .unwrap();
        // Sample after sample, interleaved across the shards (as planning reads a window).
        for i in 0..20u64 {
            for s in 0..3u64 {
                let r = set.record(s * 20 + i).unwrap();
                let key = r.fields.iter().find(|(n, _)| n == "key").map(|(_, v)| v.clone());
                assert_eq!(key, Some(Value::Str(format!("s/{i:04}"))));
            }
        }
        let (opened, read, _) = set.counter_values();
        assert_eq!(opened, 3, "a shard was opened again per record");
        assert_eq!(read, set.sizes().iter().sum::<u64>());
        let (delivered, _) = set.traffic();
        assert!(delivered > 0 && delivered <= read, "{delivered} of {read}");
    }

    /// A tar shard of `n` samples, each with members `a` and `b` of `size` bytes.
    fn put_wide_shard(uri: &str, n: usize, size: usize) -> u64 {
        let mut t = tar::Builder::new(Vec::new());
        for i in 0..n {
            for ext in ["a", "b"] {
                let data = vec![(i as u8).wrapping_mul(3).wrapping_add(ext.as_bytes()[0]); size];
                let mut h = tar::Header::new_gnu();
                h.set_size(size as u64);
                h.set_mode(0o644);
                h.set_cksum();
                t.append_data(&mut h, format!("w/{i:04}.{ext}"), &data[..]).unwrap();
            }
        }
        let data = t.into_inner().unwrap();
        let len = data.len() as u64;
        crate::host::pools::block_on(store().put(uri, Bytes::from(data))).unwrap();
        len
    }

    #[test]
    fn members_a_plan_skips_are_not_fetched_once_the_member_table_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let uris: Vec<String> = (0..2).map(|i| format!("shardsrctest://m/wide-{i}.tar")).collect();
        for u in &uris {
            put_wide_shard(u, 10, 20_000);
        }
        let opts = ShardSetOptions { cache: None, ..options(dir.path()) };
        // Counting builds and keeps each shard's member table (a whole read).
        let set = ShardSet::open(uris.clone(), vec![None, None], opts).unwrap();
        let fields = |f: &[&str]| f.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let epoch = |fields: Vec<String>, indices: Vec<u64>| {
            let (_, before, _) = set.counter_values();
            let mut src = set.source(fields);
            src.epoch_reads(&mut indices.clone().into_iter(), 4);
            let got = src.get(&indices).unwrap();
            let (_, after, _) = set.counter_values();
            (got, after - before)
        };
        let member = |r: &Record, name: &str| match r.fields.iter().find(|(n, _)| n == name) {
            Some((_, Value::Bytes(b))) => Some(b.clone()),
            _ => None,
        };
        // One member of every sample: its bytes and no more.
        let (got, read) = epoch(fields(&["key", "a"]), (0..20).collect());
        assert_eq!(read, 20 * 20_000, "fetched {read} bytes for 20 members of 20000");
        for (i, r) in got.iter().enumerate() {
            let want = vec![((i % 10) as u8).wrapping_mul(3).wrapping_add(b'a'); 20_000];
            assert_eq!(member(r, "a").as_deref(), Some(&want[..]), "sample {i}");
            assert!(member(r, "b").is_none());
        }
        // One member of a third of the samples (a rank's share): theirs alone.
        let (got, read) = epoch(fields(&["key", "b"]), vec![1, 4, 7, 12, 15, 18]);
        assert_eq!(read, 6 * 20_000, "fetched {read} bytes for 6 members of 20000");
        assert_eq!(member(&got[3], "b").unwrap()[0], 2u8.wrapping_mul(3).wrapping_add(b'b'));
        // Every member, of a third or of all the samples: the shards whole
        // (one request each, what a host's ranks share through the cache).
        for reads in [vec![1, 4, 7, 12, 15, 18], (0..20).collect()] {
            let (_, read) = epoch(fields(&["key", "a", "b"]), reads);
            assert_eq!(read, set.sizes().iter().sum::<u64>());
        }
        // A sample outside the epoch's reads opens its shard whole, never zeros.
        let mut src = set.source(fields(&["key", "a"]));
        src.epoch_reads(&mut [0u64, 1].into_iter(), 4);
        let got = src.get(&[0, 5]).unwrap();
        assert_eq!(member(&got[1], "a").unwrap()[0], 5u8.wrapping_mul(3).wrapping_add(b'a'));
    }

    #[test]
    fn a_count_the_shard_does_not_hold_names_the_shard_and_the_index() {
        let dir = tempfile::tempdir().unwrap();
        let uris: Vec<String> = (0..2).map(|i| format!("shardsrctest://b/wrong-{i}.tar")).collect();
        for u in &uris {
            put_shard(u, 5);
        }
        let set = ShardSet::open_with(
            uris.clone(),
            vec![],
            given("shardsrctest://b/index.json", vec![5, 6], vec![]),
            options(dir.path()),
            &|_, _| {},
        )
        .unwrap();
        let mut src = set.source(vec!["key".into()]);
        assert!(src.get(&[0, 4]).is_ok());
        let err = src.get(&[5]).unwrap_err();
        assert!(matches!(err, Error::Corrupt { .. }), "{err:?}");
        let msg = err.to_string();
        for part in [uris[1].as_str(), "shardsrctest://b/index.json", "holds 5 samples", "says 6"] {
            assert!(msg.contains(part), "{part:?} not in {msg}");
        }
        // The table read for that epoch is kept: the next open with the same
        // index fails at once, before the epoch is planned on a wrong count.
        let again = ShardSet::open_with(
            uris.clone(),
            vec![],
            given("shardsrctest://b/index.json", vec![5, 6], vec![]),
            options(dir.path()),
            &|_, _| {},
        );
        let msg = again.err().expect("a kept count disagrees").to_string();
        assert!(msg.contains("holds 5 samples") && msg.contains(&uris[1]), "{msg}");
        // A size other than the index's: the shard changed since it was indexed.
        let sizes = uris.iter().map(|_| Some(1)).collect();
        let stale = ShardSet::open_with(
            uris.clone(),
            vec![],
            given("shardsrctest://b/index.json", vec![5, 5], sizes),
            options(dir.path()),
            &|_, _| {},
        );
        let msg = stale.err().expect("sizes disagree").to_string();
        assert!(msg.contains("filesize") && msg.contains("index.json"), "{msg}");
    }

    #[test]
    fn counting_says_what_it_will_read_first_and_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let uris: Vec<String> = (0..3).map(|i| format!("shardsrctest://c/count-{i}.tar")).collect();
        let total: u64 = [3, 2, 6].iter().zip(&uris).map(|(&n, u)| put_shard(u, n)).sum();
        let said = Mutex::new(Vec::new());
        let note = |n: usize, bytes: u64| said.lock().unwrap().push((n, bytes));
        let set = ShardSet::open_with(uris.clone(), vec![], None, options(dir.path()), &note).unwrap();
        assert_eq!(set.counts(), [3, 2, 6]);
        assert_eq!(*said.lock().unwrap(), [(3, total)]);
        assert_eq!(set.counter_values().1, total);
        // A second open on this host counts nothing: the counts are kept.
        said.lock().unwrap().clear();
        let set = ShardSet::open_with(uris, vec![], None, options(dir.path()), &note).unwrap();
        assert_eq!((set.counts(), said.lock().unwrap().len()), (vec![3, 2, 6], 0));
    }
}
