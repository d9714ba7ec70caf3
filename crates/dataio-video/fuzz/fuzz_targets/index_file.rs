//! Kept video indexes (`store::decode`): a file under the index directory
//! is read back by every later process, so its parser takes hostile bytes:
//! no panic, no allocation the bytes did not pay for, and what it accepts
//! is an index the clip code can use (frames in order, spans in the file).
#![no_main]

use dataio_video::store;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok((key, idx)) = store::decode(data) {
        if let Some(v) = &idx.video {
            assert!(v.frames.windows(2).all(|w| w[0].pts < w[1].pts));
            let last = v.by_decode.last().map_or(0, |e| e.0);
            if let Some((lo, hi)) = v.byte_span(0, last, idx.size) {
                assert!(lo <= hi && hi <= idx.size);
            }
        }
        // What is accepted encodes back to the same bytes.
        assert_eq!(store::encode(&key, &idx), data);
    }
});
