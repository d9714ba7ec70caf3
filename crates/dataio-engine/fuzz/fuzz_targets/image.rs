//! `decode_image` as a pipeline runs it (behind the panic guard, through
//! `run_slot`): PNG, WebP, GIF, BMP, TIFF and JPEG, each with the image
//! chain of one of a few plans — plain, a random resized crop (JPEG decodes
//! DCT-scaled and by region of interest), gray with resize and normalize,
//! RGBA without EXIF. The first input byte picks the plan and the sample
//! index (which moves the random crop); the rest is the file.
#![no_main]
mod common;
use bytes::Bytes;
use dataio_engine::runtime::slot::{run_slot, Dest, SampleKey, SlotInput};
use dataio_engine::runtime::Record;
use dataio_engine::plan::{compile, Plan};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

const PLANS: [&str; 4] = [
    r#"[{"op":"decode_image","params":{"max_pixels":4194304}}]"#,
    r#"[{"op":"decode_image","params":{"max_pixels":4194304}},{"op":"random_resized_crop","params":{"h":24,"w":32}},{"op":"hflip"}]"#,
    r#"[{"op":"decode_image","params":{"mode":"gray","max_pixels":4194304}},{"op":"resize_short","params":{"size":20,"interpolation":"bicubic"}},{"op":"center_crop","params":{"h":16,"w":16}},{"op":"normalize","params":{"mean_std":[[0.5],[0.25]]}}]"#,
    r#"[{"op":"decode_image","params":{"mode":"rgba","apply_exif_orientation":false,"dct_scaling":false,"max_pixels":4194304}},{"op":"crop","params":{"top":-3,"left":2,"h":9,"w":7}}]"#,
];

fn plans() -> &'static Vec<Plan> {
    static PLANS_: OnceLock<Vec<Plan>> = OnceLock::new();
    PLANS_.get_or_init(|| {
        PLANS
            .iter()
            .map(|ops| {
                let json = format!(
                    r#"{{"version":1,"slots":[{{"name":"image","ops":{ops}}}],"shape":{{"kind":"batch","size":1,"prefetch":1}}}}"#
                );
                compile(&json).expect("the fuzz plans compile")
            })
            .collect()
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, file)) = data.split_first() else { return };
    let plan = &plans()[pick as usize % PLANS.len()];
    let slot = &plan.slots[0];
    let record = Record::new(vec![]);
    let key = SampleKey { seed: 7, epoch: 0, index: (pick >> 2) as u64, slot: 0 };
    let out = run_slot(
        slot,
        SlotInput::Data(Bytes::copy_from_slice(file)),
        &record,
        key,
        None,
        Dest { row: None, expect_shape: None },
    );
    common::checked(out);
});
