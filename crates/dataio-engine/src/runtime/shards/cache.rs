//! The local shard cache: remote shards' payloads as files under one
//! directory, within a byte budget, shared by every process of the host
//! that points at the same directory (the ranks of one node).
//!
//! Layout: `DIR/data/<entry>` (complete payloads), `DIR/data/<entry>.partial`
//! (a download in progress), `DIR/lock` (taken while adding or evicting, so
//! the budget holds across processes).
//!
//! * A reader holds a shared `flock` on the entry for as long as any slice
//!   of its map is alive; eviction takes the exclusive lock without waiting
//!   and skips what it cannot take, so a shard being read is never evicted.
//! * A miss downloads into memory, then under `DIR/lock` evicts entries
//!   nobody reads, oldest mtime first, until the new one fits, writes it as
//!   `.partial` and renames it: readers see whole payloads or nothing. An
//!   entry's mtime says when it is next wanted, as far as its readers know:
//!   touched on every open, set far back when a reader's epoch will not
//!   read it again ([`ShardCache::retire`]), and set back by how far ahead
//!   its next read is when a reader closes it or fetches it ahead
//!   ([`ShardCache::wanted_at`]); so eviction takes what the epoch is done
//!   with first, then what it wants last.
//! * A shard that does not fit (the budget is below the working set: the
//!   entries being read fill it, or one shard is over the whole budget) is
//!   not an error: `get` serves the fetched payload from memory, uncached,
//!   and counts it (`uncached`, and `short_need`: the budget that would have
//!   held it beside what was being read), so the loader can say once by how
//!   much the cache is short. No configuration of the budget ends an epoch.
//! * The writer of an entry is whoever holds an exclusive `flock` on the
//!   inode the `.partial` path names *now*. Opening `.partial` (created if
//!   missing, never replaced) and locking it are two steps, so a file one
//!   holds open but has not locked yet is no proof of anything: a process
//!   that takes the lock first checks that the path still names the inode it
//!   locked (else its writer published or dropped it: start over), then
//!   checks the entry again (it may have been published meanwhile), and only
//!   then truncates the file (a crashed writer's bytes), fetches, writes and
//!   renames. The others fail `try_lock`, wait a little and look again, so a
//!   shard is fetched once per host; nobody ever unlinks a `.partial` whose
//!   lock and path it does not hold, and a crashed writer's file is simply
//!   taken over (its `flock` died with it).
//! * Hits are served without asking the store and entry names are hashes
//!   anyone can compute, so on a shared disk another user could plant a
//!   shard: `DIR` and `DIR/data` are created private (0700), and a
//!   directory or an entry that is not the current user's (effective uid)
//!   or that group or others may write is refused with a typed error saying
//!   how to fix it (see [`check_private`]). An existing directory is
//!   checked, never `chmod`ed.
//! * Only files inside `DIR/data` are ever deleted; local shards never come
//!   here (they are mapped where they are).

use crate::base::error::{Error, Result};
use bytes::Bytes;
use std::fs::{File, Metadata, OpenOptions, Permissions, TryLockError};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
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
    /// Payloads served from memory because they did not fit.
    pub uncached: AtomicU64,
    pub uncached_bytes: AtomicU64,
    /// The largest budget a payload that did not fit needed (the bytes
    /// being read then, plus it): what `cache_bytes` would have to be.
    pub short_need: AtomicU64,
}

#[derive(Debug, Clone)]
pub struct ShardCache {
    dir: PathBuf,
    budget: u64,
    /// How long a miss waits for room while other readers hold entries.
    wait: Duration,
    pub stats: Arc<CacheStats>,
    #[cfg(test)]
    hook: Option<Hook>,
}

/// Called at named points of `get` ("opened-partial", "partial-busy",
/// "locked-partial"), so a test can force an interleaving.
#[cfg(test)]
#[derive(Clone)]
struct Hook(Arc<dyn Fn(&str) + Send + Sync>);

#[cfg(test)]
impl std::fmt::Debug for Hook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Hook(..)")
    }
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

/// Whether `path` names the inode `meta` describes (an open file's).
fn names(path: &Path, meta: &Metadata) -> bool {
    std::fs::metadata(path).is_ok_and(|now| now.ino() == meta.ino() && now.dev() == meta.dev())
}

pub(crate) use dataio_abi::host::euid;

/// "uid N (name)", or "uid N" when the passwd database has no name for it.
/// Only error messages ask, so the lookup's cost does not matter.
fn who(uid: u32) -> String {
    // SAFETY: passwd is a plain C struct of integers and pointers, for
    // which all-zero bytes are a valid value; getpwuid_r fills it.
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut buf = vec![0 as libc::c_char; 4096];
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is to live memory of ours, `buf.len()` is the
    // buffer's true size, and getpwuid_r writes only there and to `pwd`,
    // `found`; it is the reentrant variant, safe beside other threads.
    let rc = unsafe { libc::getpwuid_r(uid, &mut pwd, buf.as_mut_ptr(), buf.len(), &mut found) };
    if rc != 0 || found.is_null() || pwd.pw_name.is_null() {
        return format!("uid {uid}");
    }
    // SAFETY: on success pw_name points at a NUL-terminated string inside
    // `buf`, which outlives this borrow.
    let name = unsafe { std::ffi::CStr::from_ptr(pwd.pw_name) }.to_string_lossy().into_owned();
    format!("uid {uid} ({name})")
}

/// Refuses a file or directory another user could have written: one that
/// is not the current user's (effective uid), or that its group or others
/// may write. A cache hit or a kept index is used without asking the store,
/// and its name is a hash anyone can compute, so on a shared disk such a
/// file could be someone else's data served as the shard's (as ssh refuses
/// keys others can write). `what` names it in the message ("shard cache
/// directory", ...), which also gives the owner, the mode and the fix.
pub(crate) fn check_private(path: &Path, meta: &Metadata, what: &str) -> Result<()> {
    let me = euid();
    let (uid, mode) = (meta.uid(), meta.mode() & 0o7777);
    let foreign = uid != me;
    if !foreign && mode & 0o022 == 0 {
        return Ok(());
    }
    let shown = path.display();
    let why = if foreign {
        format!("it is not yours ({}), so its owner could plant files here", who(me))
    } else {
        "group or other users can write it, so they could plant files here".to_string()
    };
    let fix = match (meta.is_dir(), foreign) {
        (true, false) => format!("run `chmod 700 {shown}`, or use a directory only you can write"),
        (true, true) => "use a directory you own (cache_dir=, index_dir= or DATAIO_CACHE_DIR)".to_string(),
        (false, false) => format!("run `chmod 600 {shown}`, or remove it to have it fetched or built again"),
        (false, true) => format!("remove it (`rm {shown}`) to have it fetched or built again"),
    };
    Err(Error::PermissionDenied {
        uri: shown.to_string(),
        detail: format!(
            "{what} owned by {}, mode {mode:04o}: {why} that dataio would trust without asking the store; {fix}",
            who(uid)
        ),
    })
}

/// Creates `dir` (and any missing parent) readable by this user only
/// (0700), or, when it exists, checks it with [`check_private`]: a
/// directory the user already has is never `chmod`ed behind their back.
pub(crate) fn private_dir(dir: &Path, what: &str) -> Result<()> {
    let meta = dataio_abi::host::private_dir(dir).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotADirectory => Error::NotADirectory { uri: dir.display().to_string() },
        _ => io(dir, e),
    })?;
    check_private(dir, &meta, what)
}

impl ShardCache {
    /// The cache in `dir`: `dir` and `dir/data` are created private when
    /// missing; existing ones another user owns or can write are refused
    /// (a `PermissionDenied` error naming the path, its owner and mode).
    pub fn new(dir: impl Into<PathBuf>, budget: u64) -> Result<ShardCache> {
        let dir = dir.into();
        private_dir(&dir, "shard cache directory")?;
        private_dir(&dir.join("data"), "shard cache directory")?;
        Ok(ShardCache {
            dir,
            budget,
            wait: Duration::ZERO,
            stats: Arc::new(CacheStats::default()),
            #[cfg(test)]
            hook: None,
        })
    }

    /// The same cache, waiting at most `wait` for room (see `get`).
    pub fn with_wait(mut self, wait: Duration) -> ShardCache {
        self.wait = wait;
        self
    }

    #[cfg(test)]
    fn with_hook(mut self, hook: impl Fn(&str) + Send + Sync + 'static) -> ShardCache {
        self.hook = Some(Hook(Arc::new(hook)));
        self
    }

    #[inline]
    fn hook(&self, _at: &str) {
        #[cfg(test)]
        if let Some(h) = &self.hook {
            (h.0)(_at);
        }
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
    /// fetched with `fetch`, added, then mapped. Of the processes missing
    /// the same entry at once, one fetches and the others wait for it (see
    /// the module's notes); `fetch` runs at most once.
    pub fn get(&self, uri: &str, identity: &str, fetch: impl FnOnce() -> Result<Bytes>) -> Result<Bytes> {
        let path = self.entry(uri, identity);
        let partial = path.with_extension("partial");
        loop {
            if let Some(b) = self.open(&path)? {
                self.stats.hits.fetch_add(1, Ordering::Relaxed);
                return Ok(b);
            }
            // Never `create_new` + unlink: whoever finds the file we just
            // made, before we lock it, must not be able to take it from us.
            let mut file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .open(&partial)
                .map_err(|e| match std::fs::metadata(&partial) {
                    // Another user's file we may not open: say whose.
                    Ok(m) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                        check_private(&partial, &m, "partial shard cache entry")
                            .err()
                            .unwrap_or_else(|| io(&partial, e))
                    }
                    _ => io(&partial, e),
                })?;
            self.hook("opened-partial");
            match file.try_lock() {
                Ok(()) => {}
                Err(TryLockError::WouldBlock) => {
                    // A live writer: wait for it to publish (or give up).
                    self.hook("partial-busy");
                    drop(file);
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                }
                Err(TryLockError::Error(e)) => return Err(io(&partial, e)),
            }
            let meta = file.metadata().map_err(|e| io(&partial, e))?;
            // The lock is on the inode we opened; if the path names another
            // one now (or none), its writer published or dropped ours while
            // we were not holding it: it is nobody's file, look again.
            if !names(&partial, &meta) {
                continue;
            }
            self.hook("locked-partial");
            // We are the writer, and nobody replaces the path while we hold
            // its lock. A crashed writer may have left bytes or its mode
            // (ours to take over), or be another user (only root could put
            // a file in our directory): refuse that.
            if meta.uid() != euid() {
                check_private(&partial, &meta, "partial shard cache entry")?;
            }
            // The writer always returns: `fetch` runs once at most.
            return match self.fill(&path, &partial, &mut file, &meta, fetch) {
                Ok(Filled::Hit(hit)) => {
                    // Published meanwhile: ours is an empty leftover.
                    let _ = std::fs::remove_file(&partial);
                    Ok(hit)
                }
                Ok(Filled::Uncached(data)) => {
                    // It did not fit: served from memory. Our `.partial`
                    // (empty, still ours) goes; a waiter then fetches its own.
                    if names(&partial, &meta) {
                        let _ = std::fs::remove_file(&partial);
                    }
                    Ok(data)
                }
                Ok(Filled::Added) => {
                    // SAFETY: as in `open`: the entry is published and never
                    // written again, and the shared lock `add` left on it
                    // keeps it from eviction while this map is alive.
                    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| io(&path, e))?;
                    Ok(Bytes::from_owner(Held { map, _file: file }))
                }
                Err(e) => {
                    // Nothing half-written stays: unless it was published,
                    // the path still names our file (we hold its lock).
                    if names(&partial, &meta) {
                        let _ = std::fs::remove_file(&partial);
                    }
                    Err(e)
                }
            };
        }
    }

    /// As the writer of `partial` (its lock held, its path checked): the
    /// entry if someone published it meanwhile, `Added` once `fetch`'s
    /// payload is written into `file` and published (see `add`), or the
    /// payload itself when it does not fit.
    fn fill(
        &self,
        path: &Path,
        partial: &Path,
        file: &mut File,
        meta: &Metadata,
        fetch: impl FnOnce() -> Result<Bytes>,
    ) -> Result<Filled> {
        if let Some(hit) = self.open(path)? {
            self.stats.hits.fetch_add(1, Ordering::Relaxed);
            return Ok(Filled::Hit(hit));
        }
        if meta.mode() & 0o7777 != 0o600 {
            file.set_permissions(Permissions::from_mode(0o600)).map_err(|e| io(partial, e))?;
        }
        file.set_len(0).map_err(|e| io(partial, e))?;
        let data = fetch()?;
        self.stats.misses.fetch_add(1, Ordering::Relaxed);
        if !self.add(path, partial, file, &data)? {
            self.stats.uncached.fetch_add(1, Ordering::Relaxed);
            self.stats.uncached_bytes.fetch_add(data.len() as u64, Ordering::Relaxed);
            return Ok(Filled::Uncached(data));
        }
        Ok(Filled::Added)
    }

    /// Marks the entry of `uri` at `identity` as one its reader's epoch will
    /// not read again: first to be evicted (its mtime set far back). A
    /// reader that opens it later touches it back.
    pub fn retire(&self, uri: &str, identity: &str) {
        self.set_mtime(uri, identity, SystemTime::UNIX_EPOCH + Duration::from_secs(1));
    }

    /// Says when the entry's reader will next read it: at record `at` of
    /// an epoch that began at `base` (its mtime set `at` seconds before
    /// `base`), so that of the entries nobody is reading, the one wanted
    /// last is evicted first (Belady's rule, as far as one reader knows the
    /// order). Positions, not wall time: a slow epoch orders the same.
    pub fn wanted_at(&self, uri: &str, identity: &str, base: SystemTime, at: u64) {
        let back = Duration::from_secs(at.min(1 << 30));
        let t = base
            .checked_sub(back)
            .unwrap_or(SystemTime::UNIX_EPOCH)
            .max(SystemTime::UNIX_EPOCH + Duration::from_secs(2));
        self.set_mtime(uri, identity, t);
    }

    fn set_mtime(&self, uri: &str, identity: &str, t: SystemTime) {
        if let Ok(f) = File::open(self.entry(uri, identity)) {
            let _ = f.set_modified(t);
        }
    }

    /// Whether `need` more bytes fit without evicting an entry someone may
    /// still read: beside every entry but the retired ones. Read-ahead asks
    /// this first, so it never pushes out what an epoch comes back to.
    pub fn has_room(&self, need: u64) -> bool {
        let retired = SystemTime::UNIX_EPOCH + Duration::from_secs(1);
        match self.entries() {
            Ok(entries) => entries.iter().filter(|e| e.2 > retired).map(|e| e.1).sum::<u64>() + need <= self.budget,
            Err(_) => false,
        }
    }

    /// Whether some payload did not fit (the budget is below the working set).
    pub fn is_short(&self) -> bool {
        self.stats.uncached.load(Ordering::Relaxed) > 0
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
        let meta = file.metadata().map_err(|e| io(path, e))?;
        if !names(path, &meta) {
            return Ok(None);
        }
        // What we map is what we checked: the open file's owner and mode.
        check_private(path, &meta, "shard cache entry")?;
        let _ = file.set_modified(SystemTime::now());
        // SAFETY: entries are never written after they are published (they
        // are renamed into place whole) and never truncated; eviction
        // unlinks only what it holds exclusively, which our shared lock
        // prevents while this map is alive.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| io(path, e))?;
        Ok(Some(Bytes::from_owner(Held { map, _file: file })))
    }

    /// Writes `data` into `file` (the locked `partial`), syncs it, renames
    /// it to `path`, and keeps a shared lock on it: from then on the file
    /// is a published entry we read. `false` (nothing written) when it does
    /// not fit: over the whole budget, or beside the entries being read
    /// once `wait` has passed (0 by default: the entries being read are
    /// most often this process's own).
    fn add(&self, path: &Path, partial: &Path, file: &mut File, data: &[u8]) -> Result<bool> {
        let need = data.len() as u64;
        if need > self.budget {
            self.stats.short_need.fetch_max(need, Ordering::Relaxed);
            return Ok(false);
        }
        let lock_path = self.dir.join("lock");
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&lock_path)
            .map_err(|e| io(&lock_path, e))?;
        // Entries other readers hold cannot go: wait a while for them to
        // move on (the ranks of a host read the same windows at about the
        // same time), then give up with a typed error.
        let deadline = std::time::Instant::now() + self.wait;
        loop {
            lock.lock().map_err(|e| io(&lock_path, e))?;
            let held = self.make_room(need)?;
            if held + need <= self.budget {
                break;
            }
            let _ = lock.unlock();
            if std::time::Instant::now() >= deadline {
                self.stats.short_need.fetch_max(held + need, Ordering::Relaxed);
                return Ok(false);
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        match file.write_all(data) {
            Ok(()) => {}
            // A full disk is a smaller cache than asked: served from memory.
            Err(e) if e.kind() == std::io::ErrorKind::StorageFull => {
                let _ = file.set_len(0);
                return Ok(false);
            }
            Err(e) => return Err(io(partial, e)),
        }
        file.sync_data().map_err(|e| io(partial, e))?;
        std::fs::rename(partial, path).map_err(|e| io(path, e))?;
        // From writer to reader. Converting a flock is not atomic (it is
        // dropped, then taken shared), but evictors only run under
        // `DIR/lock`, which we still hold; a waiter that takes the inode
        // in between finds the `.partial` path no longer names it.
        file.lock_shared().map_err(|e| io(path, e))?;
        self.stats.bytes_fetched.fetch_add(need, Ordering::Relaxed);
        self.count_added(need);
        Ok(true)
    }

    /// Adds `n` to the host-wide counter file `DIR/<name>` (every
    /// process's additions, so a host's traffic can be told from one rank).
    /// The caller holds `DIR/lock`; a counter that cannot be written only
    /// loses the figure.
    fn count_locked(&self, name: &str, n: u64) {
        use std::os::unix::fs::FileExt;
        let path = self.dir.join(name);
        let Ok(f) = OpenOptions::new().read(true).write(true).create(true).truncate(false).mode(0o600).open(&path)
        else {
            return;
        };
        let mut buf = [0u8; 8];
        let before = if f.read_exact_at(&mut buf, 0).is_ok() { u64::from_le_bytes(buf) } else { 0 };
        let _ = f.write_all_at(&(before + n).to_le_bytes(), 0);
    }

    fn count_added(&self, n: u64) {
        self.count_locked("added", n);
    }

    /// Adds `n` payload bytes delivered by one of the host's processes to
    /// the host-wide counter (`DIR/delivered`), under `DIR/lock`.
    pub fn count_delivered(&self, n: u64) {
        let lock_path = self.dir.join("lock");
        let Ok(lock) = OpenOptions::new().create(true).truncate(false).write(true).mode(0o600).open(&lock_path) else {
            return;
        };
        if lock.lock().is_ok() {
            self.count_locked("delivered", n);
            let _ = lock.unlock();
        }
    }

    fn counter(&self, name: &str) -> u64 {
        use std::os::unix::fs::FileExt;
        let mut buf = [0u8; 8];
        match File::open(self.dir.join(name)) {
            Ok(f) if f.read_exact_at(&mut buf, 0).is_ok() => u64::from_le_bytes(buf),
            _ => 0,
        }
    }

    /// Payload bytes added to this cache by every process of the host,
    /// since the cache directory was made.
    pub fn host_bytes_added(&self) -> u64 {
        self.counter("added")
    }

    /// Payload bytes the host's processes reported delivered
    /// ([`ShardCache::count_delivered`]), since the cache directory was made.
    pub fn host_bytes_delivered(&self) -> u64 {
        self.counter("delivered")
    }

    /// Evicts entries nobody reads, oldest mtime first (see the module's
    /// notes), until `need` more bytes fit; the bytes left in the cache.
    /// Called under `DIR/lock`.
    fn make_room(&self, need: u64) -> Result<u64> {
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
        Ok(used)
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

/// What the writer of a missing entry did.
enum Filled {
    /// Someone published it meanwhile.
    Hit(Bytes),
    /// Fetched, written and published (the file is ours, shared-locked).
    Added,
    /// Fetched, but it does not fit: served from memory.
    Uncached(Bytes),
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
        // Retired ('c': its reader is done with it) goes before 'b', older but wanted;
        // protected (prefetched, unread) stays over both.
        c.retire("s3://b/c", "1");
        c.get("s3://b/d", "1", || Ok(Bytes::from(vec![4u8; 100]))).unwrap();
        assert!(!c.contains("s3://b/c", "1") && c.contains("s3://b/b", "1"));
        // 'b' wanted at record 10, 'd' at 1000: 'd' goes first.
        let base = SystemTime::now();
        c.wanted_at("s3://b/b", "1", base, 10);
        c.wanted_at("s3://b/d", "1", base, 1000);
        c.get("s3://b/e", "1", || Ok(Bytes::from(vec![5u8; 100]))).unwrap();
        assert!(c.contains("s3://b/b", "1") && !c.contains("s3://b/d", "1"));
        let s = &c.stats;
        assert_eq!((s.hits.load(Ordering::Relaxed), s.misses.load(Ordering::Relaxed)), (1, 5));
        assert_eq!((s.bytes_fetched.load(Ordering::Relaxed), s.evictions.load(Ordering::Relaxed)), (500, 3));
    }

    #[test]
    fn an_entry_being_read_is_never_evicted() {
        let dir = tempfile::tempdir().unwrap();
        let c = ShardCache::new(dir.path(), 150).unwrap().with_wait(Duration::from_millis(100));
        let held = c.get("u1", "1", || Ok(Bytes::from(vec![1u8; 100]))).unwrap();
        // It does not fit beside the entry being read: served from memory, uncached.
        let got = c.get("u2", "1", || Ok(Bytes::from(vec![2u8; 100]))).unwrap();
        assert_eq!(&got[..2], &[2, 2]);
        assert!(!c.contains("u2", "1") && c.is_short());
        assert_eq!(c.stats.short_need.load(Ordering::Relaxed), 200);
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
        // A budget under one shard still serves it, from memory.
        let got = c.get("v", "1", || Ok(Bytes::from(vec![7u8; 11]))).unwrap();
        assert_eq!(&got[..], &[7u8; 11]);
        assert_eq!(c.stats.short_need.load(Ordering::Relaxed), 11);
        assert_eq!(c.stats.uncached.load(Ordering::Relaxed), 1);
        assert_eq!(std::fs::read_dir(dir.path().join("data")).unwrap().count(), 0);
    }

    #[test]
    fn a_crashed_writers_partial_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let c = ShardCache::new(dir.path(), 100).unwrap();
        let partial = c.entry("u", "1").with_extension("partial");
        std::fs::write(&partial, b"junk, longer than the payload").unwrap();
        std::fs::set_permissions(&partial, Permissions::from_mode(0o666)).unwrap();
        let b = c.get("u", "1", || Ok(Bytes::from_static(b"good"))).unwrap();
        assert_eq!(&b[..], b"good");
        let meta = std::fs::metadata(c.entry("u", "1")).unwrap();
        assert_eq!(meta.mode() & 0o7777, 0o600);
        assert!(!partial.exists());
    }

    /// Records the points a handle's `get` passes; stops the thread at
    /// `stop` the first time it gets there, until the test says go.
    struct Gate {
        seen: Arc<std::sync::Mutex<Vec<String>>>,
        arrived: std::sync::mpsc::Receiver<()>,
        go: std::sync::mpsc::Sender<()>,
    }

    fn gated(dir: &Path, stop: &'static str) -> (ShardCache, Gate) {
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let (arrived_tx, arrived) = std::sync::mpsc::channel();
        let (go, go_rx) = std::sync::mpsc::channel::<()>();
        let go_rx = std::sync::Mutex::new(go_rx);
        let log = seen.clone();
        let c = ShardCache::new(dir, 1 << 20).unwrap().with_hook(move |at| {
            let first = {
                let mut log = log.lock().unwrap();
                log.push(at.to_string());
                at == stop && log.iter().filter(|p| *p == stop).count() == 1
            };
            if first {
                arrived_tx.send(()).unwrap();
                go_rx.lock().unwrap().recv().unwrap();
            }
        });
        (c, Gate { seen, arrived, go })
    }

    fn counted(n: &Arc<std::sync::atomic::AtomicUsize>, data: &'static [u8]) -> impl FnOnce() -> Result<Bytes> {
        let n = n.clone();
        move || {
            n.fetch_add(1, Ordering::SeqCst);
            Ok(Bytes::from_static(data))
        }
    }

    /// The race seen in the field: A has opened `.partial` but not locked
    /// it yet; B (another handle: another process) runs a whole `get` of
    /// the same entry; then A goes on. Both get the bytes, one fetch, no
    /// error: with B's map alive when A resumes (A's `try_lock` fails and
    /// it waits), and with B done (A locks the published inode, sees the
    /// `.partial` path no longer names it, and finds the entry).
    #[test]
    fn a_writer_between_open_and_lock_is_not_taken_for_a_dead_one() {
        for b_still_reading in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            let fetches = Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let (a, gate) = gated(dir.path(), "opened-partial");
            let b = ShardCache::new(dir.path(), 1 << 20).unwrap();
            let fa = counted(&fetches, b"payload");
            let ta = std::thread::spawn(move || a.get("s3://b/x", "1", fa).map(|b| b.to_vec()));
            gate.arrived.recv().unwrap();
            let got_b = b.get("s3://b/x", "1", counted(&fetches, b"payload")).unwrap();
            let kept = b_still_reading.then(|| got_b.clone());
            assert_eq!(&got_b[..], b"payload");
            drop(got_b);
            gate.go.send(()).unwrap();
            let got_a = ta.join().unwrap().unwrap();
            assert_eq!(got_a, b"payload");
            assert_eq!(fetches.load(Ordering::SeqCst), 1, "b_still_reading={b_still_reading}");
            let seen = gate.seen.lock().unwrap().clone();
            assert!(!seen.contains(&"locked-partial".to_string()), "A became a writer: {seen:?}");
            assert_eq!(seen.contains(&"partial-busy".to_string()), b_still_reading, "{seen:?}");
            drop(kept);
            let left: Vec<_> = std::fs::read_dir(dir.path().join("data")).unwrap().map(|e| e.unwrap().path()).collect();
            assert_eq!(left, vec![b.entry("s3://b/x", "1")]);
        }
    }

    /// The other order: A holds `.partial` while its fetch is slow; B
    /// arrives, waits on the lock without fetching, then gets A's entry.
    /// When A's fetch fails instead, B takes over and fetches itself.
    #[test]
    fn a_second_miss_waits_for_the_writer_and_takes_over_when_it_fails() {
        for a_fails in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let fetches = Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let a = ShardCache::new(dir.path(), 1 << 20).unwrap();
            let (b, gate) = gated(dir.path(), "partial-busy");
            let (fetching_tx, fetching) = std::sync::mpsc::channel();
            let (finish, finish_rx) = std::sync::mpsc::channel::<()>();
            let n = fetches.clone();
            let ta = std::thread::spawn(move || {
                a.get("s3://b/y", "1", move || {
                    n.fetch_add(1, Ordering::SeqCst);
                    fetching_tx.send(()).unwrap();
                    finish_rx.recv().unwrap();
                    if a_fails {
                        Err(Error::Backend { uri: "s3://b/y".into(), detail: "reset".into(), transient: true })
                    } else {
                        Ok(Bytes::from_static(b"slow"))
                    }
                })
                .map(|b| b.to_vec())
            });
            fetching.recv().unwrap();
            let fb = counted(&fetches, b"slow");
            let tb = std::thread::spawn(move || b.get("s3://b/y", "1", fb).map(|b| b.to_vec()));
            // B found the writer busy and is waiting: nothing fetched twice.
            gate.arrived.recv().unwrap();
            gate.go.send(()).unwrap();
            std::thread::sleep(Duration::from_millis(50));
            assert_eq!(fetches.load(Ordering::SeqCst), 1);
            assert!(!tb.is_finished());
            finish.send(()).unwrap();
            let got_a = ta.join().unwrap();
            let got_b = tb.join().unwrap().unwrap();
            assert_eq!(got_b, b"slow");
            let seen = gate.seen.lock().unwrap().clone();
            if a_fails {
                assert!(got_a.unwrap_err().to_string().contains("reset"));
                assert_eq!(fetches.load(Ordering::SeqCst), 2);
                assert!(seen.contains(&"locked-partial".to_string()), "{seen:?}");
            } else {
                assert_eq!(got_a.unwrap(), b"slow");
                // B may lock a fresh `.partial` when its last poll comes
                // after A's rename (a loaded machine: seen in CI); it then
                // finds the entry and fetches nothing. One fetch, and no
                // `.partial` left behind, is the invariant.
                assert_eq!(fetches.load(Ordering::SeqCst), 1, "{seen:?}");
            }
            let left: Vec<_> = std::fs::read_dir(dir.path().join("data"))
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|x| x == "partial"))
                .collect();
            assert!(left.is_empty(), "{left:?} {seen:?}");
        }
    }

    /// Many handles (each as another process would) missing the same keys
    /// at once, in different orders: every key is fetched exactly once,
    /// every `get` succeeds with its own bytes, and no `.partial` is left.
    #[test]
    fn concurrent_misses_fetch_each_shard_once() {
        const THREADS: usize = 8;
        const KEYS: usize = 50;
        let dir = tempfile::tempdir().unwrap();
        let fetches: Arc<Vec<std::sync::atomic::AtomicUsize>> =
            Arc::new((0..KEYS).map(|_| std::sync::atomic::AtomicUsize::new(0)).collect());
        let threads: Vec<_> = (0..THREADS)
            .map(|t| {
                let c = ShardCache::new(dir.path(), 1 << 24).unwrap();
                let fetches = fetches.clone();
                std::thread::spawn(move || {
                    for i in 0..KEYS {
                        let k = (i + t * 7) % KEYS;
                        let payload = vec![k as u8; 1000 + k];
                        let want = payload.clone();
                        let f = &fetches[k];
                        let got = c
                            .get(&format!("s3://b/{k}"), "1", || {
                                f.fetch_add(1, Ordering::SeqCst);
                                Ok(Bytes::from(payload))
                            })
                            .unwrap();
                        assert_eq!(&got[..], &want[..]);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let counts: Vec<_> = fetches.iter().map(|n| n.load(Ordering::SeqCst)).collect();
        assert_eq!(counts, vec![1; KEYS]);
        let names: Vec<_> = std::fs::read_dir(dir.path().join("data")).unwrap().map(|e| e.unwrap().path()).collect();
        assert_eq!(names.len(), KEYS);
        assert!(names.iter().all(|p| p.extension().is_none()), "{names:?}");
    }

    fn chmod(path: &Path, mode: u32) {
        std::fs::set_permissions(path, Permissions::from_mode(mode)).unwrap();
    }

    /// Changes `path`'s owner to `nobody`; false where we may not (not root).
    fn give_away(path: &Path) -> bool {
        match std::os::unix::fs::chown(path, Some(65534), None) {
            Ok(()) => true,
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                eprintln!("not root: the owner checks are not exercised");
                false
            }
            Err(e) => panic!("{e}"),
        }
    }

    fn refused(e: Error, path: &Path, owner: u32, mode: u32, fix: &str) {
        assert_eq!(e.kind(), crate::base::error::ErrorKind::PermissionDenied, "{e}");
        assert_eq!(e.uri(), Some(path.to_str().unwrap()));
        let msg = e.to_string();
        for part in [path.to_str().unwrap(), &format!("owned by uid {owner}"), &format!("mode {mode:04o}"), fix] {
            assert!(msg.contains(part), "{part:?} not in {msg}");
        }
    }

    #[test]
    fn the_directories_are_made_private_and_existing_safe_ones_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let fresh = dir.path().join("a/b/cache");
        ShardCache::new(&fresh, 100).unwrap();
        for d in [dir.path().join("a"), fresh.clone(), fresh.join("data")] {
            assert_eq!(std::fs::metadata(&d).unwrap().mode() & 0o077, 0, "{}", d.display());
        }
        let kept = dir.path().join("kept");
        std::fs::create_dir(&kept).unwrap();
        chmod(&kept, 0o755);
        ShardCache::new(&kept, 100).unwrap().get("u", "1", || Ok(Bytes::from_static(b"x"))).unwrap();
        assert_eq!(std::fs::metadata(&kept).unwrap().mode() & 0o7777, 0o755);
    }

    #[test]
    fn a_cache_directory_others_can_write_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("cache");
        ShardCache::new(&root, 100).unwrap();
        for target in [root.clone(), root.join("data")] {
            for mode in [0o777, 0o757, 0o775, 0o1777] {
                chmod(&target, mode);
                let e = ShardCache::new(&root, 100).unwrap_err();
                refused(e, &target, euid(), mode, &format!("chmod 700 {}", target.display()));
            }
            chmod(&target, 0o700);
        }
        ShardCache::new(&root, 100).unwrap();
        if give_away(&root) {
            let e = ShardCache::new(&root, 100).unwrap_err();
            refused(e, &root, 65534, 0o700, "use a directory you own");
            assert!(e_msg(&root).contains(&format!("not yours (uid {}", euid())));
        }
    }

    fn e_msg(root: &Path) -> String {
        ShardCache::new(root, 100).unwrap_err().to_string()
    }

    #[test]
    fn an_entry_another_user_wrote_or_can_write_is_refused_before_it_is_served() {
        let dir = tempfile::tempdir().unwrap();
        let c = ShardCache::new(dir.path(), 1000).unwrap();
        drop(c.get("s3://b/e", "1", || Ok(Bytes::from_static(b"mine"))).unwrap());
        let entry = c.entry("s3://b/e", "1");
        for mode in [0o666, 0o646, 0o620] {
            chmod(&entry, mode);
            let e = c.get("s3://b/e", "1", || panic!("a refused entry is not fetched again")).unwrap_err();
            refused(e, &entry, euid(), mode, &format!("chmod 600 {}", entry.display()));
        }
        chmod(&entry, 0o644);
        assert_eq!(&c.get("s3://b/e", "1", || panic!("a hit")).unwrap()[..], b"mine");
        if give_away(&entry) {
            let e = c.get("s3://b/e", "1", || panic!("a refused entry is not fetched again")).unwrap_err();
            refused(e, &entry, 65534, 0o644, &format!("rm {}", entry.display()));
            // Nor is another user's `.partial` taken over, or removed.
            let partial = c.entry("s3://b/p", "1").with_extension("partial");
            std::fs::write(&partial, b"theirs").unwrap();
            chmod(&partial, 0o600);
            assert!(give_away(&partial));
            let e = c.get("s3://b/p", "1", || panic!("not ours to write")).unwrap_err();
            refused(e, &partial, 65534, 0o600, &format!("rm {}", partial.display()));
            assert_eq!(std::fs::read(&partial).unwrap(), b"theirs");
        }
    }
}
