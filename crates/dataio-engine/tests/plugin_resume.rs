//! A native plugin op's pooled outputs through a resumed epoch, in a loop:
//! the path of issue 43's heap corruption (a decoder's output buffer taken
//! from the engine's pool across the op ABI, resized by the engine, the
//! epoch resumed mid-way in a new loader so the pool hands the buffers out
//! in another order). Every batch of every resumed run must equal the
//! uninterrupted run's, byte for byte. `nox -s tests` runs this file once
//! under valgrind memcheck too (`under_valgrind`, below): an uninitialised
//! read or a write past a buffer there fails it.

use dataio_abi::ops::{export_op, kind, Call, ExportOp, Output};
use dataio_abi::{status, AbiError};
use dataio_engine::plan::compile;
use dataio_engine::runtime::{native_ops, Loader, Next, Options, PlanOptions, Record, SlotValue, Value, VecSource};
use std::sync::{Arc, Once};
use std::time::Duration;

/// A decoder whose output size follows its input (`h`, `w` from the
/// bytes) and whose pixels follow the record's key draw (random per epoch,
/// like a clip): every byte of the pooled output written, none past it.
struct Frames;
impl ExportOp for Frames {
    fn name(&self) -> &str {
        "memtest_frames"
    }
    fn kind(&self) -> u32 {
        kind::DECODE
    }
    fn run(&self, call: &Call<'_>, out: &mut Output<'_>) -> Result<(), AbiError> {
        let [h, w, t] = call.data[..] else { return Err(AbiError::new(status::CORRUPT, "want 3 bytes")) };
        let (h, w, t) = (h as u64, w as u64, t as u64);
        let dst = out.alloc("uint8", &[t, h, w, 3])?;
        let mut x = call.key.draw(0);
        for b in dst.iter_mut() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *b = (x >> 24) as u8;
        }
        Ok(())
    }
}

fn register() {
    static ONCE: Once = Once::new();
    // SAFETY: a fresh table from export_op, handed over once.
    ONCE.call_once(|| unsafe { native_ops::register("memtest_frames", true, export_op(Frames)).unwrap() });
}

fn under_valgrind() -> bool {
    std::env::var_os("DATAIO_UNDER_VALGRIND").is_some()
}

fn records(n: usize) -> Vec<Record> {
    // Sizes not multiples of 8 or of each other: rows of every length.
    (0..n)
        .map(|i| {
            let dims = [9 + (i * 7 % 23) as u8, 11 + (i * 5 % 29) as u8, 1 + (i % 3) as u8];
            Record::new(vec![
                ("key".into(), Value::Str(format!("r{i}"))),
                ("clip".into(), Value::Bytes(bytes::Bytes::copy_from_slice(&dims))),
                ("label".into(), Value::Int(i as i64)),
            ])
        })
        .collect()
}

const PLAN: &str = r#"{"version":1,"external_ops":["memtest_frames"],"slots":[
  {"name":"clip","ops":[{"op":"memtest_frames"}]},
  {"name":"frame","field":"clip","ops":[{"op":"memtest_frames"},{"op":"resize","params":{"h":13,"w":10}},{"op":"normalize","params":{"layout":"hwc"}}]},
  {"name":"label","ops":[{"op":"decode_bytes"}]}],
  "shape":{"kind":"batch","size":3,"prefetch":2}}"#;

/// Each batch as its keys and the bytes of its slots (loose rows too).
fn run(n: usize, epoch: u64, start: u64, concurrency: usize) -> Vec<(Vec<String>, Vec<u8>)> {
    let plan = Arc::new(compile(PLAN).unwrap());
    let opts = Options {
        plan: PlanOptions { seed: Some(7), epoch, start, ..Default::default() },
        concurrency,
        skip_errors: false,
        ..Default::default()
    };
    let mut loader = Loader::start(plan, Box::new(VecSource::new(records(n))), opts, None).unwrap();
    let mut out = Vec::new();
    loop {
        match loader.next(Duration::from_secs(120)).unwrap() {
            Next::Batch(b) => {
                let mut bytes = Vec::new();
                for (_, v) in &b.slots {
                    match v {
                        SlotValue::Stacked(t) => bytes.extend_from_slice(t.bytes()),
                        SlotValue::List(rows) => {
                            for t in rows.iter().flatten() {
                                bytes.extend_from_slice(t.bytes());
                            }
                        }
                    }
                }
                out.push((b.keys.clone(), bytes));
            }
            Next::End => return out,
            Next::Timeout => panic!("loader stalled"),
        }
    }
}

#[test]
fn a_resumed_plugin_op_epoch_equals_the_uninterrupted_one_in_a_loop() {
    register();
    let (n, rounds) = if under_valgrind() { (18, 3) } else { (40, 12) };
    let whole: Vec<_> = (0..2).map(|epoch| run(n, epoch, 0, 4)).collect();
    assert!(whole[0] != whole[1], "epochs draw differently");
    for round in 0..rounds {
        // Resume epoch 0 after `k` batches (a new loader, as a new process
        // would), then run epoch 1 whole: both equal the uninterrupted run's.
        let k = 1 + round % (whole[0].len() - 1);
        let concurrency = [1, 2, 5][round % 3];
        let resumed = run(n, 0, (k * 3) as u64, concurrency);
        assert_eq!(resumed, whole[0][k..], "round {round}: epoch 0 resumed after {k} batches");
        assert_eq!(run(n, 1, 0, concurrency), whole[1], "round {round}: the epoch after the resumed one");
    }
}

/// The test above under valgrind memcheck (when this binary is not already
/// running under it): an uninitialised read or a write outside a buffer
/// anywhere on that path fails the run. valgrind is installed by the
/// project (noxfile SYSTEM_PACKAGES), so its absence is a failure, not a skip.
#[test]
fn under_valgrind_memcheck() {
    if under_valgrind() {
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let supp = concat!(env!("CARGO_MANIFEST_DIR"), "/../valgrind.supp");
    let out = std::process::Command::new("valgrind")
        .args(["--quiet", "--error-exitcode=99", "--fair-sched=yes", &format!("--suppressions={supp}")])
        .arg(&exe)
        .args(["a_resumed_plugin_op_epoch_equals_the_uninterrupted_one_in_a_loop", "--exact", "--test-threads=1"])
        .env("DATAIO_UNDER_VALGRIND", "1")
        .output()
        .expect("valgrind is not installed (python3 -m nox -s system installs it)");
    assert!(
        out.status.success(),
        "valgrind found errors (exit {:?}):\n{}\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
