//! Image encoding: the `encode_image` op, a slot's last step, turns uint8
//! pixels (HWC, 1, 3 or 4 channels; or HW gray) into the bytes of a JPEG,
//! PNG or WebP file.
//!
//! * JPEG through the same libjpeg-turbo build the decoder uses (mozjpeg-sys,
//!   SIMD with nasm), under the `JCP_FASTEST` profile: libjpeg-turbo's
//!   encoder, baseline, standard Huffman tables, 4:2:0 chroma, as PIL's
//!   `save(quality=q)` writes by default. No alpha: RGBA is refused.
//! * PNG through the `png` crate (by way of `image`), lossless, fast
//!   deflate with adaptive filters.
//! * WebP through `image-webp` (by way of `image`): lossless. `quality`
//!   applies to JPEG only.

use super::PixelsRef;
use crate::base::error::{Error, Result};
use crate::plan::ops::{EncodeImage, ImageFormat};
use mozjpeg_sys::*;
use std::ffi::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

const OP: &str = "encode_image";

/// Encodes `px` as `params` asks.
pub fn encode(px: PixelsRef<'_>, params: &EncodeImage) -> Result<Vec<u8>> {
    if !matches!(px.channels, 1 | 3 | 4) {
        return Err(Error::encode(OP, format!("takes 1, 3 or 4 channels, got {}", px.channels)));
    }
    if px.width == 0 || px.height == 0 {
        return Err(Error::encode(OP, format!("an empty image ({}x{})", px.width, px.height)));
    }
    let need = px.row_bytes() * px.height as usize;
    if px.data.len() < need {
        return Err(Error::encode(
            OP,
            format!("{} bytes for a {}x{}x{} image", px.data.len(), px.height, px.width, px.channels),
        ));
    }
    match params.format {
        ImageFormat::Jpeg => jpeg(px, params.quality.0),
        ImageFormat::Png => png(px),
        ImageFormat::Webp => webp(px),
    }
}

fn color(channels: u32) -> image::ExtendedColorType {
    match channels {
        1 => image::ExtendedColorType::L8,
        3 => image::ExtendedColorType::Rgb8,
        _ => image::ExtendedColorType::Rgba8,
    }
}

fn png(px: PixelsRef<'_>) -> Result<Vec<u8>> {
    use image::codecs::png::{CompressionType, FilterType, PngEncoder};
    use image::ImageEncoder;
    let mut out = Vec::with_capacity(px.data.len() / 2);
    PngEncoder::new_with_quality(&mut out, CompressionType::Fast, FilterType::Adaptive)
        .write_image(px.data, px.width, px.height, color(px.channels))
        .map_err(|e| Error::encode(OP, format!("png: {e}")))?;
    Ok(out)
}

fn webp(px: PixelsRef<'_>) -> Result<Vec<u8>> {
    use image::codecs::webp::WebPEncoder;
    let mut out = Vec::with_capacity(px.data.len() / 2);
    WebPEncoder::new_lossless(&mut out)
        .encode(px.data, px.width, px.height, color(px.channels))
        .map_err(|e| Error::encode(OP, format!("webp: {e}")))?;
    Ok(out)
}

struct LibjpegError(String);

unsafe extern "C-unwind" fn error_exit(cinfo: &mut jpeg_common_struct) {
    let mut buf = [0u8; 256];
    // SAFETY: the error manager is ours; libjpeg writes at most
    // JMSG_LENGTH_MAX (200) bytes plus NUL into a 256-byte buffer (the
    // binding types it as [u8; 80]; the C side takes a char*).
    unsafe {
        if let Some(f) = (*cinfo.err).format_message {
            f(cinfo, &*(buf.as_mut_ptr() as *const [u8; 80]));
        }
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    std::panic::resume_unwind(Box::new(LibjpegError(String::from_utf8_lossy(&buf[..end]).into_owned())));
}

/// The compress struct, its error manager and libjpeg's output buffer,
/// released together (also after an error unwound out of libjpeg).
struct Compress {
    cinfo: Box<jpeg_compress_struct>,
    _err: Box<jpeg_error_mgr>,
    out: Box<(*mut u8, std::ffi::c_ulong)>,
}

impl Drop for Compress {
    fn drop(&mut self) {
        // SAFETY: created by jpeg_create_compress; destroying is allowed in
        // any state. The output buffer was malloc'ed by jpeg_mem_dest (or is
        // null) and is no longer referenced once the struct is destroyed.
        unsafe {
            jpeg_destroy_compress(&mut self.cinfo);
            if !self.out.0.is_null() {
                libc::free(self.out.0.cast());
            }
        }
    }
}

fn jpeg(px: PixelsRef<'_>, quality: u8) -> Result<Vec<u8>> {
    let (components, space) = match px.channels {
        1 => (1, J_COLOR_SPACE::JCS_GRAYSCALE),
        3 => (3, J_COLOR_SPACE::JCS_RGB),
        _ => {
            return Err(Error::encode(
                OP,
                "JPEG has no alpha channel: decode with mode=\"rgb\", or encode as png or webp",
            ))
        }
    };
    let result = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: zeroed structs are libjpeg's documented starting state; the
        // error manager is installed before jpeg_create_compress; all three
        // boxes live in `c`, which outlives every call below and destroys
        // the struct (and frees the output) when dropped, also on unwind.
        unsafe {
            let mut c = Compress {
                cinfo: Box::new(std::mem::zeroed()),
                _err: Box::new(std::mem::zeroed()),
                out: Box::new((std::ptr::null_mut(), 0)),
            };
            jpeg_std_error(&mut c._err);
            c._err.error_exit = Some(error_exit);
            c.cinfo.common.err = &mut *c._err;
            jpeg_create_compress(&mut *c.cinfo);
            let (buf, size) = &mut *c.out;
            jpeg_mem_dest(&mut c.cinfo, buf, size);
            c.cinfo.image_width = px.width;
            c.cinfo.image_height = px.height;
            c.cinfo.input_components = components;
            c.cinfo.in_color_space = space;
            jpeg_c_set_int_param(&mut c.cinfo, J_INT_PARAM::JINT_COMPRESS_PROFILE, JCP_FASTEST as c_int);
            jpeg_set_defaults(&mut c.cinfo);
            jpeg_set_quality(&mut c.cinfo, quality as c_int, 1);
            jpeg_start_compress(&mut c.cinfo, 1);
            let row = px.row_bytes();
            let rows: Vec<*const u8> = (0..px.height as usize).map(|y| px.data[y * row..].as_ptr()).collect();
            let mut done = 0usize;
            while done < rows.len() {
                let n = jpeg_write_scanlines(&mut c.cinfo, rows[done..].as_ptr(), (rows.len() - done) as u32);
                if n == 0 {
                    return Err(Error::encode(OP, "libjpeg accepted no scanlines"));
                }
                done += n as usize;
            }
            jpeg_finish_compress(&mut c.cinfo);
            let (buf, size) = *c.out;
            Ok(std::slice::from_raw_parts(buf, size as usize).to_vec())
        }
    }));
    match result {
        Ok(r) => r,
        Err(payload) => match payload.downcast::<LibjpegError>() {
            Ok(e) => Err(Error::encode(OP, format!("jpeg: {}", e.0))),
            Err(other) => std::panic::resume_unwind(other),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::image::jpeg;
    use crate::plan::ops::Quality;

    fn gradient(w: u32, h: u32, c: u32) -> Vec<u8> {
        (0..w * h * c).map(|i| ((i / c % w) * 3 + (i / c / w) * 5 + i % c * 40) as u8).collect()
    }

    fn enc(format: ImageFormat, quality: u8, w: u32, h: u32, c: u32, data: &[u8]) -> Result<Vec<u8>> {
        encode(PixelsRef { width: w, height: h, channels: c, data }, &EncodeImage { format, quality: Quality(quality) })
    }

    #[test]
    fn png_and_webp_are_lossless_in_every_channel_count() {
        for c in [1, 3, 4] {
            let px = gradient(37, 21, c);
            for format in [ImageFormat::Png, ImageFormat::Webp] {
                let bytes = enc(format, 90, 37, 21, c, &px).unwrap();
                let back = image::load_from_memory(&bytes).unwrap();
                let raw = match c {
                    1 => back.to_luma8().into_raw(),
                    3 => back.to_rgb8().into_raw(),
                    _ => back.to_rgba8().into_raw(),
                };
                assert_eq!(raw, px, "{format:?} with {c} channels");
            }
        }
    }

    #[test]
    fn jpeg_is_close_and_quality_sets_the_size() {
        // A smooth image (JPEG's case): no wrap-around edges.
        let px: Vec<u8> = (0..64 * 48 * 3).map(|i| ((i / 3 % 64) * 2 + (i / 3 / 64) + i % 3 * 20) as u8).collect();
        let hi = enc(ImageFormat::Jpeg, 95, 64, 48, 3, &px).unwrap();
        let lo = enc(ImageFormat::Jpeg, 20, 64, 48, 3, &px).unwrap();
        assert!(lo.len() < hi.len(), "q20 {} bytes, q95 {}", lo.len(), hi.len());
        let full = |_: &_| Ok(jpeg::DecodePlan { scale_num: 8, roi: None, rgbx: false, fancy_upsampling: true });
        let (header, back) = jpeg::decode(&hi, jpeg::Mode::Rgb, 1 << 20, full).unwrap();
        assert_eq!((header.width, header.height, header.components), (64, 48, 3));
        let back = back.data;
        let err = back.iter().zip(&px).map(|(a, b)| (*a as f64 - *b as f64).abs()).sum::<f64>() / px.len() as f64;
        assert!(err < 2.0, "mean abs error {err}");
        let gray = enc(ImageFormat::Jpeg, 90, 64, 48, 1, &gradient(64, 48, 1)).unwrap();
        let (header, _) = jpeg::decode(&gray, jpeg::Mode::Gray, 1 << 20, full).unwrap();
        assert_eq!(header.components, 1);
    }

    #[test]
    fn bad_inputs_are_named() {
        let e = enc(ImageFormat::Jpeg, 90, 4, 4, 4, &[0; 64]).unwrap_err().to_string();
        assert!(e.contains("no alpha"), "{e}");
        let e = enc(ImageFormat::Png, 90, 4, 4, 2, &[0; 32]).unwrap_err().to_string();
        assert!(e.contains("1, 3 or 4 channels"), "{e}");
        let e = enc(ImageFormat::Png, 90, 4, 4, 3, &[0; 10]).unwrap_err().to_string();
        assert!(e.contains("10 bytes"), "{e}");
        // libjpeg's own limit (65500 px a side) comes back as an error, not an abort.
        let wide = vec![0u8; 70_000 * 3];
        let e = enc(ImageFormat::Jpeg, 90, 70_000, 1, 3, &wide).unwrap_err().to_string();
        assert!(e.contains("jpeg:"), "{e}");
    }
}
