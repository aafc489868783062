//! int8 quantized kernels: being built.
#![no_std]
