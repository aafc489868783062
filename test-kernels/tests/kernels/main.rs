//! The test kernels end to end: MLIR text written for these tests → BEF → the executor's
//! driver procedure (`Program::run_functions`), with basic and test kernels registered, on a
//! fixed arena that must be empty again afterwards.

mod harness;

mod asynchronous;
mod atomic_blocking;
mod benchmark;
mod btf;
mod registry;
mod simple;
mod tutorial_vt;
