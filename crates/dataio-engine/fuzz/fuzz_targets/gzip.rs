//! gzip (shards and archives): bounded output, typed errors.
#![no_main]
mod common;
use libfuzzer_sys::fuzz_target;

const LIMIT: u64 = 1 << 22;

fuzz_target!(|data: &[u8]| {
    if let Some(out) = common::checked(dataio_engine::io::archive::gunzip("fuzz.gz", data, LIMIT)) {
        assert!(out.len() as u64 <= LIMIT, "gunzip wrote past its limit");
    }
    // A gzip TFRecord shard goes through the same path, then the framing.
    if let Some(index) = common::checked(dataio_engine::runtime::shards::index::ShardIndex::build(
        "fuzz.tfrecord.gz",
        dataio_engine::runtime::shards::index::Format::TfRecord,
        "size=0".into(),
        data,
        false,
    )) {
        assert!(index.payload_len <= data.len() as u64);
    }
});
