//! The vocabulary every layer speaks: the error type, the guard around
//! third-party code, tensors and their buffers, keyed randomness. Depends
//! on nothing else in the engine.

pub mod error;
pub mod guard;
pub mod rng;
pub mod tensor;
