//! Tensors leave the engine through DLPack: `torch.from_dlpack(t)` and
//! `numpy.from_dlpack(t)` wrap the engine's buffer without a copy. The
//! capsule's manager context holds a reference to the buffer; the consumer's
//! deleter drops it, and the buffer goes back to the pool when the last view
//! is gone.

use dataio_engine::base::tensor::{DType, Tensor};
use pyo3::exceptions::{PyBufferError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use std::ffi::{c_void, CStr};

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
struct DLTensor {
    data: *mut c_void,
    device: DLDevice,
    ndim: i32,
    dtype: DLDataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
struct DLManagedTensor {
    dl_tensor: DLTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

#[repr(C)]
struct DLPackVersion {
    major: u32,
    minor: u32,
}

#[repr(C)]
struct DLManagedTensorVersioned {
    version: DLPackVersion,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    flags: u64,
    dl_tensor: DLTensor,
}

const KDL_CPU: i32 = 1;
const DLTENSOR: &CStr = c"dltensor";
const USED_DLTENSOR: &CStr = c"used_dltensor";
const DLTENSOR_VERSIONED: &CStr = c"dltensor_versioned";
const USED_DLTENSOR_VERSIONED: &CStr = c"used_dltensor_versioned";

fn dl_dtype(d: DType) -> DLDataType {
    // Codes: 0 int, 1 uint, 2 float, 4 bfloat, 6 bool. float8 goes out as
    // uint8 (the Python layer views it with the right torch dtype).
    let (code, bits) = match d {
        DType::I8 => (0, 8),
        DType::I16 => (0, 16),
        DType::I32 => (0, 32),
        DType::I64 => (0, 64),
        DType::U8 | DType::F8E4M3 | DType::F8E5M2 => (1, 8),
        DType::U16 => (1, 16),
        DType::U32 => (1, 32),
        DType::U64 => (1, 64),
        DType::F16 => (2, 16),
        DType::F32 => (2, 32),
        DType::F64 => (2, 64),
        DType::BF16 => (4, 16),
        DType::Bool => (6, 8),
    };
    DLDataType { code, bits, lanes: 1 }
}

/// What a capsule's manager context owns.
struct Holder {
    _tensor: Tensor,
    shape: Vec<i64>,
    strides: Vec<i64>,
}

fn dl_tensor(t: &Tensor, holder: &mut Holder) -> DLTensor {
    DLTensor {
        // SAFETY: offset is within the buffer (Tensor invariant).
        data: unsafe { t.buf.as_mut_ptr().add(t.offset) } as *mut c_void,
        device: DLDevice { device_type: KDL_CPU, device_id: 0 },
        ndim: holder.shape.len() as i32,
        dtype: dl_dtype(t.dtype),
        shape: holder.shape.as_mut_ptr(),
        strides: holder.strides.as_mut_ptr(),
        byte_offset: 0,
    }
}

unsafe extern "C" fn delete_legacy(m: *mut DLManagedTensor) {
    if m.is_null() {
        return;
    }
    // SAFETY: `m` and its context were made by `legacy_capsule`, released once.
    unsafe {
        drop(Box::from_raw((*m).manager_ctx as *mut Holder));
        drop(Box::from_raw(m));
    }
}

unsafe extern "C" fn delete_versioned(m: *mut DLManagedTensorVersioned) {
    if m.is_null() {
        return;
    }
    // SAFETY: as above, for the versioned struct.
    unsafe {
        drop(Box::from_raw((*m).manager_ctx as *mut Holder));
        drop(Box::from_raw(m));
    }
}

/// Capsule destructor: if nobody consumed the capsule, free the tensor.
unsafe extern "C" fn capsule_destructor(capsule: *mut ffi::PyObject) {
    // SAFETY: called by Python with a live capsule; we only read its name
    // and pointer, and free what we allocated if it was never consumed.
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, DLTENSOR.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(capsule, DLTENSOR.as_ptr()) as *mut DLManagedTensor;
            delete_legacy(m);
        } else if ffi::PyCapsule_IsValid(capsule, DLTENSOR_VERSIONED.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(capsule, DLTENSOR_VERSIONED.as_ptr()) as *mut DLManagedTensorVersioned;
            delete_versioned(m);
        }
        // Consumed capsules are renamed used_*; their consumer owns the tensor.
        let _ = (USED_DLTENSOR, USED_DLTENSOR_VERSIONED);
    }
}

fn holder(t: &Tensor) -> Holder {
    Holder {
        _tensor: t.clone(),
        shape: t.shape.iter().map(|&d| d as i64).collect(),
        strides: t.strides().iter().map(|&s| s as i64).collect(),
    }
}

/// A tensor produced by the engine, exportable through DLPack and the
/// buffer protocol (flat bytes).
#[pyclass(module = "dataio._native", name = "Tensor", frozen)]
pub struct PyTensor {
    pub inner: Tensor,
}

#[pymethods]
impl PyTensor {
    #[getter]
    fn shape(&self) -> Vec<usize> {
        self.inner.shape.clone()
    }
    #[getter]
    fn dtype(&self) -> &'static str {
        self.inner.dtype.name()
    }
    #[getter]
    fn nbytes(&self) -> usize {
        self.inner.nbytes()
    }
    /// Address of the first element (for zero-copy checks).
    #[getter]
    fn data_ptr(&self) -> usize {
        self.inner.buf.as_ptr() as usize + self.inner.offset
    }

    fn __dlpack_device__(&self) -> (i32, i32) {
        (KDL_CPU, 0)
    }

    #[pyo3(signature = (*, stream=None, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__(
        &self,
        py: Python<'_>,
        stream: Option<Bound<'_, PyAny>>,
        max_version: Option<(u32, u32)>,
        dl_device: Option<(i32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<Py<PyAny>> {
        let _ = stream;
        if let Some((dev, _)) = dl_device {
            if dev != KDL_CPU {
                return Err(PyBufferError::new_err(
                    "dataio tensors live in host memory; move them to the device after import",
                ));
            }
        }
        if copy == Some(true) {
            return Err(PyValueError::new_err("dataio exports without copying; copy after import if you need one"));
        }
        let mut h = Box::new(holder(&self.inner));
        let dl = dl_tensor(&self.inner, &mut h);
        let ctx = Box::into_raw(h) as *mut c_void;
        let versioned = matches!(max_version, Some((major, _)) if major >= 1);
        // SAFETY: the capsules own boxed managed tensors whose deleters free
        // them; the names are static C strings.
        let cap = unsafe {
            if versioned {
                let m = Box::into_raw(Box::new(DLManagedTensorVersioned {
                    version: DLPackVersion { major: 1, minor: 0 },
                    manager_ctx: ctx,
                    deleter: Some(delete_versioned),
                    flags: 0,
                    dl_tensor: dl,
                }));
                ffi::PyCapsule_New(m as *mut c_void, DLTENSOR_VERSIONED.as_ptr(), Some(capsule_destructor))
            } else {
                let m = Box::into_raw(Box::new(DLManagedTensor {
                    dl_tensor: dl,
                    manager_ctx: ctx,
                    deleter: Some(delete_legacy),
                }));
                ffi::PyCapsule_New(m as *mut c_void, DLTENSOR.as_ptr(), Some(capsule_destructor))
            }
        };
        // SAFETY: a new reference or NULL with an exception set.
        unsafe { Bound::from_owned_ptr_or_err(py, cap) }.map(Bound::unbind)
    }

    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut ffi::Py_buffer,
        flags: std::os::raw::c_int,
    ) -> PyResult<()> {
        let t = &slf.get().inner;
        // SAFETY: the view references `slf`, which keeps the buffer alive.
        let rc = unsafe {
            ffi::PyBuffer_FillInfo(
                view,
                slf.as_ptr(),
                t.buf.as_mut_ptr().add(t.offset) as *mut c_void,
                t.nbytes() as isize,
                0,
                flags,
            )
        };
        if rc != 0 {
            return Err(PyErr::fetch(slf.py()));
        }
        Ok(())
    }

    unsafe fn __releasebuffer__(&self, _view: *mut ffi::Py_buffer) {}

    fn __repr__(&self) -> String {
        format!("<dataio tensor {} {:?}>", self.inner.dtype.name(), self.inner.shape)
    }
}

/// Live engine buffers (allocated and not yet freed or pooled): for leak tests.
#[pyfunction]
pub fn live_buffers() -> (u64, u64) {
    dataio_engine::base::tensor::live()
}

/// Lets go of the Python objects the workers released since the last
/// batch, frees the engine's pooled buffers and trims the allocator; returns
/// the pool's bytes freed (`dataio.release_memory`).
#[pyfunction]
pub fn release_memory(py: Python<'_>) -> usize {
    crate::handles::drain(py);
    py.detach(dataio_engine::base::tensor::release_memory)
}
