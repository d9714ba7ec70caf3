//! The plugin kit's sources: `python -m dataio new-plugin --native` vendors
//! the `dataio-abi` crate this module was built with into the plugin it
//! writes, so the plugin builds anywhere (no path into this repository, no
//! registry release to match) against exactly the ABI it will be loaded by.

/// `(path, text)` of the `dataio-abi` crate's files, and of the workspace
/// manifest its `*.workspace = true` entries resolve against
/// (`"workspace/Cargo.toml"`).
#[pyo3::pyfunction]
pub fn abi_crate_sources() -> Vec<(&'static str, &'static str)> {
    vec![
        ("Cargo.toml", include_str!("../../../crates/dataio-abi/Cargo.toml")),
        ("src/lib.rs", include_str!("../../../crates/dataio-abi/src/lib.rs")),
        ("src/host.rs", include_str!("../../../crates/dataio-abi/src/host.rs")),
        ("src/http.rs", include_str!("../../../crates/dataio-abi/src/http.rs")),
        ("src/ops.rs", include_str!("../../../crates/dataio-abi/src/ops.rs")),
        ("src/ops/v2.rs", include_str!("../../../crates/dataio-abi/src/ops/v2.rs")),
        ("LICENSE", include_str!("../../../LICENSE")),
        ("workspace/Cargo.toml", include_str!("../../../Cargo.toml")),
    ]
}
