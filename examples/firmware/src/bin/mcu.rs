//! A user's model on a Cortex-M, for `cargo xtask mcu MODEL.tflite --input x.npy`: build.rs
//! imports the model named by `HOSTRT_MCU_MODEL` with the inputs of `HOSTRT_MCU_INPUTS` (a
//! path list), and the image runs it as the other model images do (`src/model.rs`), printing
//! its outputs for the host to write as `.npy`.
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

model::image!("mcu");
