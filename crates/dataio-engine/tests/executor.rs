//! The executor end to end, without Python: records in, batches out.

use bytes::Bytes;
use dataio_engine::base::tensor::DType;
use dataio_engine::plan::compile;
use dataio_engine::runtime::{Loader, Next, Options, PlanOptions, Record, SlotValue, Value, VecSource};
use std::sync::Arc;
use std::time::Duration;

fn png(w: u32, h: u32, seed: u8) -> Bytes {
    let mut img = image::RgbImage::new(w, h);
    for (x, y, p) in img.enumerate_pixels_mut() {
        *p = image::Rgb([(x as u8).wrapping_mul(3).wrapping_add(seed), (y as u8).wrapping_mul(5), seed]);
    }
    let mut out = Vec::new();
    image::DynamicImage::ImageRgb8(img).write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png).unwrap();
    Bytes::from(out)
}

fn records(n: usize) -> Vec<Record> {
    (0..n)
        .map(|i| {
            Record::new(vec![
                ("key".into(), Value::Str(format!("r{i}"))),
                ("image".into(), Value::Bytes(png(40 + (i as u32 % 7) * 5, 30 + (i as u32 % 5) * 9, i as u8))),
                ("label".into(), Value::Int(i as i64)),
            ])
        })
        .collect()
}

const PLAN: &str = r#"{"version":1,"slots":[
  {"name":"image","ops":[{"op":"decode_image"},{"op":"resize_short","params":{"size":24}},
     {"op":"center_crop","params":{"h":16,"w":20}},{"op":"normalize"}]},
  {"name":"label","ops":[{"op":"decode_bytes"}]}],
  "shape":{"kind":"batch","size":4,"prefetch":2}}"#;

fn drain(loader: &mut Loader) -> Vec<dataio_engine::runtime::Batch> {
    let mut out = Vec::new();
    loop {
        match loader.next(Duration::from_secs(30)).unwrap() {
            Next::Batch(b) => out.push(b),
            Next::End => return out,
            Next::Timeout => panic!("loader stalled"),
        }
    }
}

#[test]
fn batches_come_in_order_with_static_tensors() {
    let plan = Arc::new(compile(PLAN).unwrap());
    let mut loader = Loader::start(
        plan,
        Box::new(VecSource::new(records(10))),
        Options { concurrency: 3, ..Default::default() },
        None,
    )
    .unwrap();
    let batches = drain(&mut loader);
    assert_eq!(batches.iter().map(|b| b.keys.len()).collect::<Vec<_>>(), vec![4, 4, 2]);
    assert_eq!(batches[1].keys, vec!["r4", "r5", "r6", "r7"]);
    match &batches[0].slots[0].1 {
        SlotValue::Stacked(t) => {
            assert_eq!(t.shape, vec![4, 3, 16, 20]);
            assert_eq!(t.dtype, DType::F32);
        }
        other => panic!("{other:?}"),
    }
    match &batches[2].slots[1].1 {
        SlotValue::Stacked(t) => {
            assert_eq!(t.shape, vec![2]);
            assert_eq!(t.dtype, DType::I64);
            assert_eq!(i64::from_ne_bytes(t.bytes()[8..16].try_into().unwrap()), 9);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn output_does_not_depend_on_concurrency_or_order() {
    let plan_json = PLAN.replace(r#"{"op":"normalize"}"#, r#"{"op":"hflip"},{"op":"normalize"}"#);
    let plan = Arc::new(compile(&plan_json).unwrap());
    let run = |concurrency, completion| {
        let opts = Options {
            concurrency,
            completion_order: completion,
            plan: PlanOptions { seed: Some(5), ..Default::default() },
            ..Default::default()
        };
        let mut l = Loader::start(plan.clone(), Box::new(VecSource::new(records(12))), opts, None).unwrap();
        let mut got: Vec<(String, Vec<u8>)> = Vec::new();
        for b in drain(&mut l) {
            if let SlotValue::Stacked(t) = &b.slots[0].1 {
                let per = t.nbytes() / b.keys.len();
                for (i, k) in b.keys.iter().enumerate() {
                    got.push((k.clone(), t.bytes()[i * per..(i + 1) * per].to_vec()));
                }
            }
        }
        got.sort();
        got
    };
    let a = run(1, false);
    assert_eq!(a, run(8, false));
    assert_eq!(a, run(5, true));
}

#[test]
fn bad_rows_are_skipped_or_raised_with_their_context() {
    let mut recs = records(6);
    recs[2].fields[1].1 = Value::Bytes(Bytes::from_static(b"definitely not an image"));
    let plan = Arc::new(compile(PLAN).unwrap());
    let opts = Options { skip_errors: true, ..Default::default() };
    let mut l = Loader::start(plan.clone(), Box::new(VecSource::new(recs.clone())), opts, None).unwrap();
    let batches = drain(&mut l);
    assert_eq!(batches[0].keys, vec!["r0", "r1", "r3"]);
    assert_eq!(batches[0].errors.len(), 1);
    let msg = batches[0].errors[0].to_string();
    assert!(msg.contains("\"r2\"") && msg.contains("image") && msg.contains("decode_image"), "{msg}");
    if let SlotValue::Stacked(t) = &batches[0].slots[0].1 {
        assert_eq!(t.shape[0], 3);
    } else {
        panic!("expected a stacked slot");
    }

    let mut l = Loader::start(plan, Box::new(VecSource::new(recs)), Options::default(), None).unwrap();
    let err = loop {
        match l.next(Duration::from_secs(30)) {
            Ok(Next::Batch(_)) => continue,
            Ok(other) => panic!("expected an error, got {}", matches!(other, Next::End)),
            Err(e) => break e,
        }
    };
    let ctx = err.row_context().expect("a row error");
    assert_eq!((ctx.key.as_str(), ctx.slot.as_str(), ctx.op.as_str()), ("r2", "image", "decode_image"));
}

#[test]
fn group_by_makes_one_batch_per_run_of_the_key() {
    let mut recs = records(7);
    for (i, r) in recs.iter_mut().enumerate() {
        r.fields.push(("batch_id".into(), Value::Int([0, 0, 0, 1, 1, 2, 2][i])));
    }
    let plan = Arc::new(
        compile(&PLAN.replace(r#""kind":"batch","size":4"#, r#""kind":"group_by","key":"batch_id""#)).unwrap(),
    );
    let mut l = Loader::start(plan, Box::new(VecSource::stream(recs)), Options::default(), None).unwrap();
    let sizes: Vec<usize> = drain(&mut l).iter().map(|b| b.keys.len()).collect();
    assert_eq!(sizes, vec![3, 2, 2]);
}

#[test]
fn closing_mid_epoch_stops_promptly() {
    let plan = Arc::new(compile(PLAN).unwrap());
    let mut l = Loader::start(plan, Box::new(VecSource::new(records(400))), Options::default(), None).unwrap();
    assert!(matches!(l.next(Duration::from_secs(30)).unwrap(), Next::Batch(_)));
    let t0 = std::time::Instant::now();
    l.close();
    assert!(t0.elapsed() < Duration::from_secs(5));
    assert!(l.is_closed());
}

#[test]
fn a_shuffled_epoch_is_a_permutation() {
    let plan = Arc::new(compile(PLAN).unwrap());
    let opts = Options { plan: PlanOptions { seed: Some(3), ..Default::default() }, ..Default::default() };
    let mut l = Loader::start(plan, Box::new(VecSource::new(records(10))), opts, None).unwrap();
    let mut keys: Vec<String> = drain(&mut l).into_iter().flat_map(|b| b.keys).collect();
    let shuffled = keys.clone();
    keys.sort_by_key(|k| k[1..].parse::<u32>().unwrap());
    assert_ne!(shuffled, keys);
    assert_eq!(keys, (0..10).map(|i| format!("r{i}")).collect::<Vec<_>>());
}
