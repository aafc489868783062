//! Anomaly detection: a fully connected autoencoder 640→128→8→128→640, int8
//! (`import/tests/models/autoencoder_i8.tflite`, imported at build time), on a Cortex-M: see
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

model::image!("autoencoder_i8");
