//! Process-wide worker pools: one CPU pool (rayon) for decode and transform,
//! one IO runtime (tokio) for fetches. Created on first use, sized by
//! environment variables, and rebuilt in a child after `fork` (the parent's
//! threads do not exist there).
//!
//! * `DATAIO_CPU_THREADS` — CPU pool size (default: the CPUs this process may use).
//! * `DATAIO_IO_THREADS`  — IO runtime worker threads (default: max(2, min(8, CPUs))).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once};

pub struct Pools {
    pub cpu: rayon::ThreadPool,
    pub io: tokio::runtime::Runtime,
    pub cpu_threads: usize,
    pub io_threads: usize,
    generation: u64,
}

static FORK_GENERATION: AtomicU64 = AtomicU64::new(0);
static POOLS: Mutex<Option<Arc<Pools>>> = Mutex::new(None);
static ATFORK: Once = Once::new();

extern "C" fn after_fork_in_child() {
    FORK_GENERATION.fetch_add(1, Ordering::SeqCst);
}

fn env_threads(name: &str, default: usize) -> usize {
    match std::env::var(name) {
        Ok(v) => match v.trim().parse::<usize>() {
            Ok(n) if n > 0 => n,
            _ => default,
        },
        Err(_) => default,
    }
}

pub fn available_cpus() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// The sizes the pools have, or will have when first used.
pub fn configured_sizes() -> (usize, usize) {
    let cpus = available_cpus();
    (env_threads("DATAIO_CPU_THREADS", cpus), env_threads("DATAIO_IO_THREADS", cpus.clamp(2, 8)))
}

/// The pools of this process, creating them on first use (or first use after a fork).
pub fn get() -> Arc<Pools> {
    ATFORK.call_once(|| {
        // SAFETY: registering a plain extern "C" function with no captured
        // state; the handler only touches an atomic, which is async-signal-safe.
        unsafe {
            libc::pthread_atfork(None, None, Some(after_fork_in_child));
        }
    });
    let generation = FORK_GENERATION.load(Ordering::SeqCst);
    let mut guard = match POOLS.lock() {
        Ok(g) => g,
        // A child forked while another thread held the lock: the mutex state is
        // stale but the data is only a cache; take it.
        Err(poisoned) => poisoned.into_inner(),
    };
    if let Some(p) = guard.as_ref() {
        if p.generation == generation {
            return p.clone();
        }
        // Inherited from the parent: its threads are gone. Dropping would try
        // to join them, so leak the husk instead.
        if let Some(stale) = guard.take() {
            std::mem::forget(stale);
        }
    }
    let (cpu_threads, io_threads) = configured_sizes();
    let cpu = rayon::ThreadPoolBuilder::new()
        .num_threads(cpu_threads)
        .thread_name(|i| format!("dataio-cpu-{i}"))
        .build()
        .expect("dataio: cannot start the CPU pool");
    let io = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(io_threads)
        .thread_name("dataio-io")
        .enable_all()
        .build()
        .expect("dataio: cannot start the IO runtime");
    let pools = Arc::new(Pools { cpu, io, cpu_threads, io_threads, generation });
    *guard = Some(pools.clone());
    pools
}

/// Whether the pools have been started in this process.
pub fn started() -> bool {
    let generation = FORK_GENERATION.load(Ordering::SeqCst);
    matches!(POOLS.lock().ok().and_then(|g| g.as_ref().map(|p| p.generation)), Some(g) if g == generation)
}

/// Runs a future to completion on the IO runtime from a thread outside it.
pub fn block_on<F: std::future::Future>(fut: F) -> F::Output {
    get().io.block_on(fut)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The two tests both touch the process-wide generation; run them one at a time.
    static SERIAL: Mutex<()> = Mutex::new(());

    #[test]
    fn pools_are_shared_and_run_work() {
        let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
        let a = get();
        let b = get();
        assert!(Arc::ptr_eq(&a, &b));
        assert!(started());
        let sum: u64 = a.cpu.install(|| {
            use rayon::prelude::*;
            (0..1000u64).into_par_iter().sum()
        });
        assert_eq!(sum, 499500);
        assert_eq!(block_on(async { 41 + 1 }), 42);
    }

    #[test]
    fn a_fork_generation_change_rebuilds_the_pools() {
        let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
        let before = get();
        after_fork_in_child();
        let after = get();
        assert!(!Arc::ptr_eq(&before, &after));
        assert_eq!(block_on(async { 7 }), 7);
    }
}
