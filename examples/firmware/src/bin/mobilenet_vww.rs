//! Visual wake words: MobileNetV1 0.25 on a 96×96 RGB image, int8
//! (`import/tests/models/mobilenet_v1_vww_i8.tflite`, imported at build time), on a Cortex-M: see
//! `src/model.rs` for what the image checks and reports.
#![no_std]
#![no_main]

#[path = "../../../../targets/mps2-an386/instructions.rs"]
mod instructions;
#[path = "../../../../targets/interrupts.rs"]
mod interrupts;
#[macro_use]
#[path = "../model.rs"]
mod model;
#[cfg(feature = "layer-profile")]
#[path = "../profile.rs"]
mod profile;
#[path = "../semihosting.rs"]
mod semihosting;
#[path = "../stack.rs"]
mod stack;

use panic_semihosting as _;

model::image!("mobilenet_v1_vww_i8");
