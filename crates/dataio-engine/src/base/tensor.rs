//! Tensors as the engine sees them: a dtype, a shape and a view into an
//! aligned, reference-counted buffer. Batch buffers come from a pool and go
//! back to it when the last view (a Python tensor included) is dropped.

use crate::base::error::{Error, Result};
use std::alloc::{alloc, alloc_zeroed, dealloc, Layout};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

static LIVE_COUNT: AtomicU64 = AtomicU64::new(0);
static LIVE_BYTES: AtomicU64 = AtomicU64::new(0);

/// (buffers, bytes) handed out and not yet dropped; idle pooled buffers do
/// not count. For leak tests and the loader's stats.
pub fn live() -> (u64, u64) {
    (LIVE_COUNT.load(Ordering::Relaxed), LIVE_BYTES.load(Ordering::Relaxed))
}

fn track(len: usize, delta: i64) {
    if delta > 0 {
        LIVE_COUNT.fetch_add(1, Ordering::Relaxed);
        LIVE_BYTES.fetch_add(len as u64, Ordering::Relaxed);
    } else {
        LIVE_COUNT.fetch_sub(1, Ordering::Relaxed);
        LIVE_BYTES.fetch_sub(len as u64, Ordering::Relaxed);
    }
}

/// Element types, with the names numpy and torch use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    U8,
    I8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    F16,
    BF16,
    F32,
    F64,
    Bool,
    F8E4M3,
    F8E5M2,
}

impl DType {
    /// Every dtype, in the order the op table lists them.
    pub const ALL: [DType; 15] = [
        DType::U8,
        DType::I8,
        DType::I16,
        DType::U16,
        DType::I32,
        DType::U32,
        DType::I64,
        DType::U64,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
        DType::Bool,
        DType::F8E4M3,
        DType::F8E5M2,
    ];

    pub fn size(self) -> usize {
        match self {
            DType::U8 | DType::I8 | DType::Bool | DType::F8E4M3 | DType::F8E5M2 => 1,
            DType::I16 | DType::U16 | DType::F16 | DType::BF16 => 2,
            DType::I32 | DType::U32 | DType::F32 => 4,
            DType::I64 | DType::U64 | DType::F64 => 8,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            DType::U8 => "uint8",
            DType::I8 => "int8",
            DType::I16 => "int16",
            DType::U16 => "uint16",
            DType::I32 => "int32",
            DType::U32 => "uint32",
            DType::I64 => "int64",
            DType::U64 => "uint64",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::F32 => "float32",
            DType::F64 => "float64",
            DType::Bool => "bool",
            DType::F8E4M3 => "float8_e4m3fn",
            DType::F8E5M2 => "float8_e5m2",
        }
    }

    pub fn parse(name: &str) -> Result<Self> {
        Ok(match name {
            "uint8" | "u8" => DType::U8,
            "int8" | "i8" => DType::I8,
            "int16" | "i16" => DType::I16,
            "uint16" | "u16" => DType::U16,
            "int32" | "i32" => DType::I32,
            "uint32" | "u32" => DType::U32,
            "int64" | "i64" => DType::I64,
            "uint64" | "u64" => DType::U64,
            "float16" | "f16" | "half" => DType::F16,
            "bfloat16" | "bf16" => DType::BF16,
            "float32" | "f32" | "float" => DType::F32,
            "float64" | "f64" | "double" => DType::F64,
            "bool" => DType::Bool,
            "float8_e4m3fn" | "f8_e4m3" => DType::F8E4M3,
            "float8_e5m2" | "f8_e5m2" => DType::F8E5M2,
            other => return Err(Error::invalid(format!("unknown dtype {other:?}"))),
        })
    }
}

/// A 64-byte aligned heap buffer (SIMD kernels and DLPack consumers like it).
pub struct AlignedBuf {
    ptr: *mut u8,
    len: usize,
    pool: Option<usize>,
}

// SAFETY: AlignedBuf owns its allocation exclusively; writers coordinate
// through disjoint row ranges (see `exec::batch`), readers only read.
unsafe impl Send for AlignedBuf {}
// SAFETY: as for `Send` above: shared access only reads, or writes disjoint rows.
unsafe impl Sync for AlignedBuf {}

const ALIGN: usize = 64;

impl AlignedBuf {
    fn layout(len: usize) -> Layout {
        Layout::from_size_align(len.max(1), ALIGN).expect("buffer too large")
    }

    /// A fresh buffer; zeroed when `zero`.
    pub fn new(len: usize, zero: bool) -> Self {
        let layout = Self::layout(len);
        // SAFETY: non-zero size and valid alignment; null is handled below.
        let ptr = unsafe {
            if zero {
                alloc_zeroed(layout)
            } else {
                alloc(layout)
            }
        };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        track(len, 1);
        AlignedBuf { ptr, len, pool: None }
    }

    pub fn from_slice(data: &[u8]) -> Self {
        let b = AlignedBuf::new(data.len(), false);
        // SAFETY: fresh allocation of exactly data.len() bytes, no overlap.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), b.ptr, data.len()) };
        b
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn as_ptr(&self) -> *const u8 {
        self.ptr
    }

    pub fn as_mut_ptr(&self) -> *mut u8 {
        self.ptr
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `len` initialized-or-zeroed bytes owned by us. Buffers from
        // `new(_, false)` are fully written before they are read (batch rows,
        // decode outputs); see the callers.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// # Safety
    /// The caller must ensure no other live reference overlaps the range it writes.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn slice_mut(&self, start: usize, len: usize) -> &mut [u8] {
        assert!(start + len <= self.len, "slice out of bounds");
        // SAFETY: in bounds; exclusivity is the caller's promise.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(start), len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        track(self.len, -1);
        if let Some(class) = self.pool {
            if pool().give_back(class, self.ptr, self.len) {
                return;
            }
        }
        // SAFETY: allocated in `new` with the same layout.
        unsafe { dealloc(self.ptr, Self::layout(self.len)) };
    }
}

/// Recycles large buffers (batches, and the outputs of native plugin ops:
/// a decoded video clip is 44 MB at 720p): page-faulting a fresh 40 MB
/// buffer per batch costs more than the batch's normalize pass, and the
/// kernel's page clearing was 13% of a 720p clip pipeline's CPU. Up to
/// `per_class` free buffers per exact size and `MAX_POOLED_BYTES` in all
/// (a dataset of many video sizes must not keep one set per size).
pub struct BufferPool {
    free: Mutex<PoolState>,
    per_class: usize,
}

#[derive(Default)]
struct PoolState {
    lists: HashMap<usize, Vec<usize>>,
    held: usize,
}

/// The most bytes the pool keeps free.
pub const MAX_POOLED_BYTES: usize = 1 << 30;

fn pool() -> &'static BufferPool {
    static POOL: OnceLock<BufferPool> = OnceLock::new();
    POOL.get_or_init(|| BufferPool { free: Mutex::new(PoolState::default()), per_class: 16 })
}

impl BufferPool {
    fn give_back(&self, class: usize, ptr: *mut u8, len: usize) -> bool {
        debug_assert_eq!(class, len);
        let mut free = self.free.lock().unwrap();
        if free.held + len > MAX_POOLED_BYTES {
            return false;
        }
        let list = free.lists.entry(class).or_default();
        if list.len() >= self.per_class {
            return false;
        }
        list.push(ptr as usize);
        free.held += len;
        true
    }

    /// Frees every buffer kept free; returns the bytes given back.
    fn drain(&self) -> usize {
        let lists = {
            let mut free = self.free.lock().unwrap();
            free.held = 0;
            std::mem::take(&mut free.lists)
        };
        let mut bytes = 0;
        for (len, ptrs) in lists {
            for p in ptrs {
                // SAFETY: every pointer in the pool was allocated by
                // `AlignedBuf::new` with `len` bytes and is owned by the pool
                // alone (taken out of it under the lock above).
                unsafe { dealloc(p as *mut u8, AlignedBuf::layout(len)) };
                bytes += len;
            }
        }
        bytes
    }

    fn take(&self, len: usize) -> Option<*mut u8> {
        let mut free = self.free.lock().unwrap();
        let p = free.lists.get_mut(&len).and_then(|l| l.pop())?;
        free.held -= len;
        Some(p as *mut u8)
    }
}

/// Gives back to the system the memory kept for reuse: the pool's free
/// buffers, then what the allocator keeps of freed memory (`malloc_trim`).
/// Buffers in use (batches a consumer holds) are untouched. Returns the
/// pool's bytes freed.
pub fn release_memory() -> usize {
    let bytes = pool().drain();
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free heap memory to the system; it
    // touches no memory in use and is thread-safe in glibc.
    unsafe {
        libc::malloc_trim(0);
    }
    bytes
}

/// A pooled buffer of exactly `len` bytes; contents are unspecified.
pub fn pooled(len: usize) -> AlignedBuf {
    if len < (1 << 20) {
        return AlignedBuf::new(len, false);
    }
    match pool().take(len) {
        Some(ptr) => {
            track(len, 1);
            AlignedBuf { ptr, len, pool: Some(len) }
        }
        None => {
            let mut b = AlignedBuf::new(len, false);
            b.pool = Some(len);
            b
        }
    }
}

/// A tensor: C-contiguous data of `dtype` and `shape`, at `offset` in `buf`.
#[derive(Clone)]
pub struct Tensor {
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub buf: Arc<AlignedBuf>,
    pub offset: usize,
}

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tensor({}, {:?})", self.dtype.name(), self.shape)
    }
}

impl Tensor {
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    pub fn nbytes(&self) -> usize {
        self.numel() * self.dtype.size()
    }

    pub fn from_vec_u8(shape: Vec<usize>, data: &[u8]) -> Self {
        Tensor { dtype: DType::U8, shape, buf: Arc::new(AlignedBuf::from_slice(data)), offset: 0 }
    }

    pub fn from_bytes(dtype: DType, shape: Vec<usize>, data: &[u8]) -> Result<Self> {
        let n: usize = shape.iter().product::<usize>() * dtype.size();
        if n != data.len() {
            return Err(Error::invalid(format!(
                "{} bytes do not make a {} tensor of shape {shape:?}",
                data.len(),
                dtype.name()
            )));
        }
        Ok(Tensor { dtype, shape, buf: Arc::new(AlignedBuf::from_slice(data)), offset: 0 })
    }

    pub fn scalar_i64(v: i64) -> Self {
        Tensor::from_bytes(DType::I64, vec![], &v.to_ne_bytes()).expect("scalar")
    }

    pub fn scalar_f64(v: f64) -> Self {
        Tensor::from_bytes(DType::F64, vec![], &v.to_ne_bytes()).expect("scalar")
    }

    pub fn scalar_bool(v: bool) -> Self {
        Tensor::from_bytes(DType::Bool, vec![], &[v as u8]).expect("scalar")
    }

    pub fn bytes(&self) -> &[u8] {
        &self.buf.as_slice()[self.offset..self.offset + self.nbytes()]
    }

    /// Row-major strides in elements.
    pub fn strides(&self) -> Vec<usize> {
        let mut s = vec![1; self.shape.len()];
        for i in (0..self.shape.len().saturating_sub(1)).rev() {
            s[i] = s[i + 1] * self.shape[i + 1];
        }
        s
    }
}

/// Writes one value as `dtype` (numpy's astype semantics: truncation for ints).
pub fn write_scalar(dtype: DType, v: f64, out: &mut [u8]) {
    match dtype {
        DType::U8 => out[0] = v.clamp(0.0, 255.0) as u8,
        DType::I8 => out[0] = (v as i8) as u8,
        DType::Bool => out[0] = (v != 0.0) as u8,
        DType::I16 => out.copy_from_slice(&(v as i16).to_ne_bytes()),
        DType::U16 => out.copy_from_slice(&(v as u16).to_ne_bytes()),
        DType::I32 => out.copy_from_slice(&(v as i32).to_ne_bytes()),
        DType::U32 => out.copy_from_slice(&(v as u32).to_ne_bytes()),
        DType::I64 => out.copy_from_slice(&(v as i64).to_ne_bytes()),
        DType::U64 => out.copy_from_slice(&(v as u64).to_ne_bytes()),
        DType::F16 => out.copy_from_slice(&half::f16::from_f64(v).to_ne_bytes()),
        DType::BF16 => out.copy_from_slice(&half::bf16::from_f64(v).to_ne_bytes()),
        DType::F32 => out.copy_from_slice(&(v as f32).to_ne_bytes()),
        DType::F64 => out.copy_from_slice(&v.to_ne_bytes()),
        DType::F8E4M3 | DType::F8E5M2 => out[0] = 0,
    }
}

/// Reads one element of `dtype` as f64.
pub fn read_scalar(dtype: DType, b: &[u8]) -> f64 {
    match dtype {
        DType::U8 => b[0] as f64,
        DType::I8 => b[0] as i8 as f64,
        DType::Bool => (b[0] != 0) as u8 as f64,
        DType::I16 => i16::from_ne_bytes([b[0], b[1]]) as f64,
        DType::U16 => u16::from_ne_bytes([b[0], b[1]]) as f64,
        DType::I32 => i32::from_ne_bytes(b[..4].try_into().unwrap()) as f64,
        DType::U32 => u32::from_ne_bytes(b[..4].try_into().unwrap()) as f64,
        DType::I64 => i64::from_ne_bytes(b[..8].try_into().unwrap()) as f64,
        DType::U64 => u64::from_ne_bytes(b[..8].try_into().unwrap()) as f64,
        DType::F16 => half::f16::from_ne_bytes([b[0], b[1]]).to_f64(),
        DType::BF16 => half::bf16::from_ne_bytes([b[0], b[1]]).to_f64(),
        DType::F32 => f32::from_ne_bytes(b[..4].try_into().unwrap()) as f64,
        DType::F64 => f64::from_ne_bytes(b[..8].try_into().unwrap()),
        DType::F8E4M3 | DType::F8E5M2 => f64::NAN,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_aligned_and_recycled() {
        let len = 3 << 20;
        let a = pooled(len);
        assert_eq!(a.as_ptr() as usize % ALIGN, 0);
        let p = a.as_ptr() as usize;
        drop(a);
        let b = pooled(len);
        assert_eq!(b.as_ptr() as usize, p, "a dropped batch buffer is reused");
    }

    #[test]
    fn released_memory_leaves_the_pool_empty() {
        // A pool of its own: the tests beside this one return buffers to the
        // global pool at any moment (this test once saw 3 MiB arrive between
        // the release and its look at the global pool).
        let len = 5 << 20;
        let own = BufferPool { free: Mutex::new(PoolState::default()), per_class: 16 };
        // SAFETY: a buffer of the layout the pool frees it with.
        let ptr = unsafe { std::alloc::alloc(AlignedBuf::layout(len)) };
        assert!(!ptr.is_null() && own.give_back(len, ptr, len));
        assert_eq!(own.free.lock().unwrap().held, len);
        assert_eq!(own.drain(), len);
        assert_eq!(own.free.lock().unwrap().held, 0);
        assert!(own.take(len).is_none());
        // The global pool: a release frees what it keeps, and it works on after.
        drop(pooled(len));
        release_memory();
        let a = pooled(len);
        assert_eq!(a.len(), len);
    }

    #[test]
    fn tensors_know_their_layout() {
        let t = Tensor::from_bytes(DType::F32, vec![2, 3], &[0u8; 24]).unwrap();
        assert_eq!(t.strides(), vec![3, 1]);
        assert_eq!(t.nbytes(), 24);
        assert!(Tensor::from_bytes(DType::F32, vec![2, 3], &[0u8; 20]).is_err());
        assert_eq!(DType::parse("bfloat16").unwrap(), DType::BF16);
    }
}
