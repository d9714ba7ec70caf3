//! The ops this crate exports through the op ABI, and their parameters.

use crate::audio::{self, AudioSpec, Offset};
use crate::clip::{self, ClipSpec, Pad, Start, DEFAULT_MAX_PIXELS};
use crate::index::{self, FileIndex};
use crate::media::Source;
use crate::{Error, Result};
use dataio_abi::ops::{flags, kind, Call, Host, Key, NoParams, Op, Output};
use dataio_abi::AbiError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value as Json};

/// Where a clip starts when no start is given.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ClipAt {
    #[default]
    Random,
    Start,
    Center,
}

/// What a clip running past the last frame does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PadMode {
    #[default]
    RepeatLast,
    Error,
}

/// `audio=`: true, or the options of the `<slot>_audio` slot it adds.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum AudioOption {
    On(bool),
    Options(Map<String, Json>),
}

impl Default for AudioOption {
    fn default() -> Self {
        AudioOption::On(false)
    }
}

/// The parameters of `decode_video`, parsed once per plan.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct VideoParams {
    /// Frames in a clip.
    #[schemars(range(min = 1))]
    pub num_frames: u64,
    /// Take every stride-th frame.
    #[schemars(range(min = 1))]
    pub stride: u64,
    /// Resample the clip to this many frames per second, by timestamps (instead of stride).
    #[schemars(range(min = 0))]
    pub fps: Option<f64>,
    /// Where the clip starts when start_frame/start_time are unset: a keyed random start, the first frame, or centered.
    pub clip: ClipAt,
    /// The clip's first frame.
    pub start_frame: Option<u64>,
    /// The clip's start, in seconds.
    #[schemars(range(min = 0))]
    pub start_time: Option<f64>,
    /// A clip running past the end repeats the last frame, or fails the row.
    pub pad: PadMode,
    /// Also decode the clip's audio into the slot <slot>_audio (true, or {"sample_rate": ..., "mono": ..., "max_samples": ...}).
    pub audio: AudioOption,
    /// Frames with more pixels than this fail the row.
    #[schemars(range(min = 1))]
    pub max_pixels: u64,
    /// The longest clip allowed.
    #[schemars(range(min = 1))]
    pub max_frames: u64,
    /// Set by the pipeline: the slot whose keyed stream places the clip (shared with its audio).
    pub pair: Option<String>,
}

impl Default for VideoParams {
    fn default() -> Self {
        VideoParams {
            num_frames: 16,
            stride: 1,
            fps: None,
            clip: ClipAt::Random,
            start_frame: None,
            start_time: None,
            pad: PadMode::RepeatLast,
            audio: AudioOption::On(false),
            max_pixels: DEFAULT_MAX_PIXELS,
            max_frames: 1024,
            pair: None,
        }
    }
}

fn finite(name: &str, v: Option<f64>) -> Result<Option<f64>> {
    match v {
        Some(f) if !f.is_finite() || f < 0.0 => Err(Error::invalid(format!("{name} must be a number >= 0, got {f}"))),
        _ => Ok(v),
    }
}

impl VideoParams {
    /// The clip these parameters ask for.
    pub fn clip_spec(&self) -> Result<ClipSpec> {
        if self.num_frames == 0 || self.stride == 0 || self.max_frames == 0 || self.max_pixels == 0 {
            return Err(Error::invalid("num_frames, stride, max_frames and max_pixels must be >= 1"));
        }
        if self.num_frames > self.max_frames {
            return Err(Error::invalid(format!(
                "num_frames={} is over max_frames={}",
                self.num_frames, self.max_frames
            )));
        }
        let fps = finite("fps", self.fps)?;
        if fps == Some(0.0) {
            return Err(Error::invalid("fps must be > 0"));
        }
        if fps.is_some() && self.stride != 1 {
            return Err(Error::invalid("give stride or fps, not both (fps resamples by timestamps)"));
        }
        let start = match (self.start_frame, finite("start_time", self.start_time)?) {
            (Some(_), Some(_)) => return Err(Error::invalid("give start_frame or start_time, not both")),
            (Some(f), None) => Start::Frame(f),
            (None, Some(t)) => Start::Time(t),
            (None, None) => match self.clip {
                ClipAt::Start => Start::First,
                ClipAt::Center => Start::Center,
                ClipAt::Random => Start::Random,
            },
        };
        let pad = match self.pad {
            PadMode::Error => Pad::Error,
            PadMode::RepeatLast => Pad::RepeatLast,
        };
        Ok(ClipSpec { num_frames: self.num_frames as usize, stride: self.stride as usize, fps, start, pad })
    }
}

/// `offset=`: seconds, or "random".
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum OffsetParam {
    Seconds(f64),
    Named(String),
}

/// The parameters of `decode_audio`, parsed once per plan.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct AudioParams {
    /// Resample to this rate in Hz (the file's own when unset).
    #[schemars(range(min = 1, max = 768000))]
    pub sample_rate: Option<u32>,
    /// Downmix to one channel.
    pub mono: bool,
    /// Seconds to read (to the end when unset).
    #[schemars(range(min = 0))]
    pub duration: Option<f64>,
    /// Where the window starts: seconds, or "random" (a keyed draw).
    pub offset: OffsetParam,
    /// The most samples (all channels) one window may hold.
    #[schemars(range(min = 1))]
    pub max_samples: u64,
    /// A window the audio ends inside is zero-padded to duration (false, as a pipeline sets it: cut, and the batch padded).
    pub pad: bool,
    /// Set by the pipeline: the clip of the paired decode_video slot.
    pub video_clip: Option<VideoParams>,
    /// Set by the pipeline: the paired clip's start_frame.
    pub clip_start_frame: Option<u64>,
    /// Set by the pipeline: the paired clip's start_time.
    pub clip_start_time: Option<f64>,
    /// Set by the pipeline: the slot whose keyed stream places the clip.
    pub pair: Option<String>,
}

impl Default for AudioParams {
    fn default() -> Self {
        AudioParams {
            sample_rate: None,
            mono: false,
            duration: None,
            offset: OffsetParam::Seconds(0.0),
            max_samples: audio::DEFAULT_MAX_SAMPLES,
            pad: true,
            video_clip: None,
            clip_start_frame: None,
            clip_start_time: None,
            pair: None,
        }
    }
}

impl AudioParams {
    pub fn audio_spec(&self) -> Result<AudioSpec> {
        if self.sample_rate == Some(0) || self.sample_rate.is_some_and(|r| r > 768_000) {
            return Err(Error::invalid("sample_rate must be in 1..=768000"));
        }
        let offset = match &self.offset {
            OffsetParam::Named(s) if s == "random" => Offset::Random,
            OffsetParam::Named(s) => {
                return Err(Error::invalid(format!("offset must be seconds or \"random\", got {s:?}")))
            }
            OffsetParam::Seconds(f) => Offset::At(finite("offset", Some(*f))?.unwrap_or(0.0)),
        };
        let duration = finite("duration", self.duration)?;
        if duration == Some(0.0) {
            return Err(Error::invalid("duration must be > 0"));
        }
        if self.max_samples == 0 {
            return Err(Error::invalid("max_samples must be >= 1"));
        }
        Ok(AudioSpec {
            sample_rate: self.sample_rate,
            mono: self.mono,
            duration,
            offset,
            max_samples: self.max_samples,
            pad: self.pad,
        })
    }

    /// The clip of a paired decode_video (`video_clip`, `clip_start_*`), if any.
    fn paired_clip(&self) -> Result<Option<ClipSpec>> {
        let Some(v) = &self.video_clip else { return Ok(None) };
        let mut v = v.clone();
        if self.clip_start_frame.is_some() || self.clip_start_time.is_some() {
            v.start_frame = self.clip_start_frame;
            v.start_time = self.clip_start_time;
        }
        Ok(Some(v.clip_spec()?))
    }
}

/// The keyed draw that places a clip: from the call's own stream, or, for
/// a `pair` (decode_video and the decode_audio that audio=True adds), from
/// one stream both compute, so the audio window is the clip's.
fn clip_draw(call: &Call<'_>, pair: Option<&str>) -> u64 {
    match pair {
        None => call.key.draw(0),
        Some(pair) => Key { stream: dataio_abi::host::fnv1a(pair.as_bytes()), ..call.key }.draw(0),
    }
}

fn index_for(call: &Call<'_>, source: &dyn Source) -> Result<std::sync::Arc<FileIndex>> {
    Ok(index::index_of(call.uri, call.version, source)?.0)
}

fn with_source<T>(call: &Call<'_>, f: impl FnOnce(&dyn Source) -> Result<T>) -> Result<T> {
    f(call.source())
}

/// `decode_video`: a frame-exact clip, uint8 `[T, H, W, 3]`.
pub struct DecodeVideo;

impl Op for DecodeVideo {
    const NAME: &'static str = "decode_video";
    const DOC: &'static str = "A frame-exact clip of num_frames frames (every stride-th, or resampled to fps), \
        uint8 [T, H, W, 3]; clip='random'|'start'|'center' or start_frame/start_time; read by range, decoded \
        from the keyframe before the clip; audio=True adds <slot>_audio.";
    const KIND: u32 = kind::DECODE;
    const FLAGS: u32 = flags::RANGED_INPUT;
    const COMPANIONS_HOOK: &'static str = "dataio_video.plugin:video_companions";
    const OUTPUT_DTYPE: &'static str = "uint8";
    const OUTPUT_NDIM: i32 = 4;
    type Params = VideoParams;

    fn prepare(&self, p: &VideoParams, _: &Host<'_>) -> std::result::Result<(), AbiError> {
        p.clip_spec()?;
        if !matches!(p.audio, AudioOption::On(false)) {
            return Err(Error::invalid(
                "audio= is expanded when the pipeline is built (dataio.pipeline adds the slot <slot>_audio, a \
                 decode_audio with video_clip=); a plan written by hand names that slot itself",
            )
            .into());
        }
        Ok(())
    }

    fn run(&self, p: &VideoParams, call: &Call<'_>, out: &mut Output<'_>) -> std::result::Result<(), AbiError> {
        let spec = p.clip_spec()?;
        let max_pixels = p.max_pixels;
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
            let which = clip::select(v, &spec, clip_draw(call, p.pair.as_deref()), uri)?;
            let dst = out.alloc("uint8", &[which.len() as u64, h as u64, w as u64, 3])?;
            clip::decode(source, &idx, &which, (h, w), dst, uri)?;
            Ok(())
        })
        .map_err(AbiError::from)
    }
}

/// `decode_audio`: a window of the first audio stream, float32 `[C, N]`.
pub struct DecodeAudio;

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

impl Op for DecodeAudio {
    const NAME: &'static str = "decode_audio";
    const DOC: &'static str = "duration seconds of the first audio stream from offset (seconds or 'random'), \
        float32 [C, N], resampled to sample_rate, downmixed when mono; with duration, in a pipeline, a shorter \
        window is zero-padded and <slot>_lengths holds each row's samples.";
    const KIND: u32 = kind::DECODE;
    const FLAGS: u32 = flags::RANGED_INPUT;
    const COMPANIONS_HOOK: &'static str = "dataio_video.plugin:audio_companions";
    const OUTPUT_DTYPE: &'static str = "float32";
    const OUTPUT_NDIM: i32 = 2;
    type Params = AudioParams;

    fn prepare(&self, p: &AudioParams, _: &Host<'_>) -> std::result::Result<(), AbiError> {
        p.audio_spec()?;
        p.paired_clip()?;
        Ok(())
    }

    fn run(&self, p: &AudioParams, call: &Call<'_>, out: &mut Output<'_>) -> std::result::Result<(), AbiError> {
        let mut spec = p.audio_spec()?;
        let paired = p.paired_clip()?;
        let uri = if call.uri.is_empty() { "the input" } else { call.uri };
        with_source(call, |source| {
            let idx = index_for(call, source)?;
            if let Some(clip) = &paired {
                let (start, span) = clip_window(&idx, clip, clip_draw(call, p.pair.as_deref()), uri)?;
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

impl Op for VideoInfo {
    const NAME: &'static str = "video_info";
    const DOC: &'static str = "What a media file holds (the dataio.video_info verb), as UTF-8 JSON bytes.";
    const KIND: u32 = kind::DECODE;
    const FLAGS: u32 = flags::RANGED_INPUT;
    const OUTPUT_DTYPE: &'static str = "uint8";
    const OUTPUT_NDIM: i32 = 1;
    type Params = NoParams;

    fn run(&self, _: &NoParams, call: &Call<'_>, out: &mut Output<'_>) -> std::result::Result<(), AbiError> {
        let text = with_source(call, |source| Ok(info_json(&*index_for(call, source)?).to_string()))?;
        out.alloc("uint8", &[text.len() as u64])?.copy_from_slice(text.as_bytes());
        Ok(())
    }
}
