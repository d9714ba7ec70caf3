//! The last pass of an image program: flips, normalization, layout (HWC or
//! CHW) and dtype, in one loop that writes straight into the destination
//! (a row of the batch buffer). Normalization goes through a 256-entry
//! lookup table per channel, so the inner loop is a load and a store.

use super::Pixels;
use crate::error::{Error, Result};
use crate::plan::{Layout, Step};
use crate::tensor::DType;

#[derive(Debug, Clone, PartialEq)]
pub struct Finish {
    pub mean_std: Option<(Vec<f32>, Vec<f32>)>,
    pub chw: bool,
    pub dtype: DType,
}

impl Finish {
    /// Collects the non-geometry tail of a chain.
    pub fn from_steps<'a>(steps: impl IntoIterator<Item = &'a Step>) -> Result<Self> {
        let mut f = Finish { mean_std: None, chw: false, dtype: DType::U8 };
        for s in steps {
            match s {
                Step::Normalize { mean, std, layout } => {
                    f.mean_std = Some((mean.clone(), std.clone()));
                    f.chw = *layout == Layout::Chw;
                    f.dtype = DType::F32;
                }
                Step::ToChw => f.chw = true,
                Step::Cast { dtype } => f.dtype = *dtype,
                other => return Err(Error::invalid(format!("{} cannot follow normalize/cast/to_chw", other.name()))),
            }
        }
        Ok(f)
    }

    pub fn shape(&self, w: u32, h: u32, c: u32) -> Vec<usize> {
        let (w, h, c) = (w as usize, h as usize, c as usize);
        if self.chw {
            vec![c, h, w]
        } else {
            vec![h, w, c]
        }
    }

    pub fn nbytes(&self, w: u32, h: u32, c: u32) -> usize {
        w as usize * h as usize * c as usize * self.dtype.size()
    }

    fn lut(&self, c: usize) -> Vec<[f32; 256]> {
        (0..c)
            .map(|ch| {
                let mut t = [0f32; 256];
                for (v, slot) in t.iter_mut().enumerate() {
                    *slot = match &self.mean_std {
                        Some((m, s)) => {
                            let (m, s) = (m[ch.min(m.len() - 1)], s[ch.min(s.len() - 1)]);
                            (v as f32 / 255.0 - m) / s
                        }
                        None => v as f32,
                    };
                }
                t
            })
            .collect()
    }

    /// Writes `px` (flipped as asked) into `dst`, which must hold exactly
    /// `nbytes(px.width, px.height, px.channels)` bytes.
    pub fn write(&self, px: &Pixels, hflip: bool, vflip: bool, dst: &mut [u8]) -> Result<()> {
        let (w, h, c) = (px.width as usize, px.height as usize, px.channels as usize);
        let need = self.nbytes(px.width, px.height, px.channels);
        if dst.len() != need {
            return Err(Error::invalid(format!("output holds {} bytes, the sample needs {need}", dst.len())));
        }
        let src_index = |y: usize, x: usize| -> usize {
            let sy = if vflip { h - 1 - y } else { y };
            let sx = if hflip { w - 1 - x } else { x };
            (sy * w + sx) * c
        };
        let plane = w * h;
        let out_index = |y: usize, x: usize, ch: usize| -> usize {
            if self.chw {
                ch * plane + y * w + x
            } else {
                (y * w + x) * c + ch
            }
        };
        match (self.dtype, &self.mean_std) {
            (DType::U8, None) => {
                if !self.chw && !hflip {
                    for y in 0..h {
                        let s = src_index(y, 0);
                        dst[y * w * c..(y + 1) * w * c].copy_from_slice(&px.data[s..s + w * c]);
                    }
                } else {
                    for y in 0..h {
                        for x in 0..w {
                            let s = src_index(y, x);
                            for ch in 0..c {
                                dst[out_index(y, x, ch)] = px.data[s + ch];
                            }
                        }
                    }
                }
            }
            (DType::F32, _) => {
                let lut = self.lut(c);
                // SAFETY: `dst` holds need = w*h*c*4 bytes; it comes from a
                // 64-byte aligned buffer at an offset that is a multiple of
                // the row size (a multiple of 4), so it is f32-aligned; we
                // check rather than assume.
                let (pre, out, _) = unsafe { dst.align_to_mut::<f32>() };
                if !pre.is_empty() {
                    return Err(Error::invalid("output buffer is not aligned for float32"));
                }
                if self.chw && c == 3 {
                    // The hot path (RGB to normalized CHW): row slices zipped
                    // so the loop has no bounds checks.
                    let (p0, rest) = out.split_at_mut(plane);
                    let (p1, p2) = rest.split_at_mut(plane);
                    let (l0, l1, l2) = (&lut[0], &lut[1], &lut[2]);
                    for y in 0..h {
                        let sy = if vflip { h - 1 - y } else { y };
                        let src = &px.data[sy * w * 3..(sy + 1) * w * 3];
                        let rows = p0[y * w..(y + 1) * w]
                            .iter_mut()
                            .zip(&mut p1[y * w..(y + 1) * w])
                            .zip(&mut p2[y * w..(y + 1) * w]);
                        if hflip {
                            for (((a, b), c), px) in rows.zip(src.chunks_exact(3).rev()) {
                                (*a, *b, *c) = (l0[px[0] as usize], l1[px[1] as usize], l2[px[2] as usize]);
                            }
                        } else {
                            for (((a, b), c), px) in rows.zip(src.chunks_exact(3)) {
                                (*a, *b, *c) = (l0[px[0] as usize], l1[px[1] as usize], l2[px[2] as usize]);
                            }
                        }
                    }
                } else {
                    for y in 0..h {
                        for x in 0..w {
                            let s = src_index(y, x);
                            for ch in 0..c {
                                out[out_index(y, x, ch)] = lut[ch][px.data[s + ch] as usize];
                            }
                        }
                    }
                }
            }
            (dtype, _) => {
                let lut = self.lut(c);
                let size = dtype.size();
                for y in 0..h {
                    for x in 0..w {
                        let s = src_index(y, x);
                        for ch in 0..c {
                            let v = lut[ch][px.data[s + ch] as usize];
                            let o = out_index(y, x, ch) * size;
                            write_scalar(dtype, v as f64, &mut dst[o..o + size]);
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

/// Writes one value as `dtype` (numpy's astype semantics: truncation for ints).
pub fn write_scalar(dtype: DType, v: f64, out: &mut [u8]) {
    match dtype {
        DType::U8 => out[0] = v.clamp(0.0, 255.0) as u8,
        DType::I8 => out[0] = (v as i8) as u8,
        DType::Bool => out[0] = (v != 0.0) as u8,
        DType::I16 => out.copy_from_slice(&(v as i16).to_ne_bytes()),
        DType::U16 => out.copy_from_slice(&(v as u16).to_ne_bytes()),
        DType::I32 => out.copy_from_slice(&(v as i32).to_ne_bytes()),
        DType::U32 => out.copy_from_slice(&(v as u32).to_ne_bytes()),
        DType::I64 => out.copy_from_slice(&(v as i64).to_ne_bytes()),
        DType::U64 => out.copy_from_slice(&(v as u64).to_ne_bytes()),
        DType::F16 => out.copy_from_slice(&half::f16::from_f64(v).to_ne_bytes()),
        DType::BF16 => out.copy_from_slice(&half::bf16::from_f64(v).to_ne_bytes()),
        DType::F32 => out.copy_from_slice(&(v as f32).to_ne_bytes()),
        DType::F64 => out.copy_from_slice(&v.to_ne_bytes()),
        DType::F8E4M3 | DType::F8E5M2 => out[0] = 0,
    }
}

/// Reads one element of `dtype` as f64.
pub fn read_scalar(dtype: DType, b: &[u8]) -> f64 {
    match dtype {
        DType::U8 => b[0] as f64,
        DType::I8 => b[0] as i8 as f64,
        DType::Bool => (b[0] != 0) as u8 as f64,
        DType::I16 => i16::from_ne_bytes([b[0], b[1]]) as f64,
        DType::U16 => u16::from_ne_bytes([b[0], b[1]]) as f64,
        DType::I32 => i32::from_ne_bytes(b[..4].try_into().unwrap()) as f64,
        DType::U32 => u32::from_ne_bytes(b[..4].try_into().unwrap()) as f64,
        DType::I64 => i64::from_ne_bytes(b[..8].try_into().unwrap()) as f64,
        DType::U64 => u64::from_ne_bytes(b[..8].try_into().unwrap()) as f64,
        DType::F16 => half::f16::from_ne_bytes([b[0], b[1]]).to_f64(),
        DType::BF16 => half::bf16::from_ne_bytes([b[0], b[1]]).to_f64(),
        DType::F32 => f32::from_ne_bytes(b[..4].try_into().unwrap()) as f64,
        DType::F64 => f64::from_ne_bytes(b[..8].try_into().unwrap()),
        DType::F8E4M3 | DType::F8E5M2 => f64::NAN,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_to_chw_with_flip() {
        let px = Pixels { width: 2, height: 1, channels: 3, data: vec![0, 128, 255, 255, 0, 0] };
        let f = Finish { mean_std: Some((vec![0.5; 3], vec![0.5; 3])), chw: true, dtype: DType::F32 };
        let mut dst = vec![0f32; 6];
        // SAFETY: viewing an f32 vec as bytes for the test.
        let bytes = unsafe { std::slice::from_raw_parts_mut(dst.as_mut_ptr() as *mut u8, 24) };
        f.write(&px, true, false, bytes).unwrap();
        // flipped: pixel order [255,0,0], [0,128,255]; CHW planes
        let expect = [1.0, -1.0, -1.0, 128.0 / 255.0 * 2.0 - 1.0, -1.0, 1.0];
        for (a, b) in dst.iter().zip(expect) {
            assert!((a - b).abs() < 1e-6, "{dst:?}");
        }
    }

    #[test]
    fn cast_and_layout_without_normalize() {
        let px = Pixels { width: 1, height: 2, channels: 1, data: vec![3, 200] };
        let f = Finish { mean_std: None, chw: true, dtype: DType::I16 };
        let mut dst = vec![0u8; 4];
        f.write(&px, false, true, &mut dst).unwrap();
        assert_eq!(i16::from_ne_bytes([dst[0], dst[1]]), 200);
        assert_eq!(i16::from_ne_bytes([dst[2], dst[3]]), 3);
    }
}
