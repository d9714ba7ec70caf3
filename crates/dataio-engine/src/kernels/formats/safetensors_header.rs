//! A safetensors file's header, validated by the `safetensors` crate and
//! worded so an error names the tensor: what `dataio.formats.safetensors`
//! (through the binding) and the RDMA checkpoint reader place bytes by. The
//! crate decides what is valid; this module adds the file-level checks the
//! crate cannot make from the header alone (the data section's length) and
//! the words.

use super::safetensors::dtype_of;
use crate::base::error::{Error, Result};
use crate::base::tensor::DType;
use ::safetensors::tensor::{Dtype, TensorInfo};
use ::safetensors::{SafeTensorError, SafeTensors};
use serde_json::{Map, Value};

/// The safetensors name of each engine dtype a safetensors file can hold: the
/// inverse of the engine's `dtype_of` (a test checks the round trip).
fn safetensors_name(d: DType) -> Dtype {
    match d {
        DType::Bool => Dtype::BOOL,
        DType::U8 => Dtype::U8,
        DType::I8 => Dtype::I8,
        DType::I16 => Dtype::I16,
        DType::U16 => Dtype::U16,
        DType::F16 => Dtype::F16,
        DType::BF16 => Dtype::BF16,
        DType::I32 => Dtype::I32,
        DType::U32 => Dtype::U32,
        DType::F32 => Dtype::F32,
        DType::F64 => Dtype::F64,
        DType::I64 => Dtype::I64,
        DType::U64 => Dtype::U64,
        DType::F8E4M3 => Dtype::F8_E4M3,
        DType::F8E5M2 => Dtype::F8_E5M2,
    }
}

/// `(safetensors name, bytes per element, engine dtype name)` of every dtype
/// dataio reads and writes in safetensors files.
pub fn dtypes() -> Vec<(String, usize, &'static str)> {
    DType::ALL
        .iter()
        .filter_map(|&d| {
            let st = safetensors_name(d);
            (dtype_of(st).ok() == Some(d)).then(|| (st.to_string(), st.bitsize() / 8, d.name()))
        })
        .collect()
}

fn corrupt(uri: &str, detail: String) -> Error {
    Error::corrupt(uri, "safetensors file", detail)
}

/// The crate's header-size limit (private there), found by asking it: the
/// largest length its reader does not refuse as too large from the 8 length
/// bytes alone (a binary search of 64 probes, done once).
pub fn max_header() -> u64 {
    static MAX: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *MAX.get_or_init(|| {
        let too_large =
            |n: u64| matches!(SafeTensors::read_metadata(&n.to_le_bytes()), Err(SafeTensorError::HeaderTooLarge));
        let (mut fits, mut refused) = (0u64, u64::MAX);
        while refused - fits > 1 {
            let mid = fits + (refused - fits) / 2;
            if too_large(mid) {
                refused = mid;
            } else {
                fits = mid;
            }
        }
        fits
    })
}

/// The header's length from a file's first bytes, once the crate's limit and
/// the file's size allow it.
pub fn header_len(uri: &str, prefix: &[u8], file_size: u64) -> Result<u64> {
    let Some(first) = prefix.get(..8).filter(|_| file_size >= 8) else {
        return Err(corrupt(uri, format!("{file_size} bytes is too short for the 8-byte header length")));
    };
    let n = u64::from_le_bytes(first.try_into().expect("8 bytes"));
    if n > max_header() {
        return Err(corrupt(uri, format!("the header claims {n} bytes (limit {})", max_header())));
    }
    if n > file_size - 8 {
        let after = file_size - 8;
        return Err(corrupt(
            uri,
            format!("the header claims {n} bytes but the file has {after} after the length (truncated?)"),
        ));
    }
    Ok(n)
}

/// One tensor of a header, in header order.
pub type Entry = (String, String, Vec<usize>, usize, usize);

/// A validated header: (where the data section begins, its tensors in header
/// order, `__metadata__` in header order).
pub type Layout = (u64, Vec<Entry>, Vec<(String, String)>);

pub fn header_layout(uri: &str, prefix: &[u8], file_size: u64) -> Result<Layout> {
    let n = header_len(uri, prefix, file_size)?;
    let end = 8 + n as usize;
    let Some(header) = prefix.get(8..end) else {
        return Err(corrupt(uri, "the header is truncated".into()));
    };
    // The crate decides: JSON, dtypes, shapes against offsets, no gaps or
    // overlaps. `prefix` stops at the data section, which the crate reports as
    // an incomplete buffer; the section's length is checked below.
    match SafeTensors::read_metadata(&prefix[..end]) {
        Ok(_) | Err(SafeTensorError::MetadataIncompleteBuffer) => {}
        Err(e) => return Err(corrupt(uri, explain(header, &e))),
    }
    let fields: Map<String, Value> = serde_json::from_slice(header)
        .map_err(|e| corrupt(uri, format!("the header is not valid UTF-8 JSON ({e})")))?;
    let mut tensors = Vec::with_capacity(fields.len());
    let mut metadata = Vec::new();
    for (name, value) in fields {
        if name == "__metadata__" {
            if let Value::Object(meta) = value {
                metadata = meta.into_iter().map(|(k, v)| (k, v.as_str().unwrap_or_default().to_string())).collect();
            }
            continue;
        }
        let info: TensorInfo =
            serde_json::from_value(value).map_err(|e| corrupt(uri, format!("tensor '{name}': {e}")))?;
        if dtype_of(info.dtype).is_err() {
            return Err(corrupt(
                uri,
                format!("tensor '{name}': unknown dtype '{}' (dataio reads {})", info.dtype, supported()),
            ));
        }
        tensors.push((name, info.dtype.to_string(), info.shape, info.data_offsets.0, info.data_offsets.1));
    }
    let data_len = file_size - 8 - n;
    let last = tensors.iter().max_by_key(|t| t.4);
    let used = last.map_or(0, |t| t.4) as u64;
    if let Some((name, _, _, begin, end)) = last.filter(|_| used > data_len) {
        return Err(corrupt(
            uri,
            format!("tensor '{name}': bytes [{begin}, {end}) lie outside the data section ({data_len} bytes)"),
        ));
    }
    if used < data_len {
        return Err(corrupt(uri, format!("{} trailing bytes after the last tensor", data_len - used)));
    }
    Ok((8 + n, tensors, metadata))
}

fn supported() -> String {
    dtypes().into_iter().map(|(name, _, _)| name).collect::<Vec<_>>().join(", ")
}

/// Words what the crate refused so the message names the tensor: the crate's
/// own errors (`InvalidOffset`, `TensorInvalidInfo`, a serde error) say what
/// is wrong, not always where.
fn explain(header: &[u8], err: &SafeTensorError) -> String {
    let fallback = || match err {
        SafeTensorError::InvalidHeader(e) => format!("the header is not valid UTF-8 JSON ({e})"),
        SafeTensorError::InvalidHeaderDeserialization(e) => format!("the header is not valid UTF-8 JSON ({e})"),
        e => e.to_string(),
    };
    let Ok(Value::Object(fields)) = serde_json::from_slice::<Value>(header) else {
        return match serde_json::from_slice::<Value>(header) {
            Ok(_) => "the header is not a JSON object".into(),
            Err(_) => fallback(),
        };
    };
    let mut infos = Vec::new();
    for (name, value) in &fields {
        if name == "__metadata__" {
            if !(value.is_null() || value.as_object().is_some_and(|m| m.values().all(Value::is_string))) {
                return "__metadata__ must map strings to strings".into();
            }
            continue;
        }
        let Value::Object(entry) = value else {
            return format!("tensor '{name}': entry is not an object");
        };
        let field = |key: &str| entry.get(key).cloned().unwrap_or(Value::Null);
        if serde_json::from_value::<Dtype>(field("dtype")).is_err() {
            return format!("tensor '{name}': unknown dtype {} (dataio reads {})", field("dtype"), supported());
        }
        if serde_json::from_value::<Vec<usize>>(field("shape")).is_err() {
            return format!("tensor '{name}': shape must be a list of non-negative integers, got {}", field("shape"));
        }
        if serde_json::from_value::<(usize, usize)>(field("data_offsets")).is_err() {
            return format!("tensor '{name}': data_offsets must be [begin, end], got {}", field("data_offsets"));
        }
        match serde_json::from_value::<TensorInfo>(value.clone()) {
            Ok(info) => infos.push((name.as_str(), info)),
            Err(e) => return format!("tensor '{name}': {e}"),
        }
    }
    // The crate's order: by offsets.
    infos.sort_by_key(|(_, info)| info.data_offsets);
    let mut pos = 0;
    for (name, info) in &infos {
        let (begin, end) = info.data_offsets;
        if end < begin {
            return format!("tensor '{name}': data_offsets [{begin}, {end}] end before they begin");
        }
        if begin < pos {
            return format!("tensor '{name}' overlaps the previous tensor (bytes {begin} < {pos})");
        }
        if begin > pos {
            return format!("a gap of {} bytes before tensor '{name}'", begin - pos);
        }
        pos = end;
        let bits = info
            .shape
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d))
            .and_then(|c| c.checked_mul(info.dtype.bitsize()));
        match bits {
            None => return format!("tensor '{name}': shape {:?} of {} overflows", info.shape, info.dtype),
            Some(bits) if bits % 8 != 0 || bits / 8 != end - begin => {
                return format!(
                    "tensor '{name}': shape {:?} of {} needs {} bytes, the offsets give {}",
                    info.shape,
                    info.dtype,
                    bits.div_ceil(8),
                    end - begin
                );
            }
            Some(_) => {}
        }
    }
    fallback()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(header: &str, data: usize) -> Vec<u8> {
        let mut v = (header.len() as u64).to_le_bytes().to_vec();
        v.extend_from_slice(header.as_bytes());
        v.resize(v.len() + data, 0);
        v
    }

    #[test]
    fn a_valid_header_keeps_its_order_and_metadata() {
        let h = r#"{"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"__metadata__":{"k":"v"},"a":{"dtype":"U8","shape":[1],"data_offsets":[8,9]}}"#;
        let f = file(h, 9);
        let (offset, tensors, meta) = header_layout("mem://x", &f, f.len() as u64).unwrap();
        assert_eq!(offset, 8 + h.len() as u64);
        assert_eq!(tensors.iter().map(|t| t.0.as_str()).collect::<Vec<_>>(), ["b", "a"]);
        assert_eq!(meta, [("k".to_string(), "v".to_string())]);
    }

    #[test]
    fn errors_name_the_tensor_and_the_file() {
        let h = r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}"#;
        let f = file(h, 8);
        let msg = header_layout("mem://x", &f, f.len() as u64).unwrap_err().to_string();
        assert!(msg.contains("mem://x") && msg.contains("tensor 'b' overlaps"), "{msg}");
        let f = file(r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#, 12);
        let msg = header_layout("mem://x", &f, f.len() as u64).unwrap_err().to_string();
        assert!(msg.contains("4 trailing bytes"), "{msg}");
    }

    #[test]
    fn the_header_length_is_bounded_by_the_file_and_the_crate() {
        assert!(header_len("mem://x", &[1, 0, 0], 3).is_err());
        assert!(header_len("mem://x", &100u64.to_le_bytes(), 50).unwrap_err().to_string().contains("truncated"));
        assert_eq!(max_header(), 100_000_000);
        assert!(header_len("mem://x", &(max_header() + 1).to_le_bytes(), u64::MAX).is_err());
    }

    #[test]
    fn every_dtype_round_trips_through_the_engine() {
        let all = dtypes();
        assert_eq!(all.len(), DType::ALL.len());
        assert!(all.iter().any(|(name, size, engine)| name == "BF16" && *size == 2 && *engine == "bfloat16"));
    }
}
