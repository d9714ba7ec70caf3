//! Borrowing the memory of any buffer-protocol object (bytes, bytearray,
//! memoryview, numpy arrays, mmap, torch CPU tensors through numpy) without
//! copying, so the GIL can be released while native code reads or fills it.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use std::mem::MaybeUninit;

/// A held `Py_buffer`; released (with the GIL) on drop.
pub struct HeldBuffer {
    view: Box<ffi::Py_buffer>,
}

// SAFETY: the exporter keeps the memory alive and in place while the view is
// held; we only touch the view's fields, and release it with the GIL held.
unsafe impl Send for HeldBuffer {}

impl HeldBuffer {
    fn get(obj: &Bound<'_, PyAny>, flags: i32) -> PyResult<Self> {
        let mut view: Box<MaybeUninit<ffi::Py_buffer>> = Box::new(MaybeUninit::uninit());
        // SAFETY: `view` is writable storage for a Py_buffer; on success the
        // exporter fills it and we own one reference to the view.
        let rc = unsafe { ffi::PyObject_GetBuffer(obj.as_ptr(), view.as_mut_ptr(), flags) };
        if rc != 0 {
            return Err(PyErr::fetch(obj.py()));
        }
        // SAFETY: initialized by a successful PyObject_GetBuffer.
        let view = unsafe { Box::from_raw(Box::into_raw(view) as *mut ffi::Py_buffer) };
        Ok(HeldBuffer { view })
    }

    pub fn len(&self) -> usize {
        self.view.len as usize
    }

    pub fn as_slice(&self) -> &[u8] {
        if self.view.len == 0 {
            return &[];
        }
        // SAFETY: a contiguous buffer of `len` bytes, valid while held.
        unsafe { std::slice::from_raw_parts(self.view.buf as *const u8, self.len()) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        if self.view.len == 0 {
            return &mut [];
        }
        // SAFETY: requested with PyBUF_WRITABLE, contiguous, valid while held.
        unsafe { std::slice::from_raw_parts_mut(self.view.buf as *mut u8, self.len()) }
    }
}

impl Drop for HeldBuffer {
    fn drop(&mut self) {
        // SAFETY: releasing the view we acquired, once, with the GIL.
        Python::attach(|_| unsafe { ffi::PyBuffer_Release(&mut *self.view) });
    }
}

pub struct ReadBuffer;

impl ReadBuffer {
    /// Any C-contiguous buffer, read-only access.
    pub fn get(obj: &Bound<'_, PyAny>) -> PyResult<HeldBuffer> {
        HeldBuffer::get(obj, ffi::PyBUF_C_CONTIGUOUS).map_err(|e| {
            if obj.is_instance_of::<pyo3::types::PyString>() {
                PyTypeError::new_err("expected bytes-like data, got str (encode it first)")
            } else {
                PyTypeError::new_err(format!("expected a contiguous bytes-like object, got {}: {e}", type_name(obj)))
            }
        })
    }
}

pub struct WriteBuffer;

impl WriteBuffer {
    /// A writable, C-contiguous buffer; read-only buffers get a clear error.
    pub fn get(obj: &Bound<'_, PyAny>) -> PyResult<HeldBuffer> {
        match HeldBuffer::get(obj, ffi::PyBUF_WRITABLE | ffi::PyBUF_C_CONTIGUOUS) {
            Ok(b) => Ok(b),
            Err(e) => {
                if HeldBuffer::get(obj, ffi::PyBUF_C_CONTIGUOUS).is_ok() {
                    Err(PyValueError::new_err(format!(
                        "the destination buffer ({}) is read-only; pass a writable one such as bytearray or a numpy array",
                        type_name(obj)
                    )))
                } else {
                    Err(PyTypeError::new_err(format!(
                        "expected a writable, contiguous buffer (bytearray, numpy array, mmap), got {}: {e}",
                        type_name(obj)
                    )))
                }
            }
        }
    }
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into())
}
