//! A shard's index: its samples, each with the byte ranges of its members,
//! in the shard's payload (the decompressed bytes of a gzip shard).
//!
//! Tar samples follow WebDataset's grouping: consecutive members that share
//! the path up to the first dot of the file name form one sample, keyed by
//! that path, each member named by the rest (`dir/0001.seg.png` is member
//! `seg.png` of sample `dir/0001`). TFRecord samples are the file's records.

use crate::base::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The container a shard is stored in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Format {
    Tar,
    TfRecord,
}

impl Format {
    pub fn parse(s: &str) -> Result<Format> {
        match s {
            "tar" => Ok(Format::Tar),
            "tfrecord" => Ok(Format::TfRecord),
            other => Err(Error::invalid(format!("unknown shard format {other:?} (tar or tfrecord)"))),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Format::Tar => "tar",
            Format::TfRecord => "tfrecord",
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
            Samples::TfRecord(s) => s.len(),
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
            Samples::TfRecord(r) => r.iter().all(|&(off, len)| fits(off, len)),
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
#[derive(Debug, Clone)]
pub struct IndexStore {
    dir: PathBuf,
}

impl IndexStore {
    pub fn new(dir: impl Into<PathBuf>) -> IndexStore {
        IndexStore { dir: dir.into() }
    }

    fn path(&self, uri: &str, format: Format, identity: &str) -> PathBuf {
        let mut h = blake3::Hasher::new();
        for part in [uri, format.name(), identity] {
            h.update(part.as_bytes());
            h.update(&[0]);
        }
        self.dir.join(format!("{}.json", &h.finalize().to_hex()[..32]))
    }

    /// The kept index, if one matches; an unreadable file, or one whose
    /// entries lie outside the payload it names, counts as none.
    pub fn load(&self, uri: &str, format: Format, identity: &str) -> Option<ShardIndex> {
        let data = std::fs::read(self.path(uri, format, identity)).ok()?;
        let index: ShardIndex = serde_json::from_slice(&data).ok()?;
        (index.identity == identity && index.format == format && index.in_bounds()).then_some(index)
    }

    /// Keeps an index (atomically: a reader sees the whole file or none),
    /// and beside it its sample count, which is all opening a set reads.
    pub fn save(&self, uri: &str, index: &ShardIndex) -> Result<()> {
        let path = self.path(uri, index.format, &index.identity);
        write_atomic(&path, &serde_json::to_vec(index).map_err(|e| Error::invalid(e.to_string()))?)?;
        write_atomic(&path.with_extension("count"), format!("{} {}", index.len(), index.identity).as_bytes())
    }

    /// The kept sample count of a shard, without reading its index.
    pub fn load_count(&self, uri: &str, format: Format, identity: &str) -> Option<u64> {
        let text = std::fs::read_to_string(self.path(uri, format, identity).with_extension("count")).ok()?;
        let (count, kept) = text.split_once(' ')?;
        (kept == identity).then(|| count.parse().ok()).flatten()
    }
}

/// Writes `data` to `path` through a temporary file in the same directory.
pub fn write_atomic(path: &Path, data: &[u8]) -> Result<()> {
    use std::io::Write;
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| Error::from_io(dir.display().to_string(), e))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| Error::from_io(dir.display().to_string(), e))?;
    tmp.write_all(data).map_err(|e| Error::from_io(path.display().to_string(), e))?;
    tmp.persist(path).map_err(|e| Error::from_io(path.display().to_string(), e.error))?;
    Ok(())
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
}
