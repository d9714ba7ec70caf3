//! Times fast_image_resize on the shapes the image benchmark produces (a dev aid).
use fast_image_resize as fir;
use std::time::Instant;

fn main() {
    let mut r = fir::Resizer::new();
    for (sw, sh) in [(350u32, 350u32), (300, 300), (448, 448), (256, 256)] {
        for (pt, c) in [(fir::PixelType::U8x3, 3usize), (fir::PixelType::U8x4, 4)] {
            let src: Vec<u8> = (0..sw as usize * sh as usize * c).map(|i| (i * 7919 % 251) as u8).collect();
            let img = fir::images::ImageRef::new(sw, sh, &src, pt).unwrap();
            let mut dst = fir::images::Image::new(224, 224, pt);
            let opts = fir::ResizeOptions::new()
                .resize_alg(fir::ResizeAlg::Convolution(fir::FilterType::Bilinear))
                .use_alpha(false)
                .crop(0.3, 0.7, sw as f64 - 1.0, sh as f64 - 1.0);
            let n = 2000;
            let t = Instant::now();
            for _ in 0..n {
                r.resize(&img, &mut dst, &opts).unwrap();
            }
            println!("{sw}x{sh} -> 224 {c}ch: {:.1} us", t.elapsed().as_secs_f64() * 1e6 / n as f64);
        }
    }
}
