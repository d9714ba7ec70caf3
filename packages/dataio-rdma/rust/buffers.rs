//! Borrowing a buffer-protocol object's memory (bytes, bytearray, memoryview,
//! numpy arrays, mmap) as raw bytes, whatever its item format, so the GIL can
//! be released while the fabric reads or fills it.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use std::mem::MaybeUninit;

/// A held `Py_buffer`, released (with the GIL) on drop. While it is held the
/// exporter keeps the memory in place (a bytearray cannot be resized).
pub struct Held {
    view: Box<ffi::Py_buffer>,
}

// SAFETY: the exporter keeps the memory alive and in place while the view is
// held; other threads only see the pointer and length, and the view is
// released with the GIL held.
unsafe impl Send for Held {}

impl Held {
    fn get(obj: &Bound<'_, PyAny>, flags: i32) -> PyResult<Held> {
        let mut view: Box<MaybeUninit<ffi::Py_buffer>> = Box::new(MaybeUninit::uninit());
        // SAFETY: writable storage for one Py_buffer; on success we own one
        // reference to the view.
        if unsafe { ffi::PyObject_GetBuffer(obj.as_ptr(), view.as_mut_ptr(), flags) } != 0 {
            return Err(PyErr::fetch(obj.py()));
        }
        // SAFETY: initialized by the successful call above.
        let view = unsafe { Box::from_raw(Box::into_raw(view).cast::<ffi::Py_buffer>()) };
        Ok(Held { view })
    }

    /// A C-contiguous buffer to read from.
    pub fn readable(obj: &Bound<'_, PyAny>) -> PyResult<Held> {
        Held::get(obj, ffi::PyBUF_C_CONTIGUOUS).map_err(|e| {
            if obj.is_instance_of::<pyo3::types::PyString>() {
                PyTypeError::new_err("expected bytes-like data, got str (encode it first)")
            } else {
                PyTypeError::new_err(format!("expected a contiguous bytes-like object, got {}: {e}", type_name(obj)))
            }
        })
    }

    /// A writable, C-contiguous buffer to fill.
    pub fn writable(obj: &Bound<'_, PyAny>) -> PyResult<Held> {
        Held::get(obj, ffi::PyBUF_WRITABLE | ffi::PyBUF_C_CONTIGUOUS).map_err(|e| {
            if Held::get(obj, ffi::PyBUF_C_CONTIGUOUS).is_ok() {
                PyValueError::new_err(format!(
                    "the destination ({}) is read-only; pass a writable buffer such as a bytearray or a numpy array",
                    type_name(obj)
                ))
            } else {
                PyTypeError::new_err(format!(
                    "expected a writable, contiguous buffer (bytearray, numpy array, mmap, torch tensor), got {}: {e}",
                    type_name(obj)
                ))
            }
        })
    }

    pub fn ptr(&self) -> *mut u8 {
        self.view.buf.cast()
    }

    pub fn len(&self) -> usize {
        self.view.len as usize
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        // SAFETY: releases the view we acquired, once, with the GIL.
        Python::attach(|_| unsafe { ffi::PyBuffer_Release(&mut *self.view) });
    }
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into())
}
