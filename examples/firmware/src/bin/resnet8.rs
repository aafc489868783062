//! Image classification: ResNet-8 on a 32×32 RGB image (CIFAR-10), int8
//! (`import/tests/models/resnet8_i8.tflite`, imported at build time), on a Cortex-M: see
//! `src/model.rs` for what the image checks and reports.
#![no_std]
#![no_main]

#[macro_use]
#[path = "../model.rs"]
mod model;

model::image!("resnet8_i8");
