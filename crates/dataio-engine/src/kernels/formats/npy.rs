//! The `.npy` format (versions 1–3): header parsing with every size checked
//! against the buffer, C and Fortran order, the dtypes numpy writes for
//! plain numeric arrays. Small enough to own rather than depend on.

use crate::base::error::{Error, Result};
use crate::base::tensor::{AlignedBuf, DType, Tensor};
use std::sync::Arc;

const MAGIC: &[u8] = b"\x93NUMPY";
/// Headers larger than this are refused (numpy itself caps at 10 KB by default).
pub const MAX_HEADER: usize = 1 << 20;

#[derive(Debug, Clone, PartialEq)]
pub struct NpyHeader {
    pub dtype: DType,
    /// Little-endian on disk (`<`), big-endian (`>`), or single-byte (`|`).
    pub big_endian: bool,
    pub fortran: bool,
    pub shape: Vec<usize>,
    /// Offset of the data within the file.
    pub data_offset: usize,
}

fn bad(what: impl std::fmt::Display) -> Error {
    Error::decode("decode_npy", what)
}

fn parse_descr(descr: &str) -> Result<(DType, bool)> {
    // `split_at_checked`: the first character may be any UTF-8 (a damaged
    // header), and slicing inside it would panic (found by the npy fuzz target).
    let Some((order, code)) = descr.split_at_checked(1).filter(|(_, code)| !code.is_empty()) else {
        return Err(bad(format!("unsupported dtype descriptor {descr:?}")));
    };
    let big = order == ">";
    if !matches!(order, "<" | ">" | "|" | "=") {
        return Err(bad(format!("unsupported dtype descriptor {descr:?}")));
    }
    let dtype = match code {
        "u1" => DType::U8,
        "i1" => DType::I8,
        "b1" => DType::Bool,
        "u2" => DType::U16,
        "i2" => DType::I16,
        "u4" => DType::U32,
        "i4" => DType::I32,
        "u8" => DType::U64,
        "i8" => DType::I64,
        "f2" => DType::F16,
        "f4" => DType::F32,
        "f8" => DType::F64,
        _ => return Err(bad(format!("unsupported dtype {descr:?} (numeric and bool dtypes only)"))),
    };
    Ok((dtype, big))
}

/// Value of `'key': value` in numpy's header dict literal.
fn field<'a>(dict: &'a str, key: &str) -> Result<&'a str> {
    let pat = format!("'{key}':");
    let start = dict.find(&pat).ok_or_else(|| bad(format!("header has no {key:?}")))? + pat.len();
    let rest = dict[start..].trim_start();
    let end = if rest.starts_with('(') {
        rest.find(')').map(|i| i + 1)
    } else if let Some(quoted) = rest.strip_prefix('\'') {
        quoted.find('\'').map(|i| i + 2)
    } else {
        rest.find([',', '}'])
    };
    end.map(|e| rest[..e].trim()).ok_or_else(|| bad(format!("malformed {key:?} in header")))
}

pub fn parse_header(data: &[u8]) -> Result<NpyHeader> {
    if data.len() < 10 || &data[..6] != MAGIC {
        return Err(bad("not an .npy file (missing \\x93NUMPY magic)"));
    }
    let major = data[6];
    let (len, start): (usize, usize) = match major {
        1 => (u16::from_le_bytes([data[8], data[9]]) as usize, 10),
        2 | 3 => {
            if data.len() < 12 {
                return Err(bad("truncated header"));
            }
            (u32::from_le_bytes([data[8], data[9], data[10], data[11]]) as usize, 12)
        }
        v => return Err(bad(format!("unsupported .npy version {v}"))),
    };
    if len > MAX_HEADER {
        return Err(bad(format!("header of {len} bytes is larger than the {MAX_HEADER}-byte limit")));
    }
    let end = start.checked_add(len).filter(|&e| e <= data.len()).ok_or_else(|| bad("truncated header"))?;
    let dict = std::str::from_utf8(&data[start..end]).map_err(|_| bad("header is not text"))?;
    let descr = field(dict, "descr")?.trim_matches('\'');
    let (dtype, big_endian) = parse_descr(descr)?;
    let fortran = match field(dict, "fortran_order")? {
        "True" => true,
        "False" => false,
        other => return Err(bad(format!("fortran_order is {other:?}"))),
    };
    let shape_txt = field(dict, "shape")?.trim_start_matches('(').trim_end_matches(')');
    let shape = shape_txt
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.trim_end_matches('L').parse::<usize>().map_err(|_| bad(format!("bad dimension {s:?} in shape"))))
        .collect::<Result<Vec<_>>>()?;
    Ok(NpyHeader { dtype, big_endian, fortran, shape, data_offset: end })
}

/// Decodes a whole `.npy` payload into a C-ordered, native-endian tensor.
pub fn decode(data: &[u8]) -> Result<Tensor> {
    let h = parse_header(data)?;
    let numel = h.shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d)).ok_or_else(|| bad("shape overflows"))?;
    let size = h.dtype.size();
    let nbytes = numel.checked_mul(size).ok_or_else(|| bad("shape overflows"))?;
    let payload = data.get(h.data_offset..).unwrap_or(&[]);
    if payload.len() < nbytes {
        return Err(bad(format!("truncated data: the header promises {nbytes} bytes, {} are present", payload.len())));
    }
    let payload = &payload[..nbytes];
    let buf = AlignedBuf::new(nbytes, false);
    // SAFETY: a fresh buffer we own exclusively.
    let out = unsafe { buf.slice_mut(0, nbytes) };
    let swap = h.big_endian != cfg!(target_endian = "big") && size > 1;
    if h.fortran && h.shape.len() > 1 {
        // Fortran order: element at multi-index i is at sum(i_k * fstride_k).
        let nd = h.shape.len();
        let mut fstride = vec![1usize; nd];
        for k in 1..nd {
            fstride[k] = fstride[k - 1] * h.shape[k - 1];
        }
        let mut idx = vec![0usize; nd];
        for c_pos in 0..numel {
            let f_pos: usize = idx.iter().zip(&fstride).map(|(i, s)| i * s).sum();
            out[c_pos * size..(c_pos + 1) * size].copy_from_slice(&payload[f_pos * size..(f_pos + 1) * size]);
            for k in (0..nd).rev() {
                idx[k] += 1;
                if idx[k] < h.shape[k] {
                    break;
                }
                idx[k] = 0;
            }
        }
    } else {
        out.copy_from_slice(payload);
    }
    if swap {
        for chunk in out.chunks_exact_mut(size) {
            chunk.reverse();
        }
    }
    Ok(Tensor { dtype: h.dtype, shape: h.shape, buf: Arc::new(buf), offset: 0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn npy(descr: &str, fortran: bool, shape: &str, payload: &[u8]) -> Vec<u8> {
        let dict = format!(
            "{{'descr': '{descr}', 'fortran_order': {}, 'shape': {shape}, }}",
            if fortran { "True" } else { "False" }
        );
        let mut header = dict.into_bytes();
        while (10 + header.len() + 1) % 64 != 0 {
            header.push(b' ');
        }
        header.push(b'\n');
        let mut out = MAGIC.to_vec();
        out.extend([1, 0]);
        out.extend((header.len() as u16).to_le_bytes());
        out.extend(header);
        out.extend(payload);
        out
    }

    #[test]
    fn c_and_fortran_order() {
        let vals: Vec<u8> = [1i16, 2, 3, 4, 5, 6].iter().flat_map(|v| v.to_le_bytes()).collect();
        let t = decode(&npy("<i2", false, "(2, 3)", &vals)).unwrap();
        assert_eq!(t.shape, vec![2, 3]);
        // Fortran: columns first: data [1,2,3,4,5,6] is [[1,3,5],[2,4,6]]
        let f = decode(&npy("<i2", true, "(2, 3)", &vals)).unwrap();
        let got: Vec<i16> = f.bytes().chunks(2).map(|c| i16::from_ne_bytes([c[0], c[1]])).collect();
        assert_eq!(got, vec![1, 3, 5, 2, 4, 6]);
        let s = decode(&npy("<f8", false, "()", &2.5f64.to_le_bytes())).unwrap();
        assert!(s.shape.is_empty());
    }

    #[test]
    fn big_endian_is_swapped() {
        let t = decode(&npy(">i4", false, "(1,)", &7i32.to_be_bytes())).unwrap();
        assert_eq!(i32::from_ne_bytes(t.bytes().try_into().unwrap()), 7);
    }

    #[test]
    fn lies_and_truncation_are_errors() {
        assert!(decode(&npy("<f4", false, "(10,)", &[0u8; 8])).unwrap_err().to_string().contains("truncated"));
        assert!(decode(&npy("<c8", false, "(1,)", &[0u8; 8])).unwrap_err().to_string().contains("unsupported"));
        assert!(decode(b"\x93NUMPY\x01\x00\xff\xff{").unwrap_err().to_string().contains("truncated"));
        assert!(decode(b"garbage").is_err());
        assert!(decode(&npy("<f4", false, "(99999999999999, 99999999999)", &[])).is_err());
    }

    #[test]
    fn a_descriptor_starting_with_a_multibyte_character_is_an_error() {
        // Found by the npy fuzz target: slicing inside 'ĝ' panicked.
        for descr in ["\u{11d}1", "\u{11d}", "é", "<"] {
            let e = decode(&npy(descr, false, "(1,)", &[0u8; 8])).unwrap_err().to_string();
            assert!(e.contains("unsupported dtype"), "{descr}: {e}");
        }
    }
}
