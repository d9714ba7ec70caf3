//! Image decoding and the fused image program.
//!
//! A slot chain like `decode_image → resize_short → center_crop → normalize`
//! runs as one pass per sample: the header is read, the geometry ops are
//! composed into a single source window and output size ([`geometry`]),
//! the JPEG decoder is told how small it may decode (DCT scaling) and which
//! region it needs ([`jpeg`]), the window is resampled once, and one final
//! loop applies flips, normalization, layout and dtype while writing straight
//! into the batch buffer ([`finish`]).

pub mod encode;
pub mod finish;
pub mod geometry;
pub mod jpeg;

use crate::base::error::{Error, Result};
use crate::plan::ImageMode;

/// Decoded pixels, HWC interleaved uint8.
#[derive(Debug, Clone)]
pub struct Pixels {
    pub width: u32,
    pub height: u32,
    pub channels: u32,
    pub data: Vec<u8>,
}

impl Pixels {
    pub fn row_bytes(&self) -> usize {
        self.width as usize * self.channels as usize
    }

    pub fn view(&self) -> PixelsRef<'_> {
        PixelsRef { width: self.width, height: self.height, channels: self.channels, data: &self.data }
    }
}

/// Borrowed [`Pixels`]: a frame inside a clip tensor is resampled where it
/// lies, not copied out first (a 720p clip is 44 MB).
#[derive(Debug, Clone, Copy)]
pub struct PixelsRef<'a> {
    pub width: u32,
    pub height: u32,
    pub channels: u32,
    pub data: &'a [u8],
}

impl PixelsRef<'_> {
    pub fn row_bytes(&self) -> usize {
        self.width as usize * self.channels as usize
    }
}

pub fn jpeg_mode(mode: ImageMode) -> jpeg::Mode {
    match mode {
        ImageMode::Rgb => jpeg::Mode::Rgb,
        ImageMode::Gray => jpeg::Mode::Gray,
        ImageMode::Rgba => jpeg::Mode::Rgba,
    }
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Vec<Vec<u8>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// An empty buffer with room for `n` bytes, from this thread's scratch when
/// one is big enough. Decode and resample outputs live for one sample; a
/// fresh allocation of their size per sample page-faults (glibc trims and
/// regrows the worker threads' arenas), reusing them does not.
pub fn scratch(n: usize) -> Vec<u8> {
    let found = SCRATCH.with(|s| {
        let mut s = s.borrow_mut();
        s.iter().position(|v| v.capacity() >= n).map(|i| s.swap_remove(i))
    });
    let mut v = found.unwrap_or_default();
    v.clear();
    v.reserve(n);
    v
}

/// Hands a buffer back to this thread's scratch (at most 4 kept, none over
/// 64 MiB, so a huge image does not pin its memory).
pub fn recycle(v: Vec<u8>) {
    if v.capacity() == 0 || v.capacity() > 64 << 20 {
        return;
    }
    SCRATCH.with(|s| {
        let mut s = s.borrow_mut();
        if s.len() < 4 {
            s.push(v);
        } else if let Some(small) = s.iter_mut().min_by_key(|b| b.capacity()) {
            if small.capacity() < v.capacity() {
                *small = v;
            }
        }
    });
}

/// Pillow's luma weights (ITU-R 601-2), so gray output matches `convert("L")`.
#[inline]
pub fn luma(r: u8, g: u8, b: u8) -> u8 {
    ((r as u32 * 19595 + g as u32 * 38470 + b as u32 * 7471 + 0x8000) >> 16) as u8
}

/// Decodes a non-JPEG image (PNG, WebP, GIF, BMP, TIFF, ...) through the
/// `image` crate, with size limits; returns pixels and the EXIF orientation.
///
/// The conversion rules, the same for every format:
/// * `rgb` drops an alpha channel (the stored color is kept, as PIL's
///   `convert("RGB")` and torchvision's `ImageReadMode.RGB` do); `rgba` keeps
///   it (opaque images get 255); `gray` is the ITU-R 601-2 luma of the color,
///   alpha ignored (PIL's `convert("L")`).
/// * 16-bit samples become 8-bit by `round(v * 255 / 65535)`, i.e. `v / 257`
///   rounded (0 → 0, 65535 → 255; at most one level from PIL's `v >> 8`).
/// * The orientation comes from the format's EXIF data wherever it lives
///   (PNG `eXIf`, before or after the image data; WebP `EXIF`; TIFF's own
///   tag), with or without the `Exif\0\0` prefix some writers add.
pub fn decode_other(data: &[u8], mode: ImageMode, max_pixels: u64) -> Result<(Pixels, u8)> {
    use image::ImageDecoder;
    let bad = |e: &dyn std::fmt::Display| Error::decode("decode_image", e);
    if data.is_empty() {
        return Err(Error::decode("decode_image", "empty input (0 bytes)"));
    }
    let mut reader = image::ImageReader::new(std::io::Cursor::new(data)).with_guessed_format().map_err(|e| bad(&e))?;
    let format = match reader.format() {
        Some(f) => f,
        None => {
            let head: Vec<String> = data.iter().take(8).map(|b| format!("{b:02x}")).collect();
            return Err(Error::decode(
                "decode_image",
                format!("not a recognized image format (first bytes: {})", head.join(" ")),
            ));
        }
    };
    if format == image::ImageFormat::Tiff {
        check_tiff_layout(data)?;
    }
    let mut limits = image::Limits::default();
    limits.max_alloc = Some(max_pixels.saturating_mul(16));
    reader.limits(limits);
    let mut decoder = reader.into_decoder().map_err(|e| bad(&e))?;
    let (w, h) = decoder.dimensions();
    if w as u64 * h as u64 > max_pixels {
        return Err(Error::decode(
            "decode_image",
            format!("{w}x{h} image is above the limit of {max_pixels} pixels (decompression bomb?)"),
        ));
    }
    let orientation = orientation_of(&mut decoder, data, format);
    let img = image::DynamicImage::from_decoder(decoder).map_err(|e| bad(&e))?;
    let (channels, data) = match mode {
        ImageMode::Rgb => (3, img.to_rgb8().into_raw()),
        ImageMode::Rgba => (4, img.to_rgba8().into_raw()),
        ImageMode::Gray => {
            if matches!(img, image::DynamicImage::ImageLuma8(_)) {
                (1, img.into_luma8().into_raw())
            } else {
                let rgb = img.to_rgb8();
                (1, rgb.pixels().map(|p| luma(p[0], p[1], p[2])).collect())
            }
        }
    };
    Ok((Pixels { width: w, height: h, channels, data }, orientation))
}

/// Refuses TIFF layouts the decoder cannot read, before it runs (it would
/// panic on them): tiles stored as separate color planes.
fn check_tiff_layout(data: &[u8]) -> Result<()> {
    use tiff::tags::Tag;
    let Ok(mut dec) = tiff::decoder::Decoder::new(std::io::Cursor::new(data)) else {
        return Ok(()); // let the image decoder say what is wrong
    };
    let planar = dec.find_tag_unsigned::<u32>(Tag::PlanarConfiguration).ok().flatten().unwrap_or(1);
    let tiled = dec.find_tag(Tag::TileWidth).ok().flatten().is_some();
    let samples = dec.find_tag_unsigned::<u32>(Tag::SamplesPerPixel).ok().flatten().unwrap_or(1);
    if planar == 2 && tiled && samples > 1 {
        return Err(Error::decode(
            "decode_image",
            format!(
                "unsupported TIFF layout: tiles with {samples} samples stored as separate planes \
                 (PlanarConfiguration=2); save it with interleaved samples (PlanarConfiguration=1) or in strips"
            ),
        ));
    }
    Ok(())
}

/// The EXIF orientation (1..=8) of a non-JPEG image.
fn orientation_of(decoder: &mut impl image::ImageDecoder, data: &[u8], format: image::ImageFormat) -> u8 {
    let native = decoder.orientation().map(|o| o.to_exif()).unwrap_or(1);
    if native != 1 {
        return native;
    }
    let raw = match decoder.exif_metadata() {
        Ok(Some(raw)) => Some(raw),
        // The png crate sees only chunks before the image data; writers may
        // put eXIf after it, and ImageMagick writes EXIF as a hex text chunk.
        _ if format == image::ImageFormat::Png => png_exif(data),
        _ => None,
    };
    raw.and_then(|r| exif_orientation(&r)).unwrap_or(1)
}

/// The orientation tag of a raw EXIF block: a TIFF header, optionally after
/// the `Exif\0\0` marker JPEG uses (some PNG and WebP writers keep it).
fn exif_orientation(raw: &[u8]) -> Option<u8> {
    jpeg::exif_orientation(raw.strip_prefix(b"Exif\0\0").unwrap_or(raw))
}

/// The chunks of a PNG file as (type, body), up to `IEND` or the first
/// chunk whose length runs past the data.
fn png_chunks(data: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> {
    let mut at = if data.starts_with(b"\x89PNG\r\n\x1a\n") { 8 } else { data.len() };
    std::iter::from_fn(move || {
        let head = data.get(at..at.checked_add(8)?)?;
        let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let ty = &head[4..8];
        let body = data.get(at + 8..(at + 8).checked_add(len)?)?;
        if ty == b"IEND" {
            return None;
        }
        at = at + 12 + len;
        Some((ty, body))
    })
}

/// The largest EXIF block read from a PNG text chunk (after inflating).
const MAX_TEXT_EXIF: u64 = 1 << 20;

/// A PNG's EXIF block: the `eXIf` chunk wherever it lies, else the
/// `Raw profile type exif` (or `APP1`) text chunk ImageMagick writes —
/// `tEXt`, `zTXt` or `iTXt`, holding `\nexif\n  <length>\n<hex…>` — read as
/// PIL reads it.
fn png_exif(data: &[u8]) -> Option<Vec<u8>> {
    let mut profile = None;
    for (ty, body) in png_chunks(data) {
        match ty {
            b"eXIf" => return Some(body.to_vec()),
            b"tEXt" | b"zTXt" | b"iTXt" if profile.is_none() => profile = raw_profile_text(ty, body),
            _ => {}
        }
    }
    profile.and_then(|text| parse_raw_profile(&text))
}

/// The text of a `Raw profile type exif|APP1` PNG text chunk.
fn raw_profile_text(ty: &[u8], body: &[u8]) -> Option<Vec<u8>> {
    let nul = body.iter().position(|&b| b == 0)?;
    let keyword = &body[..nul];
    if keyword != b"Raw profile type exif" && keyword != b"Raw profile type APP1" {
        return None;
    }
    let rest = &body[nul + 1..];
    let inflate = |z: &[u8]| {
        use std::io::Read;
        let mut out = Vec::new();
        flate2::read::ZlibDecoder::new(z).take(MAX_TEXT_EXIF * 3).read_to_end(&mut out).ok()?;
        Some(out)
    };
    match ty {
        b"tEXt" => Some(rest.to_vec()),
        // compression method (0 = zlib), then the stream
        b"zTXt" => inflate(rest.get(1..)?),
        _ => {
            // iTXt: compressed flag, method, language\0, translated keyword\0, text
            let (&flag, rest) = rest.split_first()?;
            let rest = rest.get(1..)?;
            let lang_end = rest.iter().position(|&b| b == 0)?;
            let rest = &rest[lang_end + 1..];
            let tk_end = rest.iter().position(|&b| b == 0)?;
            let text = &rest[tk_end + 1..];
            if flag == 1 {
                inflate(text)
            } else {
                Some(text.to_vec())
            }
        }
    }
}

/// Decodes ImageMagick's raw profile text: a blank line, the profile name,
/// the byte length, then hex digits over many lines.
fn parse_raw_profile(text: &[u8]) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(text).ok()?;
    let mut lines = text.trim_start_matches('\n').splitn(3, '\n');
    let _name = lines.next()?;
    let len: u64 = lines.next()?.trim().parse().ok()?;
    if len > MAX_TEXT_EXIF {
        return None;
    }
    let mut out = Vec::with_capacity(len as usize);
    let mut hi = None;
    for c in lines.next()?.bytes() {
        let v = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            b' ' | b'\n' | b'\r' | b'\t' => continue,
            _ => return None,
        };
        match hi.take() {
            None => hi = Some(v),
            Some(h) => out.push((h << 4) | v),
        }
        if out.len() as u64 == len {
            break;
        }
    }
    Some(out)
}

/// Applies an EXIF orientation (2..=8) to HWC pixels.
pub fn orient(p: Pixels, orientation: u8) -> Pixels {
    if orientation <= 1 || orientation > 8 {
        return p;
    }
    let (w, h, c) = (p.width as usize, p.height as usize, p.channels as usize);
    let transposed = orientation >= 5;
    let (ow, oh) = if transposed { (h, w) } else { (w, h) };
    let mut out = scratch(p.data.len());
    out.resize(p.data.len(), 0);
    for oy in 0..oh {
        for ox in 0..ow {
            // Source coordinates of output pixel (ox, oy), per the EXIF table.
            let (sx, sy) = match orientation {
                2 => (w - 1 - ox, oy),
                3 => (w - 1 - ox, h - 1 - oy),
                4 => (ox, h - 1 - oy),
                5 => (oy, ox),
                6 => (oy, h - 1 - ox),
                7 => (w - 1 - oy, h - 1 - ox),
                8 => (w - 1 - oy, ox),
                _ => unreachable!(),
            };
            let s = (sy * w + sx) * c;
            let d = (oy * ow + ox) * c;
            out[d..d + c].copy_from_slice(&p.data[s..s + c]);
        }
    }
    recycle(p.data);
    Pixels { width: ow as u32, height: oh as u32, channels: p.channels, data: out }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orientation_six_rotates_clockwise() {
        // 2x1 image: [A B] -> rotated 90° clockwise -> column [A; B]
        let p = Pixels { width: 2, height: 1, channels: 1, data: vec![1, 2] };
        let o = orient(p, 6);
        assert_eq!((o.width, o.height), (1, 2));
        assert_eq!(o.data, vec![1, 2]);
        let p = Pixels { width: 2, height: 1, channels: 1, data: vec![1, 2] };
        let o = orient(p, 8);
        assert_eq!(o.data, vec![2, 1]);
        let p = Pixels { width: 2, height: 1, channels: 1, data: vec![1, 2] };
        assert_eq!(orient(p, 2).data, vec![2, 1]);
    }

    #[test]
    fn garbage_is_a_decode_error_naming_the_bytes() {
        let e = decode_other(b"not an image at all", ImageMode::Rgb, 1 << 30).unwrap_err();
        assert!(e.to_string().contains("not a recognized image format"), "{e}");
        assert!(decode_other(b"", ImageMode::Rgb, 1 << 30).unwrap_err().to_string().contains("empty"));
    }
}
