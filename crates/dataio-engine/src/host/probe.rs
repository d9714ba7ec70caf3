//! Host capability probes for the capability report: CPU features, and the
//! optional native libraries found through dlopen (never linked).

/// Whether libjpeg-turbo was built with its SIMD code: `"on"`, `"off"`
/// (a build with `DATAIO_ALLOW_NO_SIMD=1` and no nasm) or `"unknown"`;
/// decided by `build.rs` from the built jconfig.h.
pub const JPEG_SIMD: &str = env!("DATAIO_JPEG_SIMD");

use std::path::{Path, PathBuf};

/// What a library probe found.
#[derive(Debug, Clone)]
pub struct LibraryProbe {
    pub name: String,
    pub found: bool,
    /// The file that loaded, when one did.
    pub path: Option<String>,
    pub version: Option<String>,
    /// Why nothing loaded, when nothing did.
    pub reason: Option<String>,
}

pub fn cpu_features() -> Vec<&'static str> {
    let mut out = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        macro_rules! probe {
            ($($f:tt),*) => { $( if std::arch::is_x86_feature_detected!($f) { out.push($f); } )* };
        }
        probe!("sse4.1", "sse4.2", "avx", "avx2", "fma", "bmi2", "f16c", "avx512f", "avx512bw", "avx512vl");
    }
    #[cfg(target_arch = "aarch64")]
    {
        macro_rules! probe {
            ($($f:tt),*) => { $( if std::arch::is_aarch64_feature_detected!($f) { out.push($f); } )* };
        }
        probe!("neon", "fp16", "sve", "sve2");
    }
    out
}

/// Tries each candidate file name, first in `extra_dirs`, then through the
/// dynamic loader's own search path. The library is unloaded again.
pub fn probe_library(name: &str, candidates: &[&str], extra_dirs: &[PathBuf]) -> LibraryProbe {
    let mut reasons = Vec::new();
    let mut attempts: Vec<PathBuf> = Vec::new();
    for dir in extra_dirs {
        for c in candidates {
            let p = dir.join(c);
            if p.exists() {
                attempts.push(p);
            }
        }
    }
    attempts.extend(candidates.iter().map(PathBuf::from));
    for path in attempts {
        // SAFETY: loading a system library runs its initializers; these are
        // well-known vendor libraries, loaded with the default flags.
        match unsafe { libloading::Library::new(&path) } {
            Ok(lib) => {
                let version = library_version(name, &lib);
                return LibraryProbe {
                    name: name.into(),
                    found: true,
                    path: Some(resolve_path(&path)),
                    version,
                    reason: None,
                };
            }
            Err(e) => reasons.push(e.to_string()),
        }
    }
    let reason = reasons.first().cloned().unwrap_or_else(|| "no candidates".into());
    LibraryProbe { name: name.into(), found: false, path: None, version: None, reason: Some(reason) }
}

fn resolve_path(p: &Path) -> String {
    p.display().to_string()
}

fn library_version(name: &str, lib: &libloading::Library) -> Option<String> {
    match name {
        "libfabric" => {
            // SAFETY: `fi_version` is a documented exported function taking no arguments.
            let f: libloading::Symbol<unsafe extern "C" fn() -> u32> = unsafe { lib.get(b"fi_version\0") }.ok()?;
            // SAFETY: `f` is `fi_version`, loaded from the library `lib` keeps mapped.
            let v = unsafe { f() };
            Some(format!("{}.{}", v >> 16, v & 0xffff))
        }
        "cuda-driver" => {
            // SAFETY: documented driver API: CUresult cuDriverGetVersion(int*).
            let f: libloading::Symbol<unsafe extern "C" fn(*mut i32) -> i32> =
                unsafe { lib.get(b"cuDriverGetVersion\0") }.ok()?;
            let mut v = 0i32;
            // SAFETY: `f` is cuDriverGetVersion; `v` is a live i32 it writes.
            if unsafe { f(&mut v) } != 0 {
                return None;
            }
            Some(format!("{}.{}", v / 1000, (v % 1000) / 10))
        }
        _ => None,
    }
}

/// The standard probes: CUDA driver and runtime, nvJPEG, cuFile, libfabric.
pub fn probe_all(extra_dirs: &[PathBuf]) -> Vec<LibraryProbe> {
    vec![
        probe_library("cuda-driver", &["libcuda.so.1", "libcuda.so"], extra_dirs),
        probe_library(
            "cuda-runtime",
            &["libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so"],
            extra_dirs,
        ),
        probe_library("nvjpeg", &["libnvjpeg.so.13", "libnvjpeg.so.12", "libnvjpeg.so.11", "libnvjpeg.so"], extra_dirs),
        probe_library("cufile", &["libcufile.so.0", "libcufile.so"], extra_dirs),
        probe_library("libfabric", &["libfabric.so.1", "libfabric.so"], extra_dirs),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_library_says_why() {
        let p = probe_library("nothing", &["libdefinitely-not-here.so.9"], &[]);
        assert!(!p.found);
        assert!(p.reason.unwrap().contains("libdefinitely-not-here"));
    }

    #[test]
    fn libc_is_found() {
        let p = probe_library("libc", &["libc.so.6"], &[]);
        assert!(p.found, "{:?}", p.reason);
    }
}
