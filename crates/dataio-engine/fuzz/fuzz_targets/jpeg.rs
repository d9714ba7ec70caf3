//! The JPEG decoder (libjpeg-turbo through the engine's session) with every
//! decode plan a pipeline can ask for: each scale n/8, regions of interest
//! anywhere (also outside the image), RGB/RGBX/gray/CMYK output, fancy
//! upsampling on and off. The first 4 input bytes choose the plan.
#![no_main]
mod common;
use dataio_engine::kernels::image::jpeg::{decode, DecodePlan, Mode};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 {
        return;
    }
    let (p, file) = data.split_at(4);
    let mode = [Mode::Rgb, Mode::Gray, Mode::Rgba][p[0] as usize % 3];
    let scale_num = 1 + (p[1] as u32 % 8);
    let out = decode(file, mode, 1 << 22, |h| {
        let roi = (p[2] & 1 == 1).then(|| {
            let (w, hh) = ((h.width * scale_num).div_ceil(8), (h.height * scale_num).div_ceil(8));
            let x = (p[2] as u32 >> 1) % (w + 2);
            let y = (p[3] as u32) % (hh + 2);
            (x, y, 1 + (p[3] as u32 >> 3) % (w + 1), 1 + (p[2] as u32 >> 4) % (hh + 1))
        });
        Ok(DecodePlan {
            scale_num,
            roi,
            rgbx: p[0] & 0x10 != 0 && mode == Mode::Rgb,
            fancy_upsampling: p[0] & 0x20 != 0,
        })
    });
    if let Some((_, d)) = common::checked(out) {
        assert_eq!(d.data.len(), d.width as usize * d.height as usize * d.channels as usize, "output size");
    }
});
