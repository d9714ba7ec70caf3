//! The ops this crate exports through the op ABI, and their parameters.

use crate::audio::{self, AudioSpec, Offset};
use crate::clip::{self, ClipSpec, Pad, Start, DEFAULT_MAX_PIXELS};
use crate::index::{self, FileIndex};
use crate::media::Source;
use crate::{Error, Result};
use dataio_abi::ops::{flags, kind, Call, ExportOp, Key, Output, Reader};
use dataio_abi::AbiError;
use serde_json::{json, Map, Value as Json};

/// The input of a call as a [`Source`]: the core's ranged reader.
struct ReaderSource<'a, 'b>(&'a Reader<'b>);

impl Source for ReaderSource<'_, '_> {
    fn size(&self) -> u64 {
        self.0.size()
    }
    fn read_at(&self, offset: u64, dst: &mut [u8]) -> Result<()> {
        self.0.read_at(offset, dst).map_err(Error::from)
    }
}

/// The parameters of a call, checked.
pub struct Params(Map<String, Json>);

impl Params {
    pub fn parse(text: &str) -> Result<Params> {
        match serde_json::from_str(text) {
            Ok(Json::Object(m)) => Ok(Params(m)),
            Ok(other) => Err(Error::invalid(format!("params must be an object, got {other}"))),
            Err(e) => Err(Error::invalid(format!("params: {e}"))),
        }
    }
    fn get(&self, name: &str) -> Option<&Json> {
        self.0.get(name).filter(|v| !v.is_null())
    }
    pub fn int(&self, name: &str, default: Option<i64>, min: i64) -> Result<Option<i64>> {
        match self.get(name) {
            None => Ok(default),
            Some(v) => match v.as_i64() {
                Some(i) if i >= min => Ok(Some(i)),
                _ => Err(Error::invalid(format!("{name} must be an integer >= {min}, got {v}"))),
            },
        }
    }
    pub fn float(&self, name: &str) -> Result<Option<f64>> {
        match self.get(name) {
            None => Ok(None),
            Some(v) => match v.as_f64() {
                Some(f) if f.is_finite() && f >= 0.0 => Ok(Some(f)),
                _ => Err(Error::invalid(format!("{name} must be a number >= 0, got {v}"))),
            },
        }
    }
    pub fn bool(&self, name: &str) -> Result<bool> {
        match self.get(name) {
            None => Ok(false),
            Some(Json::Bool(b)) => Ok(*b),
            Some(v) => Err(Error::invalid(format!("{name} must be true or false, got {v}"))),
        }
    }
    pub fn choice<'a>(&self, name: &str, choices: &[&'a str]) -> Result<&'a str> {
        match self.get(name) {
            None => Ok(choices[0]),
            Some(Json::String(s)) => choices
                .iter()
                .find(|c| **c == s)
                .copied()
                .ok_or_else(|| Error::invalid(format!("{name} must be one of {choices:?}, got {s:?}"))),
            Some(v) => Err(Error::invalid(format!("{name} must be one of {choices:?}, got {v}"))),
        }
    }
}

/// The clip a call's parameters ask for.
pub fn clip_spec(p: &Params) -> Result<(ClipSpec, u64, u64)> {
    let num_frames = p.int("num_frames", Some(16), 1)?.unwrap() as usize;
    let max_frames = p.int("max_frames", Some(1024), 1)?.unwrap();
    if num_frames as i64 > max_frames {
        return Err(Error::invalid(format!("num_frames={num_frames} is over max_frames={max_frames}")));
    }
    let stride = p.int("stride", Some(1), 1)?.unwrap() as usize;
    let fps = p.float("fps")?;
    if fps == Some(0.0) {
        return Err(Error::invalid("fps must be > 0"));
    }
    if fps.is_some() && stride != 1 {
        return Err(Error::invalid("give stride or fps, not both (fps resamples by timestamps)"));
    }
    let clip = p.choice("clip", &["random", "start", "center"])?;
    let start = match (p.int("start_frame", None, 0)?, p.float("start_time")?) {
        (Some(_), Some(_)) => return Err(Error::invalid("give start_frame or start_time, not both")),
        (Some(f), None) => Start::Frame(f as u64),
        (None, Some(t)) => Start::Time(t),
        (None, None) => match clip {
            "start" => Start::First,
            "center" => Start::Center,
            _ => Start::Random,
        },
    };
    let pad = match p.choice("pad", &["repeat_last", "error"])? {
        "error" => Pad::Error,
        _ => Pad::RepeatLast,
    };
    if !matches!(p.get("audio"), None | Some(Json::Bool(false))) {
        return Err(Error::invalid(
            "audio= is expanded when the pipeline is built (dataio.pipeline adds the slot <slot>_audio, a decode_audio \
             with video_clip=); a plan written by hand names that slot itself",
        ));
    }
    let max_pixels = p.int("max_pixels", Some(DEFAULT_MAX_PIXELS as i64), 1)?.unwrap() as u64;
    Ok((ClipSpec { num_frames, stride, fps, start, pad }, max_pixels, max_frames as u64))
}

/// The keyed draw that places a clip: from the call's own stream, or, for
/// a `pair` (decode_video and the decode_audio that audio=True adds), from
/// one stream both compute, so the audio window is the clip's.
fn clip_draw(call: &Call<'_>, p: &Params) -> Result<u64> {
    match p.get("pair") {
        None => Ok(call.key.draw(0)),
        Some(Json::String(pair)) => {
            let stream = dataio_abi::host::fnv1a(pair.as_bytes());
            Ok(Key { stream, ..call.key }.draw(0))
        }
        Some(v) => Err(Error::invalid(format!("pair must be a slot name, got {v}"))),
    }
}

fn index_for(call: &Call<'_>, source: &dyn Source) -> Result<std::sync::Arc<FileIndex>> {
    Ok(index::index_of(call.uri, call.version, source)?.0)
}

fn with_source<T>(call: &Call<'_>, f: impl FnOnce(&dyn Source) -> Result<T>) -> Result<T> {
    match &call.reader {
        Some(r) => f(&ReaderSource(r)),
        None => f(&crate::media::InMemory(call.data)),
    }
}

/// `decode_video`: a frame-exact clip, uint8 `[T, H, W, 3]`.
pub struct DecodeVideo;

impl ExportOp for DecodeVideo {
    fn name(&self) -> &str {
        "decode_video"
    }
    fn kind(&self) -> u32 {
        kind::DECODE
    }
    fn flags(&self) -> u32 {
        flags::RANGED_INPUT
    }
    fn run(&self, call: &Call<'_>, out: &mut Output<'_>) -> std::result::Result<(), AbiError> {
        let p = Params::parse(call.params)?;
        let (spec, max_pixels, _) = clip_spec(&p)?;
        let uri = if call.uri.is_empty() { "the input" } else { call.uri };
        with_source(call, |source| {
            let idx = index_for(call, source)?;
            let v = idx.video.as_ref().ok_or_else(|| {
                let what = if idx.audio.is_empty() { "no stream at all" } else { "only audio (use decode_audio)" };
                Error::unsupported(format!("{uri}: no video stream: the file has {what}"))
            })?;
            let (h, w) = (v.height, v.width);
            if h == 0 || w == 0 {
                return Err(Error::corrupt(format!("{uri}: the video has no size ({w}x{h})")));
            }
            if h as u64 * w as u64 > max_pixels {
                return Err(Error::invalid(format!("{uri}: {w}x{h} frames are over max_pixels={max_pixels}")));
            }
            let which = clip::select(v, &spec, clip_draw(call, &p)?, uri)?;
            let dst = out.alloc("uint8", &[which.len() as u64, h as u64, w as u64, 3])?;
            clip::decode(source, &idx, &which, (h, w), dst, uri)?;
            Ok(())
        })
        .map_err(AbiError::from)
    }
}

/// `decode_audio`: a window of the first audio stream, float32 `[C, N]`.
pub struct DecodeAudio;

pub fn audio_spec(p: &Params) -> Result<AudioSpec> {
    let sample_rate = p.int("sample_rate", None, 1)?.map(|r| r as u32);
    if sample_rate.is_some_and(|r| r > 768_000) {
        return Err(Error::invalid("sample_rate must be at most 768000"));
    }
    let offset = match p.get("offset") {
        Some(Json::String(s)) if s == "random" => Offset::Random,
        Some(Json::String(s)) => {
            return Err(Error::invalid(format!("offset must be seconds or \"random\", got {s:?}")))
        }
        _ => Offset::At(p.float("offset")?.unwrap_or(0.0)),
    };
    let duration = p.float("duration")?;
    if duration == Some(0.0) {
        return Err(Error::invalid("duration must be > 0"));
    }
    let max_samples = p.int("max_samples", Some(audio::DEFAULT_MAX_SAMPLES as i64), 1)?.unwrap() as u64;
    let pad = !matches!(p.get("pad"), Some(Json::Bool(false)));
    Ok(AudioSpec { sample_rate, mono: p.bool("mono")?, duration, offset, max_samples, pad })
}

/// The clip of a paired decode_video (`video_clip`, `clip_start_*`), if any.
fn paired_clip(p: &Params) -> Result<Option<ClipSpec>> {
    let Some(v) = p.get("video_clip") else { return Ok(None) };
    let Json::Object(m) = v else { return Err(Error::invalid(format!("video_clip must be an object, got {v}"))) };
    let mut m = m.clone();
    for key in ["start_frame", "start_time"] {
        if let Some(x) = p.get(&format!("clip_{key}")) {
            m.insert(key.into(), x.clone());
        }
    }
    Ok(Some(clip_spec(&Params(m))?.0))
}

/// The audio window of the clip `spec` draws in the file's video: from
/// its first frame's time, for the clip's nominal span (`num_frames *
/// stride` frames at the video's rate, or `num_frames / fps`), so every
/// window of a pipeline has the same length.
fn clip_window(idx: &FileIndex, spec: &ClipSpec, draw: u64, uri: &str) -> Result<(f64, f64)> {
    let v = idx
        .video
        .as_ref()
        .ok_or_else(|| Error::unsupported(format!("{uri}: audio of a clip: the file has no video stream")))?;
    let which = clip::select(v, spec, draw, uri)?;
    let start = v.seconds(v.frames[which[0]].pts);
    let rate = if v.fps > 0.0 {
        v.fps
    } else if v.frames.len() > 1 {
        (v.frames.len() - 1) as f64
            / (v.seconds(v.frames[v.frames.len() - 1].pts) - v.seconds(v.frames[0].pts)).max(1e-9)
    } else {
        return Err(Error::corrupt(format!("{uri}: the video's frame rate is unknown")));
    };
    let span = match spec.fps {
        Some(f) => spec.num_frames as f64 / f,
        None => (spec.num_frames * spec.stride) as f64 / rate,
    };
    Ok((start, span))
}

impl ExportOp for DecodeAudio {
    fn name(&self) -> &str {
        "decode_audio"
    }
    fn kind(&self) -> u32 {
        kind::DECODE
    }
    fn flags(&self) -> u32 {
        flags::RANGED_INPUT
    }
    fn run(&self, call: &Call<'_>, out: &mut Output<'_>) -> std::result::Result<(), AbiError> {
        let p = Params::parse(call.params)?;
        let mut spec = audio_spec(&p)?;
        let paired = paired_clip(&p)?;
        let uri = if call.uri.is_empty() { "the input" } else { call.uri };
        with_source(call, |source| {
            let idx = index_for(call, source)?;
            if let Some(clip) = &paired {
                let (start, span) = clip_window(&idx, clip, clip_draw(call, &p)?, uri)?;
                spec.offset = Offset::Absolute(start);
                spec.duration = Some(span);
            }
            let w = audio::decode(source, &idx, &spec, call.key.draw(0), uri)?;
            let dst = out.alloc("float32", &[w.channels as u64, w.len as u64])?;
            for (d, s) in dst.chunks_exact_mut(4).zip(&w.data) {
                d.copy_from_slice(&s.to_ne_bytes());
            }
            Ok(())
        })
        .map_err(AbiError::from)
    }
}

/// What [`FileIndex`] knows, as the `video_info` verb returns it.
pub fn info_json(idx: &FileIndex) -> Json {
    let video = idx.video.as_ref().map(|v| {
        let frames = v.frames.len();
        let duration = match (v.frames.first(), v.frames.last()) {
            (Some(a), Some(b)) if frames > 1 => {
                // The last frame lasts one average frame interval.
                let span = v.seconds(b.pts) - v.seconds(a.pts);
                span + span / (frames - 1) as f64
            }
            _ => idx.duration,
        };
        json!({
            "codec": v.codec,
            "width": v.width,
            "height": v.height,
            "fps": if v.fps > 0.0 { v.fps } else if duration > 0.0 { frames as f64 / duration } else { 0.0 },
            "frames": frames,
            "duration": duration,
            "keyframes": v.keyframes(),
            "start_time": v.frames.first().map_or(0.0, |f| v.seconds(f.pts)),
        })
    });
    let audio: Vec<Json> = idx
        .audio
        .iter()
        .map(|a| json!({"stream": a.stream, "codec": a.codec, "sample_rate": a.sample_rate, "channels": a.channels, "duration": a.duration}))
        .collect();
    let mut m = Map::new();
    m.insert("format".into(), json!(idx.format));
    m.insert("size".into(), json!(idx.size));
    m.insert("duration".into(), json!(idx.duration));
    if let Some(Json::Object(v)) = video {
        m.extend(v);
    }
    m.insert("has_video".into(), json!(idx.video.is_some()));
    m.insert("audio".into(), json!(audio));
    Json::Object(m)
}

/// `video_info`: the file's index as UTF-8 JSON bytes (uint8 `[n]`).
pub struct VideoInfo;

impl ExportOp for VideoInfo {
    fn name(&self) -> &str {
        "video_info"
    }
    fn kind(&self) -> u32 {
        kind::DECODE
    }
    fn flags(&self) -> u32 {
        flags::RANGED_INPUT
    }
    fn run(&self, call: &Call<'_>, out: &mut Output<'_>) -> std::result::Result<(), AbiError> {
        let text = with_source(call, |source| Ok(info_json(&*index_for(call, source)?).to_string()))?;
        out.alloc("uint8", &[text.len() as u64])?.copy_from_slice(text.as_bytes());
        Ok(())
    }
}
