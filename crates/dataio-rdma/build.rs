//! Compiles the C shim (csrc/fabric_shim.c) against libfabric's headers.
//!
//! The headers come from the distribution's development package
//! (`libfabric-dev` on Debian); `DATAIO_LIBFABRIC_INCLUDE` points elsewhere.
//! Without them the shim is built as a stub whose every call says so, and the
//! crate still builds: `dataio.rdma` then reports itself unavailable rather
//! than failing to install. The script reruns when the headers appear.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=csrc/fabric_shim.c");
    println!("cargo:rerun-if-changed=csrc/fabric_shim.h");
    println!("cargo:rerun-if-env-changed=DATAIO_LIBFABRIC_INCLUDE");

    let mut include_dirs: Vec<PathBuf> = Vec::new();
    if let Some(dir) = std::env::var_os("DATAIO_LIBFABRIC_INCLUDE") {
        include_dirs.push(dir.into());
    }
    include_dirs.push("/usr/include".into());
    include_dirs.push("/usr/local/include".into());
    let headers = include_dirs.iter().find(|d| d.join("rdma/fabric.h").is_file());

    let mut build = cc::Build::new();
    build.file("csrc/fabric_shim.c").include("csrc").warnings(true).flag_if_supported("-std=gnu11");
    match headers {
        Some(dir) => {
            println!("cargo:rerun-if-changed={}", dir.join("rdma/fabric.h").display());
            // The compiler searches /usr/include already; adding it with -I
            // would reorder the system search path.
            if dir != std::path::Path::new("/usr/include") {
                build.include(dir);
            }
        }
        None => {
            // Watch where the headers would appear: a path that does not
            // exist counts as changed, so this script reruns on every build
            // until libfabric-dev is installed, and the stub never outlives it.
            for dir in &include_dirs {
                println!("cargo:rerun-if-changed={}", dir.join("rdma/fabric.h").display());
            }
            println!("cargo:warning=libfabric headers (rdma/fabric.h) not found: building the RDMA shim as a stub; install libfabric-dev");
            build.define("DIO_NO_HEADERS", None);
            println!("cargo:rustc-cfg=dio_no_headers");
        }
    }
    println!("cargo:rustc-check-cfg=cfg(dio_no_headers)");
    build.compile("dataio_fabric_shim");
    // dlopen/dlvsym live in libc on glibc >= 2.34 and in libdl before.
    println!("cargo:rustc-link-lib=dl");
}
