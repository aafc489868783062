//! A user's model on a Cortex-M, for `cargo xtask mcu MODEL.tflite --input x.npy`: build.rs
//! imports the model named by `HOSTRT_MCU_MODEL` with the inputs of `HOSTRT_MCU_INPUTS` (a
//! path list), and the image runs it as the other model images do (`src/model.rs`), printing
//! its outputs for the host to write as `.npy`.
#![no_std]
#![no_main]

#[macro_use]
#[path = "../model.rs"]
mod model;

model::image!("mcu");
