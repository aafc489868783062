//! Keyword spotting: DS-CNN on a 49×10 MFCC frame, int8
//! (`import/tests/models/ds_cnn_i8.tflite`, imported at build time), on a Cortex-M: see
//! `src/model.rs` for what the image checks and reports.
#![no_std]
#![no_main]

#[macro_use]
#[path = "../model.rs"]
mod model;

model::image!("ds_cnn_i8");
