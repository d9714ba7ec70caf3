//! The tar member table, WebDataset grouping (the shard index) and member
//! lookup.
#![no_main]
mod common;
use dataio_engine::runtime::shards::index::{Format, Samples, ShardIndex};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let uri = "fuzz.tar";
    let Some(index) = common::checked(ShardIndex::build(uri, Format::Tar, "size=0".into(), data, true)) else {
        return;
    };
    let Samples::Tar(samples) = &index.samples else { panic!("a tar index holds tar samples") };
    let bytes = bytes::Bytes::copy_from_slice(data);
    for s in samples.iter().take(16) {
        for (ext, off, len) in &s.members {
            let end = off.checked_add(*len).expect("member end overflows");
            assert!(end <= data.len() as u64, "member {}.{ext} runs past the data", s.key);
            let name = if ext.is_empty() { s.key.clone() } else { format!("{}.{ext}", s.key) };
            if let Some(found) = common::checked(dataio_engine::io::archive::tar_entry(uri, &bytes, &name)) {
                assert!(found.len() as u64 <= data.len() as u64);
            }
        }
    }
    // The index survives its own file format.
    let json = serde_json::to_vec(&index).unwrap();
    let back: ShardIndex = serde_json::from_slice(&json).unwrap();
    assert_eq!(back, index);
});
