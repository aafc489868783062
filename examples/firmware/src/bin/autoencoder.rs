//! Anomaly detection: a fully connected autoencoder 640→128→8→128→640, int8
//! (`import/tests/models/autoencoder_i8.tflite`, imported at build time), on a Cortex-M: see
//! `src/model.rs` for what the image checks and reports.
#![no_std]
#![no_main]

#[macro_use]
#[path = "../model.rs"]
mod model;

model::image!("autoencoder_i8");
