//! Per-sample work on bytes already fetched: [`image`] decode and geometry,
//! and the record [`formats`] (npy, safetensors, TFRecord). Each kernel
//! implements a step the [`crate::plan`] declares; none knows about records,
//! batches, workers or storage.
//!
//! Depends on [`crate::base`] and [`crate::plan`] only.

pub mod formats;
pub mod image;
