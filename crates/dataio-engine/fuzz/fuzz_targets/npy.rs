//! `.npy` header parsing and decoding (`decode_npy`).
#![no_main]
mod common;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Some(h) = common::checked(dataio_engine::kernels::formats::npy::parse_header(data)) {
        assert!(h.data_offset <= data.len());
    }
    if let Some(t) = common::checked(dataio_engine::kernels::formats::npy::decode(data)) {
        let numel: usize = t.shape.iter().product();
        assert_eq!(t.bytes().len(), numel * t.dtype.size());
    }
});
