//! Python objects the engine's threads hold and let go of without the GIL
//! (a record's `bytes`, its `context=` value), released fork-safely.
//!
//! pyo3 queues a `Py<T>` dropped off the GIL under a mutex of its own and
//! takes that mutex again on every entry from Python. A worker dropping a
//! record's bytes holds it for an instant per sample; a `fork()` in that
//! instant (a torch DataLoader worker, a script forking beside a running
//! loader) leaves it locked forever in the child, whose first call into
//! dataio then hangs (seen once in CI, in the fork test of
//! tests/test_lifecycle.py). These handles queue their releases here
//! instead, under a lock that `fork()` waits out and hands to the child
//! unlocked (`pthread_atfork`); the queue is drained by the loader with the
//! GIL held, once per batch.

use pyo3::prelude::*;
use pyo3::{ffi, Py, PyAny};
use std::cell::UnsafeCell;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

/// Object pointers waiting for a decref, behind a spin lock (a futex-based
/// mutex cannot be handed to a child in a known state).
struct Pending {
    busy: AtomicBool,
    objects: UnsafeCell<Vec<usize>>,
}

// SAFETY: `objects` is only touched between `lock` and `unlock`.
unsafe impl Sync for Pending {}

unsafe extern "C" {
    /// CPython's "does this thread hold the GIL" (in every CPython 3; not
    /// in pyo3's limited-API bindings).
    fn PyGILState_Check() -> std::ffi::c_int;
}

static PENDING: Pending = Pending { busy: AtomicBool::new(false), objects: UnsafeCell::new(Vec::new()) };
static ATFORK: Once = Once::new();

fn lock() {
    while PENDING.busy.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
        std::thread::yield_now();
    }
}

fn unlock() {
    PENDING.busy.store(false, Ordering::Release);
}

/// Runs in the forking thread before `fork()`: waits out a push in
/// progress and holds the lock through the fork.
extern "C" fn before_fork() {
    lock();
}

/// Runs in the parent and in the child after `fork()`: the lock is free on
/// both sides, the queue whole (its objects exist in the child's copy too).
extern "C" fn after_fork() {
    unlock();
}

/// Registers the fork handlers (once per process; call with the GIL held,
/// before any handle exists).
pub fn install() {
    ATFORK.call_once(|| {
        // SAFETY: plain extern "C" functions with no captured state.
        unsafe { libc::pthread_atfork(Some(before_fork), Some(after_fork), Some(after_fork)) };
    });
}

/// Decrefs every queued object. The caller holds the GIL.
pub fn drain(_py: Python<'_>) {
    lock();
    // SAFETY: under the lock.
    let objects = std::mem::take(unsafe { &mut *PENDING.objects.get() });
    unlock();
    for p in objects {
        // SAFETY: each pointer was an owned reference handed to the queue once.
        unsafe { ffi::Py_DECREF(p as *mut ffi::PyObject) };
    }
}

/// An owned reference to a Python object that may be dropped on any thread.
pub struct PyHandle(NonNull<ffi::PyObject>);

// SAFETY: the object is only read with the GIL held (`bind`), and released
// through the queue above when dropped without it.
unsafe impl Send for PyHandle {}
// SAFETY: as for `Send`.
unsafe impl Sync for PyHandle {}

impl PyHandle {
    pub fn new<T>(obj: Py<T>) -> Self {
        install();
        // SAFETY: `into_ptr` hands over the owned reference, never null.
        PyHandle(unsafe { NonNull::new_unchecked(obj.into_ptr()) })
    }

    /// A new strong reference, for Python.
    pub fn clone_ref(&self, py: Python<'_>) -> Py<PyAny> {
        // SAFETY: we own a reference, so the object is alive; the GIL is held.
        unsafe { Bound::from_borrowed_ptr(py, self.0.as_ptr()) }.unbind()
    }
}

impl Drop for PyHandle {
    fn drop(&mut self) {
        // SAFETY: asks the interpreter whether this thread holds the GIL.
        if unsafe { PyGILState_Check() } == 1 {
            // SAFETY: the GIL is held and the reference is ours.
            unsafe { ffi::Py_DECREF(self.0.as_ptr()) };
            return;
        }
        lock();
        // SAFETY: under the lock.
        unsafe { (*PENDING.objects.get()).push(self.0.as_ptr() as usize) };
        unlock();
    }
}
