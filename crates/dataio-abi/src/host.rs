//! What the engine and the native plugins share about this host's storage:
//! where dataio keeps things ([`cache_root`]), private directories and files
//! ([`private_dir`], [`is_private`]), whole-or-nothing writes
//! ([`write_atomic`]) and a stable hash for names and keys ([`fnv1a`]).
//!
//! One place, so that the shard cache, the shard index and the video index
//! resolve the same root, refuse the same foreign or group-writable
//! directories, and never leave half a file under its final name. Errors are
//! `std::io` errors; each caller says what the path was for.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// `$DATAIO_CACHE_DIR`, else `~/.cache/dataio`; None without a home.
pub fn cache_root() -> Option<PathBuf> {
    match std::env::var_os("DATAIO_CACHE_DIR") {
        Some(v) if !v.is_empty() => Some(PathBuf::from(v)),
        _ => Some(PathBuf::from(std::env::var_os("HOME")?).join(".cache").join("dataio")),
    }
}

/// This process's effective user id.
pub fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Whether `meta` is this user's and writable by no one else (what a
/// directory or file dataio trusts without asking the store must be).
pub fn is_private(meta: &fs::Metadata) -> bool {
    meta.uid() == euid() && meta.mode() & 0o022 == 0
}

/// Creates `dir` and any missing parent, readable by this user only
/// (0700); an existing one is left as it is. Returns its metadata, for the
/// caller's [`is_private`] check (a directory the user already has is never
/// `chmod`ed behind their back).
pub fn private_dir(dir: &Path) -> std::io::Result<fs::Metadata> {
    fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    let meta = fs::metadata(dir)?;
    if !meta.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotADirectory,
            format!("{} is not a directory", dir.display()),
        ));
    }
    Ok(meta)
}

/// Writes `data` to `path` whole or not at all: a temporary file (0600) in
/// the same directory, synced, then renamed over `path`; removed on failure.
pub fn write_atomic(path: &Path, data: &[u8]) -> std::io::Result<()> {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.{}.tmp", std::process::id(), SEQ.fetch_add(1, Ordering::Relaxed)));
    let done = (|| {
        let mut f = fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp)?;
        f.write_all(data)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if done.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    done
}

/// 64-bit FNV-1a of `bytes`: stable across builds and platforms (file
/// names, keyed streams); not for anything an attacker chooses to collide.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_is_the_reference_hash() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn private_dirs_and_atomic_writes() {
        let base = std::env::temp_dir().join(format!("dataio-abi-host-{}", std::process::id()));
        let dir = base.join("a/b");
        let meta = private_dir(&dir).unwrap();
        assert!(is_private(&meta) && meta.mode() & 0o777 == 0o700);
        let file = dir.join("x.json");
        write_atomic(&file, b"one").unwrap();
        write_atomic(&file, b"two").unwrap();
        assert_eq!(fs::read(&file).unwrap(), b"two");
        assert!(is_private(&fs::metadata(&file).unwrap()));
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1, "no temporary file left");
        assert!(write_atomic(&base.join("missing/x"), b"z").is_err());
        fs::remove_dir_all(&base).unwrap();
    }
}
