//! Times the JPEG path stage by stage on a folder of JPEGs (a dev aid).
use dataio_engine::kernels::image::jpeg;
use std::time::Instant;

/// This thread's CPU seconds: steadier than wall time on a shared machine.
fn cpu_seconds() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid out-pointer for clock_gettime.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

fn main() {
    let dir = std::env::args().nth(1).expect("folder");
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jpg"))
        .collect();
    paths.sort();
    paths.truncate(std::env::var("JT_FILES").ok().and_then(|v| v.parse().ok()).unwrap_or(200));
    let files: Vec<Vec<u8>> = paths.iter().map(|p| std::fs::read(p).unwrap()).collect();
    // JT_ONLY=<label> runs one pipeline stage only (for perf), JT_ROUNDS=n repeats it.
    let only = std::env::var("JT_ONLY").ok();
    let rounds: usize = std::env::var("JT_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(1);
    // Each scale with fancy chroma upsampling on and off, JT_ROUNDS times in
    // turns (this VM's speed drifts; compare within a round).
    for round in 0..rounds {
        for num in [8u32, 7, 6, 5, 4, 2] {
            for fancy in [true, false] {
                if only.is_some() {
                    break;
                }
                let c0 = cpu_seconds();
                for f in &files {
                    let _ = jpeg::decode(f, jpeg::Mode::Rgb, 1 << 30, |_| {
                        Ok(jpeg::DecodePlan { scale_num: num, roi: None, rgbx: false, fancy_upsampling: fancy })
                    })
                    .unwrap();
                }
                let us = (cpu_seconds() - c0) * 1e6 / files.len() as f64;
                println!("round {round} scale {num}/8 fancy={fancy}: {us:.0} us CPU per image");
            }
        }
    }
    if only.as_deref().is_none_or(|o| o == "check") {
        // The completeness walk every decode runs first (kernels::image::jpeg).
        let c0 = cpu_seconds();
        for _ in 0..rounds.max(20) {
            for f in &files {
                assert!(jpeg::check_complete(f).is_ok());
            }
        }
        let us = (cpu_seconds() - c0) * 1e6 / (files.len() * rounds.max(20)) as f64;
        let kb = files.iter().map(|f| f.len()).sum::<usize>() as f64 / files.len() as f64 / 1024.0;
        println!("check_complete: {us:.1} us CPU per image ({kb:.0} KiB average)");
    }
    use dataio_engine::runtime::slot::{run_slot, Dest, SampleKey, SlotInput};
    for (label, ops) in [
        ("decode", r#"{"op":"decode_image"}"#),
        ("+resize_short", r#"{"op":"decode_image"},{"op":"resize_short","params":{"size":256}}"#),
        (
            "+resize_short nodct",
            r#"{"op":"decode_image","params":{"dct_scaling":false}},{"op":"resize_short","params":{"size":256}}"#,
        ),
        (
            "+crop",
            r#"{"op":"decode_image"},{"op":"resize_short","params":{"size":256}},{"op":"center_crop","params":{"h":224,"w":224}}"#,
        ),
        (
            "+normalize",
            r#"{"op":"decode_image"},{"op":"resize_short","params":{"size":256}},{"op":"center_crop","params":{"h":224,"w":224}},{"op":"normalize"}"#,
        ),
    ] {
        if only.as_deref().is_some_and(|o| o != label) {
            continue;
        }
        let plan = dataio_engine::plan::compile(&format!(
            r#"{{"version":1,"slots":[{{"name":"image","ops":[{ops}]}}],"shape":{{"kind":"batch","size":1}}}}"#
        ))
        .unwrap();
        let slot = &plan.slots[0];
        let rec = dataio_engine::runtime::Record::default();
        let mut row = vec![0u32; 3 * 224 * 224];
        let t0 = Instant::now();
        let c0 = cpu_seconds();
        for f in files.iter().cycle().take(files.len() * rounds) {
            let key = SampleKey { seed: 0, epoch: 0, index: 0, slot: 0 };
            let shape = slot.static_shape.clone();
            let bytes_row: &mut [u8] =
                unsafe { std::slice::from_raw_parts_mut(row.as_mut_ptr() as *mut u8, row.len() * 4) };
            let dest = match (&shape, slot.dtype) {
                (Some(sh), Some(dt)) => Dest {
                    row: Some(&mut bytes_row[..sh.iter().product::<usize>() * dt.size()]),
                    expect_shape: Some(sh),
                },
                _ => Dest { row: None, expect_shape: None },
            };
            run_slot(slot, SlotInput::Data(bytes::Bytes::copy_from_slice(f)), &rec, key, None, dest).unwrap();
        }
        let n = (files.len() * rounds) as f64;
        println!(
            "{label}: {:.0}/s wall, {:.0} us CPU per image",
            n / t0.elapsed().as_secs_f64(),
            (cpu_seconds() - c0) * 1e6 / n
        );
    }
}

#[allow(dead_code)]
fn unused() {}
