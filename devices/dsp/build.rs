//! Sets `cfg(hostrt_arm_dsp)` when the target is Arm with the DSP extension.
//!
//! `cfg(target_feature = "dsp")` would say so directly, but stable rustc hides unstable Arm
//! target features from `cfg`, so on stable it is never set, even for `thumbv7em`. Cargo
//! passes the features it sees (all of them on nightly) in `CARGO_CFG_TARGET_FEATURE`; on
//! stable we fall back to the target name: every Armv7E-M target has the DSP extension.

use std::env;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(hostrt_arm_dsp)");
    println!("cargo::rerun-if-changed=build.rs");
    let arch = env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let features = env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();
    let target = env::var("TARGET").unwrap_or_default();
    let listed = features.split(',').any(|f| f == "dsp");
    let armv7em = target.starts_with("thumbv7em");
    if arch == "arm" && (listed || armv7em) {
        println!("cargo::rustc-cfg=hostrt_arm_dsp");
    }
}
