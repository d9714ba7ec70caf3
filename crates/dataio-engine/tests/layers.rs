//! The engine's layers (see `src/lib.rs`): each folder under `src/` may use
//! only the layers listed before it, and the storage contract
//! (`io/backend.rs`) none of its implementations. A `crate::<layer>` path,
//! or a `super::` path that resolves into another layer, in code (comments
//! and `#[cfg(test)]` modules aside) that breaks this fails here, naming
//! file and line. And no two peer modules (neither inside the other) use
//! each other, by `crate::` or `super::` paths.

use std::collections::{BTreeMap, BTreeSet};
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

/// The engine's modules by path (`["runtime", "slot"]`), each with its file.
fn modules() -> BTreeMap<Vec<String>, PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files
        .into_iter()
        .map(|f| {
            let rel = f.strip_prefix(&src).unwrap().with_extension("");
            let mut parts: Vec<String> =
                rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
            if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
                parts.pop();
            }
            (parts, f)
        })
        .collect()
}

/// The code of a file: comments and the `#[cfg(test)]` module (its tail) cut.
fn code_of(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        if line.trim() == "#[cfg(test)]" {
            break;
        }
        out.push_str(line.split("//").next().unwrap_or(""));
        out.push('\n');
    }
    out
}

fn ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Every path a file's code names from `crate::` or `super::` as
/// `(line, supers, segments)`: `supers` is how many `super::` lead it (None
/// for `crate::`); `use super::{a::B, c}` gives one path per item.
fn relative_paths(code: &str) -> Vec<(usize, Option<usize>, Vec<String>)> {
    let mut out = Vec::new();
    for (i, line) in code.lines().enumerate() {
        let chars: Vec<char> = line.chars().collect();
        let mut at = 0;
        while at < chars.len() {
            let rest: String = chars[at..].iter().collect();
            let word_start = at == 0 || !(ident(chars[at - 1]) || chars[at - 1] == ':');
            let (supers, skip) = if word_start && rest.starts_with("crate::") {
                (None, "crate::".len())
            } else if word_start && rest.starts_with("super::") {
                let mut n = 0;
                let mut r = rest.as_str();
                while let Some(t) = r.strip_prefix("super::") {
                    n += 1;
                    r = t;
                }
                (Some(n), rest.len() - r.len())
            } else {
                at += 1;
                continue;
            };
            let tail = &rest[skip..];
            let items: Vec<String> = if let Some(group) = tail.strip_prefix('{') {
                let mut depth = 1;
                let end = group
                    .char_indices()
                    .find(|&(_, c)| {
                        depth += match c {
                            '{' => 1,
                            '}' => -1,
                            _ => 0,
                        };
                        depth == 0
                    })
                    .map_or(group.len(), |(j, _)| j);
                let mut items = Vec::new();
                let (mut depth, mut start) = (0, 0);
                for (j, c) in group[..end].char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => depth -= 1,
                        ',' if depth == 0 => {
                            items.push(group[start..j].trim().to_string());
                            start = j + 1;
                        }
                        _ => {}
                    }
                }
                items.push(group[start..end].trim().to_string());
                items
            } else {
                vec![tail.to_string()]
            };
            for item in items {
                let path: String = item.chars().take_while(|&c| ident(c) || c == ':').collect();
                let segs: Vec<String> = path.split("::").filter(|s| !s.is_empty()).map(str::to_string).collect();
                out.push((i + 1, supers, segs));
            }
            at += skip;
        }
    }
    out
}

/// `(line, module used)` for each path of `module`'s code that resolves into
/// another engine module (the longest module prefix of the resolved path).
fn module_uses(module: &[String], code: &str, all: &BTreeMap<Vec<String>, PathBuf>) -> Vec<(usize, Vec<String>)> {
    let mut out = Vec::new();
    for (line, supers, segs) in relative_paths(code) {
        let keep = match supers {
            None => 0,
            Some(n) if n <= module.len() => module.len() - n,
            Some(_) => continue,
        };
        let mut full: Vec<String> = module[..keep].to_vec();
        full.extend(segs);
        if let Some(k) = (0..=full.len()).rev().find(|&k| all.contains_key(&full[..k])) {
            let target = full[..k].to_vec();
            if target != module {
                out.push((line, target));
            }
        }
    }
    out
}

#[test]
fn the_path_reader_resolves_super_and_groups() {
    let all: BTreeMap<Vec<String>, PathBuf> =
        [vec![], vec!["a".into()], vec!["a".into(), "x".into()], vec!["a".into(), "y".into()], vec!["b".into()]]
            .into_iter()
            .map(|m: Vec<String>| (m, PathBuf::new()))
            .collect();
    let me = ["a".to_string(), "x".to_string()];
    let code = code_of("use super::{y::Thing, Other};\nlet v = super::super::b::f(); // super::z\nuse crate::a::y;\n#[cfg(test)]\nuse super::super::b;\n");
    let used: Vec<(usize, String)> =
        module_uses(&me, &code, &all).into_iter().map(|(l, m)| (l, m.join("::"))).collect();
    assert_eq!(used, [(1, "a::y".into()), (1, "a".into()), (2, "b".into()), (3, "a::y".into())]);
}

#[test]
fn no_two_peer_modules_use_each_other_and_super_paths_keep_the_layers() {
    let all = modules();
    let mut uses_of: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    let mut broken = Vec::new();
    for (module, file) in &all {
        if module.last().is_some_and(|m| m == "tests") {
            continue;
        }
        let code = code_of(&fs::read_to_string(file).unwrap());
        for (line, target) in module_uses(module, &code, &all) {
            // A super:: path into another layer obeys the layer rule too.
            if let (Some(from), Some(to)) = (module.first(), target.first()) {
                if let Some((_, allowed)) = ALLOWED.iter().find(|(l, _)| l == from) {
                    if ALLOWED.iter().any(|(l, _)| l == to) && !allowed.contains(&to.as_str()) {
                        broken.push(format!("{}:{line}: {from} uses {}", module.join("::"), target.join("::")));
                    }
                }
            }
            let nested = target.starts_with(module) || module.starts_with(&target);
            if !nested {
                uses_of.entry(module.clone()).or_default().insert(target);
            }
        }
    }
    assert!(uses_of.len() > 30, "found uses in only {} modules", uses_of.len());
    for (a, targets) in &uses_of {
        for b in targets {
            if a < b && uses_of.get(b).is_some_and(|t| t.contains(a)) {
                broken.push(format!("{} and {} use each other", a.join("::"), b.join("::")));
            }
        }
    }
    assert!(broken.is_empty(), "module rule broken:\n{}", broken.join("\n"));
}
