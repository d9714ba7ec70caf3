//! gzip and tar over in-memory sources. Tar entries of an uncompressed
//! archive are returned as slices of the source (zero copy when the source is
//! a memory map). Entry names that would escape an extraction directory are
//! refused.

use crate::base::error::{Error, Result};
use bytes::Bytes;
use std::io::Read;

/// Default cap on decompressed size: refuses gzip bombs unless raised.
pub const DEFAULT_MAX_GUNZIP: u64 = 64 << 30;

/// Decompresses a gzip stream (all members), refusing output beyond `max_output`.
pub fn gunzip(uri: &str, data: &[u8], max_output: u64) -> Result<Bytes> {
    crate::base::guard::catch(
        |m| Error::corrupt(uri, "archive", format!("the reader failed on it ({m})")),
        || gunzip_unguarded(uri, data, max_output),
    )
}

fn gunzip_unguarded(uri: &str, data: &[u8], max_output: u64) -> Result<Bytes> {
    if data.len() < 2 || data[0] != 0x1f || data[1] != 0x8b {
        return Err(Error::corrupt(uri, "gzip stream", "missing gzip magic bytes (1f 8b)"));
    }
    let mut decoder = flate2::read::MultiGzDecoder::new(data).take(max_output.saturating_add(1));
    let mut out = Vec::with_capacity((data.len() * 4).min(1 << 30));
    decoder.read_to_end(&mut out).map_err(|e| {
        let detail =
            if e.kind() == std::io::ErrorKind::UnexpectedEof { "truncated stream".to_string() } else { e.to_string() };
        Error::corrupt(uri, "gzip stream", detail)
    })?;
    if out.len() as u64 > max_output {
        return Err(Error::corrupt(
            uri,
            "gzip stream",
            format!("decompresses to more than {max_output} bytes (raise max_size to allow it)"),
        ));
    }
    Ok(Bytes::from(out))
}

/// Decompresses a zstd stream (a `.zst` shard), at most `max_output`
/// bytes; a panic in the decoder is a corrupt-data error.
pub fn unzstd(uri: &str, data: &[u8], max_output: u64) -> Result<Bytes> {
    crate::base::guard::catch(
        |m| Error::corrupt(uri, "archive", format!("the reader failed on it ({m})")),
        || {
            let bad = |e: &dyn std::fmt::Display| Error::corrupt(uri, "zstd stream", e.to_string());
            let decoder = ruzstd::decoding::StreamingDecoder::new(data).map_err(|e| bad(&e))?;
            let mut out = Vec::with_capacity((data.len() * 4).min(1 << 30));
            decoder.take(max_output.saturating_add(1)).read_to_end(&mut out).map_err(|e| bad(&e))?;
            if out.len() as u64 > max_output {
                return Err(Error::corrupt(
                    uri,
                    "zstd stream",
                    format!("decompresses to more than {max_output} bytes"),
                ));
            }
            Ok(Bytes::from(out))
        },
    )
}

/// One regular file inside a tar archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TarEntry {
    pub name: String,
    /// Offset of the entry's data within the archive.
    pub offset: u64,
    pub size: u64,
}

/// Refuses names that are absolute or climb out with `..`.
pub fn check_entry_name(uri: &str, name: &str) -> Result<()> {
    if name.starts_with('/') || name.split('/').any(|part| part == "..") {
        return Err(Error::corrupt(uri, "tar archive", format!("entry {name:?} would escape the archive's directory")));
    }
    Ok(())
}

/// Lists the regular files of a tar archive in order.
pub fn tar_entries(uri: &str, data: &[u8]) -> Result<Vec<TarEntry>> {
    crate::base::guard::catch(
        |m| Error::corrupt(uri, "archive", format!("the reader failed on it ({m})")),
        || tar_entries_unguarded(uri, data),
    )
}

fn tar_entries_unguarded(uri: &str, data: &[u8]) -> Result<Vec<TarEntry>> {
    let mut archive = tar::Archive::new(data);
    let mut out = Vec::new();
    let entries = archive.entries().map_err(|e| Error::corrupt(uri, "tar archive", e))?;
    for entry in entries {
        let entry = entry.map_err(|e| Error::corrupt(uri, "tar archive", e))?;
        let kind = entry.header().entry_type();
        if !(kind.is_file() || kind == tar::EntryType::Continuous) {
            continue;
        }
        let name = entry.path().map_err(|e| Error::corrupt(uri, "tar archive", e))?.to_string_lossy().into_owned();
        let name = name.strip_prefix("./").map(str::to_string).unwrap_or(name);
        check_entry_name(uri, &name)?;
        let offset = entry.raw_file_position();
        let size = entry.size();
        if offset.checked_add(size).is_none_or(|end| end > data.len() as u64) {
            return Err(Error::corrupt(
                uri,
                "tar archive",
                format!("entry {name:?} runs past the end of the archive (truncated)"),
            ));
        }
        out.push(TarEntry { name, offset, size });
    }
    Ok(out)
}

/// The bytes of entry `name`, sliced from `data` without a copy.
pub fn tar_entry(uri: &str, data: &Bytes, name: &str) -> Result<Bytes> {
    crate::base::guard::catch(
        |m| Error::corrupt(uri, "archive", format!("the reader failed on it ({m})")),
        || tar_entry_unguarded(uri, data, name),
    )
}

fn tar_entry_unguarded(uri: &str, data: &Bytes, name: &str) -> Result<Bytes> {
    check_entry_name(uri, name)
        .map_err(|_| Error::invalid(format!("{uri}: tar entry name {name:?} is not a safe relative path")))?;
    let wanted = name.strip_prefix("./").unwrap_or(name);
    let entries = tar_entries(uri, data)?;
    match entries.iter().rev().find(|e| e.name == wanted) {
        Some(e) => Ok(data.slice(e.offset as usize..(e.offset + e.size) as usize)),
        None => Err(Error::NotFound {
            uri: format!("{uri}#{wanted}"),
            detail: format!("no entry {wanted:?} in the tar archive ({} entries)", entries.len()),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::error::ErrorKind;
    use std::io::Write;

    fn make_tar(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        for (name, data) in entries {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            h.set_entry_type(tar::EntryType::Regular);
            // set_path refuses "..", so write the raw name like a hostile archive would.
            let raw = &mut h.as_old_mut().name;
            raw[..name.len()].copy_from_slice(name.as_bytes());
            h.set_cksum();
            b.append(&h, *data).unwrap();
        }
        b.into_inner().unwrap()
    }

    fn gz(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn tar_entries_slice_without_copy() {
        let data = Bytes::from(make_tar(&[("0001.jpg", b"jpegdata"), ("0001.cls", b"7")]));
        let e = tar_entry("t.tar", &data, "0001.cls").unwrap();
        assert_eq!(&e[..], b"7");
        let base = data.as_ptr() as usize;
        assert!((e.as_ptr() as usize) >= base && (e.as_ptr() as usize) < base + data.len(), "entry must be a view");
        assert_eq!(tar_entry("t.tar", &data, "nope").unwrap_err().kind(), ErrorKind::NotFound);
        assert_eq!(tar_entry("t.tar", &data, "../x").unwrap_err().kind(), ErrorKind::InvalidArgument);
    }

    #[test]
    fn escaping_entries_are_refused() {
        let data = make_tar(&[("../../etc/passwd", b"x")]);
        let err = tar_entries("evil.tar", &data).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Corrupt);
        assert!(err.to_string().contains("escape"), "{err}");
    }

    #[test]
    fn truncated_tar_is_corrupt() {
        let mut data = make_tar(&[("a", &[1u8; 4000])]);
        data.truncate(1200);
        assert_eq!(tar_entries("t.tar", &data).unwrap_err().kind(), ErrorKind::Corrupt);
    }

    #[test]
    fn gunzip_round_trip_truncation_and_bomb_cap() {
        let payload = vec![42u8; 100_000];
        let z = gz(&payload);
        assert_eq!(&gunzip("a.gz", &z, DEFAULT_MAX_GUNZIP).unwrap()[..], &payload[..]);
        let err = gunzip("a.gz", &z[..z.len() / 2], DEFAULT_MAX_GUNZIP).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Corrupt);
        assert!(err.to_string().contains("truncated"), "{err}");
        let err = gunzip("a.gz", &z, 1000).unwrap_err();
        assert!(err.to_string().contains("more than 1000 bytes"), "{err}");
        assert_eq!(gunzip("a.gz", b"plain", 10).unwrap_err().kind(), ErrorKind::Corrupt);
    }
}
