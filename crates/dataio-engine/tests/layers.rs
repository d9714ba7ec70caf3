//! The engine's layers (see `src/lib.rs`): each folder under `src/` may use
//! only the layers listed before it, and the storage contract
//! (`io/backend.rs`) none of its implementations. A `crate::<layer>` path in
//! code (comments aside) that breaks this fails here, naming file and line.

use std::fs;
use std::path::{Path, PathBuf};

/// Bottom up: a layer may use itself and the layers before it, except that
/// `host` does not need `base` and `plan` does not need `io`/`host`.
const ALLOWED: &[(&str, &[&str])] = &[
    ("base", &["base"]),
    ("host", &["host"]),
    ("io", &["base", "host", "io"]),
    ("plan", &["base", "plan"]),
    ("order", &["base", "order"]),
    ("kernels", &["base", "plan", "kernels"]),
    ("runtime", &["base", "host", "io", "plan", "kernels", "order", "runtime"]),
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `(line number, layer)` of every `crate::<layer>` in code outside comments.
fn uses(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            found.push((i + 1, name));
        }
    }
    found
}

#[test]
fn each_layer_uses_only_the_layers_below_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut broken = Vec::new();
    let mut seen = 0;
    for file in &files {
        let rel = file.strip_prefix(&src).unwrap();
        let Some(layer) = rel.components().next().and_then(|c| c.as_os_str().to_str()) else { continue };
        let Some((_, allowed)) = ALLOWED.iter().find(|(l, _)| *l == layer) else {
            assert!(rel == Path::new("lib.rs"), "{} is in no layer: put it in one of the folders", rel.display());
            continue;
        };
        seen += 1;
        for (line, used) in uses(&fs::read_to_string(file).unwrap()) {
            let is_layer = ALLOWED.iter().any(|(l, _)| *l == used);
            if is_layer && !allowed.contains(&used.as_str()) {
                broken.push(format!("{}:{line}: {layer} uses crate::{used}", rel.display()));
            }
        }
    }
    assert!(seen > 30, "found only {seen} files under {}", src.display());
    assert!(broken.is_empty(), "layer rule broken:\n{}", broken.join("\n"));
}

#[test]
fn the_storage_contract_does_not_know_its_implementations() {
    let backend = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/io/backend.rs");
    let text = fs::read_to_string(backend).unwrap();
    for (line, _) in uses(&text) {
        let code = text.lines().nth(line - 1).unwrap();
        for module in ["io::local", "io::abi_backend", "io::registry", "io::testing"] {
            assert!(!code.contains(module), "io/backend.rs:{line} uses crate::{module}");
        }
    }
}
