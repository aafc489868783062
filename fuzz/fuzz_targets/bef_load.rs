//! Arbitrary bytes into the BEF reader: an error, never a panic or undefined behaviour.
#![no_main]

#[path = "common.rs"]
mod common;

libfuzzer_sys::fuzz_target!(|data: &[u8]| common::check_bef(data));
