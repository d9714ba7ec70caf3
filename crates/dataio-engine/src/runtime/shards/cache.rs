//! The local shard cache: remote shards' payloads as files under one
//! directory, within a byte budget, shared by every process of the host
//! that points at the same directory (the ranks of one node).
//!
//! Layout: `DIR/data/<entry>` (complete payloads), `DIR/data/<entry>.partial`
//! (a download in progress, exclusively locked by its writer), `DIR/lock`
//! (taken while adding or evicting, so the budget holds across processes).
//!
//! * A reader holds a shared `flock` on the entry for as long as any slice
//!   of its map is alive; eviction takes the exclusive lock without waiting
//!   and skips what it cannot take, so a shard being read is never evicted.
//! * A miss downloads into memory, then under `DIR/lock` evicts the least
//!   recently used entries (by mtime, touched on every open) until the new
//!   one fits, writes it as `.partial` and renames it: readers see whole
//!   payloads or nothing. When every other entry is being read it waits for
//!   readers to move on (60 s), then fails with a typed error naming the
//!   shard; nothing is left behind.
//! * Another process fetching the same shard holds `.partial` locked: the
//!   others wait for it instead of fetching again; a `.partial` nobody holds
//!   is a crashed writer's and is removed.
//! * Only files inside `DIR/data` are ever deleted; local shards never come
//!   here (they are mapped where they are).

use crate::base::error::{Error, Result};
use bytes::Bytes;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// Counters of one cache handle (this process's view).
#[derive(Debug, Default)]
pub struct CacheStats {
    pub hits: AtomicU64,
    pub misses: AtomicU64,
    pub bytes_fetched: AtomicU64,
    pub evictions: AtomicU64,
}

#[derive(Debug, Clone)]
pub struct ShardCache {
    dir: PathBuf,
    budget: u64,
    /// How long a miss waits for room while other readers hold entries.
    wait: Duration,
    pub stats: Arc<CacheStats>,
}

/// A mapped entry with its shared lock: slices keep both alive.
struct Held {
    map: memmap2::Mmap,
    _file: File,
}

impl AsRef<[u8]> for Held {
    fn as_ref(&self) -> &[u8] {
        &self.map
    }
}

fn io(path: &Path, e: std::io::Error) -> Error {
    Error::from_io(path.display().to_string(), e)
}

impl ShardCache {
    pub fn new(dir: impl Into<PathBuf>, budget: u64) -> Result<ShardCache> {
        let dir = dir.into();
        let data = dir.join("data");
        std::fs::create_dir_all(&data).map_err(|e| io(&data, e))?;
        Ok(ShardCache { dir, budget, wait: Duration::from_secs(60), stats: Arc::new(CacheStats::default()) })
    }

    /// The same cache, waiting at most `wait` for room (see `get`).
    pub fn with_wait(mut self, wait: Duration) -> ShardCache {
        self.wait = wait;
        self
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn budget(&self) -> u64 {
        self.budget
    }

    fn entry(&self, uri: &str, identity: &str) -> PathBuf {
        let mut h = blake3::Hasher::new();
        h.update(uri.as_bytes());
        h.update(&[0]);
        h.update(identity.as_bytes());
        self.dir.join("data").join(&h.finalize().to_hex()[..32])
    }

    /// Whether the entry is there now (no lock taken, nothing counted).
    pub fn contains(&self, uri: &str, identity: &str) -> bool {
        self.entry(uri, identity).is_file()
    }

    /// The payload of `uri` at `identity`: mapped from the cache, or
    /// fetched with `fetch`, added, then mapped.
    pub fn get(&self, uri: &str, identity: &str, fetch: impl FnOnce() -> Result<Bytes>) -> Result<Bytes> {
        let path = self.entry(uri, identity);
        let mut fetch = Some(fetch);
        let mut counted_miss = false;
        loop {
            if let Some(b) = self.open(&path)? {
                if !counted_miss {
                    self.stats.hits.fetch_add(1, Ordering::Relaxed);
                }
                return Ok(b);
            }
            let partial = path.with_extension("partial");
            match OpenOptions::new().write(true).create_new(true).open(&partial) {
                Ok(f) => {
                    // Ours: fetch, make room, write, publish.
                    f.try_lock().map_err(|e| Error::invalid(format!("{}: cannot lock: {e}", partial.display())))?;
                    let fetch = fetch.take().expect("fetched once");
                    let result = fetch().and_then(|data| self.add(uri, &path, &partial, f, &data));
                    if let Err(e) = result {
                        let _ = std::fs::remove_file(&partial);
                        return Err(e);
                    }
                    self.stats.misses.fetch_add(1, Ordering::Relaxed);
                    counted_miss = true;
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    // Someone is fetching it, or crashed while fetching.
                    match File::open(&partial) {
                        Ok(f) if f.try_lock().is_ok() => {
                            let _ = std::fs::remove_file(&partial);
                        }
                        _ => std::thread::sleep(Duration::from_millis(10)),
                    }
                }
                Err(e) => return Err(io(&partial, e)),
            }
        }
    }

    /// Maps a complete entry under a shared lock, touching it for LRU.
    fn open(&self, path: &Path) -> Result<Option<Bytes>> {
        let file = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io(path, e)),
        };
        file.lock_shared().map_err(|e| io(path, e))?;
        // An evictor may have removed it between our open and our lock.
        let same = match (file.metadata(), std::fs::metadata(path)) {
            (Ok(a), Ok(b)) => a.ino() == b.ino() && a.dev() == b.dev(),
            _ => false,
        };
        if !same {
            return Ok(None);
        }
        let _ = file.set_modified(SystemTime::now());
        // SAFETY: entries are never written after they are published (they
        // are renamed into place whole) and never truncated; eviction
        // unlinks only what it holds exclusively, which our shared lock
        // prevents while this map is alive.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| io(path, e))?;
        Ok(Some(Bytes::from_owner(Held { map, _file: file })))
    }

    fn add(&self, uri: &str, path: &Path, partial: &Path, mut file: File, data: &[u8]) -> Result<()> {
        let need = data.len() as u64;
        if need > self.budget {
            return Err(full(uri, need, self.budget, "larger than the whole budget"));
        }
        let lock_path = self.dir.join("lock");
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| io(&lock_path, e))?;
        // Entries other readers hold cannot go: wait a while for them to
        // move on (the ranks of a host read the same windows at about the
        // same time), then give up with a typed error.
        let deadline = std::time::Instant::now() + self.wait;
        loop {
            lock.lock().map_err(|e| io(&lock_path, e))?;
            if self.make_room(need)? {
                break;
            }
            let _ = lock.unlock();
            if std::time::Instant::now() >= deadline {
                return Err(full(
                    uri,
                    need,
                    self.budget,
                    "the other entries are being read; raise cache_bytes or shrink the shuffle window",
                ));
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        file.write_all(data).map_err(|e| {
            if e.kind() == std::io::ErrorKind::StorageFull {
                full(uri, need, self.budget, "the disk is full")
            } else {
                io(partial, e)
            }
        })?;
        file.sync_data().map_err(|e| io(partial, e))?;
        std::fs::rename(partial, path).map_err(|e| io(path, e))?;
        self.stats.bytes_fetched.fetch_add(need, Ordering::Relaxed);
        Ok(())
    }

    /// Evicts least recently used entries nobody reads until `need` more
    /// bytes fit; whether they do. Called under `DIR/lock`.
    fn make_room(&self, need: u64) -> Result<bool> {
        let mut entries = self.entries()?;
        let mut used: u64 = entries.iter().map(|e| e.1).sum();
        entries.sort_by_key(|e| e.2);
        for (victim, size, _) in entries {
            if used + need <= self.budget {
                break;
            }
            if let Ok(f) = File::open(&victim) {
                if f.try_lock().is_ok() && std::fs::remove_file(&victim).is_ok() {
                    used -= size;
                    self.stats.evictions.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        Ok(used + need <= self.budget)
    }

    /// Complete entries: (path, size, mtime).
    fn entries(&self) -> Result<Vec<(PathBuf, u64, SystemTime)>> {
        let data = self.dir.join("data");
        let mut out = Vec::new();
        for e in std::fs::read_dir(&data).map_err(|e| io(&data, e))? {
            let Ok(e) = e else { continue };
            let p = e.path();
            if p.extension().is_some() {
                continue;
            }
            if let Ok(m) = e.metadata() {
                out.push((p, m.len(), m.modified().unwrap_or(SystemTime::UNIX_EPOCH)));
            }
        }
        Ok(out)
    }

    /// Bytes held now by complete entries (all processes).
    pub fn used(&self) -> Result<u64> {
        Ok(self.entries()?.iter().map(|e| e.1).sum())
    }
}

fn full(uri: &str, need: u64, budget: u64, why: &str) -> Error {
    Error::Io {
        uri: uri.to_string(),
        source: std::io::Error::new(
            std::io::ErrorKind::StorageFull,
            format!("the shard cache cannot take this shard ({need} bytes, budget {budget} bytes): {why}"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hits_misses_and_lru_eviction_within_the_budget() {
        let dir = tempfile::tempdir().unwrap();
        let c = ShardCache::new(dir.path(), 250).unwrap();
        let a = c.get("s3://b/a", "1", || Ok(Bytes::from(vec![1u8; 100]))).unwrap();
        assert_eq!(&a[..3], &[1, 1, 1]);
        drop(a);
        let again = c.get("s3://b/a", "1", || panic!("must not fetch twice")).unwrap();
        drop(again);
        std::thread::sleep(Duration::from_millis(20));
        c.get("s3://b/b", "1", || Ok(Bytes::from(vec![2u8; 100]))).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        // 'a' is the least recently used: 'c' evicts it.
        c.get("s3://b/c", "1", || Ok(Bytes::from(vec![3u8; 100]))).unwrap();
        assert!(!c.contains("s3://b/a", "1"));
        assert!(c.contains("s3://b/b", "1") && c.contains("s3://b/c", "1"));
        assert!(c.used().unwrap() <= 250);
        let s = &c.stats;
        assert_eq!((s.hits.load(Ordering::Relaxed), s.misses.load(Ordering::Relaxed)), (1, 3));
        assert_eq!((s.bytes_fetched.load(Ordering::Relaxed), s.evictions.load(Ordering::Relaxed)), (300, 1));
    }

    #[test]
    fn an_entry_being_read_is_never_evicted() {
        let dir = tempfile::tempdir().unwrap();
        let c = ShardCache::new(dir.path(), 150).unwrap().with_wait(Duration::from_millis(100));
        let held = c.get("u1", "1", || Ok(Bytes::from(vec![1u8; 100]))).unwrap();
        let e = c.get("u2", "1", || Ok(Bytes::from(vec![2u8; 100]))).unwrap_err();
        assert!(e.to_string().contains("u2") && e.to_string().contains("being read"), "{e}");
        assert_eq!(&held[..2], &[1, 1]);
        // Nothing half-written is left behind.
        let names: Vec<_> =
            std::fs::read_dir(dir.path().join("data")).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 1);
        drop(held);
        c.get("u2", "1", || Ok(Bytes::from(vec![2u8; 100]))).unwrap();
        assert!(!c.contains("u1", "1"));
    }

    #[test]
    fn a_failed_fetch_and_a_shard_over_budget_leave_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let c = ShardCache::new(dir.path(), 10).unwrap();
        assert!(c.get("u", "1", || Err(Error::NotFound { uri: "u".into(), detail: String::new() })).is_err());
        let e = c.get("v", "1", || Ok(Bytes::from(vec![0u8; 11]))).unwrap_err();
        assert!(e.to_string().contains("budget"), "{e}");
        assert_eq!(std::fs::read_dir(dir.path().join("data")).unwrap().count(), 0);
    }

    #[test]
    fn a_crashed_writers_partial_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let c = ShardCache::new(dir.path(), 100).unwrap();
        std::fs::write(c.entry("u", "1").with_extension("partial"), b"junk").unwrap();
        let b = c.get("u", "1", || Ok(Bytes::from_static(b"good"))).unwrap();
        assert_eq!(&b[..], b"good");
    }
}
