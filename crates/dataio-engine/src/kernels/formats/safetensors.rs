//! One tensor out of a safetensors file, for the `decode_safetensors` op.
//! Parsing and validation (header size, offsets, overlaps) are the
//! `safetensors` crate's, the reference implementation.

use crate::base::error::{Error, Result};
use crate::base::tensor::{DType, Tensor};

pub fn dtype_of(d: ::safetensors::Dtype) -> Result<DType> {
    use ::safetensors::Dtype as S;
    Ok(match d {
        S::BOOL => DType::Bool,
        S::U8 => DType::U8,
        S::I8 => DType::I8,
        S::I16 => DType::I16,
        S::U16 => DType::U16,
        S::F16 => DType::F16,
        S::BF16 => DType::BF16,
        S::I32 => DType::I32,
        S::U32 => DType::U32,
        S::F32 => DType::F32,
        S::F64 => DType::F64,
        S::I64 => DType::I64,
        S::U64 => DType::U64,
        S::F8_E4M3 => DType::F8E4M3,
        S::F8_E5M2 => DType::F8E5M2,
        other => return Err(Error::decode("decode_safetensors", format!("dtype {other:?} is not supported"))),
    })
}

/// Copies tensor `key` out of a whole safetensors file.
pub fn decode(data: &[u8], key: &str) -> Result<Tensor> {
    let st = ::safetensors::SafeTensors::deserialize(data)
        .map_err(|e| Error::decode("decode_safetensors", format!("invalid safetensors file: {e}")))?;
    let view = st.tensor(key).map_err(|_| {
        let mut names: Vec<String> = st.names().into_iter().map(|s| s.to_string()).collect();
        names.sort();
        names.truncate(8);
        Error::decode("decode_safetensors", format!("no tensor {key:?} in the file (it has {})", names.join(", ")))
    })?;
    Tensor::from_bytes(dtype_of(view.dtype())?, view.shape().to_vec(), view.data())
}
