//! JPEG decoding through libjpeg-turbo's API (mozjpeg-sys builds it
//! statically, with its SIMD code). One decode session reads the header,
//! asks the caller for a plan (DCT-domain scale, region of interest), then
//! decodes only what the plan needs:
//!
//! * `scale_num` 4, 2 or 1 (over 8) makes the IDCT produce a 1/2, 1/4 or 1/8
//!   size image directly (no full-size decode, no resample of the full image);
//! * a region of interest skips the IDCT of rows above and below it
//!   (`jpeg_skip_scanlines`) and of columns outside it (`jpeg_crop_scanline`,
//!   aligned down to the iMCU grid, so the returned origin is reported).
//!
//! libjpeg reports fatal errors through `error_exit`, which must not return;
//! ours unwinds (the library is built with unwinding support) and the whole
//! session runs inside `catch_unwind`.

use crate::base::error::{Error, Result};
use mozjpeg_sys::*;
use std::ffi::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// What the header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JpegHeader {
    pub width: u32,
    pub height: u32,
    pub components: u32,
    pub cmyk: bool,
    /// EXIF orientation (1..=8; 1 when absent).
    pub orientation: u8,
}

/// How to decode, chosen from the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodePlan {
    /// Decode at `scale_num`/8 of full size (1..=8; 8 is full size). The
    /// IDCT produces the scaled image directly; 1, 2 and 4 use SIMD kernels.
    pub scale_num: u32,
    /// Region in *scaled* coordinates (x, y, w, h); None decodes everything.
    pub roi: Option<(u32, u32, u32, u32)>,
    /// For `Mode::Rgb`: write 4 bytes per pixel (R, G, B, pad) instead of 3.
    /// The resampler's 4-channel kernels are 20-30% faster than its
    /// 3-channel ones, which pays for the wider rows when a resample and a
    /// normalize follow. Ignored for CMYK sources and other modes.
    pub rgbx: bool,
    /// libjpeg's "fancy" (triangle-filter) chroma upsampling. At scales
    /// other than 8/8 and 4/8 it makes libjpeg IDCT the chroma planes at
    /// twice the luma's scaled size (12x12 at 6/8), with scalar kernels;
    /// plain replication keeps every plane at the scaled size.
    pub fancy_upsampling: bool,
}

/// Decoded pixels, HWC interleaved.
#[derive(Debug)]
pub struct Decoded {
    pub width: u32,
    pub height: u32,
    pub channels: u32,
    pub data: Vec<u8>,
    /// Where the decoded region starts in the scaled image (ROI decodes).
    pub origin: (u32, u32),
    /// The full scaled size (before the ROI).
    pub scaled_size: (u32, u32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Rgb,
    Gray,
    Rgba,
}

impl Mode {
    pub fn channels(self) -> u32 {
        match self {
            Mode::Rgb => 3,
            Mode::Gray => 1,
            Mode::Rgba => 4,
        }
    }
}

pub fn is_jpeg(data: &[u8]) -> bool {
    data.len() >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF
}

struct LibjpegError(String);

unsafe extern "C-unwind" fn error_exit(cinfo: &mut jpeg_common_struct) {
    let msg = format_message(cinfo);
    std::panic::resume_unwind(Box::new(LibjpegError(msg)));
}

unsafe extern "C-unwind" fn emit_message(cinfo: &mut jpeg_common_struct, level: c_int) {
    if level < 0 {
        // Warnings. Most are benign (extraneous bytes); a premature end of
        // data means the file is truncated: make that an error, as PIL does.
        let msg = format_message(cinfo);
        if msg.contains("Premature end") {
            std::panic::resume_unwind(Box::new(LibjpegError(format!("truncated file ({msg})"))));
        }
    }
}

fn format_message(cinfo: &mut jpeg_common_struct) -> String {
    let mut buf = [0u8; 256];
    // SAFETY: `err` was installed by us; libjpeg writes at most
    // JMSG_LENGTH_MAX (200) bytes plus NUL into the buffer, which holds 256.
    // The binding types the buffer as [u8; 80]; the C side takes a char*.
    unsafe {
        let err = &*cinfo.err;
        if let Some(f) = err.format_message {
            f(cinfo, &*(buf.as_mut_ptr() as *const [u8; 80]));
        }
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// Reads the EXIF orientation from a saved APP1 marker.
fn orientation_from_markers(cinfo: &jpeg_decompress_struct) -> u8 {
    let mut marker = cinfo.marker_list;
    while !marker.is_null() {
        // SAFETY: libjpeg's saved-marker list, valid until the session ends.
        let m = unsafe { &*marker };
        if m.marker == 0xE1 && m.data_length > 6 {
            // SAFETY: `data` holds `data_length` bytes.
            let data = unsafe { std::slice::from_raw_parts(m.data, m.data_length as usize) };
            if let Some(tiff) = data.strip_prefix(b"Exif\0\0") {
                if let Some(o) = exif_orientation(tiff) {
                    return o;
                }
            }
        }
        marker = m.next;
    }
    1
}

/// EXIF orientation from a TIFF-structured EXIF block, through kamadak-exif.
pub fn exif_orientation(tiff: &[u8]) -> Option<u8> {
    let (fields, _le) = exif::parse_exif(tiff).ok()?;
    fields
        .iter()
        .find(|f| f.tag == exif::Tag::Orientation && f.ifd_num == exif::In::PRIMARY)
        .and_then(|f| f.value.get_uint(0))
        .filter(|v| (1..=8).contains(v))
        .map(|v| v as u8)
}

struct Session {
    cinfo: Box<jpeg_decompress_struct>,
    _err: Box<jpeg_error_mgr>,
}

impl Session {
    fn new() -> Session {
        // SAFETY: zeroed structs are the documented starting state; the
        // error manager is installed before jpeg_create_decompress, both
        // live in boxes that outlive the session (dropped with it).
        let mut err: Box<jpeg_error_mgr> = Box::new(unsafe { std::mem::zeroed() });
        // SAFETY: as above: a zeroed decompress struct is its documented starting state.
        let mut cinfo: Box<jpeg_decompress_struct> = Box::new(unsafe { std::mem::zeroed() });
        // SAFETY: `err` and `cinfo` are live boxes owned by the session; the error manager is set before jpeg_create_decompress.
        unsafe {
            jpeg_std_error(&mut err);
            err.error_exit = Some(error_exit);
            err.emit_message = Some(emit_message);
            cinfo.common.err = &mut *err;
            jpeg_create_decompress(&mut *cinfo);
        }
        Session { cinfo, _err: err }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // SAFETY: created by jpeg_create_decompress; destroying also frees
        // libjpeg's pools. A destroy after an error is allowed.
        unsafe { jpeg_destroy_decompress(&mut self.cinfo) };
    }
}

/// Decodes `data` with the plan `plan(header)` returns. `max_pixels` bounds
/// the full image size (decompression bombs).
#[allow(clippy::uninit_vec)] // the output rows are all written before they are read; no memset
pub fn decode(
    data: &[u8],
    mode: Mode,
    max_pixels: u64,
    plan: impl FnOnce(&JpegHeader) -> Result<DecodePlan>,
) -> Result<(JpegHeader, Decoded)> {
    let mut plan = Some(plan);
    let mut plan_error: Option<Error> = None;
    let result = catch_unwind(AssertUnwindSafe(|| -> Result<(JpegHeader, Decoded)> {
        let mut s = Session::new();
        let c = &mut *s.cinfo;
        // SAFETY: `data` outlives the session (this function's borrow).
        unsafe {
            jpeg_mem_src(c, data.as_ptr(), data.len() as _);
            jpeg_save_markers(c, 0xE1, 0xFFFF);
            jpeg_read_header(c, 1);
        }
        let cmyk = matches!(c.jpeg_color_space, J_COLOR_SPACE::JCS_CMYK | J_COLOR_SPACE::JCS_YCCK);
        let header = JpegHeader {
            width: c.image_width,
            height: c.image_height,
            components: c.num_components as u32,
            cmyk,
            orientation: orientation_from_markers(c),
        };
        if header.width == 0 || header.height == 0 {
            return Err(Error::decode("decode_image", "JPEG with zero width or height"));
        }
        let pixels = header.width as u64 * header.height as u64;
        if pixels > max_pixels {
            return Err(Error::decode(
                "decode_image",
                format!(
                    "{}x{} image has {pixels} pixels, above the limit of {max_pixels} (decompression bomb?)",
                    header.width, header.height
                ),
            ));
        }
        let p = match (plan.take().expect("plan once"))(&header) {
            Ok(p) => p,
            Err(e) => {
                plan_error = Some(e);
                return Err(Error::Cancelled);
            }
        };
        c.scale_num = p.scale_num.clamp(1, 8);
        c.scale_denom = 8;
        c.dct_method = J_DCT_METHOD::JDCT_ISLOW;
        c.do_fancy_upsampling = p.fancy_upsampling as boolean;
        c.out_color_space = if cmyk {
            J_COLOR_SPACE::JCS_CMYK
        } else {
            match mode {
                Mode::Rgb if p.rgbx => J_COLOR_SPACE::JCS_EXT_RGBX,
                Mode::Rgb => J_COLOR_SPACE::JCS_EXT_RGB,
                Mode::Gray => J_COLOR_SPACE::JCS_GRAYSCALE,
                Mode::Rgba => J_COLOR_SPACE::JCS_EXT_RGBA,
            }
        };
        // SAFETY: a valid session after read_header.
        unsafe { jpeg_start_decompress(c) };
        let (sw, sh) = (c.output_width, c.output_height);
        let (mut x0, mut cw, y0, rows) = match p.roi {
            Some((x, y, w, h)) => {
                let x = x.min(sw.saturating_sub(1));
                let y = y.min(sh.saturating_sub(1));
                (x, w.clamp(1, sw - x), y, h.clamp(1, sh - y))
            }
            None => (0, sw, 0, sh),
        };
        if x0 != 0 || cw != sw {
            // SAFETY: after start_decompress, before reading scanlines.
            unsafe { jpeg_crop_scanline(c, &mut x0, &mut cw) };
        }
        if y0 > 0 {
            // SAFETY: as above; returns the number of lines skipped.
            let skipped = unsafe { jpeg_skip_scanlines(c, y0) };
            if skipped != y0 {
                return Err(Error::decode("decode_image", "truncated file (could not skip to the region)"));
            }
        }
        let comps = c.output_components as usize;
        let row_bytes = cw as usize * comps;
        let mut out: Vec<u8> = super::scratch(row_bytes * rows as usize);
        // SAFETY: u8 has no invalid bit patterns; every row is written by
        // jpeg_read_scanlines below before the buffer is read, and a short
        // read returns an error (the buffer is then dropped unread).
        unsafe { out.set_len(row_bytes * rows as usize) };
        let mut done = 0u32;
        while done < rows {
            let mut row_ptrs: [*mut u8; 4] = [std::ptr::null_mut(); 4];
            let batch = (rows - done).min(4);
            for (i, ptr) in row_ptrs.iter_mut().enumerate().take(batch as usize) {
                // SAFETY: rows done+i < rows, inside `out`.
                *ptr = unsafe { out.as_mut_ptr().add((done as usize + i) * row_bytes) };
            }
            // SAFETY: `batch` valid row pointers of `row_bytes` each.
            let n = unsafe { jpeg_read_scanlines(c, row_ptrs.as_mut_ptr(), batch) };
            if n == 0 {
                return Err(Error::decode("decode_image", "truncated file (no more scanlines)"));
            }
            done += n;
        }
        // Remaining rows are not needed; abort instead of finishing.
        // SAFETY: valid session.
        unsafe { jpeg_abort_decompress(c) };
        let channels = if cmyk { mode.channels() } else { comps as u32 };
        let data = if cmyk {
            let rgb = cmyk_to(&out, mode);
            super::recycle(out);
            rgb
        } else {
            out
        };
        Ok((header, Decoded { width: cw, height: rows, channels, data, origin: (x0, y0), scaled_size: (sw, sh) }))
    }));
    match result {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(Error::Cancelled)) if plan_error.is_some() => Err(plan_error.unwrap()),
        Ok(Err(e)) => Err(e),
        Err(payload) => match payload.downcast::<LibjpegError>() {
            Ok(e) => Err(Error::decode("decode_image", format!("invalid JPEG: {}", e.0))),
            Err(other) => std::panic::resume_unwind(other),
        },
    }
}

/// Adobe-style (inverted) CMYK to the requested mode, as Pillow converts it.
fn cmyk_to(cmyk: &[u8], mode: Mode) -> Vec<u8> {
    let n = cmyk.len() / 4;
    let mut out = Vec::with_capacity(n * mode.channels() as usize);
    for px in cmyk.chunks_exact(4) {
        let k = px[3] as u32;
        let rgb = [(px[0] as u32 * k + 127) / 255, (px[1] as u32 * k + 127) / 255, (px[2] as u32 * k + 127) / 255];
        match mode {
            Mode::Rgb => out.extend(rgb.iter().map(|&v| v as u8)),
            Mode::Rgba => {
                out.extend(rgb.iter().map(|&v| v as u8));
                out.push(255);
            }
            Mode::Gray => out.push(((rgb[0] * 19595 + rgb[1] * 38470 + rgb[2] * 7471 + 32768) >> 16) as u8),
        }
    }
    out
}
