//! CSV shards: the header and row table (`split_rows`, what a shard index
//! keeps), line numbers, and each row parsed into typed fields, as
//! `csv_records` does; and the index a shard's payload builds.
#![no_main]
mod common;
use dataio_engine::kernels::formats::csv::{line_number, parse_row, split_rows, CsvSpec};
use dataio_engine::runtime::shards::index::{Format, ShardIndex};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The first byte picks the delimiter and whether columns are typed.
    let Some((&pick, data)) = data.split_first() else { return };
    let delimiter = [b',', b';', b'\t', b'|'][(pick & 3) as usize];
    if let Some((header, rows)) = common::checked(split_rows("fuzz.csv", data, delimiter)) {
        let mut spec = CsvSpec { delimiter, ..Default::default() };
        if pick & 4 != 0 {
            let types = ["int", "float", "bool", "bytes", "str"];
            for (i, h) in header.iter().enumerate() {
                spec.columns.insert(h.clone(), dataio_engine::kernels::formats::csv::ColumnType::parse(types[i % 5]).unwrap());
            }
        }
        let mut last_end = 0u64;
        for &(off, len) in &rows {
            let end = off.checked_add(len).expect("row end overflows");
            assert!(end as usize <= data.len(), "a row runs past the data");
            assert!(off >= last_end, "rows overlap or go backwards");
            last_end = end;
            let n = line_number(data, off);
            if let Some(fields) = common::checked(parse_row("fuzz.csv", n, &header, &data[off as usize..end as usize], &spec)) {
                assert_eq!(fields.len(), header.len(), "a parsed row has another number of fields than the header");
            }
        }
    }
    let format = Format::Csv { delimiter };
    if let Some(index) = common::checked(ShardIndex::build("fuzz.csv", format, "size=0".into(), data, true)) {
        assert!(index.in_bounds(), "the index points outside its payload");
    }
});
