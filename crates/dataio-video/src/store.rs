//! Indexes kept on disk, so that a new process (another rank, a Ray worker,
//! the next job) opens a file it has indexed before without reading it
//! again: for mkv/webm/avi the index scan reads the whole file, for mp4 the
//! header blocks are the `moov`.
//!
//! One file per (URI, size, version) under `$DATAIO_CACHE_DIR/video-index`
//! (default `~/.cache/dataio/video-index`; `DATAIO_VIDEO_INDEX_DIR` names
//! another, `off` keeps nothing), named by a hash of the key; the key is
//! stored inside and checked on load, so a hash collision is a miss. Files
//! are written whole under a temporary name and renamed (a reader sees all
//! of one or none). The directory is made private (0700); a directory or a
//! file another user owns or can write is not used, since a kept index
//! decides which bytes a decoder reads. Only files with a version (an etag
//! or an mtime) are kept: without one a changed file could not be told.
//!
//! The format (little endian) is read by [`decode`], a parser of untrusted
//! bytes with a fuzz target (`index_file`): every length is bounded before
//! anything is allocated, and what it returns is checked as the builder's
//! output would be.

use crate::index::{AudioStream, FileIndex, FrameEntry, VideoStream, MAX_FRAMES};
use crate::media::{HeaderBlocks, BLOCK};
use crate::{Error, Result};
use dataio_abi::host::{fnv1a, is_private, private_dir, write_atomic};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const MAGIC: &[u8; 8] = b"DIOVIX01";
/// The longest string field (a URI, a codec or container name).
const MAX_STR: usize = 1 << 16;
/// The most audio streams and header blocks a kept index may name.
const MAX_AUDIO: usize = 1024;
const MAX_HEADER_BYTES: u64 = 256 << 20;

/// The directory kept indexes go to, or None when keeping is off.
pub fn dir() -> Option<PathBuf> {
    match std::env::var_os("DATAIO_VIDEO_INDEX_DIR") {
        Some(v) if v == "off" || v.is_empty() => None,
        Some(v) => Some(PathBuf::from(v)),
        None => Some(dataio_abi::host::cache_root()?.join("video-index")),
    }
}

/// FNV-1a over the key: stable across builds (the file name only; the key
/// itself is checked on load).
fn name_of(key: &str) -> String {
    format!("{:016x}.vidx", fnv1a(key.as_bytes()))
}

/// The kept index of `key`, if there is a usable one.
pub fn load(dir: &Path, key: &str) -> Option<FileIndex> {
    if !fs::metadata(dir).is_ok_and(|m| m.is_dir() && is_private(&m)) {
        return None;
    }
    let file = fs::File::open(dir.join(name_of(key))).ok()?;
    if !file.metadata().is_ok_and(|m| m.is_file() && is_private(&m)) {
        return None;
    }
    let bytes = std::io::Read::bytes(std::io::BufReader::new(file)).collect::<std::io::Result<Vec<u8>>>().ok()?;
    let (kept, idx) = decode(&bytes).ok()?;
    (kept == key).then_some(idx)
}

/// Keeps `idx` under `key` (best effort: a store that cannot be written is
/// skipped, the index is still used from memory).
pub fn save(dir: &Path, key: &str, idx: &FileIndex) {
    if private_dir(dir).is_ok_and(|m| is_private(&m)) {
        let _ = write_atomic(&dir.join(name_of(key)), &encode(key, idx));
    }
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// The bytes of a kept index.
pub fn encode(key: &str, idx: &FileIndex) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(MAGIC);
    put_str(&mut out, key);
    put_str(&mut out, &idx.format);
    out.extend_from_slice(&idx.size.to_le_bytes());
    out.extend_from_slice(&idx.duration.to_le_bytes());
    out.extend_from_slice(&idx.fetched.to_le_bytes());
    match &idx.video {
        None => out.push(0),
        Some(v) => {
            out.push(1);
            out.extend_from_slice(&(v.stream as u32).to_le_bytes());
            put_str(&mut out, &v.codec);
            for x in [v.width, v.height] {
                out.extend_from_slice(&x.to_le_bytes());
            }
            out.extend_from_slice(&v.time_base.0.to_le_bytes());
            out.extend_from_slice(&v.time_base.1.to_le_bytes());
            out.extend_from_slice(&v.fps.to_le_bytes());
            out.extend_from_slice(&(v.frames.len() as u32).to_le_bytes());
            for f in &v.frames {
                out.extend_from_slice(&f.pts.to_le_bytes());
                out.extend_from_slice(&f.dts.to_le_bytes());
                out.extend_from_slice(&f.decode.to_le_bytes());
                out.push(u8::from(f.key));
                out.extend_from_slice(&f.pos.to_le_bytes());
            }
        }
    }
    out.extend_from_slice(&(idx.audio.len() as u32).to_le_bytes());
    for a in &idx.audio {
        out.extend_from_slice(&(a.stream as u32).to_le_bytes());
        put_str(&mut out, &a.codec);
        out.extend_from_slice(&a.sample_rate.to_le_bytes());
        out.extend_from_slice(&a.channels.to_le_bytes());
        out.extend_from_slice(&a.duration.to_le_bytes());
    }
    let blocks = idx.header.entries();
    out.extend_from_slice(&(blocks.len() as u32).to_le_bytes());
    for (i, b) in blocks {
        out.extend_from_slice(&i.to_le_bytes());
        out.extend_from_slice(&(b.len() as u32).to_le_bytes());
        out.extend_from_slice(&b);
    }
    out
}

struct Reader<'a> {
    b: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.b.len() < n {
            return Err(Error::corrupt("a kept video index ends early"));
        }
        let (head, rest) = self.b.split_at(n);
        self.b = rest;
        Ok(head)
    }
    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    fn i32(&mut self) -> Result<i32> {
        Ok(i32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    fn i64(&mut self) -> Result<i64> {
        Ok(i64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    fn f64(&mut self) -> Result<f64> {
        let v = f64::from_le_bytes(self.take(8)?.try_into().unwrap());
        if v.is_finite() {
            Ok(v)
        } else {
            Err(Error::corrupt("a kept video index holds a number that is not finite"))
        }
    }
    fn count(&mut self, most: usize, per_item: usize) -> Result<usize> {
        let n = self.u32()? as usize;
        if n > most || n.saturating_mul(per_item) > self.b.len() {
            return Err(Error::corrupt(format!("a kept video index claims {n} entries")));
        }
        Ok(n)
    }
    fn str(&mut self) -> Result<String> {
        let n = self.count(MAX_STR, 1)?;
        String::from_utf8(self.take(n)?.to_vec()).map_err(|_| Error::corrupt("a kept video index holds invalid UTF-8"))
    }
}

/// A kept index's key and index, checked as the builder's output: frames in
/// presentation order with increasing, distinct timestamps and distinct
/// decode positions, header blocks of at most one block each.
pub fn decode(bytes: &[u8]) -> Result<(String, FileIndex)> {
    let mut r = Reader { b: bytes };
    if r.take(MAGIC.len())? != MAGIC {
        return Err(Error::corrupt("not a kept video index"));
    }
    let key = r.str()?;
    let format = r.str()?;
    let size = r.u64()?;
    let duration = r.f64()?;
    let fetched = r.u64()?;
    let video = match r.u8()? {
        0 => None,
        1 => {
            let stream = r.u32()? as usize;
            let codec = r.str()?;
            let (width, height) = (r.u32()?, r.u32()?);
            let time_base = (r.i32()?, r.i32()?);
            let fps = r.f64()?;
            let n = r.count(MAX_FRAMES, 29)?;
            let mut frames = Vec::with_capacity(n);
            for _ in 0..n {
                frames.push(FrameEntry {
                    pts: r.i64()?,
                    dts: r.i64()?,
                    decode: r.u32()?,
                    key: match r.u8()? {
                        0 => false,
                        1 => true,
                        _ => return Err(Error::corrupt("a kept video index has a bad keyframe flag")),
                    },
                    pos: r.i64()?,
                });
            }
            if frames.iter().any(|f| f.pos < -1 || (f.pos >= 0 && f.pos as u64 >= size)) {
                return Err(Error::corrupt("a kept video index places a frame outside the file"));
            }
            if frames.windows(2).any(|w| w[0].pts >= w[1].pts) {
                return Err(Error::corrupt("a kept video index's frames are not in presentation order"));
            }
            if time_base.0 <= 0 || time_base.1 <= 0 {
                return Err(Error::corrupt("a kept video index has no time base"));
            }
            let mut v =
                VideoStream { stream, codec, width, height, time_base, fps, frames: Vec::new(), by_decode: Vec::new() };
            v.set_frames(frames);
            if v.by_decode.windows(2).any(|w| w[0].0 == w[1].0) {
                return Err(Error::corrupt("a kept video index repeats a decode position"));
            }
            Some(v)
        }
        _ => return Err(Error::corrupt("a kept video index has a bad stream flag")),
    };
    let n = r.count(MAX_AUDIO, 24)?;
    let mut audio = Vec::with_capacity(n);
    for _ in 0..n {
        audio.push(AudioStream {
            stream: r.u32()? as usize,
            codec: r.str()?,
            sample_rate: r.u32()?,
            channels: r.u32()?,
            duration: r.f64()?,
        });
    }
    let header = Arc::new(HeaderBlocks::default());
    let n = r.count(usize::MAX, 12)?;
    let mut total = 0u64;
    for _ in 0..n {
        let i = r.u64()?;
        let len = r.u32()? as u64;
        total += len;
        if len > BLOCK || total > MAX_HEADER_BYTES || i.checked_mul(BLOCK).is_none_or(|start| start >= size) {
            return Err(Error::corrupt("a kept video index holds a header block out of place"));
        }
        // A block is whole but at the file's end.
        if len != BLOCK.min(size - i * BLOCK) {
            return Err(Error::corrupt("a kept video index holds a header block of the wrong size"));
        }
        header.insert(i, r.take(len as usize)?.into());
    }
    if !r.b.is_empty() {
        return Err(Error::corrupt("a kept video index has bytes after its end"));
    }
    Ok((key, FileIndex { format, size, duration, video, audio, header, fetched }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    fn sample() -> FileIndex {
        let header = Arc::new(HeaderBlocks::default());
        header.insert(0, vec![7u8; BLOCK as usize].into());
        header.insert(2, vec![9u8; 100].into());
        let mut v = VideoStream {
            stream: 0,
            codec: "h264".into(),
            width: 64,
            height: 48,
            time_base: (1, 12800),
            fps: 25.0,
            frames: Vec::new(),
            by_decode: Vec::new(),
        };
        v.set_frames(
            (0..10)
                .map(|i| FrameEntry {
                    pts: i * 512,
                    dts: i * 512 - 1024,
                    decode: i as u32,
                    key: i % 5 == 0,
                    pos: 900 + i * 77,
                })
                .collect(),
        );
        let audio =
            vec![AudioStream { stream: 1, codec: "aac".into(), sample_rate: 48000, channels: 2, duration: 0.4 }];
        FileIndex {
            format: "mov,mp4".into(),
            size: 2 * BLOCK + 100,
            duration: 0.4,
            video: Some(v),
            audio,
            header,
            fetched: 1234,
        }
    }

    #[test]
    fn an_index_round_trips_and_a_damaged_one_is_refused() {
        let idx = sample();
        let bytes = encode("s3://b/v.mp4\0size\0etag", &idx);
        let (key, back) = decode(&bytes).unwrap();
        assert_eq!(key, "s3://b/v.mp4\0size\0etag");
        assert_eq!(back.video.as_ref().unwrap().frames, idx.video.as_ref().unwrap().frames);
        assert_eq!(back.video.as_ref().unwrap().by_decode, idx.video.as_ref().unwrap().by_decode);
        assert_eq!(back.header.entries(), idx.header.entries());
        assert_eq!((back.size, back.fetched, back.audio[0].sample_rate), (idx.size, 1234, 48000));
        for cut in [0, 7, 20, bytes.len() / 2, bytes.len() - 1] {
            assert!(decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut extra = bytes.clone();
        extra.push(0);
        assert!(decode(&extra).is_err());
    }

    /// What the fuzzer found (index_file): a keyframe flag of 0xfe was
    /// read as true, so the bytes accepted were not the encoding of what
    /// they decoded to (flags are 0 or 1 now); a frame placed past the end
    /// of the file gave a byte span starting after it ends (frames must
    /// lie inside the file now).
    #[test]
    fn what_the_fuzzer_found_is_refused() {
        for crash in [
            &include_bytes!("../fuzz/corpus/index_file/crash-noncanonical-flag")[..],
            &include_bytes!("../fuzz/corpus/index_file/crash-frame-past-the-end")[..],
        ] {
            assert!(decode(crash).is_err());
        }
    }

    #[test]
    fn the_store_keeps_and_finds_an_index_by_its_key_only() {
        let dir = std::env::temp_dir().join(format!("dataio-vidx-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        save(&dir, "k1", &sample());
        assert!(load(&dir, "k1").is_some());
        assert!(load(&dir, "k2").is_none());
        assert_eq!(fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
        // A directory others can write is not used.
        fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
        assert!(load(&dir, "k1").is_none());
        fs::remove_dir_all(&dir).unwrap();
    }
}
