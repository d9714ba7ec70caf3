//! Geometry ops composed into one resample.
//!
//! [`Geo`] tracks the current *virtual* image (what the chain would have
//! produced so far) as an affine window on the source: virtual pixel `(u, v)`
//! sits at source `(ox + u·sx, oy + v·sy)`. Resizes scale the window, crops
//! move and shrink it, flips toggle flags, crops larger than the image leave
//! a zero-padded margin (the valid rectangle). [`render`] then resamples the
//! window once, from whatever the decoder produced (full size, DCT-scaled,
//! or only a region).
//!
//! Size rules follow torchvision: `resize_short` truncates the long side,
//! `center_crop` rounds half to even and pads centered, `random_resized_crop`
//! draws up to ten (area, log-ratio) pairs before falling back to a center crop.

use super::{Pixels, PixelsRef};
use crate::base::error::{Error, Result};
use crate::base::rng::Stream;
use crate::plan::ops::Dim;
use crate::plan::{Interp, Param, Step};
use fast_image_resize as fir;

#[derive(Debug, Clone, PartialEq)]
pub struct Geo {
    pub w: u32,
    pub h: u32,
    pub ox: f64,
    pub oy: f64,
    pub sx: f64,
    pub sy: f64,
    /// Region of the virtual image backed by source pixels: [x0, x1) × [y0, y1).
    pub valid: (f64, f64, f64, f64),
    pub hflip: bool,
    pub vflip: bool,
    pub interp: Interp,
    pub antialias: bool,
    /// Whether any resize happened (otherwise the window is a plain copy).
    pub resized: bool,
}

/// Python's round(): half to even.
pub fn py_round(x: f64) -> i64 {
    let r = x.round();
    if (x - x.trunc()).abs() == 0.5 && (r as i64) % 2 != 0 {
        (r - x.signum()) as i64
    } else {
        r as i64
    }
}

impl Geo {
    pub fn new(w: u32, h: u32) -> Self {
        Geo {
            w,
            h,
            ox: 0.0,
            oy: 0.0,
            sx: 1.0,
            sy: 1.0,
            valid: (0.0, 0.0, w as f64, h as f64),
            hflip: false,
            vflip: false,
            interp: Interp::Bilinear,
            antialias: true,
            resized: false,
        }
    }

    pub fn resize(&mut self, w: u32, h: u32, interp: Interp, antialias: bool) {
        let (fx, fy) = (self.w as f64 / w as f64, self.h as f64 / h as f64);
        self.sx *= fx;
        self.sy *= fy;
        let (x0, y0, x1, y1) = self.valid;
        self.valid = (x0 / fx, y0 / fy, x1 / fx, y1 / fy);
        self.w = w;
        self.h = h;
        self.interp = interp;
        self.antialias = antialias;
        self.resized = true;
    }

    /// Crops the window `[left, left+w) × [top, top+h)` of the virtual image
    /// as the user sees it (after any flips so far).
    pub fn crop(&mut self, left: f64, top: f64, w: u32, h: u32) {
        let left = if self.hflip { self.w as f64 - left - w as f64 } else { left };
        let top = if self.vflip { self.h as f64 - top - h as f64 } else { top };
        self.ox += left * self.sx;
        self.oy += top * self.sy;
        let (x0, y0, x1, y1) = self.valid;
        self.valid = ((x0 - left).max(0.0), (y0 - top).max(0.0), (x1 - left).min(w as f64), (y1 - top).min(h as f64));
        self.w = w;
        self.h = h;
    }

    fn center_crop(&mut self, cw: u32, ch: u32) {
        let axis = |size: u32, crop: u32| -> f64 {
            if crop > size {
                -(((crop - size) / 2) as f64)
            } else {
                py_round((size - crop) as f64 / 2.0) as f64
            }
        };
        let (left, top) = (axis(self.w, cw), axis(self.h, ch));
        self.crop(left, top, cw, ch);
    }

    /// Applies one geometry step. `rng` gives the step's keyed stream.
    /// Per-record parameters must have been resolved (`exec::slot` does it).
    pub fn apply(&mut self, step: &Step, rng: &mut dyn FnMut() -> Stream) -> Result<()> {
        match step {
            Step::Resize(r) => self.resize(dim(&r.w)?, dim(&r.h)?, r.interpolation, r.antialias),
            Step::ResizeShort(r) => {
                let size = dim(&r.size)? as u64;
                let (w, h) = (self.w as u64, self.h as u64);
                let (short, long) = if w <= h { (w, h) } else { (h, w) };
                let mut new_short = size;
                let mut new_long = (size * long) / short.max(1);
                if let Some(m) = &r.max_size {
                    let m = dim(m)? as u64;
                    if m <= size {
                        return Err(Error::invalid(format!(
                            "resize_short: max_size ({m}) must be larger than size ({size})"
                        )));
                    }
                    if new_long > m {
                        new_short = m * new_short / new_long;
                        new_long = m;
                    }
                }
                let (nw, nh) = if w <= h { (new_short, new_long) } else { (new_long, new_short) };
                self.resize(nw.max(1) as u32, nh.max(1) as u32, r.interpolation, r.antialias);
            }
            Step::ResizeLong(r) => {
                let size = dim(&r.size)? as u64;
                let (w, h) = (self.w as u64, self.h as u64);
                let (nw, nh) = if w >= h { (size, size * h / w.max(1)) } else { (size * w / h.max(1), size) };
                self.resize(nw.max(1) as u32, nh.max(1) as u32, r.interpolation, r.antialias);
            }
            Step::CenterCrop(c) => self.center_crop(dim(&c.w)?, dim(&c.h)?),
            Step::Crop(c) => {
                let (top, left) = (fixed(&c.top)?, fixed(&c.left)?);
                self.crop(left as f64, top as f64, dim(&c.w)?, dim(&c.h)?)
            }
            Step::RandomCrop(c) => {
                let (w, h) = (dim(&c.w)?, dim(&c.h)?);
                let mut s = rng();
                let left =
                    if w <= self.w { s.below((self.w - w + 1) as u64) as f64 } else { -(((w - self.w) / 2) as f64) };
                let top =
                    if h <= self.h { s.below((self.h - h + 1) as u64) as f64 } else { -(((h - self.h) / 2) as f64) };
                self.crop(left, top, w, h);
            }
            Step::RandomResizedCrop(c) => {
                let (w, h) = (dim(&c.w)?, dim(&c.h)?);
                let (scale, ratio) = (c.scale.0, c.ratio.0);
                let mut s = rng();
                let (iw, ih) = (self.w as f64, self.h as f64);
                let area = iw * ih;
                let (lr0, lr1) = (ratio.0.ln(), ratio.1.ln());
                let mut chosen = None;
                for _ in 0..10 {
                    let target = area * s.range_f64(scale.0, scale.1);
                    let aspect = s.range_f64(lr0, lr1).exp();
                    let cw = (target * aspect).sqrt().round() as i64;
                    let ch = (target / aspect).sqrt().round() as i64;
                    if cw > 0 && ch > 0 && cw as f64 <= iw && ch as f64 <= ih {
                        let top = s.below((self.h as i64 - ch + 1) as u64) as f64;
                        let left = s.below((self.w as i64 - cw + 1) as u64) as f64;
                        chosen = Some((left, top, cw as u32, ch as u32));
                        break;
                    }
                }
                let (left, top, cw, ch) = chosen.unwrap_or_else(|| {
                    let in_ratio = iw / ih;
                    let (cw, ch) = if in_ratio < ratio.0 {
                        (self.w, (iw / ratio.0).round() as u32)
                    } else if in_ratio > ratio.1 {
                        ((ih * ratio.1).round() as u32, self.h)
                    } else {
                        (self.w, self.h)
                    };
                    (((self.w - cw) / 2) as f64, ((self.h - ch) / 2) as f64, cw.max(1), ch.max(1))
                });
                self.crop(left, top, cw, ch);
                self.resize(w, h, c.interpolation, c.antialias);
            }
            Step::HFlip { p } => {
                if rng().bernoulli(*p) {
                    self.hflip = !self.hflip;
                }
            }
            Step::VFlip { p } => {
                if rng().bernoulli(*p) {
                    self.vflip = !self.vflip;
                }
            }
            other => return Err(Error::invalid(format!("{} is not a geometry op", other.name()))),
        }
        Ok(())
    }

    /// How much the source is shrunk per output pixel (the smaller axis).
    pub fn shrink(&self) -> f64 {
        self.sx.min(self.sy)
    }

    /// The integer output rectangle backed by source pixels.
    pub fn valid_px(&self) -> (u32, u32, u32, u32) {
        let (x0, y0, x1, y1) = self.valid;
        let c = |v: f64, hi: u32| v.round().clamp(0.0, hi as f64) as u32;
        (c(x0, self.w), c(y0, self.h), c(x1, self.w), c(y1, self.h))
    }

    /// The source region (full-resolution coordinates, x, y, w, h) that the
    /// output needs, widened by the resampling filter's reach.
    pub fn source_region(&self, src_w: u32, src_h: u32) -> (u32, u32, u32, u32) {
        let (x0, y0, x1, y1) = self.valid_px();
        let reach_x = 3.0 * self.sx.max(1.0) + 2.0;
        let reach_y = 3.0 * self.sy.max(1.0) + 2.0;
        let l = (self.ox + x0 as f64 * self.sx - reach_x).floor().max(0.0);
        let t = (self.oy + y0 as f64 * self.sy - reach_y).floor().max(0.0);
        let r = (self.ox + x1 as f64 * self.sx + reach_x).ceil().min(src_w as f64);
        let b = (self.oy + y1 as f64 * self.sy + reach_y).ceil().min(src_h as f64);
        (l as u32, t as u32, (r - l).max(1.0) as u32, (b - t).max(1.0) as u32)
    }
}

fn fixed<T: Copy>(p: &Param<T>) -> Result<T> {
    p.fixed().ok_or_else(|| Error::invalid("internal error: a per-record parameter reached the kernel unresolved"))
}

fn dim(p: &Param<Dim>) -> Result<u32> {
    fixed(p).map(|d| d.0)
}

fn algorithm(interp: Interp, antialias: bool) -> fir::ResizeAlg {
    use fir::FilterType as F;
    let filter = match interp {
        Interp::Nearest => return fir::ResizeAlg::Nearest,
        Interp::Bilinear => F::Bilinear,
        Interp::Bicubic => F::CatmullRom,
        Interp::Lanczos => F::Lanczos3,
        Interp::Area => F::Box,
    };
    if antialias {
        fir::ResizeAlg::Convolution(filter)
    } else {
        fir::ResizeAlg::Interpolation(filter)
    }
}

fn pixel_type(channels: u32) -> Result<fir::PixelType> {
    Ok(match channels {
        1 => fir::PixelType::U8,
        2 => fir::PixelType::U8x2,
        3 => fir::PixelType::U8x3,
        4 => fir::PixelType::U8x4,
        c => return Err(Error::invalid(format!("cannot resample {c}-channel images"))),
    })
}

thread_local! {
    static RESIZER: std::cell::RefCell<fir::Resizer> = std::cell::RefCell::new(fir::Resizer::new());
}

/// Renders the virtual image of `geo` (before flips) from `src`, which covers
/// the full-resolution source starting at `origin` with `scale` (x, y) source
/// pixels per `src` pixel (DCT-scaled and region decodes). HWC uint8.
pub fn render(geo: &Geo, src: &Pixels, origin: (f64, f64), scale: (f64, f64)) -> Result<Pixels> {
    render_with(geo, src, origin, scale, true)
}

/// [`render`]; `alpha` false treats a 4th channel as padding (no alpha
/// premultiplication around the resample).
pub fn render_with(geo: &Geo, src: &Pixels, origin: (f64, f64), scale: (f64, f64), alpha: bool) -> Result<Pixels> {
    render_ref(geo, src.view(), origin, scale, alpha)
}

/// [`render_with`] from borrowed pixels.
pub fn render_ref(geo: &Geo, src: PixelsRef<'_>, origin: (f64, f64), scale: (f64, f64), alpha: bool) -> Result<Pixels> {
    let c = src.channels;
    let (w, h) = (geo.w, geo.h);
    let (x0, y0, x1, y1) = geo.valid_px();
    let n = w as usize * h as usize * c as usize;
    let covers_all = (x0, y0, x1, y1) == (0, 0, w, h) && src.width > 0 && src.height > 0;
    #[allow(clippy::uninit_vec)] // skipping the memset measured 2.6% of the pipeline
    let mut out = if covers_all {
        let mut v = super::scratch(n);
        // SAFETY: u8 has no invalid bit patterns, and the valid rectangle is
        // the whole output, which the copy or the resample below writes.
        unsafe { v.set_len(n) };
        v
    } else {
        vec![0u8; n] // the padding outside the valid rectangle stays zero
    };
    if x1 <= x0 || y1 <= y0 || src.width == 0 || src.height == 0 {
        return Ok(Pixels { width: w, height: h, channels: c, data: out });
    }
    let (dw, dh) = (x1 - x0, y1 - y0);
    // Window of the output's valid part, in `src` pixel coordinates.
    let left = (geo.ox + x0 as f64 * geo.sx - origin.0) / scale.0;
    let top = (geo.oy + y0 as f64 * geo.sy - origin.1) / scale.1;
    let cw = dw as f64 * geo.sx / scale.0;
    let chh = dh as f64 * geo.sy / scale.1;
    let left = left.clamp(0.0, src.width as f64);
    let top = top.clamp(0.0, src.height as f64);
    let cw = cw.min(src.width as f64 - left);
    let chh = chh.min(src.height as f64 - top);
    let row = w as usize * c as usize;
    let is_copy =
        (cw - dw as f64).abs() < 1e-9 && (chh - dh as f64).abs() < 1e-9 && left.fract() == 0.0 && top.fract() == 0.0;
    if is_copy {
        let (l, t) = (left as usize, top as usize);
        for y in 0..dh as usize {
            let s = (t + y) * src.row_bytes() + l * c as usize;
            let d = (y0 as usize + y) * row + x0 as usize * c as usize;
            out[d..d + dw as usize * c as usize].copy_from_slice(&src.data[s..s + dw as usize * c as usize]);
        }
        return Ok(Pixels { width: w, height: h, channels: c, data: out });
    }
    let pt = pixel_type(c)?;
    let src_img = fir::images::ImageRef::new(src.width, src.height, src.data, pt)
        .map_err(|e| Error::invalid(format!("resample source: {e}")))?;
    let full = x0 == 0 && y0 == 0 && dw == w && dh == h;
    let opts = fir::ResizeOptions::new().resize_alg(algorithm(geo.interp, geo.antialias)).use_alpha(alpha).crop(
        left,
        top,
        cw.max(1e-6),
        chh.max(1e-6),
    );
    let resample = |buf: &mut [u8]| -> Result<()> {
        let mut dst = fir::images::Image::from_slice_u8(dw, dh, buf, pt)
            .map_err(|e| Error::invalid(format!("resample target: {e}")))?;
        RESIZER
            .with(|r| r.borrow_mut().resize(&src_img, &mut dst, &opts))
            .map_err(|e| Error::invalid(format!("resample failed: {e}")))
    };
    if full {
        resample(&mut out)?;
    } else {
        let mut tmp = super::scratch(dw as usize * dh as usize * c as usize);
        tmp.resize(dw as usize * dh as usize * c as usize, 0);
        resample(&mut tmp)?;
        for y in 0..dh as usize {
            let s = y * dw as usize * c as usize;
            let d = (y0 as usize + y) * row + x0 as usize * c as usize;
            out[d..d + dw as usize * c as usize].copy_from_slice(&tmp[s..s + dw as usize * c as usize]);
        }
        super::recycle(tmp);
    }
    Ok(Pixels { width: w, height: h, channels: c, data: out })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::ops::{CenterCrop, Crop, RandomResizedCrop, Range, ResizeShort};

    fn center_crop(h: u32, w: u32) -> Step {
        Step::CenterCrop(CenterCrop { h: Param::Fixed(Dim(h)), w: Param::Fixed(Dim(w)) })
    }

    fn stream() -> Stream {
        Stream::new(0, 0, 0, 0)
    }

    /// fast_image_resize 6.1.0 sized the temporary image between its two
    /// passes from the last coefficient bound, which zero-trimming can make
    /// end before the one before it (Catmull-Rom, a destination center on a
    /// source center): the horizontal pass then read one pixel past each row
    /// of it. The geometry is the fuzz finding's (a 96x12 gray image,
    /// `resize_short(20, bicubic)`, `center_crop(16, 16)`); the reference
    /// does the two passes as separate resizes, each reading its source
    /// directly. Fixed in third_party/fast_image_resize (PATCHED.md).
    #[test]
    fn resize_with_a_trimmed_last_bound_stays_inside_the_temporary_image() {
        let (sw, sh) = (96u32, 12u32);
        let src: Vec<u8> =
            (0..sh).flat_map(|y| (0..sw).map(move |x| if x == 53 { 250 } else { 10 + 3 * y as u8 })).collect();
        let alg = fir::ResizeAlg::Convolution(fir::FilterType::CatmullRom);
        let resize = |src: &[u8], (w, h): (u32, u32), (dw, dh): (u32, u32), crop: (f64, f64, f64, f64)| {
            let s = fir::images::ImageRef::new(w, h, src, fir::PixelType::U8).unwrap();
            let mut d = fir::images::Image::new(dw, dh, fir::PixelType::U8);
            let opts = fir::ResizeOptions::new().resize_alg(alg).crop(crop.0, crop.1, crop.2, crop.3);
            fir::Resizer::new().resize(&s, &mut d, &opts).unwrap();
            d.into_vec()
        };
        let both = resize(&src, (sw, sh), (16, 16), (43.2, 1.2, 9.6, 9.6));
        let tall = resize(&src, (sw, sh), (sw, 16), (0.0, 1.2, sw as f64, 9.6));
        let reference = resize(&tall, (sw, 16), (16, 16), (43.2, 0.0, 9.6, 16.0));
        for (i, (a, b)) in both.iter().zip(&reference).enumerate() {
            assert!(a.abs_diff(*b) <= 2, "pixel ({}, {}): {a} in one resize, {b} in two", i % 16, i / 16);
        }
    }

    #[test]
    fn resize_short_then_center_crop_matches_torchvision_sizes() {
        let mut g = Geo::new(800, 600);
        let s = Step::ResizeShort(ResizeShort {
            size: Param::Fixed(Dim(256)),
            interpolation: Interp::Bilinear,
            antialias: true,
            max_size: None,
        });
        g.apply(&s, &mut stream).unwrap();
        assert_eq!((g.w, g.h), (341, 256));
        g.apply(&center_crop(224, 224), &mut stream).unwrap();
        assert_eq!((g.w, g.h), (224, 224));
        // left = round((341-224)/2) = round(58.5) = 58 (half to even); top = 16
        // Per-axis scales: 800/341 across, 600/256 down.
        assert!((g.ox - 58.0 * 800.0 / 341.0).abs() < 1e-9 && (g.oy - 16.0 * 600.0 / 256.0).abs() < 1e-9, "{g:?}");
        assert_eq!(g.valid_px(), (0, 0, 224, 224));
    }

    #[test]
    fn oversize_center_crop_pads_like_torchvision() {
        let mut g = Geo::new(3, 3);
        g.apply(&center_crop(6, 6), &mut stream).unwrap();
        assert_eq!(g.valid_px(), (1, 1, 4, 4));
        let src = Pixels { width: 3, height: 3, channels: 1, data: (1..=9).collect() };
        let out = render(&g, &src, (0.0, 0.0), (1.0, 1.0)).unwrap();
        assert_eq!(&out.data[6..12], &[0, 1, 2, 3, 0, 0]);
        assert_eq!(out.data[0], 0);
    }

    #[test]
    fn plain_crops_copy_pixels_exactly() {
        let src = Pixels { width: 4, height: 4, channels: 1, data: (0..16).collect() };
        let mut g = Geo::new(4, 4);
        let crop =
            Crop { top: Param::Fixed(1), left: Param::Fixed(2), h: Param::Fixed(Dim(2)), w: Param::Fixed(Dim(2)) };
        g.apply(&Step::Crop(crop), &mut stream).unwrap();
        let out = render(&g, &src, (0.0, 0.0), (1.0, 1.0)).unwrap();
        assert_eq!(out.data, vec![6, 7, 10, 11]);
    }

    #[test]
    fn crops_after_a_flip_use_flipped_coordinates() {
        let mut g = Geo::new(10, 1);
        g.hflip = true;
        g.crop(0.0, 0.0, 3, 1);
        assert_eq!(g.ox, 7.0, "the leftmost 3 columns of the mirrored image are the source's rightmost");
    }

    #[test]
    fn random_resized_crop_is_keyed() {
        let step = Step::RandomResizedCrop(RandomResizedCrop {
            h: Param::Fixed(Dim(32)),
            w: Param::Fixed(Dim(32)),
            scale: Range((0.08, 1.0)),
            ratio: Range((0.75, 4.0 / 3.0)),
            interpolation: Interp::Bilinear,
            antialias: true,
        });
        let run = |idx| {
            let mut g = Geo::new(500, 375);
            g.apply(&step, &mut || Stream::new(42, 0, idx, 1)).unwrap();
            (g.ox, g.oy, g.sx, g.sy)
        };
        assert_eq!(run(1), run(1));
        assert_ne!(run(1), run(2));
    }

    #[test]
    fn python_rounding() {
        assert_eq!(py_round(58.5), 58);
        assert_eq!(py_round(59.5), 60);
        assert_eq!(py_round(-1.5), -2);
        assert_eq!(py_round(2.4), 2);
    }
}
