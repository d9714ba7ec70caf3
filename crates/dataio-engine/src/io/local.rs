//! The local-file backend: plain paths and `file://` URIs.
//!
//! Reads copy the file's bytes out with `pread` (the kernel's page cache
//! into memory of ours). They used to slice a memory map of large files,
//! which saved the copy but let any other process kill ours: a file
//! truncated or rewritten while its map is read faults with SIGBUS, a
//! signal no error handling can turn into a row error (a job regenerating
//! shards beside a running loader crashed it). docs/arch.md, "Local
//! reads", has the cost. Writes go to a
//! temporary file in the destination directory, are fsynced, and are renamed
//! into place, so a reader sees the old content or the new, never a half.

use crate::base::error::{Error, Result};
use crate::io::backend::{Backend, Capabilities, ObjectMeta, ObjectWriter, PutResult};
use crate::io::uri::{self, Target};
use async_trait::async_trait;
use bytes::Bytes;
use std::fs::{self, File};
use std::io::{Read, Seek, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

pub struct LocalBackend;

/// The filesystem path a local URI names.
pub fn path_of(uri: &str) -> Result<PathBuf> {
    match uri::parse(uri)? {
        Target::Local(p) => Ok(p),
        Target::Remote { scheme } => Err(Error::invalid(format!("{uri}: not a local path (scheme {scheme:?})"))),
    }
}

fn open_file(path: &Path, uri: &str) -> Result<(File, u64)> {
    let file = File::open(path).map_err(|e| Error::from_io(uri, e))?;
    let meta = file.metadata().map_err(|e| Error::from_io(uri, e))?;
    if meta.is_dir() {
        return Err(Error::IsADirectory { uri: uri.to_string() });
    }
    Ok((file, meta.len()))
}

fn check_range(uri: &str, offset: u64, size: u64, len: u64) -> Result<()> {
    match offset.checked_add(size) {
        Some(end) if end <= len => Ok(()),
        _ => Err(Error::OutOfRange { uri: uri.to_string(), offset, size, len }),
    }
}

/// Reads `[offset, offset + size)` of a local file; `size = None` reads to the end.
pub fn read_range_sync(uri: &str, offset: u64, size: Option<u64>) -> Result<Bytes> {
    let path = path_of(uri)?;
    let (file, len) = open_file(&path, uri)?;
    if offset > len {
        return Err(Error::OutOfRange { uri: uri.to_string(), offset, size: size.unwrap_or(0), len });
    }
    let size = size.unwrap_or(len - offset);
    check_range(uri, offset, size, len)?;
    if size == 0 {
        return Ok(Bytes::new());
    }
    let mut buf = Vec::with_capacity(size as usize);
    // Into spare capacity, without zeroing it first (a shard is hundreds of MB).
    let got = (&file).seek(std::io::SeekFrom::Start(offset)).and_then(|_| (&file).take(size).read_to_end(&mut buf));
    let got = got.map_err(|e| Error::from_io(uri, e))?;
    if got as u64 != size {
        // Shorter than its size a moment ago: truncated under us.
        return Err(Error::corrupt(
            uri,
            "file",
            format!("it changed while being read: {got} bytes at {offset} where {size} were expected"),
        ));
    }
    Ok(Bytes::from(buf))
}

/// Fills `dst` from `offset` of a local file, straight from the kernel into
/// the caller's memory.
pub fn read_into_sync(uri: &str, offset: u64, dst: &mut [u8]) -> Result<usize> {
    let path = path_of(uri)?;
    let (file, len) = open_file(&path, uri)?;
    check_range(uri, offset, dst.len() as u64, len)?;
    file.read_exact_at(dst, offset).map_err(|e| Error::from_io(uri, e))?;
    Ok(dst.len())
}

pub fn head_sync(uri: &str) -> Result<ObjectMeta> {
    let path = path_of(uri)?;
    let meta = fs::metadata(&path).map_err(|e| Error::from_io(uri, e))?;
    Ok(meta_of(uri.to_string(), &meta))
}

fn meta_of(uri: String, meta: &fs::Metadata) -> ObjectMeta {
    let mtime = meta.modified().ok().and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map(|d| d.as_secs_f64());
    let etag = (!meta.is_dir()).then(|| version_of(meta));
    ObjectMeta { uri, size: if meta.is_dir() { 0 } else { meta.len() }, mtime, etag, is_dir: meta.is_dir() }
}

/// A local file's version, as a store's etag is an object's: the inode and
/// its change time. Size and mtime alone cannot tell a file replaced by
/// another of the same size whose mtime was kept (`cp -p`, `tar -x`,
/// `rsync -t`): a kept shard index or video index would then be applied to
/// other bytes. A rewrite in place changes the ctime (no one can set it);
/// a replacement by rename is another inode.
fn version_of(meta: &fs::Metadata) -> String {
    use std::os::unix::fs::MetadataExt;
    format!("ino-{:x}-{:x}-c{}.{:09}", meta.dev(), meta.ino(), meta.ctime(), meta.ctime_nsec())
}

/// Content tag for written bytes: the first 128 bits of their BLAKE3 hash.
pub fn content_etag(hasher: &blake3::Hasher) -> String {
    hex::encode(&hasher.finalize().as_bytes()[..16])
}

/// A write in progress to a temporary file beside the destination.
pub struct LocalWriter {
    uri: String,
    dest: PathBuf,
    tmp: Option<tempfile::NamedTempFile>,
    hasher: blake3::Hasher,
    size: u64,
}

impl LocalWriter {
    pub fn create(uri: &str) -> Result<Self> {
        let dest = path_of(uri)?;
        if dest.is_dir() {
            return Err(Error::IsADirectory { uri: uri.to_string() });
        }
        if uri.ends_with('/') {
            return Err(Error::invalid(format!("{uri}: a write destination must name a file, not a directory")));
        }
        let parent = match dest.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        fs::create_dir_all(&parent).map_err(|e| Error::from_io(uri, e))?;
        let name = dest.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let tmp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".dataio-tmp")
            .tempfile_in(&parent)
            .map_err(|e| Error::from_io(uri, e))?;
        Ok(LocalWriter { uri: uri.to_string(), dest, tmp: Some(tmp), hasher: blake3::Hasher::new(), size: 0 })
    }

    pub fn write_sync(&mut self, data: &[u8]) -> Result<()> {
        let tmp = self.tmp.as_mut().ok_or_else(|| Error::invalid(format!("{}: writer is closed", self.uri)))?;
        tmp.write_all(data).map_err(|e| Error::from_io(&self.uri, e))?;
        self.hasher.update(data);
        self.size += data.len() as u64;
        Ok(())
    }

    pub fn commit_sync(mut self) -> Result<PutResult> {
        let tmp = self.tmp.take().ok_or_else(|| Error::invalid(format!("{}: writer is closed", self.uri)))?;
        tmp.as_file().sync_all().map_err(|e| Error::from_io(&self.uri, e))?;
        tmp.persist(&self.dest).map_err(|e| Error::from_io(&self.uri, e.error))?;
        if let Some(parent) = self.dest.parent() {
            // Make the rename itself durable; best effort on filesystems that refuse it.
            let dir = if parent.as_os_str().is_empty() { Path::new(".") } else { parent };
            if let Ok(d) = File::open(dir) {
                let _ = d.sync_all();
            }
        }
        Ok(PutResult { etag: content_etag(&self.hasher), size: self.size })
    }

    pub fn abort_sync(mut self) -> Result<()> {
        // Dropping the temp file deletes it.
        self.tmp.take();
        Ok(())
    }
}

#[async_trait]
impl ObjectWriter for LocalWriter {
    async fn write(&mut self, data: Bytes) -> Result<()> {
        self.write_sync(&data)
    }
    async fn commit(self: Box<Self>) -> Result<PutResult> {
        (*self).commit_sync()
    }
    async fn abort(self: Box<Self>) -> Result<()> {
        (*self).abort_sync()
    }
}

pub fn list_sync(prefix: &str, recursive: bool) -> Result<Vec<ObjectMeta>> {
    let path = path_of(prefix)?;
    let meta = fs::metadata(&path).map_err(|e| Error::from_io(prefix, e))?;
    if !meta.is_dir() {
        return Ok(vec![meta_of(prefix.to_string(), &meta)]);
    }
    let mut out = Vec::new();
    if recursive {
        for entry in walkdir::WalkDir::new(&path).min_depth(1).follow_links(true) {
            let entry = entry.map_err(|e| {
                let uri = e.path().map(|p| p.display().to_string()).unwrap_or_else(|| prefix.to_string());
                match e.into_io_error() {
                    Some(io) => Error::from_io(uri, io),
                    None => Error::invalid(format!("{uri}: filesystem loop")),
                }
            })?;
            if entry.file_type().is_dir() {
                continue;
            }
            let m = entry.metadata().map_err(|e| Error::invalid(format!("{prefix}: {e}")))?;
            out.push(meta_of(child_uri(prefix, &path, entry.path()), &m));
        }
    } else {
        for entry in fs::read_dir(&path).map_err(|e| Error::from_io(prefix, e))? {
            let entry = entry.map_err(|e| Error::from_io(prefix, e))?;
            let m = match fs::metadata(entry.path()) {
                Ok(m) => m,
                Err(_) => continue, // dangling symlink
            };
            out.push(meta_of(child_uri(prefix, &path, &entry.path()), &m));
        }
    }
    out.sort_by(|a, b| a.uri.cmp(&b.uri));
    Ok(out)
}

/// Spells a child path the way the caller spelled its prefix (`file://` or
/// plain, relative or absolute).
fn child_uri(prefix: &str, base: &Path, child: &Path) -> String {
    let rel = child.strip_prefix(base).unwrap_or(child).to_string_lossy();
    if prefix == "." || prefix == "./" {
        return rel.into_owned();
    }
    uri::join(prefix, &rel)
}

pub fn delete_sync(uri: &str) -> Result<()> {
    let path = path_of(uri)?;
    let meta = fs::symlink_metadata(&path).map_err(|e| Error::from_io(uri, e))?;
    if meta.is_dir() {
        return Err(Error::IsADirectory { uri: uri.to_string() });
    }
    fs::remove_file(&path).map_err(|e| Error::from_io(uri, e))
}

#[async_trait]
impl Backend for LocalBackend {
    fn name(&self) -> &str {
        "local"
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities { mapped: true, ..Capabilities::ALL }
    }
    async fn head(&self, uri: &str) -> Result<ObjectMeta> {
        head_sync(uri)
    }
    async fn read_range(&self, uri: &str, offset: u64, size: u64) -> Result<Bytes> {
        read_range_sync(uri, offset, Some(size))
    }
    async fn read_all(&self, uri: &str) -> Result<Bytes> {
        read_range_sync(uri, 0, None)
    }
    async fn read_into(&self, uri: &str, offset: u64, dst: &mut [u8]) -> Result<usize> {
        read_into_sync(uri, offset, dst)
    }
    async fn open_writer(&self, uri: &str) -> Result<Box<dyn ObjectWriter>> {
        Ok(Box::new(LocalWriter::create(uri)?))
    }
    async fn list(&self, prefix: &str, recursive: bool) -> Result<Vec<ObjectMeta>> {
        list_sync(prefix, recursive)
    }
    async fn exists(&self, uri: &str) -> Result<bool> {
        Ok(path_of(uri)?.exists())
    }
    async fn delete(&self, uri: &str) -> Result<()> {
        delete_sync(uri)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::error::ErrorKind;

    fn tmpdir() -> tempfile::TempDir {
        tempfile::tempdir().unwrap()
    }

    #[test]
    fn write_is_atomic_and_returns_content_hash() {
        let d = tmpdir();
        let uri = d.path().join("sub/a.bin").display().to_string();
        let mut w = LocalWriter::create(&uri).unwrap();
        w.write_sync(b"hello ").unwrap();
        assert!(!Path::new(&uri).exists(), "nothing visible before commit");
        w.write_sync(b"world").unwrap();
        let put = w.commit_sync().unwrap();
        assert_eq!(fs::read(&uri).unwrap(), b"hello world");
        assert_eq!(put.size, 11);
        let mut h = blake3::Hasher::new();
        h.update(b"hello world");
        assert_eq!(put.etag, content_etag(&h));
        // No temp files left behind.
        assert_eq!(fs::read_dir(d.path().join("sub")).unwrap().count(), 1);
    }

    #[test]
    fn aborted_write_leaves_nothing_and_keeps_old_content() {
        let d = tmpdir();
        let uri = d.path().join("a.bin").display().to_string();
        fs::write(&uri, b"old").unwrap();
        let mut w = LocalWriter::create(&uri).unwrap();
        w.write_sync(b"new content").unwrap();
        w.abort_sync().unwrap();
        assert_eq!(fs::read(&uri).unwrap(), b"old");
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 1);
        // Dropping an uncommitted writer behaves the same.
        let mut w = LocalWriter::create(&uri).unwrap();
        w.write_sync(b"x").unwrap();
        drop(w);
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn ranged_reads_are_exact_and_bounded() {
        let d = tmpdir();
        let small = d.path().join("s").display().to_string();
        fs::write(&small, b"0123456789").unwrap();
        assert_eq!(&read_range_sync(&small, 2, Some(3)).unwrap()[..], b"234");
        assert_eq!(&read_range_sync(&small, 4, None).unwrap()[..], b"456789");
        assert_eq!(read_range_sync(&small, 10, None).unwrap().len(), 0);
        let e = read_range_sync(&small, 8, Some(5)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::OutOfRange);
        let e = read_range_sync(&small, 11, None).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::OutOfRange);
        // Large reads are exact too.
        let big = d.path().join("b").display().to_string();
        let data: Vec<u8> = (0..(1usize << 20)).map(|i| (i % 251) as u8).collect();
        fs::write(&big, &data).unwrap();
        let got = read_range_sync(&big, 1000, Some(1 << 19)).unwrap();
        assert_eq!(&got[..], &data[1000..1000 + (1 << 19)]);
        let mut dst = vec![0u8; 300];
        read_into_sync(&big, 5, &mut dst).unwrap();
        assert_eq!(&dst[..], &data[5..305]);
    }

    /// What a memory map could not give: a file cut short after it was
    /// opened reads as a typed error (a map of it faults with SIGBUS).
    #[test]
    fn a_file_truncated_under_a_read_is_an_error_not_a_signal() {
        let d = tmpdir();
        let path = d.path().join("t");
        fs::write(&path, vec![7u8; 1 << 20]).unwrap();
        let uri = path.display().to_string();
        let (file, len) = open_file(&path, &uri).unwrap();
        fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(1000).unwrap();
        let mut buf = Vec::new();
        let got = (&file).take(len).read_to_end(&mut buf).unwrap();
        assert_eq!(got, 1000, "the kernel gives what is there");
        let e = read_range_sync(&uri, 0, Some(len)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::OutOfRange, "{e}");
    }

    #[test]
    fn errors_are_typed() {
        let d = tmpdir();
        let dir = d.path().display().to_string();
        assert_eq!(read_range_sync(&dir, 0, None).unwrap_err().kind(), ErrorKind::IsADirectory);
        let missing = d.path().join("nope").display().to_string();
        assert_eq!(read_range_sync(&missing, 0, None).unwrap_err().kind(), ErrorKind::NotFound);
        assert_eq!(delete_sync(&missing).unwrap_err().kind(), ErrorKind::NotFound);
        assert_eq!(LocalWriter::create(&dir).err().unwrap().kind(), ErrorKind::IsADirectory);
    }

    #[test]
    fn listing_direct_and_recursive() {
        let d = tmpdir();
        let base = d.path().display().to_string();
        fs::create_dir_all(d.path().join("x/y")).unwrap();
        fs::write(d.path().join("a.txt"), b"a").unwrap();
        fs::write(d.path().join("x/b.txt"), b"bb").unwrap();
        fs::write(d.path().join("x/y/c.bin"), b"ccc").unwrap();
        let direct = list_sync(&base, false).unwrap();
        let names: Vec<_> = direct.iter().map(|m| (m.uri.rsplit('/').next().unwrap().to_string(), m.is_dir)).collect();
        assert_eq!(names, vec![("a.txt".to_string(), false), ("x".to_string(), true)]);
        let all = list_sync(&base, true).unwrap();
        assert_eq!(all.len(), 3);
        assert!(all.iter().all(|m| !m.is_dir));
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let hits = rt.block_on(crate::io::backend::glob(&LocalBackend, &format!("{base}/**/*.txt"))).unwrap();
        let hits: Vec<_> = hits.iter().map(|m| m.uri.strip_prefix(&base).unwrap().to_string()).collect();
        assert_eq!(hits, vec!["/a.txt", "/x/b.txt"]);
        let hits = rt.block_on(crate::io::backend::glob(&LocalBackend, &format!("{base}/*.txt"))).unwrap();
        assert_eq!(hits.len(), 1);
    }
}
