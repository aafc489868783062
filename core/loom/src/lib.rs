//! Nothing: the model checks are `tests/loom.rs`, which builds only under
//! `RUSTFLAGS="--cfg loom"` (`cargo test -p hostrt-core-loom --release`).
