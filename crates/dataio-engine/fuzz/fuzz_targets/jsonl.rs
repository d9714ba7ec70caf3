//! JSON Lines shards: the line table (`split_lines`, what a shard index
//! keeps), line numbers, and each line parsed into a record's fields, as
//! `jsonl_records` does; and the index a shard's payload builds.
#![no_main]
mod common;
use dataio_engine::kernels::formats::jsonl::{line_number, parse_line, split_lines};
use dataio_engine::runtime::shards::index::{Format, ShardIndex};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Some(lines) = common::checked(split_lines("fuzz.jsonl", data)) {
        let mut last_end = 0u64;
        for &(off, len) in &lines {
            let end = off.checked_add(len).expect("line end overflows");
            assert!(end as usize <= data.len(), "a line runs past the data");
            assert!(off >= last_end, "lines overlap or go backwards");
            last_end = end;
            let text = &data[off as usize..end as usize];
            assert!(!text.contains(&b'\n'), "a line holds a newline");
            let n = line_number(data, off);
            common::checked(parse_line("fuzz.jsonl", n, text));
        }
    }
    if let Some(index) = common::checked(ShardIndex::build("fuzz.jsonl", Format::Jsonl, "size=0".into(), data, true)) {
        assert!(index.in_bounds(), "the index points outside its payload");
    }
});
