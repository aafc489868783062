//! The `hostrt` executable exports the C API's `TF_*` functions to the plugins it loads
//! (which leave them undefined, as TensorFlow plugins do): link with `-rdynamic` where the
//! linker knows it. `main` references `hostrt_c::tf::plugins::EXPORTS`, which keeps every
//! function linked.

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if matches!(os.as_str(), "linux" | "android" | "freebsd") {
        println!("cargo:rustc-link-arg-bin=hostrt=-rdynamic");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
