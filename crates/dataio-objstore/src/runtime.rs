//! The plugin's own IO runtime: a multi-threaded tokio runtime created on
//! first use, and again in a forked child (whose copy of the parent's runtime
//! has no threads; it is leaked, never dropped, since its threads cannot be
//! joined).

use std::sync::Mutex;
use tokio::runtime::{Builder, Handle, Runtime};

struct Owned {
    pid: u32,
    runtime: Runtime,
}

static RUNTIME: Mutex<Option<Owned>> = Mutex::new(None);

/// Worker threads: `DATAIO_IO_THREADS` (as the core reads it), else the
/// usable CPUs clamped to 2..=8. Requests are IO-bound; a few threads keep
/// hundreds of them in flight.
fn threads() -> usize {
    std::env::var("DATAIO_IO_THREADS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2).clamp(2, 8))
}

/// A handle on this process's runtime.
pub fn handle() -> Handle {
    let pid = std::process::id();
    let mut guard = RUNTIME.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(owned) = guard.as_ref() {
        if owned.pid == pid {
            return owned.runtime.handle().clone();
        }
    }
    if let Some(stale) = guard.take() {
        // Inherited through fork: its worker threads do not exist here.
        std::mem::forget(stale);
    }
    let runtime = Builder::new_multi_thread()
        .worker_threads(threads())
        .thread_name("dataio-objstore")
        .enable_all()
        .build()
        .expect("cannot start the dataio-objstore IO runtime");
    let handle = runtime.handle().clone();
    *guard = Some(Owned { pid, runtime });
    handle
}

/// Runs `fut` on the runtime, detached.
pub fn spawn<F>(fut: F)
where
    F: std::future::Future<Output = ()> + Send + 'static,
{
    handle().spawn(fut);
}
