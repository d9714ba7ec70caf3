//! Kept index files (`$DATAIO_CACHE_DIR/index/*.json`, `*.count`): a damaged
//! or hostile file counts as no index, never as a wrong one that reads
//! outside a shard.
#![no_main]
mod common;
use dataio_engine::runtime::shards::index::{Format, IndexStore, Samples, ShardIndex};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

fn dir() -> &'static std::path::Path {
    static DIR: OnceLock<std::path::PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("dataio-fuzz-index-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    })
}

fuzz_target!(|data: &[u8]| {
    let store = IndexStore::new(dir());
    let identity = "size=512,etag=e";
    // Save a real index, then overwrite its files with the input.
    let idx = ShardIndex {
        format: Format::Tar,
        identity: identity.into(),
        payload_len: 512,
        samples: Samples::Tar(Vec::new()),
    };
    store.save("fuzz.tar", &idx).unwrap();
    for entry in std::fs::read_dir(dir()).unwrap() {
        std::fs::write(entry.unwrap().path(), data).unwrap();
    }
    if let Some(loaded) = store.load("fuzz.tar", Format::Tar, identity) {
        assert_eq!(loaded.identity, identity);
        assert_eq!(loaded.format, Format::Tar);
        assert!(loaded.in_bounds(), "a loaded index points outside its payload");
    }
    let _ = store.load_count("fuzz.tar", Format::Tar, identity);
});
