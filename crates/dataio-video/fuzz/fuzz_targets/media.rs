//! Hostile media files through dataio-video's glue: the index scan (our
//! AVIO reader in blocks, the header-only scan of mp4s, the frame list),
//! clip selection and decoding into the output, and audio windows. FFmpeg's
//! own C code is not instrumented; what is fuzzed is everything around it:
//! no panic, no out-of-bounds write, no hang, whatever the bytes claim.
#![no_main]

use dataio_video::audio::{self, AudioSpec, Offset};
use dataio_video::clip::{self, ClipSpec, Pad, Start};
use dataio_video::index::FileIndex;
use dataio_video::media::InMemory;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let src = InMemory(data);
    let Ok(idx) = FileIndex::build(&src) else { return };
    let draw = data.iter().fold(0u64, |h, &b| h.wrapping_mul(31).wrapping_add(b as u64));
    if let Some(v) = &idx.video {
        let (h, w) = (v.height, v.width);
        // Bounded as decode_video bounds it (max_pixels).
        if h > 0 && w > 0 && (h as u64) * (w as u64) <= 1 << 20 {
            for (start, fps) in [(Start::Random, None), (Start::First, Some(7.5)), (Start::Center, None)] {
                let spec = ClipSpec { num_frames: 3, stride: 2, fps, start, pad: Pad::RepeatLast };
                if let Ok(which) = clip::select(v, &spec, draw, "fuzz") {
                    assert!(which.iter().all(|&i| i < v.frames.len()));
                    let mut out = vec![0u8; which.len() * h as usize * w as usize * 3];
                    let _ = clip::decode(&src, &idx, &which, (h, w), &mut out, "fuzz");
                }
            }
        }
    }
    if !idx.audio.is_empty() {
        let spec = AudioSpec {
            sample_rate: Some(8000),
            mono: draw & 1 == 0,
            duration: Some(0.05),
            offset: if draw & 2 == 0 { Offset::Random } else { Offset::At(0.0) },
            max_samples: 1 << 20,
            pad: draw & 4 == 0,
        };
        if let Ok(w) = audio::decode(&src, &idx, &spec, draw, "fuzz") {
            assert_eq!(w.data.len(), w.channels * w.len);
        }
    }
});
