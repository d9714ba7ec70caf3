//! Refuses a JPEG decoder built without SIMD, which would otherwise happen
//! silently.
//!
//! mozjpeg-sys builds libjpeg-turbo's SIMD code with `nasm` on x86 and only
//! warns when nasm is missing (or 0.x): it then compiles the scalar
//! fallback, and every pipeline that decodes JPEG runs at about 0.6x its
//! speed. Its jconfig.h (found through `DEP_JPEG_INCLUDE`, mozjpeg-sys
//! being `links = "jpeg"`) says what was built; this script fails the build
//! when SIMD is off on an architecture that has it, naming what to install,
//! and passes the answer on as `DATAIO_JPEG_SIMD` for the capability report.
//! `DATAIO_ALLOW_NO_SIMD=1` builds anyway (the report then says "off" and
//! `import dataio` warns).
//!
//! Cargo caches mozjpeg-sys's build and never reruns it when nasm appears,
//! so the message says how to drop the cached build; and while SIMD is off
//! this script reruns on every build (it watches a nasm that does not exist
//! yet), so the check cannot go stale.

use std::env;
use std::fs;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-env-changed=DEP_JPEG_INCLUDE");
    println!("cargo:rerun-if-env-changed=DATAIO_ALLOW_NO_SIMD");
    let arch = env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let dirs: Vec<PathBuf> =
        env::var_os("DEP_JPEG_INCLUDE").map(|v| env::split_paths(&v).collect()).unwrap_or_default();
    let Some(jconfig) = dirs.iter().map(|d| d.join("jconfig.h")).find(|p| p.is_file()) else {
        println!("cargo:warning=dataio-engine: mozjpeg-sys did not say where its jconfig.h is; JPEG SIMD reported as unknown");
        println!("cargo:rustc-env=DATAIO_JPEG_SIMD=unknown");
        return;
    };
    println!("cargo:rerun-if-changed={}", jconfig.display());
    let text = fs::read_to_string(&jconfig).unwrap_or_default();
    let simd = text.lines().any(|l| l.split_whitespace().collect::<Vec<_>>() == ["#define", "WITH_SIMD", "1"]);
    println!("cargo:rustc-env=DATAIO_JPEG_SIMD={}", if simd { "on" } else { "off" });
    if simd || !matches!(arch.as_str(), "x86_64" | "x86" | "aarch64" | "arm") {
        return;
    }
    // Rerun on every build while SIMD is off: a path that does not exist
    // always counts as changed.
    println!("cargo:rerun-if-changed=/nonexistent/dataio-waits-for-nasm");
    let nasm_on_path = env::var_os("PATH").is_some_and(|p| env::split_paths(&p).any(|d| d.join("nasm").is_file()));
    let cause = if nasm_on_path {
        "nasm is installed now, but the cached mozjpeg-sys build predates it: run `cargo clean -p mozjpeg-sys` \
         (with the same --profile and CARGO_TARGET_DIR) and build again"
    } else {
        "install nasm 2.x (Debian/Ubuntu: `apt-get install nasm`; `python3 -m nox -s tests` installs it), then run \
         `cargo clean -p mozjpeg-sys` and build again"
    };
    let msg = format!(
        "libjpeg-turbo was built without SIMD ({} says no WITH_SIMD): JPEG decoding would run at about 0.6x speed. {cause}. \
         To build anyway, set DATAIO_ALLOW_NO_SIMD=1.",
        jconfig.display()
    );
    if env::var("DATAIO_ALLOW_NO_SIMD").is_ok_and(|v| v == "1") {
        println!("cargo:warning={msg}");
    } else {
        panic!("{msg}");
    }
}
