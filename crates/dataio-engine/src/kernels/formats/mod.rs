//! Sample formats the pipeline decodes: `.npy` payloads and safetensors files.

pub mod csv;
pub mod jsonl;
pub mod npy;
pub mod safetensors;
pub mod safetensors_header;
pub mod tfrecord;
