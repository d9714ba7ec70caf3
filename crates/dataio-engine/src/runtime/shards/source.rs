//! Many shards as one sized record source.
//!
//! [`ShardSet::open`] indexes every shard (or finds its kept index), in
//! parallel, so the set knows its size and per-shard counts without holding
//! any sample: what stays in memory is a count and an index handle per
//! shard; a shard's member table is loaded only while the shard is open.
//! Records are served from a bounded set of open shards; their member
//! bytes are slices of the shard's payload (a map of a local file or of a
//! cache entry), handed to the decoders as they are.

use super::cache::ShardCache;
use super::index::{identity, Format, IndexStore, Samples, ShardIndex};
use crate::base::error::{Error, Result};
use crate::io::backend::{Backend, ObjectMeta};
use crate::io::registry::backend_for;
use crate::runtime::{Layout, Record, RecordSource, Value};
use bytes::Bytes;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// How a [`ShardSet`] reads.
#[derive(Debug, Clone)]
pub struct ShardSetOptions {
    pub format: Format,
    /// Gunzip payloads: `None` decides by the name (`.gz`, `.tgz`).
    pub gunzip: Option<bool>,
    pub check_crc: bool,
    /// Shuffle window in samples (see [`crate::runtime::ShardOrder`]).
    pub window: u64,
    /// Where kept indexes live.
    pub index_dir: std::path::PathBuf,
    /// The cache for remote shards; `None` reads them into memory per open.
    pub cache: Option<ShardCache>,
    /// Shards indexed at once when the set opens.
    pub parallelism: usize,
}

struct Shard {
    uri: String,
    identity: String,
    count: u64,
    gz: bool,
    /// Mapped (local) shards are read where they are, never cached.
    mapped: bool,
}

struct Open {
    payload: Bytes,
    index: Arc<ShardIndex>,
}

#[derive(Default)]
struct Counters {
    shards_opened: AtomicU64,
    bytes_read: AtomicU64,
    prefetched: AtomicU64,
}

/// The shards of one dataset, indexed.
pub struct ShardSet {
    shards: Vec<Shard>,
    base: Vec<u64>,
    total: u64,
    opts: ShardSetOptions,
    store: IndexStore,
    counters: Arc<Counters>,
}

fn gz_by_name(uri: &str) -> bool {
    let path = uri.split(['?', '#']).next().unwrap_or(uri);
    path.ends_with(".gz") || path.ends_with(".tgz") || path.ends_with(".gzip")
}

impl ShardSet {
    /// Indexes `uris` (or loads their kept counts) and returns the set.
    /// `known[i]`, when given, is shard i's (size, etag) from a listing,
    /// which spares a `head` per shard; a shard without one is asked.
    pub fn open(uris: Vec<String>, known: Vec<Option<(u64, String)>>, opts: ShardSetOptions) -> Result<Arc<ShardSet>> {
        if uris.is_empty() {
            return Err(Error::invalid("a shard source needs at least one shard"));
        }
        let store = IndexStore::new(&opts.index_dir);
        let counters = Arc::new(Counters::default());
        let work = Mutex::new(
            uris.iter()
                .cloned()
                .enumerate()
                .map(|(i, u)| (i, u, known.get(i).cloned().flatten()))
                .collect::<VecDeque<_>>(),
        );
        let found: Mutex<Vec<Option<Result<Shard>>>> = Mutex::new((0..uris.len()).map(|_| None).collect());
        let probe = ShardSet {
            shards: Vec::new(),
            base: Vec::new(),
            total: 0,
            opts: opts.clone(),
            store: store.clone(),
            counters: counters.clone(),
        };
        std::thread::scope(|s| {
            for _ in 0..opts.parallelism.clamp(1, uris.len()) {
                s.spawn(|| loop {
                    let Some((i, uri, known)) = work.lock().unwrap().pop_front() else { break };
                    let r = probe.index_one(&uri, known);
                    found.lock().unwrap()[i] = Some(r);
                });
            }
        });
        let mut shards = Vec::with_capacity(uris.len());
        for r in found.into_inner().unwrap() {
            shards.push(r.expect("every shard visited")?);
        }
        let mut base = Vec::with_capacity(shards.len());
        let mut total = 0u64;
        for s in &shards {
            base.push(total);
            total += s.count;
        }
        Ok(Arc::new(ShardSet { shards, base, total, opts, store, counters }))
    }

    fn meta(uri: &str) -> Result<(Arc<dyn Backend>, ObjectMeta)> {
        let (b, _) = backend_for(uri)?;
        let meta = crate::host::pools::block_on(b.head(uri))?;
        Ok((b, meta))
    }

    fn index_one(&self, uri: &str, known: Option<(u64, String)>) -> Result<Shard> {
        let (b, _) = backend_for(uri)?;
        let id = match known {
            Some((size, etag)) => identity(size, Some(&etag), None),
            None => {
                let meta = crate::host::pools::block_on(b.head(uri))?;
                identity(meta.size, meta.etag.as_deref(), meta.mtime)
            }
        };
        let gz = self.opts.gunzip.unwrap_or_else(|| gz_by_name(uri));
        let mapped = b.capabilities().mapped;
        let mut shard = Shard { uri: uri.to_string(), identity: id, count: 0, gz, mapped };
        shard.count = match self.store.load_count(uri, self.opts.format, &shard.identity) {
            Some(n) => n,
            None => {
                let payload = self.payload(&shard, &b)?;
                let index =
                    ShardIndex::build(uri, self.opts.format, shard.identity.clone(), &payload, self.opts.check_crc)?;
                self.store.save(uri, &index)?;
                index.len() as u64
            }
        };
        Ok(shard)
    }

    /// The shard's payload: mapped in place, from the cache, or fetched.
    fn payload(&self, shard: &Shard, b: &Arc<dyn Backend>) -> Result<Bytes> {
        let fetch = || -> Result<Bytes> {
            let raw = crate::host::pools::block_on(b.read_all(&shard.uri))?;
            if !shard.mapped {
                self.counters.bytes_read.fetch_add(raw.len() as u64, Ordering::Relaxed);
            }
            if shard.gz {
                crate::io::archive::gunzip(&shard.uri, &raw, crate::io::archive::DEFAULT_MAX_GUNZIP)
            } else {
                Ok(raw)
            }
        };
        match (&self.opts.cache, shard.mapped) {
            (Some(cache), false) => cache.get(&shard.uri, &shard.identity, fetch),
            _ => fetch(),
        }
    }

    /// Opens shard `i`: its payload and its index, checked against each other.
    fn open_shard(&self, i: usize) -> Result<Open> {
        let shard = &self.shards[i];
        let (b, meta) = Self::meta(&shard.uri)?;
        let now = identity(meta.size, meta.etag.as_deref(), meta.mtime);
        if now != shard.identity {
            return Err(Error::corrupt(
                &shard.uri,
                "shard",
                format!("it changed since it was indexed ({} then, {now} now); open the source again", shard.identity),
            ));
        }
        let index = self.store.load(&shard.uri, self.opts.format, &shard.identity);
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
        Ok(Open { payload, index: Arc::new(index) })
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

    pub fn layout(&self) -> Layout {
        Layout { counts: self.counts(), window: self.opts.window }
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

    /// A record source over the set that reads `fields`, keeping at most
    /// `max_open` shards open.
    pub fn source(self: &Arc<Self>, fields: Vec<String>) -> ShardSource {
        let avg = (self.total / self.shards.len().max(1) as u64).max(1);
        let max_open = (self.opts.window.div_ceil(avg) as usize + 3).max(4);
        ShardSource {
            set: self.clone(),
            fields,
            open: HashMap::new(),
            lru: VecDeque::new(),
            max_open,
            fetching: Arc::new(Mutex::new(HashSet::new())),
            upcoming: HashSet::new(),
            cursor: 0,
        }
    }

    /// One record with every member (for Python's `records[i]`).
    pub fn record(self: &Arc<Self>, index: u64) -> Result<Record> {
        let (s, k) = self.locate(index)?;
        let open = self.open_shard(s)?;
        make_record(&self.shards[s], &open, k, None)
    }
}

/// Builds sample `k` of an open shard, with only `fields` (all when None).
fn make_record(shard: &Shard, open: &Open, k: usize, fields: Option<&[String]>) -> Result<Record> {
    let wanted = |name: &str| fields.is_none_or(|f| f.iter().any(|x| x == name));
    let mut out: Vec<(String, Value)> = Vec::new();
    let origin;
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
    }
    Ok(Record { fields: out, context: None, origin: Some(Arc::from(origin)) })
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
}

impl ShardSource {
    fn ensure_open(&mut self, s: usize) -> Result<()> {
        if self.open.contains_key(&s) {
            self.lru.retain(|&x| x != s);
            self.lru.push_back(s);
            return Ok(());
        }
        while self.open.len() >= self.max_open {
            let Some(old) = self.lru.pop_front() else { break };
            self.open.remove(&old);
        }
        let o = self.set.open_shard(s)?;
        self.open.insert(s, o);
        self.lru.push_back(s);
        Ok(())
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
            current.insert(s);
            let open = &self.open[&s];
            out.push(make_record(&self.set.shards[s], open, k, Some(&self.fields))?);
        }
        if !self.upcoming.is_empty() {
            let keep: Vec<usize> =
                self.lru.iter().copied().filter(|s| current.contains(s) || self.upcoming.contains(s)).collect();
            self.open.retain(|s, _| keep.contains(s));
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
        for s in shards {
            let shard = &self.set.shards[s];
            if shard.mapped || cache.contains(&shard.uri, &shard.identity) {
                continue;
            }
            if !self.fetching.lock().unwrap().insert(s) {
                continue;
            }
            let set = self.set.clone();
            let fetching = self.fetching.clone();
            std::thread::spawn(move || {
                let shard = &set.shards[s];
                if let Ok((b, _)) = backend_for(&shard.uri) {
                    // Errors surface when the shard is opened for real.
                    if set.payload(shard, &b).is_ok() {
                        set.counters.prefetched.fetch_add(1, Ordering::Relaxed);
                    }
                }
                fetching.lock().unwrap().remove(&s);
            });
        }
    }
}
