//! `DeliveryTracker`: the engine's resume-position rule
//! ([`dataio_engine::runtime::Delivery`]) for executors written in Python,
//! so that every executor computes the position the way the native loader
//! does.

use dataio_engine::runtime::Delivery;
use pyo3::prelude::*;
use std::sync::Mutex;

#[pyclass(module = "dataio._native", name = "DeliveryTracker", frozen)]
pub struct DeliveryTracker {
    inner: Mutex<Delivery>,
}

impl DeliveryTracker {
    fn with<T>(&self, f: impl FnOnce(&mut Delivery) -> T) -> T {
        f(&mut self.inner.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

#[pymethods]
impl DeliveryTracker {
    #[new]
    #[pyo3(signature = (start, first_seq = 0))]
    fn new(start: u64, first_seq: u64) -> Self {
        DeliveryTracker { inner: Mutex::new(Delivery::new(start, first_seq)) }
    }

    fn delivered(&self, seq: u64, end_position: u64) {
        self.with(|d| d.delivered(seq, end_position));
    }

    #[getter]
    fn position(&self) -> u64 {
        self.with(|d| d.position())
    }

    #[getter]
    fn ahead(&self) -> usize {
        self.with(|d| d.ahead())
    }

    /// End positions of the batches delivered past the prefix.
    #[getter]
    fn ahead_ends(&self) -> Vec<u64> {
        self.with(|d| d.ahead_ends())
    }

    #[getter]
    fn next_seq(&self) -> u64 {
        self.with(|d| d.next_seq())
    }

    fn __repr__(&self) -> String {
        self.with(|d| {
            format!("DeliveryTracker(position={}, next_seq={}, ahead={})", d.position(), d.next_seq(), d.ahead())
        })
    }
}
