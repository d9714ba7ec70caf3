//! safetensors header and layout: the `safetensors` crate's parser as the
//! engine uses it (`decode_safetensors`), for the first tensor named in the
//! header and for a name that is not there; and the header check
//! `dataio.formats.safetensors` uses (`safetensors_header::header_layout`).
#![no_main]
mod common;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let names: Vec<String> = match safetensors::SafeTensors::deserialize(data) {
        Ok(st) => st.names().into_iter().take(4).map(str::to_string).collect(),
        Err(_) => Vec::new(),
    };
    // The header as dataio.formats.safetensors reads it: validated, or an
    // error; never a panic, and a valid layout lies inside the file.
    if let Some((offset, tensors, _)) = common::checked(
        dataio_engine::kernels::formats::safetensors_header::header_layout("fuzz://x", data, data.len() as u64),
    ) {
        for (name, _, _, _, end) in &tensors {
            assert!(offset + *end as u64 <= data.len() as u64, "tensor {name} ends past the file");
        }
    }
    for name in names.iter().map(String::as_str).chain(["no-such-tensor"]) {
        if let Some(t) = common::checked(dataio_engine::kernels::formats::safetensors::decode(data, name)) {
            let numel: usize = t.shape.iter().product();
            assert_eq!(t.bytes().len(), numel * t.dtype.size(), "tensor {name}: bytes and shape disagree");
        }
    }
});
