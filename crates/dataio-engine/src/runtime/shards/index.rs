//! A shard's index: its samples, each with the byte ranges of its members,
//! in the shard's payload (the decompressed bytes of a gzip shard).
//!
//! Tar samples follow WebDataset's grouping: consecutive members that share
//! the path up to the first dot of the file name form one sample, keyed by
//! that path, each member named by the rest (`dir/0001.seg.png` is member
//! `seg.png` of sample `dir/0001`). TFRecord samples are the file's records.

use super::cache::{check_private, private_dir};
use crate::base::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The container a shard is stored in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Format {
    Tar,
    TfRecord,
    Jsonl,
    /// Rows after a header row; the delimiter splits fields (and, through
    /// quoting, decides where rows end).
    Csv {
        delimiter: u8,
    },
}

impl Format {
    pub fn parse(s: &str) -> Result<Format> {
        match s {
            "tar" => Ok(Format::Tar),
            "tfrecord" => Ok(Format::TfRecord),
            "jsonl" => Ok(Format::Jsonl),
            "csv" => Ok(Format::Csv { delimiter: b',' }),
            spec if spec.starts_with("csv:") => {
                Ok(Format::Csv { delimiter: crate::kernels::formats::csv::CsvSpec::parse(Some(&spec[4..]))?.delimiter })
            }
            other => Err(Error::invalid(format!("unknown shard format {other:?} (tar, tfrecord, jsonl or csv)"))),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Format::Tar => "tar",
            Format::TfRecord => "tfrecord",
            Format::Jsonl => "jsonl",
            Format::Csv { .. } => "csv",
        }
    }
}

/// One tar sample: its key and its members `(name, offset, size)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TarSample {
    pub key: String,
    pub members: Vec<(String, u64, u64)>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Samples {
    Tar(Vec<TarSample>),
    /// Each record's payload `(offset, len)`.
    TfRecord(Vec<(u64, u64)>),
    /// Each non-blank line `(offset, len)`.
    Jsonl(Vec<(u64, u64)>),
    /// The header's column names, and each row after it `(offset, len)`.
    Csv {
        header: Vec<String>,
        rows: Vec<(u64, u64)>,
    },
}

/// What one shard holds, and which version of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardIndex {
    pub format: Format,
    /// The shard's identity when it was indexed (see [`identity`]).
    pub identity: String,
    /// The payload's length (decompressed, for gzip shards).
    pub payload_len: u64,
    pub samples: Samples,
}

impl ShardIndex {
    pub fn len(&self) -> usize {
        match &self.samples {
            Samples::Tar(s) => s.len(),
            Samples::TfRecord(s) | Samples::Jsonl(s) | Samples::Csv { rows: s, .. } => s.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether every member or record lies inside the payload: what a kept
    /// index file must show before a reader slices a shard by it.
    pub fn in_bounds(&self) -> bool {
        let fits = |off: u64, len: u64| off.checked_add(len).is_some_and(|end| end <= self.payload_len);
        match &self.samples {
            Samples::Tar(s) => s.iter().all(|t| t.members.iter().all(|(_, off, len)| fits(*off, *len))),
            Samples::TfRecord(r) | Samples::Jsonl(r) | Samples::Csv { rows: r, .. } => {
                r.iter().all(|&(off, len)| fits(off, len))
            }
        }
    }

    /// Indexes a shard's payload.
    pub fn build(uri: &str, format: Format, identity: String, payload: &[u8], check_crc: bool) -> Result<ShardIndex> {
        let samples = match format {
            Format::Tar => Samples::Tar(group_tar(crate::io::archive::tar_entries(uri, payload)?)),
            Format::TfRecord => Samples::TfRecord(
                crate::kernels::formats::tfrecord::split_records(uri, payload, check_crc)?
                    .into_iter()
                    .map(|(o, n)| (o as u64, n as u64))
                    .collect(),
            ),
            Format::Jsonl => Samples::Jsonl(crate::kernels::formats::jsonl::split_lines(uri, payload)?),
            Format::Csv { delimiter } => {
                let (header, rows) = crate::kernels::formats::csv::split_rows(uri, payload, delimiter)?;
                Samples::Csv { header, rows }
            }
        };
        Ok(ShardIndex { format, identity, payload_len: payload.len() as u64, samples })
    }
}

/// WebDataset's rule: `dir/stem.ext...` → (`dir/stem`, `ext...`).
pub fn split_member(name: &str) -> (&str, &str) {
    let base_start = name.rfind('/').map(|i| i + 1).unwrap_or(0);
    match name[base_start..].find('.') {
        Some(dot) => (&name[..base_start + dot], &name[base_start + dot + 1..]),
        None => (name, ""),
    }
}

fn group_tar(entries: Vec<crate::io::archive::TarEntry>) -> Vec<TarSample> {
    let mut out: Vec<TarSample> = Vec::new();
    for e in entries {
        let (key, ext) = split_member(&e.name);
        if out.last().is_none_or(|s| s.key != key) {
            out.push(TarSample { key: key.to_string(), members: Vec::new() });
        }
        if !ext.is_empty() {
            out.last_mut().unwrap().members.push((ext.to_string(), e.offset, e.size));
        }
    }
    out
}

/// A shard's identity: what must not change for its index to stay valid.
pub fn identity(size: u64, etag: Option<&str>, mtime: Option<f64>) -> String {
    match (etag, mtime) {
        (Some(e), _) => format!("size={size};etag={e}"),
        (None, Some(m)) => format!("size={size};mtime={m}"),
        (None, None) => format!("size={size}"),
    }
}

/// Indexes kept on disk, one file per (URI, format, identity).
///
/// A kept index is trusted as the shard's (which samples, where their bytes
/// are) and its name is a hash anyone can compute, so the directory and its
/// files follow the shard cache's rule: the directory is created private
/// (0700), and one another user owns or can write, or a file of it, is
/// refused with a typed error (see `cache::check_private`).
#[derive(Debug, Clone)]
pub struct IndexStore {
    dir: PathBuf,
}

const DIR: &str = "shard index directory";
const FILE: &str = "kept shard index";

impl IndexStore {
    /// A store over `dir`, created (privately) only when the first index is
    /// saved; nothing is checked until then. See [`IndexStore::open`].
    pub fn new(dir: impl Into<PathBuf>) -> IndexStore {
        IndexStore { dir: dir.into() }
    }

    /// A store over `dir`, created private now when missing, and refused
    /// when another user owns it or can write it.
    pub fn open(dir: impl Into<PathBuf>) -> Result<IndexStore> {
        let store = IndexStore::new(dir);
        private_dir(&store.dir, DIR)?;
        Ok(store)
    }

    fn path(&self, uri: &str, format: Format, identity: &str) -> PathBuf {
        let mut h = blake3::Hasher::new();
        for part in [uri, format.name(), identity] {
            h.update(part.as_bytes());
            h.update(&[0]);
        }
        self.dir.join(format!("{}.json", &h.finalize().to_hex()[..32]))
    }

    /// A kept file's bytes, `None` when there is none or it cannot be read;
    /// one another user wrote or can write is an error. The owner and mode
    /// checked are the open file's, so what is read is what was checked.
    fn read(path: &Path) -> Result<Option<Vec<u8>>> {
        use std::io::Read;
        let Ok(mut file) = std::fs::File::open(path) else { return Ok(None) };
        let Ok(meta) = file.metadata() else { return Ok(None) };
        check_private(path, &meta, FILE)?;
        let mut data = Vec::new();
        Ok(file.read_to_end(&mut data).ok().map(|_| data))
    }

    /// The kept index, if one matches; an unreadable file, or one whose
    /// entries lie outside the payload it names, counts as none; one
    /// another user wrote or can write is refused.
    pub fn try_load(&self, uri: &str, format: Format, identity: &str) -> Result<Option<ShardIndex>> {
        let Some(data) = Self::read(&self.path(uri, format, identity))? else { return Ok(None) };
        let Ok(index) = serde_json::from_slice::<ShardIndex>(&data) else { return Ok(None) };
        Ok((index.identity == identity && index.format == format && index.in_bounds()).then_some(index))
    }

    /// [`IndexStore::try_load`], where a refused file also counts as none.
    pub fn load(&self, uri: &str, format: Format, identity: &str) -> Option<ShardIndex> {
        self.try_load(uri, format, identity).ok().flatten()
    }

    /// Keeps an index (atomically: a reader sees the whole file or none),
    /// and beside it its sample count, which is all opening a set reads.
    pub fn save(&self, uri: &str, index: &ShardIndex) -> Result<()> {
        private_dir(&self.dir, DIR)?;
        let path = self.path(uri, index.format, &index.identity);
        write_atomic(&path, &serde_json::to_vec(index).map_err(|e| Error::invalid(e.to_string()))?)?;
        write_atomic(&path.with_extension("count"), format!("{} {}", index.len(), index.identity).as_bytes())
    }

    /// The kept sample count of a shard, without reading its index; `None`
    /// as for [`IndexStore::try_load`], and the same refusal.
    pub fn try_load_count(&self, uri: &str, format: Format, identity: &str) -> Result<Option<u64>> {
        let Some(data) = Self::read(&self.path(uri, format, identity).with_extension("count"))? else {
            return Ok(None);
        };
        let Ok(text) = String::from_utf8(data) else { return Ok(None) };
        let Some((count, kept)) = text.split_once(' ') else { return Ok(None) };
        Ok((kept == identity).then(|| count.parse().ok()).flatten())
    }

    /// [`IndexStore::try_load_count`], where a refused file counts as none.
    pub fn load_count(&self, uri: &str, format: Format, identity: &str) -> Option<u64> {
        self.try_load_count(uri, format, identity).ok().flatten()
    }
}

/// Writes `data` to `path` through a temporary file in the same directory.
pub fn write_atomic(path: &Path, data: &[u8]) -> Result<()> {
    dataio_abi::host::write_atomic(path, data).map_err(|e| Error::from_io(path.display().to_string(), e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_split_at_the_first_dot_of_the_file_name() {
        assert_eq!(split_member("a/b.c/0001.seg.png"), ("a/b.c/0001", "seg.png"));
        assert_eq!(split_member("0001.jpg"), ("0001", "jpg"));
        assert_eq!(split_member("README"), ("README", ""));
    }

    #[test]
    fn tar_members_group_into_samples_and_the_index_round_trips() {
        let mut b = tar::Builder::new(Vec::new());
        for (name, data) in
            [("x/0.jpg", &b"J0"[..]), ("x/0.cls", b"3"), ("x/1.jpg", b"J1"), ("x/1.cls", b"4"), ("y", b"")]
        {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            h.set_cksum();
            b.append_data(&mut h, name, data).unwrap();
        }
        let payload = b.into_inner().unwrap();
        let idx = ShardIndex::build("t.tar", Format::Tar, identity(1, Some("e"), None), &payload, true).unwrap();
        let Samples::Tar(s) = &idx.samples else { panic!() };
        assert_eq!(s.len(), 3);
        assert_eq!(s[1].key, "x/1");
        let (ext, off, n) = &s[1].members[0];
        assert_eq!((ext.as_str(), &payload[*off as usize..(*off + *n) as usize]), ("jpg", &b"J1"[..]));
        assert!(s[2].members.is_empty());
        let dir = tempfile::tempdir().unwrap();
        let store = IndexStore::new(dir.path());
        store.save("t.tar", &idx).unwrap();
        assert_eq!(store.load("t.tar", Format::Tar, &idx.identity), Some(idx.clone()));
        assert_eq!(store.load_count("t.tar", Format::Tar, &idx.identity), Some(3));
        assert_eq!(store.load_count("t.tar", Format::Tar, "size=2"), None);
        assert_eq!(store.load("t.tar", Format::Tar, "size=2"), None);
        assert_eq!(store.load("u.tar", Format::Tar, &idx.identity), None);
    }

    #[test]
    fn a_kept_index_pointing_outside_its_payload_counts_as_none() {
        let dir = tempfile::tempdir().unwrap();
        let store = IndexStore::new(dir.path());
        let mut idx = ShardIndex {
            format: Format::TfRecord,
            identity: identity(100, None, Some(1.0)),
            payload_len: 100,
            samples: Samples::TfRecord(vec![(0, 10), (90, 10)]),
        };
        store.save("t.tfrecord", &idx).unwrap();
        assert!(store.load("t.tfrecord", Format::TfRecord, &idx.identity).is_some());
        for bad in [(95, 10), (u64::MAX, 2)] {
            idx.samples = Samples::TfRecord(vec![(0, 10), bad]);
            store.save("t.tfrecord", &idx).unwrap();
            assert_eq!(store.load("t.tfrecord", Format::TfRecord, &idx.identity), None, "{bad:?}");
        }
    }

    #[test]
    fn kept_indexes_others_own_or_can_write_are_refused() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let chmod = |p: &Path, mode: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
        let euid = crate::runtime::shards::cache::euid();
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("index");
        let store = IndexStore::open(&dir).unwrap();
        assert_eq!(std::fs::metadata(&dir).unwrap().mode() & 0o077, 0);
        let idx = ShardIndex {
            format: Format::TfRecord,
            identity: identity(10, None, Some(1.0)),
            payload_len: 10,
            samples: Samples::TfRecord(vec![(0, 10)]),
        };
        store.save("t.tfrecord", &idx).unwrap();
        let json = store.path("t.tfrecord", Format::TfRecord, &idx.identity);
        let count = json.with_extension("count");
        let check = |e: Error, path: &Path, owner: u32, mode: u32, fix: &str| {
            assert_eq!(e.kind(), crate::base::error::ErrorKind::PermissionDenied, "{e}");
            let msg = e.to_string();
            for part in [path.to_str().unwrap(), &format!("owned by uid {owner}"), &format!("mode {mode:04o}"), fix] {
                assert!(msg.contains(part), "{part:?} not in {msg}");
            }
        };
        for mode in [0o666, 0o646, 0o620] {
            chmod(&json, mode);
            chmod(&count, mode);
            let e = store.try_load("t.tfrecord", Format::TfRecord, &idx.identity).unwrap_err();
            check(e, &json, euid, mode, "chmod 600");
            let e = store.try_load_count("t.tfrecord", Format::TfRecord, &idx.identity).unwrap_err();
            check(e, &count, euid, mode, "chmod 600");
            assert_eq!(store.load("t.tfrecord", Format::TfRecord, &idx.identity), None);
        }
        chmod(&json, 0o644);
        chmod(&count, 0o600);
        assert_eq!(store.try_load("t.tfrecord", Format::TfRecord, &idx.identity).unwrap(), Some(idx.clone()));
        assert_eq!(store.try_load_count("t.tfrecord", Format::TfRecord, &idx.identity).unwrap(), Some(1));
        for mode in [0o777, 0o757, 0o775] {
            chmod(&dir, mode);
            check(IndexStore::open(&dir).unwrap_err(), &dir, euid, mode, &format!("chmod 700 {}", dir.display()));
            check(store.save("t.tfrecord", &idx).unwrap_err(), &dir, euid, mode, "chmod 700");
        }
        chmod(&dir, 0o755);
        IndexStore::open(&dir).unwrap();
        assert_eq!(std::fs::metadata(&dir).unwrap().mode() & 0o7777, 0o755, "an existing directory is not chmod-ed");
        // Another owner: only root can make one here.
        if std::os::unix::fs::chown(&json, Some(65534), None).is_ok() {
            let e = store.try_load("t.tfrecord", Format::TfRecord, &idx.identity).unwrap_err();
            check(e, &json, 65534, 0o644, "rm ");
            std::os::unix::fs::chown(&dir, Some(65534), None).unwrap();
            check(IndexStore::open(&dir).unwrap_err(), &dir, 65534, 0o755, "use a directory you own");
        }
    }
}
