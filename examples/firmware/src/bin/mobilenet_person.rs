//! Person detection: MobileNetV1 0.25 on a 96×96 grayscale image, int8
//! (`import/tests/models/mobilenet_v1_person_i8.tflite`, imported at build time), on a Cortex-M: see
//! `src/model.rs` for what the image checks and reports.
#![no_std]
#![no_main]

#[macro_use]
#[path = "../model.rs"]
mod model;

model::image!("mobilenet_v1_person_i8");
