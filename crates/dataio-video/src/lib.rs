//! Video and audio decoding for the `dataio-video` plugin, on FFmpeg's
//! libraries, behind dataio's op ABI (`dataio_abi::ops`):
//!
//! * `decode_video` — a frame-exact clip, uint8 `[T, H, W, 3]`;
//! * `decode_audio` — a window of the first audio stream, float32 `[C, N]`;
//! * `video_info` — what a file holds, as JSON bytes (the `video_info` verb).
//!
//! Each reads its input by range through the core's reader (the op sets
//! `RANGED_INPUT`), keeps a per-file index ([`index`], on disk too:
//! [`store`]) and frees every
//! FFmpeg object it makes on every path ([`media`]).

pub mod audio;
pub mod clip;
pub mod index;
pub mod media;
pub mod ops;
pub mod store;

use dataio_abi::{status, AbiError};

/// What went wrong, with the ABI status it is reported as.
#[derive(Debug)]
pub struct Error {
    pub status: i32,
    pub message: String,
}

impl Error {
    pub fn corrupt(m: impl Into<String>) -> Error {
        Error { status: status::CORRUPT, message: m.into() }
    }
    pub fn invalid(m: impl Into<String>) -> Error {
        Error { status: status::INVALID_ARGUMENT, message: m.into() }
    }
    pub fn unsupported(m: impl Into<String>) -> Error {
        Error { status: status::UNSUPPORTED, message: m.into() }
    }
    pub fn out_of_range(m: impl Into<String>) -> Error {
        Error { status: status::OUT_OF_RANGE, message: m.into() }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<Error> for AbiError {
    fn from(e: Error) -> AbiError {
        AbiError::new(e.status, e.message)
    }
}

impl From<AbiError> for Error {
    fn from(e: AbiError) -> Error {
        Error { status: e.status, message: e.message }
    }
}

pub type Result<T> = std::result::Result<T, Error>;
