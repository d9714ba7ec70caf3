//! The JPEG completeness check (`jpeg::check_complete`), which decides
//! whether a file cut short is refused when a crop lets the decoder stop
//! early. Whatever it accepts must end at an end-of-image marker, be
//! accepted again without the bytes after it, and be refused one byte
//! shorter; and it never panics or reads out of bounds.
#![no_main]
use dataio_engine::kernels::image::jpeg::check_complete;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match check_complete(data) {
        Ok(end) => {
            assert!((4..=data.len()).contains(&end), "end {end} of {}", data.len());
            assert_eq!(&data[end - 2..end], &[0xFF, 0xD9], "ends at an end-of-image marker");
            assert_eq!(check_complete(&data[..end]), Ok(end), "the trailing bytes change nothing");
            assert!(check_complete(&data[..end - 1]).is_err(), "one byte shorter is refused");
        }
        Err(why) => assert!(!why.is_empty()),
    }
});
