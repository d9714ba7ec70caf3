//! Audio windows: decode from the packet before `offset`, resample with
//! swresample to float32 planar at the rate and channel count asked for,
//! and cut exactly `duration` seconds from `offset` (zero-padded past the
//! end of the stream).

use crate::index::FileIndex;
use crate::media::{av_error, Decoder, Frame, Media, Packet, Source};
use crate::{Error, Result};
use ffmpeg_sys_next as ff;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Offset {
    /// Seconds from the stream's start.
    At(f64),
    Random,
    /// Seconds on the file's own clock (a video clip's first frame's time).
    Absolute(f64),
}

#[derive(Clone, Debug)]
pub struct AudioSpec {
    pub sample_rate: Option<u32>,
    pub mono: bool,
    pub duration: Option<f64>,
    pub offset: Offset,
    /// The most samples (all channels) one window may hold.
    pub max_samples: u64,
    /// A window the audio ends inside is zero-padded to `duration` (else it
    /// is cut where the audio ends, and the pipeline pads the batch,
    /// recording each row's length in `<slot>_lengths`).
    pub pad: bool,
}

pub const DEFAULT_MAX_SAMPLES: u64 = 1 << 28;

/// The highest input sample rate taken (8 x 192 kHz; DSD decodes to less).
/// A header claiming more (the fuzzer's WAV of 654 MHz) would make the
/// resampler build a filter as long as the rate ratio: seconds of CPU for
/// a 244-byte file.
const MAX_SAMPLE_RATE: i32 = 1_536_000;

/// Seconds decoded before an offset (see [`decode`]).
const PREROLL: f64 = 0.25;

fn gcd(mut a: u32, mut b: u32) -> u32 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a.max(1)
}

/// A decoded window: `channels` rows of `len` samples, channel-major.
pub struct Window {
    pub channels: usize,
    pub len: usize,
    pub data: Vec<f32>,
    pub sample_rate: u32,
    pub fetched: u64,
}

/// swresample, with the input format it was made for (format, rate,
/// channels): a frame in another is refused, never read with the wrong plane count.
struct Resampler(*mut ff::SwrContext, (i32, i32, i32));

impl Drop for Resampler {
    fn drop(&mut self) {
        // SAFETY: owned here.
        unsafe { ff::swr_free(&mut self.0) }
    }
}

impl Resampler {
    fn new(f: &ff::AVFrame, out_rate: u32, out_channels: u32) -> Result<Resampler> {
        let mut r = Resampler(std::ptr::null_mut(), (f.format, f.sample_rate, f.ch_layout.nb_channels));
        // SAFETY: layouts are initialised and uninitialised here; swr copies
        // what it needs from them.
        unsafe {
            let mut out_layout: ff::AVChannelLayout = std::mem::zeroed();
            ff::av_channel_layout_default(&mut out_layout, out_channels as i32);
            let mut in_layout: ff::AVChannelLayout = std::mem::zeroed();
            if f.ch_layout.order == ff::AVChannelOrder::AV_CHANNEL_ORDER_UNSPEC || f.ch_layout.nb_channels <= 0 {
                ff::av_channel_layout_default(&mut in_layout, f.ch_layout.nb_channels.max(1));
            } else {
                ff::av_channel_layout_copy(&mut in_layout, &f.ch_layout);
            }
            let code = ff::swr_alloc_set_opts2(
                &mut r.0,
                &mut out_layout,
                ff::AVSampleFormat::AV_SAMPLE_FMT_FLTP,
                out_rate as i32,
                &mut in_layout,
                std::mem::transmute::<i32, ff::AVSampleFormat>(f.format),
                f.sample_rate,
                0,
                std::ptr::null_mut(),
            );
            ff::av_channel_layout_uninit(&mut out_layout);
            ff::av_channel_layout_uninit(&mut in_layout);
            if code < 0 || r.0.is_null() {
                return Err(Error::unsupported(format!("no resampling from this audio format: {}", av_error(code))));
            }
            let code = ff::swr_init(r.0);
            if code < 0 {
                return Err(Error::unsupported(format!("no resampling from this audio format: {}", av_error(code))));
            }
        }
        Ok(r)
    }

    /// Converts `f` (None: flush) from its sample `from` on and appends to
    /// `out` (one Vec per channel).
    fn push(&mut self, f: Option<&ff::AVFrame>, from: usize, out: &mut [Vec<f32>]) -> Result<()> {
        if let Some(f) = f {
            if (f.format, f.sample_rate, f.ch_layout.nb_channels) != self.1 {
                return Err(Error::unsupported(format!(
                    "the audio changes format mid-stream ({} Hz, {} channels, then {} Hz, {} channels)",
                    self.1 .1, self.1 .2, f.sample_rate, f.ch_layout.nb_channels
                )));
            }
            if from > f.nb_samples.max(0) as usize {
                return Err(Error::corrupt("a frame shorter than its own skip"));
            }
        }
        let in_count = f.map_or(0, |f| f.nb_samples - from as i32);
        // SAFETY: the context is initialised; each output plane has room for
        // `room` samples; the input planes are the frame's.
        unsafe {
            let room = ff::swr_get_out_samples(self.0, in_count).max(0) as usize + 32;
            let mut planes: Vec<Vec<f32>> = (0..out.len()).map(|_| vec![0f32; room]).collect();
            let mut ptrs: Vec<*mut u8> = planes.iter_mut().map(|p| p.as_mut_ptr() as *mut u8).collect();
            // The input planes from sample `from` on.
            let mut planes_in: Vec<*const u8> = Vec::new();
            let (inp, n) = match f {
                Some(f) => {
                    let format = std::mem::transmute::<i32, ff::AVSampleFormat>(f.format);
                    let bytes = ff::av_get_bytes_per_sample(format).max(0) as usize;
                    let planar = ff::av_sample_fmt_is_planar(format) != 0;
                    let channels = f.ch_layout.nb_channels.max(1) as usize;
                    let (count, step) = if planar { (channels, bytes * from) } else { (1, bytes * channels * from) };
                    for c in 0..count {
                        planes_in.push((*f.extended_data.add(c)).add(step));
                    }
                    (planes_in.as_mut_ptr(), in_count)
                }
                None => (std::ptr::null_mut(), 0),
            };
            let got = ff::swr_convert(self.0, ptrs.as_mut_ptr(), room as i32, inp, n);
            if got < 0 {
                return Err(Error::corrupt(format!("resampling failed: {}", av_error(got))));
            }
            for (o, p) in out.iter_mut().zip(&planes) {
                o.extend_from_slice(&p[..got as usize]);
            }
        }
        Ok(())
    }
}

/// The window `spec` asks for from the file's first audio stream. `draw`
/// is a keyed uniform draw (a random offset).
pub fn decode(source: &dyn Source, index: &FileIndex, spec: &AudioSpec, draw: u64, uri: &str) -> Result<Window> {
    let a = index.audio.first().ok_or_else(|| Error::unsupported(format!("{uri}: the file has no audio stream")))?;
    let total = a.duration;
    let t0 = match spec.offset {
        Offset::At(t) => {
            if !(t.is_finite() && t >= 0.0) || (total > 0.0 && t > total) {
                return Err(Error::out_of_range(format!("{uri}: offset={t} s is outside the audio ({total:.3} s)")));
            }
            t
        }
        Offset::Absolute(t) => t,
        Offset::Random => match spec.duration {
            // On the grid where input and output samples meet (1 / gcd of
            // the rates: 10 ms for 44.1 -> 16 kHz), so that a window equals
            // the same span of a decode of the whole stream.
            Some(d) if total > d => {
                let g = gcd(a.sample_rate.max(1), spec.sample_rate.unwrap_or(a.sample_rate).max(1)) as f64;
                ((draw >> 11) as f64 / (1u64 << 53) as f64 * (total - d) * g).floor() / g
            }
            _ => 0.0,
        },
    };
    let out_rate = spec.sample_rate.unwrap_or(a.sample_rate);
    if out_rate == 0 {
        return Err(Error::corrupt(format!("{uri}: the audio stream has no sample rate")));
    }
    let channels = if spec.mono { 1 } else { a.channels.max(1) } as usize;
    let want = spec.duration.map(|d| (d * out_rate as f64).round() as usize);
    if let Some(n) = want {
        if (n as u64).saturating_mul(channels as u64) > spec.max_samples {
            return Err(Error::invalid(format!(
                "{n} samples x {channels} channels is over max_samples={}",
                spec.max_samples
            )));
        }
    }
    let mut media = Media::open(source, index.header.clone())?;
    media.keep_only(a.stream);
    let stream = media.streams()[a.stream];
    // SAFETY: a stream of the open context.
    let tb = unsafe { (*stream).time_base };
    let secs = |ts: i64| ts as f64 * tb.num as f64 / tb.den.max(1) as f64;
    // Offsets count from the stream's start (an mp3's or aac's first
    // timestamp is its encoder delay, not 0).
    // SAFETY: as above.
    let origin = unsafe { (*stream).start_time };
    let t0 = match spec.offset {
        Offset::Absolute(_) => t0,
        _ => t0 + if origin != ff::AV_NOPTS_VALUE { secs(origin) } else { 0.0 },
    };
    if t0 > 0.0 && tb.num > 0 {
        // Decode from a little before the offset: codecs with a bit
        // reservoir or overlap (mp3, aac, opus) give silence or a ramp for
        // their first packets after a seek, and the resampler warms up.
        let ts = ((t0 - PREROLL).max(0.0) * tb.den as f64 / tb.num as f64) as i64;
        media.seek(a.stream, ts, ff::AVSEEK_FLAG_BACKWARD)?;
    }
    let mut dec = Decoder::open(&media, a.stream)?;
    let mut pkt = Packet::new()?;
    let mut frame = Frame::new()?;
    let mut rs: Option<Resampler> = None;
    let mut out: Vec<Vec<f32>> = vec![Vec::new(); channels];
    // The time of the first output sample, and how many to skip to reach t0.
    let mut skip: Option<usize> = None;
    let mut drop_in = 0u64;
    let mut eof = false;
    let done = |out: &[Vec<f32>], skip: Option<usize>| match (want, skip) {
        (Some(n), Some(s)) => out[0].len() >= s + n,
        _ => false,
    };
    while !done(&out, skip) {
        if !eof {
            if media.read(&mut pkt)? {
                if pkt.get().stream_index as usize != a.stream {
                    continue;
                }
                dec.send(Some(&pkt))?;
            } else {
                eof = true;
                dec.send(None)?;
            }
        }
        let mut got = false;
        while dec.receive(&mut frame)? {
            got = true;
            let f = frame.get();
            if rs.is_none() {
                if f.sample_rate > MAX_SAMPLE_RATE {
                    return Err(Error::corrupt(format!(
                        "{uri}: the audio claims {} Hz, beyond any audio (at most {MAX_SAMPLE_RATE} Hz)",
                        f.sample_rate
                    )));
                }
                rs = Some(Resampler::new(f, out_rate, channels as u32)?);
            }
            if skip.is_none() {
                let pts = if f.pts != ff::AV_NOPTS_VALUE { f.pts } else { f.best_effort_timestamp };
                let start = if pts != ff::AV_NOPTS_VALUE { secs(pts) } else { 0.0 };
                // Input samples from here to the offset: drop the first few
                // so that the rest is a whole number of output samples (a
                // multiple of in_rate / gcd), and the window starts on t0
                // to the input sample.
                let in_rate = f.sample_rate.max(1) as u64;
                let d = ((t0 - start) * in_rate as f64).round().max(0.0) as u64;
                let l = in_rate / gcd(in_rate as u32, out_rate) as u64;
                drop_in = d % l;
                skip = Some(((d - drop_in) * out_rate as u64 / in_rate) as usize);
            }
            let n = f.nb_samples.max(0) as u64;
            if drop_in >= n {
                drop_in -= n;
            } else {
                rs.as_mut().unwrap().push(Some(f), drop_in as usize, &mut out)?;
                drop_in = 0;
            }
            let limit = spec.max_samples / channels as u64;
            if out[0].len() as u64 > limit.saturating_add(skip.unwrap_or(0) as u64) {
                return Err(Error::invalid(format!(
                    "{uri}: the audio is over max_samples={} (give duration= or a larger max_samples)",
                    spec.max_samples
                )));
            }
            // SAFETY: a live frame.
            unsafe { ff::av_frame_unref(frame.0) };
        }
        if eof && !got {
            if let Some(r) = rs.as_mut() {
                r.push(None, 0, &mut out)?;
            }
            break;
        }
    }
    let skip = skip.unwrap_or(0);
    let have = out[0].len().saturating_sub(skip);
    if have == 0 && want.is_none() {
        return Err(Error::corrupt(format!("{uri}: no audio samples decoded from {t0:.3} s")));
    }
    let len = match want {
        Some(n) if !spec.pad => n.min(have),
        Some(n) => n,
        None => have,
    };
    let mut data = vec![0f32; channels * len];
    for (c, o) in out.iter().enumerate() {
        let take = len.min(o.len().saturating_sub(skip));
        if take > 0 {
            data[c * len..c * len + take].copy_from_slice(&o[skip..skip + take]);
        }
    }
    Ok(Window { channels, len, data, sample_rate: out_rate, fetched: media.fetched() })
}
