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

/// Where a JPEG's bytes end (just past its end-of-image marker), or why
/// they do not prove the file whole.
///
/// A region-of-interest or DCT-scaled decode stops reading at the last row
/// it needs, so libjpeg never meets data missing after that row; this walk
/// proves the rest is there without decoding it. From the start-of-image
/// marker it steps over each marker segment by its length and over each
/// scan's entropy-coded data (up to the first marker that is neither a
/// restart marker `FFD0`-`FFD7` nor a stuffed `FF00`), until the
/// end-of-image marker `FFD9`. A file cut anywhere (in a segment, in any
/// scan of a baseline or progressive file, between scans) has no such
/// marker at that level and is refused; an `FFD9` inside an APP segment (an
/// EXIF thumbnail's) is stepped over with its segment. Bytes after the
/// end-of-image marker are allowed, as libjpeg and PIL allow them, and so
/// are stray bytes between segments (libjpeg warns and skips them).
///
/// What it cannot see: damage that keeps the structure (flipped bits inside
/// entropy-coded data of rows a crop skips), or a file cut and then given
/// an end-of-image marker again. It reads every byte once (memchr for
/// `0xFF`), a few microseconds for a typical photo.
pub fn check_complete(data: &[u8]) -> std::result::Result<usize, String> {
    let len = data.len();
    if !data.starts_with(&[0xFF, 0xD8]) {
        return Err("no start-of-image marker".into());
    }
    let cut = |what: String| {
        Err(format!("truncated file: the data ends ({len} bytes) {what}, before the end-of-image marker"))
    };
    let mut at = 2;
    let mut scans = 0u32;
    loop {
        // The next marker: 0xFF, any fill 0xFFs, then a code that is not 0.
        let code_at = loop {
            let Some(ff) = memchr::memchr(0xFF, &data[at..]).map(|i| at + i) else {
                return cut(format!("after {scans} scan(s), where a marker should follow"));
            };
            let mut c = ff + 1;
            while c < len && data[c] == 0xFF {
                c += 1;
            }
            if c >= len {
                return cut(format!("after {scans} scan(s), inside a marker"));
            }
            if data[c] != 0 {
                break c;
            }
            at = c + 1;
        };
        let code = data[code_at];
        at = code_at + 1;
        match code {
            0xD9 if scans == 0 => return Err("end-of-image marker before any scan".into()),
            0xD9 => return Ok(at),
            0xD8 => return Err(format!("a second start-of-image marker at byte {}", code_at - 1)),
            0xD0..=0xD7 | 0x01 => continue, // standalone markers
            _ => {}
        }
        if at + 2 > len {
            return cut(format!("in the length of marker 0xFF{code:02X} at byte {}", code_at - 1));
        }
        let seg = u16::from_be_bytes([data[at], data[at + 1]]) as usize;
        if seg < 2 {
            return Err(format!("marker 0xFF{code:02X} at byte {} has a length of {seg}", code_at - 1));
        }
        if at + seg > len {
            return cut(format!("inside marker segment 0xFF{code:02X} at byte {} ({seg} bytes long)", code_at - 1));
        }
        at += seg;
        if code == 0xDA {
            scans += 1;
            // Entropy-coded data: runs until a marker other than a restart
            // marker; 0xFF inside it is always stuffed as FF00.
            loop {
                let Some(ff) = memchr::memchr(0xFF, &data[at..]).map(|i| at + i) else {
                    return cut(format!("in the entropy-coded data of scan {scans}"));
                };
                match data.get(ff + 1) {
                    None => return cut(format!("in the entropy-coded data of scan {scans}")),
                    Some(0x00 | 0xD0..=0xD7) => at = ff + 2,
                    Some(0xFF) => at = ff + 1,
                    Some(_) => {
                        at = ff;
                        break;
                    }
                }
            }
        }
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
        // Before any pixel: a decode that stops at the last row a crop
        // needs would otherwise deliver a file cut after that row.
        if let Err(why) = check_complete(data) {
            return Err(Error::decode("decode_image", format!("invalid JPEG: {why}")));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy)]
    struct Kind {
        progressive: bool,
        full_chroma: bool,
        restart_rows: i32,
    }

    const BASELINE: Kind = Kind { progressive: false, full_chroma: false, restart_rows: 0 };

    /// A JPEG of a textured gradient, encoded by libjpeg (the same library).
    fn encode(w: u32, h: u32, k: Kind) -> Vec<u8> {
        let rgb: Vec<u8> = (0..w * h)
            .flat_map(|i| {
                let (x, y) = (i % w, i / w);
                [(x * 7) as u8, (y * 5) as u8, ((x ^ y) * 3) as u8]
            })
            .collect();
        // SAFETY: the libjpeg compress protocol in order, on zeroed structs
        // that outlive it; jpeg_mem_dest allocates the output with malloc,
        // copied out and freed once compression has finished.
        unsafe {
            let mut err: jpeg_error_mgr = std::mem::zeroed();
            let mut c: jpeg_compress_struct = std::mem::zeroed();
            c.common.err = jpeg_std_error(&mut err);
            jpeg_create_compress(&mut c);
            let mut buf: *mut u8 = std::ptr::null_mut();
            let mut size: std::ffi::c_ulong = 0;
            jpeg_mem_dest(&mut c, &mut buf, &mut size);
            c.image_width = w;
            c.image_height = h;
            c.input_components = 3;
            c.in_color_space = J_COLOR_SPACE::JCS_RGB;
            jpeg_c_set_int_param(&mut c, J_INT_PARAM::JINT_COMPRESS_PROFILE, JCP_FASTEST as c_int);
            jpeg_set_defaults(&mut c);
            jpeg_set_quality(&mut c, 90, 1);
            if k.full_chroma {
                let comp = std::slice::from_raw_parts_mut(c.comp_info, 3);
                comp[0].h_samp_factor = 1;
                comp[0].v_samp_factor = 1;
            }
            c.restart_in_rows = k.restart_rows;
            if k.progressive {
                jpeg_simple_progression(&mut c);
            }
            jpeg_start_compress(&mut c, 1);
            for row in rgb.chunks_exact(w as usize * 3) {
                let p = row.as_ptr();
                jpeg_write_scanlines(&mut c, &p, 1);
            }
            jpeg_finish_compress(&mut c);
            let out = std::slice::from_raw_parts(buf, size as usize).to_vec();
            jpeg_destroy_compress(&mut c);
            libc::free(buf.cast());
            out
        }
    }

    fn photo(w: u32, h: u32) -> Vec<u8> {
        encode(w, h, BASELINE)
    }

    fn decode_top_left(data: &[u8]) -> Result<(JpegHeader, Decoded)> {
        decode(data, Mode::Rgb, 1 << 30, |_| {
            Ok(DecodePlan { scale_num: 2, roi: Some((0, 0, 8, 8)), rgbx: false, fancy_upsampling: true })
        })
    }

    #[test]
    fn a_whole_file_ends_at_its_end_of_image_marker() {
        let f = photo(96, 64);
        assert_eq!(check_complete(&f), Ok(f.len()));
        // Bytes after the end-of-image marker (as PIL accepts them).
        let mut tail = f.clone();
        tail.extend_from_slice(b"trailing bytes \xFF\x00\xFF");
        assert_eq!(check_complete(&tail), Ok(f.len()));
        assert!(decode_top_left(&tail).is_ok());
    }

    #[test]
    fn a_file_cut_anywhere_is_refused_even_where_the_crop_ends_first() {
        let f = photo(160, 128);
        for cut in 2..f.len() {
            let e = check_complete(&f[..cut]).unwrap_err();
            assert!(!e.is_empty());
        }
        // The top-left region decodes from the first rows alone: the cut
        // file used to pass; now it names the truncation.
        for frac in [50, 80, 90, 97] {
            let cut = &f[..f.len() * frac / 100];
            let e = decode_top_left(cut).unwrap_err().to_string();
            assert!(e.contains("truncated file") && e.contains("entropy-coded data of scan 1"), "{frac}%: {e}");
        }
    }

    #[test]
    fn every_kind_cut_anywhere_is_refused_under_every_plan() {
        let kinds = [
            BASELINE,
            Kind { progressive: true, ..BASELINE },
            Kind { full_chroma: true, ..BASELINE },
            Kind { restart_rows: 1, ..BASELINE },
            Kind { progressive: true, full_chroma: true, restart_rows: 2 },
        ];
        let plans = [
            DecodePlan { scale_num: 8, roi: None, rgbx: false, fancy_upsampling: true },
            DecodePlan { scale_num: 4, roi: None, rgbx: true, fancy_upsampling: true },
            DecodePlan { scale_num: 8, roi: Some((0, 0, 16, 16)), rgbx: false, fancy_upsampling: true },
            DecodePlan { scale_num: 2, roi: Some((8, 4, 8, 8)), rgbx: false, fancy_upsampling: false },
        ];
        for (ki, k) in kinds.into_iter().enumerate() {
            let f = encode(128, 96, k);
            assert_eq!(check_complete(&f), Ok(f.len()), "kind {ki}");
            assert!(decode(&f, Mode::Rgb, 1 << 30, |_| Ok(plans[2])).is_ok());
            for cut in (4..f.len()).step_by(7).chain([f.len() - 2, f.len() - 1]) {
                for p in plans {
                    let e = decode(&f[..cut], Mode::Rgb, 1 << 30, |_| Ok(p)).map(|_| ()).unwrap_err();
                    let e = e.to_string();
                    assert!(e.contains("invalid JPEG") || e.contains("truncated"), "kind {ki}, cut {cut}: {e}");
                }
            }
        }
    }

    #[test]
    fn an_end_of_image_marker_inside_a_segment_proves_nothing() {
        let f = photo(64, 64);
        // An APP1 segment holding a whole thumbnail-like JPEG (SOI..EOI),
        // inserted after SOI, then the file cut in its scan.
        let thumb = [0xFF, 0xD8, 0xFF, 0xD9];
        let mut app = vec![0xFF, 0xE1, 0, (2 + thumb.len()) as u8];
        app.extend_from_slice(&thumb);
        let mut g = f[..2].to_vec();
        g.extend_from_slice(&app);
        g.extend_from_slice(&f[2..]);
        assert_eq!(check_complete(&g), Ok(g.len()));
        assert!(check_complete(&g[..g.len() - 40]).is_err());
        // Cut inside the segment itself.
        assert!(check_complete(&g[..5]).unwrap_err().contains("0xFFE1"));
    }

    #[test]
    fn structure_errors_are_named() {
        assert_eq!(check_complete(b"\xFF\xD8\xFF\xD9"), Err("end-of-image marker before any scan".into()));
        assert!(check_complete(b"GIF89a").unwrap_err().contains("start-of-image"));
        assert!(check_complete(b"\xFF\xD8\xFF\xE0\x00\x01").unwrap_err().contains("length of 1"));
    }
}
