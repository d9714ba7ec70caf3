//! TFRecord framing (lengths, masked CRCs) and `tf.train.Example` parsing.
#![no_main]
mod common;
use dataio_engine::kernels::formats::tfrecord::{parse_example, split_records};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The first byte chooses whether CRCs are checked (with them, mutations
    // rarely get past the framing; without, the Example parser gets bytes).
    let Some((&flags, data)) = data.split_first() else { return };
    let check_crc = flags & 1 == 1;
    if let Some(records) = common::checked(split_records("fuzz.tfrecord", data, check_crc)) {
        for (i, &(off, len)) in records.iter().enumerate() {
            let end = off.checked_add(len).expect("record end overflows");
            assert!(end <= data.len(), "record {i} runs past the data");
            common::checked(parse_example("fuzz.tfrecord", i, &data[off..end]));
        }
    }
    // The Example parser on the raw bytes too.
    common::checked(parse_example("fuzz.tfrecord", 0, data));
});
