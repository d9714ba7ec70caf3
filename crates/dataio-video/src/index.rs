//! The per-file index: every video frame's presentation timestamp, in
//! presentation order, with the keyframes it can be decoded from; built once
//! per file (URI + size + version) and kept in a process-wide cache together
//! with the header blocks, so a later clip of the file fetches only its GOPs;
//! kept on disk as well ([`crate::store`]), so a new process does not read
//! the file again to index it.
//!
//! mp4/mov: the demuxer's timestamps come from the `moov` alone, so the
//! index scan reads no sample bytes (the reads past the header are served
//! as zeros and nothing is decoded or parsed). Other containers (mkv/webm,
//! avi, ...) keep their frame timestamps beside the samples: the scan reads
//! the file once, demuxing without decoding.

use crate::media::{HeaderBlocks, Media, Packet, Source};
use crate::{Error, Result};
use ffmpeg_sys_next as ff;
use std::collections::HashMap;
use std::ffi::CStr;
use std::sync::{Arc, Mutex, OnceLock};

/// One video frame (a packet of the video stream that is shown).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameEntry {
    /// Presentation timestamp, in the stream's time base.
    pub pts: i64,
    /// Decoding timestamp (what the demuxer seeks by), or `pts` when the container has none.
    pub dts: i64,
    /// Position in decoding order.
    pub decode: u32,
    pub key: bool,
    /// Byte offset of the packet in the file (-1 when unknown).
    pub pos: i64,
}

/// An audio stream of the file.
#[derive(Clone, Debug)]
pub struct AudioStream {
    pub stream: usize,
    pub codec: String,
    pub sample_rate: u32,
    pub channels: u32,
    pub duration: f64,
}

#[derive(Debug)]
pub struct VideoStream {
    pub stream: usize,
    pub codec: String,
    pub width: u32,
    pub height: u32,
    /// (num, den) of the time base.
    pub time_base: (i32, i32),
    /// The stream's average frame rate (0 when the container does not say).
    pub fps: f64,
    /// Frames in presentation order.
    pub frames: Vec<FrameEntry>,
    /// (decode position, byte offset) of every frame, in decoding order
    /// (derived from `frames` by [`VideoStream::set_frames`]).
    pub by_decode: Vec<(u32, i64)>,
}

/// What one file holds.
pub struct FileIndex {
    pub format: String,
    pub size: u64,
    /// Seconds.
    pub duration: f64,
    pub video: Option<VideoStream>,
    pub audio: Vec<AudioStream>,
    /// The blocks the demuxer reads when opening the file.
    pub header: Arc<HeaderBlocks>,
    /// Bytes fetched to build this index (header included).
    pub fetched: u64,
}

impl VideoStream {
    /// Sets the frames (presentation order) and what is derived from them.
    pub fn set_frames(&mut self, frames: Vec<FrameEntry>) {
        let mut by_decode: Vec<(u32, i64)> = frames.iter().map(|f| (f.decode, f.pos)).collect();
        by_decode.sort_unstable();
        self.frames = frames;
        self.by_decode = by_decode;
    }

    /// Bytes `[lo, hi)` holding the packets of decode positions `from..=to`:
    /// from the lowest offset among them to the offset of the packet after
    /// them (the file's end after the last), or None when an offset is
    /// unknown.
    pub fn byte_span(&self, from: u32, to: u32, file_size: u64) -> Option<(u64, u64)> {
        let a = self.by_decode.partition_point(|&(d, _)| d < from);
        let b = self.by_decode.partition_point(|&(d, _)| d <= to);
        let span = &self.by_decode[a..b];
        if span.is_empty() || span.iter().any(|&(_, p)| p < 0) {
            return None;
        }
        let lo = span.iter().map(|&(_, p)| p).min()? as u64;
        let top = span.iter().map(|&(_, p)| p).max()? as u64 + 1;
        let hi = match self.by_decode.get(b) {
            Some(&(_, p)) if p >= 0 => top.max(p as u64),
            Some(_) => return None,
            None => file_size,
        };
        let hi = hi.min(file_size);
        (lo < hi).then_some((lo, hi))
    }

    pub fn seconds(&self, ts: i64) -> f64 {
        ts as f64 * self.time_base.0 as f64 / self.time_base.1.max(1) as f64
    }

    /// Presentation-order indices of the keyframes.
    pub fn keyframes(&self) -> Vec<usize> {
        self.frames.iter().enumerate().filter(|(_, f)| f.key).map(|(i, _)| i).collect()
    }
}

fn codec_name(id: ff::AVCodecID) -> String {
    // SAFETY: avcodec_get_name returns a static string for any id.
    unsafe { CStr::from_ptr(ff::avcodec_get_name(id)).to_string_lossy().into_owned() }
}

/// The most frames (and so packets) one file's index holds.
pub const MAX_FRAMES: usize = 10_000_000;

impl FileIndex {
    /// Builds the index of `source` (no cache).
    pub fn build(source: &dyn Source) -> Result<FileIndex> {
        let header = Arc::new(HeaderBlocks::default());
        let mut media = Media::open(source, header.clone())?;
        let format = media.format_name();
        let mut video = None;
        let mut audio = Vec::new();
        // SAFETY: reading fields of the open context and its streams.
        let duration = unsafe {
            let d = (*media.fmt).duration;
            if d > 0 {
                d as f64 / ff::AV_TIME_BASE as f64
            } else {
                0.0
            }
        };
        // SAFETY: the best stream of an open context.
        let best = unsafe {
            ff::av_find_best_stream(media.fmt, ff::AVMediaType::AVMEDIA_TYPE_VIDEO, -1, -1, std::ptr::null_mut(), 0)
        };
        for (i, &st) in media.streams().iter().enumerate() {
            // SAFETY: the streams of the open context.
            let (par, tb, avg, st_dur) =
                unsafe { (&*(*st).codecpar, (*st).time_base, (*st).avg_frame_rate, (*st).duration) };
            match par.codec_type {
                ff::AVMediaType::AVMEDIA_TYPE_VIDEO if i as i32 == best => {
                    // Attached pictures (cover art) are not a video.
                    // SAFETY: as above.
                    if unsafe { (*st).disposition } & ff::AV_DISPOSITION_ATTACHED_PIC != 0 {
                        continue;
                    }
                    video = Some(VideoStream {
                        stream: i,
                        codec: codec_name(par.codec_id),
                        width: par.width.max(0) as u32,
                        height: par.height.max(0) as u32,
                        time_base: (tb.num, tb.den),
                        fps: if avg.den > 0 { avg.num as f64 / avg.den as f64 } else { 0.0 },
                        frames: Vec::new(),
                        by_decode: Vec::new(),
                    })
                }
                ff::AVMediaType::AVMEDIA_TYPE_AUDIO => audio.push(AudioStream {
                    stream: i,
                    codec: codec_name(par.codec_id),
                    sample_rate: par.sample_rate.max(0) as u32,
                    channels: par.ch_layout.nb_channels.max(0) as u32,
                    duration: if st_dur > 0 && tb.den > 0 {
                        st_dur as f64 * tb.num as f64 / tb.den as f64
                    } else {
                        duration
                    },
                }),
                _ => {}
            }
        }
        if let Some(v) = video.as_mut() {
            scan_frames(&mut media, v, source.size())?;
        }
        let fetched = media.fetched();
        Ok(FileIndex { format, size: source.size(), duration, video, audio, header, fetched })
    }
}

/// Fills `v.frames` by demuxing the video stream without decoding it.
fn scan_frames(media: &mut Media<'_>, v: &mut VideoStream, size: u64) -> Result<()> {
    let header_only = media.format_name().starts_with("mov,");
    media.keep_only(v.stream);
    // SAFETY: setting flags of the open context: raw container timestamps,
    // no parser (a parser would read the zeros a header-only scan serves).
    unsafe {
        (*media.fmt).flags |= ff::AVFMT_FLAG_NOPARSE | ff::AVFMT_FLAG_NOFILLIN;
    }
    if header_only {
        // A header that places samples past the end: a file cut short (a
        // faststart mp4 whose moov survived the cut), named so at once
        // rather than by a decoder's complaint about the first cut packet
        // (the demuxer itself stops quietly at the end of the data).
        let st = media.streams()[v.stream];
        // SAFETY: the index entries of a stream of the open context, read
        // before any packet is (reading may change them).
        let end = unsafe {
            let n = ff::avformat_index_get_entries_count(st).max(0);
            (0..n)
                .filter_map(|i| ff::avformat_index_get_entry(st, i).as_ref())
                .filter(|e| e.pos >= 0)
                .map(|e| e.pos as u64 + e.size() as u64)
                .max()
                .unwrap_or(0)
        };
        if end > size {
            return Err(Error::corrupt(format!(
                "truncated: the file has {size} bytes, but its moov places video samples up to byte {end} (cut short \
                 while copied or written?)"
            )));
        }
    }
    media.set_phantom(header_only);
    let mut pkt = Packet::new()?;
    let mut frames = Vec::new();
    let mut decode = 0u32;
    while media.read(&mut pkt)? {
        let p = pkt.get();
        if p.stream_index as usize != v.stream {
            continue;
        }
        // Packets an edit list cuts are decoded, never shown: not frames.
        let discard = p.flags & ff::AV_PKT_FLAG_DISCARD != 0;
        let pts = if p.pts != ff::AV_NOPTS_VALUE { p.pts } else { p.dts };
        if !discard && pts != ff::AV_NOPTS_VALUE {
            if frames.len() >= MAX_FRAMES {
                return Err(Error::invalid(format!("the video has over {MAX_FRAMES} frames")));
            }
            frames.push(FrameEntry {
                pts,
                dts: if p.dts != ff::AV_NOPTS_VALUE { p.dts } else { pts },
                decode,
                key: p.flags & ff::AV_PKT_FLAG_KEY != 0,
                pos: p.pos,
            });
        }
        decode += 1;
    }
    media.set_phantom(false);
    frames.sort_by_key(|f| (f.pts, f.decode));
    // Two packets shown at one time: the later one in decoding order wins
    // (a decoder outputs one frame per timestamp).
    frames.dedup_by(|later, earlier| {
        if later.pts == earlier.pts {
            *earlier = *later;
            true
        } else {
            false
        }
    });
    v.set_frames(frames);
    Ok(())
}

/// The cache of indexes, keyed by (URI, size, version); bytes in memory
/// (a URI of "") are never cached.
struct Cache {
    map: HashMap<String, (Arc<FileIndex>, u64)>,
    tick: u64,
}

const CACHE_ENTRIES: usize = 4096;
const CACHE_HEADER_BYTES: usize = 512 << 20;

fn cache() -> &'static Mutex<Cache> {
    static C: OnceLock<Mutex<Cache>> = OnceLock::new();
    C.get_or_init(|| Mutex::new(Cache { map: HashMap::new(), tick: 0 }))
}

/// The index of the file at `uri` (built on the first call), and whether it
/// came from the cache.
pub fn index_of(uri: &str, version: &str, source: &dyn Source) -> Result<(Arc<FileIndex>, bool)> {
    if uri.is_empty() {
        return Ok((Arc::new(FileIndex::build(source)?), false));
    }
    let build = |source: &dyn Source| {
        FileIndex::build(source).map_err(|e| {
            if e.message.contains(uri) {
                e
            } else {
                Error { status: e.status, message: format!("{uri}: {}", e.message) }
            }
        })
    };
    let key = format!("{uri}\u{0}{}\u{0}{version}", source.size());
    {
        let mut c = cache().lock().unwrap();
        c.tick += 1;
        let tick = c.tick;
        if let Some((idx, used)) = c.map.get_mut(&key) {
            *used = tick;
            return Ok((idx.clone(), true));
        }
    }
    // Kept on disk by an earlier process (only files with a version: an
    // etag or an mtime tells a changed file).
    let kept = if version.is_empty() { None } else { crate::store::dir() };
    let idx = match kept.as_deref().and_then(|d| crate::store::load(d, &key)) {
        Some(idx) => Arc::new(FileIndex { fetched: 0, ..idx }),
        None => {
            let idx = build(source)?;
            if let Some(d) = &kept {
                crate::store::save(d, &key, &idx);
            }
            Arc::new(idx)
        }
    };
    let mut c = cache().lock().unwrap();
    let tick = c.tick;
    c.map.insert(key, (idx.clone(), tick));
    loop {
        let total: usize = c.map.values().map(|(i, _)| i.header.bytes()).sum();
        if c.map.len() <= CACHE_ENTRIES && total <= CACHE_HEADER_BYTES {
            break;
        }
        let Some(oldest) = c.map.iter().min_by_key(|(_, (_, used))| *used).map(|(k, _)| k.clone()) else { break };
        c.map.remove(&oldest);
    }
    Ok((idx, false))
}

/// Forgets every cached index (tests).
pub fn clear_cache() {
    cache().lock().unwrap().map.clear();
}
