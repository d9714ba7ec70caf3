//! Frame-exact clips: which frames a clip holds (in presentation order),
//! then decoding from the keyframe before the first of them to the last,
//! each wanted frame converted to RGB24 into its place in the output.

use crate::index::{FileIndex, VideoStream};
use crate::media::{Decoder, Frame, Media, Packet, Source};
use crate::{Error, Result};
use ffmpeg_sys_next as ff;
use std::collections::HashMap;

/// Where a clip starts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Start {
    Random,
    First,
    Center,
    Frame(u64),
    Time(f64),
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pad {
    RepeatLast,
    Error,
}

#[derive(Clone, Debug)]
pub struct ClipSpec {
    pub num_frames: usize,
    pub stride: usize,
    pub fps: Option<f64>,
    pub start: Start,
    pub pad: Pad,
}

/// The presentation-order indices of the clip's frames. `draw` is a keyed
/// uniform draw (used when the start is random).
pub fn select(v: &VideoStream, spec: &ClipSpec, draw: u64, uri: &str) -> Result<Vec<usize>> {
    let n = v.frames.len();
    if n == 0 {
        return Err(Error::corrupt(format!("{uri}: the video stream has no frames")));
    }
    let t = spec.num_frames;
    let too_short = |need: String| -> Result<Vec<usize>> {
        Err(Error::out_of_range(format!("{uri}: the clip needs {need}, the video has {n} frames (pad=\"error\")")))
    };
    match spec.fps {
        None => {
            let span = (t - 1) * spec.stride + 1;
            let starts = n.saturating_sub(span) + 1;
            let start = match spec.start {
                Start::Random => (draw % starts as u64) as usize,
                Start::First => 0,
                Start::Center => (n.saturating_sub(span)) / 2,
                Start::Frame(f) => {
                    if f >= n as u64 {
                        return Err(Error::out_of_range(format!(
                            "{uri}: start_frame={f} is past the last frame ({} frames)",
                            n
                        )));
                    }
                    f as usize
                }
                Start::Time(s) => frame_at(v, s, uri)?,
            };
            if start + span > n && spec.pad == Pad::Error {
                return too_short(format!("frames {start}..{} (stride {})", start + span - 1, spec.stride));
            }
            Ok((0..t).map(|k| (start + k * spec.stride).min(n - 1)).collect())
        }
        Some(fps) => {
            // Times t0 + k / fps; each takes the frame shown at that time.
            let first = v.seconds(v.frames[0].pts);
            let last = v.seconds(v.frames[n - 1].pts);
            let span = (t - 1) as f64 / fps;
            let latest = (last - span).max(first);
            let t0 = match spec.start {
                Start::Random => first + (latest - first) * unit(draw),
                Start::First => first,
                Start::Center => first + (latest - first) / 2.0,
                Start::Frame(f) => {
                    let f = usize::try_from(f).ok().filter(|&f| f < n).ok_or_else(|| {
                        Error::out_of_range(format!("{uri}: start_frame={f} is past the last frame ({n} frames)"))
                    })?;
                    v.seconds(v.frames[f].pts)
                }
                Start::Time(s) => v.seconds(v.frames[frame_at(v, s, uri)?].pts).max(first + s),
            };
            if t0 + span > last + 1e-9 && spec.pad == Pad::Error {
                return too_short(format!("{span:.3} s from {t0:.3} s at fps={fps}"));
            }
            (0..t).map(|k| Ok(shown_at(v, t0 + k as f64 / fps))).collect()
        }
    }
}

/// A uniform draw in [0, 1).
fn unit(draw: u64) -> f64 {
    (draw >> 11) as f64 / (1u64 << 53) as f64
}

/// The frame shown at time `s` (the last frame presented at or before it).
fn shown_at(v: &VideoStream, s: f64) -> usize {
    let i = v.frames.partition_point(|f| v.seconds(f.pts) <= s + 1e-9);
    i.saturating_sub(1)
}

/// The frame shown `s` seconds after the first.
fn frame_at(v: &VideoStream, s: f64, uri: &str) -> Result<usize> {
    let n = v.frames.len();
    let first = v.seconds(v.frames[0].pts);
    let last = v.seconds(v.frames[n - 1].pts) - first;
    if !(s.is_finite() && s >= 0.0) || s > last + 1e-9 {
        return Err(Error::out_of_range(format!("{uri}: start_time={s} s is past the last frame (at {last:.3} s)")));
    }
    Ok(shown_at(v, first + s))
}

/// The largest `max_pixels` (per frame) a clip may have by default.
pub const DEFAULT_MAX_PIXELS: u64 = 1 << 25;

/// Decodes frames `which` (presentation order, may repeat) of the file into
/// `out`, `[T, H, W, 3]` RGB24 with (H, W) = `size`. Returns bytes fetched.
pub fn decode(
    source: &dyn Source,
    index: &FileIndex,
    which: &[usize],
    size: (u32, u32),
    out: &mut [u8],
    uri: &str,
) -> Result<u64> {
    let v = index.video.as_ref().ok_or_else(|| Error::invalid(format!("{uri}: no video stream")))?;
    let mut media = Media::open(source, index.header.clone())?;
    media.keep_only(v.stream);
    let mut dec = Decoder::open(&media, v.stream)?;
    // Every slot of the output a timestamp fills.
    let mut wanted: HashMap<i64, Vec<usize>> = HashMap::new();
    for (slot, &i) in which.iter().enumerate() {
        wanted.entry(v.frames[i].pts).or_default().push(slot);
    }
    let first_pts = which.iter().map(|&i| v.frames[i].pts).min().unwrap();
    let first_decode = which.iter().map(|&i| v.frames[i].decode).min().unwrap();
    // The keyframe to start from: at or before every wanted frame in both
    // decoding and presentation order (an open GOP's leading frames need
    // the keyframe before their own).
    let mut keys: Vec<_> = v.frames.iter().filter(|f| f.key).collect();
    keys.sort_by_key(|f| f.decode);
    let start = keys.iter().rev().find(|k| k.decode <= first_decode && k.pts <= first_pts).copied();
    match start {
        // The first keyframe or none before it: from the start of the stream.
        Some(k) if k.decode > 0 => {
            // Demuxers seek by presentation time (mp4's too: it steps back
            // to a keyframe shown at or before the time asked, so the
            // keyframe's dts would land a GOP early).
            media.seek(v.stream, k.pts, ff::AVSEEK_FLAG_BACKWARD)?;
        }
        // A freshly opened demuxer is at the start of the stream.
        _ => {}
    }
    // The bytes the clip's packets lie in, from the index: from the start
    // packet to the packet after the last one needed (its start bounds the
    // last one's end), fetched as one ranged read rather than block by
    // block as the demuxer asks.
    let from = start.map_or(0, |k| k.decode);
    let last_decode = which.iter().map(|&i| v.frames[i].decode).max().unwrap();
    if let Some((lo, hi)) = v.byte_span(from, last_decode, index.size) {
        media.prefetch(lo, hi)?;
    }
    let frame_bytes = size.0 as usize * size.1 as usize * 3;
    let mut filled = 0usize;
    let mut pkt = Packet::new()?;
    let mut frame = Frame::new()?;
    let mut sws = Scaler::default();
    let mut eof = false;
    let mut first_packet = true;
    while filled < which.len() {
        if !eof {
            if media.read(&mut pkt)? {
                let p = pkt.get();
                if p.stream_index as usize != v.stream {
                    continue;
                }
                if first_packet {
                    first_packet = false;
                    // The seek must land at or before the keyframe chosen.
                    if let Some(k) = start {
                        if k.decode > 0 && k.pos >= 0 && p.pos > k.pos {
                            return Err(Error::corrupt(format!(
                                "{uri}: seeking to the keyframe at pts {} (byte {}) landed at byte {}, after it",
                                k.pts, k.pos, p.pos
                            )));
                        }
                    }
                }
                // A frame no slot wants and no other frame references
                // (a non-reference B-frame before or inside the clip) is
                // not decoded.
                // (Its pts as the index has it: the dts where there is none.)
                let pts = if p.pts != ff::AV_NOPTS_VALUE { p.pts } else { p.dts };
                dec.skip_unreferenced(!wanted.contains_key(&pts));
                dec.send(Some(&pkt))?;
            } else {
                eof = true;
                dec.send(None)?;
            }
        }
        let mut got_any = false;
        while dec.receive(&mut frame)? {
            got_any = true;
            let f = frame.get();
            let pts = if f.pts != ff::AV_NOPTS_VALUE { f.pts } else { f.best_effort_timestamp };
            if let Some(slots) = wanted.remove(&pts) {
                let first = slots[0];
                sws.convert(f, size, &mut out[first * frame_bytes..(first + 1) * frame_bytes])?;
                for &s in &slots[1..] {
                    out.copy_within(first * frame_bytes..(first + 1) * frame_bytes, s * frame_bytes);
                }
                filled += slots.len();
            }
            // SAFETY: a live frame.
            unsafe { ff::av_frame_unref(frame.0) };
        }
        if eof && !got_any {
            break;
        }
    }
    if filled < which.len() {
        let mut missing: Vec<usize> = wanted.values().flatten().map(|&slot| which[slot]).collect();
        missing.sort_unstable();
        missing.dedup();
        let f = missing[0];
        return Err(Error::corrupt(format!(
            "{uri}: frame {f} (pts {}, {:.3} s) could not be decoded ({} of the clip's frames missing)",
            v.frames[f].pts,
            v.seconds(v.frames[f].pts),
            missing.len()
        )));
    }
    Ok(media.fetched())
}

/// swscale to packed RGB24 at a fixed size.
///
/// swscale never writes into the clip directly. Its SIMD converters work in
/// blocks of 8 pixels: with a destination row exactly `3 * w` bytes long
/// (the clip's frame rows) FFmpeg 5.1's x86 YUV-to-RGB path rounds the
/// width down to a multiple of 8 and leaves the last `w % 8` pixels of
/// every row unwritten (a 322-pixel-wide video gave two columns of whatever
/// the pooled buffer held before: uninitialised memory, stale pixels of
/// another clip), and other paths write whole blocks past a row's end. So
/// it converts into a scratch image whose rows are padded to 64 bytes and
/// which has 64 spare bytes at its end, as FFmpeg asks of its buffers, and
/// each row's `3 * w` bytes are copied into their place.
#[derive(Default)]
struct Scaler {
    ctx: Option<*mut ff::SwsContext>,
    scratch: Vec<u8>,
}

/// Padding swscale may write past a row or an image (its widest SIMD block).
const SWS_PAD: usize = 64;

impl Scaler {
    fn convert(&mut self, f: &ff::AVFrame, size: (u32, u32), dst: &mut [u8]) -> Result<()> {
        if f.width <= 0 || f.height <= 0 || f.format < 0 {
            return Err(Error::corrupt("the decoder gave an empty frame"));
        }
        let (h, w) = (size.0 as i32, size.1 as i32);
        // SAFETY: a decoded frame's format is a valid AVPixelFormat.
        let src_fmt: ff::AVPixelFormat = unsafe { std::mem::transmute::<i32, ff::AVPixelFormat>(f.format) };
        // SAFETY: getCachedContext frees or reuses the context it is given;
        // scaling writes h rows of at most `stride` bytes (plus SIMD
        // overrun within SWS_PAD) into `scratch`, which holds them from an
        // aligned start; the row copies read inside `scratch` and write
        // `dst`, which holds h rows of 3*w bytes (checked by the caller's
        // alloc of [T, h, w, 3]).
        unsafe {
            let ctx = ff::sws_getCachedContext(
                self.ctx.unwrap_or(std::ptr::null_mut()),
                f.width,
                f.height,
                src_fmt,
                w,
                h,
                ff::AVPixelFormat::AV_PIX_FMT_RGB24,
                ff::SWS_BILINEAR,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null(),
            );
            if ctx.is_null() {
                return Err(Error::unsupported(format!("no conversion from pixel format {} to RGB", f.format)));
            }
            self.ctx = Some(ctx);
            let row = 3 * w as usize;
            let stride = row.div_ceil(SWS_PAD) * SWS_PAD;
            // Room for an aligned start, h padded rows, and the tail padding.
            let need = SWS_PAD + stride * h as usize + SWS_PAD;
            if self.scratch.len() < need {
                self.scratch.resize(need, 0);
            }
            let base = self.scratch.as_mut_ptr();
            let start = base.add(base.align_offset(SWS_PAD));
            let dst_planes = [start, std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut()];
            let dst_strides = [stride as i32, 0, 0, 0];
            let rows = ff::sws_scale(
                ctx,
                f.data.as_ptr() as *const *const u8,
                f.linesize.as_ptr(),
                0,
                f.height,
                dst_planes.as_ptr(),
                dst_strides.as_ptr(),
            );
            if rows != h {
                return Err(Error::corrupt(format!("converting a frame to RGB gave {rows} rows, not {h}")));
            }
            let offset = start.offset_from(base) as usize;
            for (y, out) in dst.chunks_exact_mut(row).take(h as usize).enumerate() {
                let at = offset + y * stride;
                out.copy_from_slice(&self.scratch[at..at + row]);
            }
        }
        Ok(())
    }
}

impl Drop for Scaler {
    fn drop(&mut self) {
        if let Some(c) = self.ctx {
            // SAFETY: owned here.
            unsafe { ff::sws_freeContext(c) }
        }
    }
}
