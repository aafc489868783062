//! Compiles every `shaders/*.wgsl` to SPIR-V in `OUT_DIR` with naga (validated first), so
//! the crate embeds its shaders and the build needs neither a GPU nor a shader compiler.

use std::{env, fs, path::PathBuf};

use naga::valid::{Capabilities, ValidationFlags, Validator};

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    println!("cargo:rerun-if-changed=shaders");
    let mut names: Vec<_> = fs::read_dir("shaders")
        .expect("shaders/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "wgsl"))
        .collect();
    names.sort();
    for path in names {
        let source = fs::read_to_string(&path).expect("read a shader");
        let module = naga::front::wgsl::parse_str(&source)
            .unwrap_or_else(|e| panic!("{}: {}", path.display(), e.emit_to_string(&source)));
        let info = Validator::new(ValidationFlags::all(), Capabilities::all())
            .validate(&module)
            .unwrap_or_else(|e| panic!("{}: {e:?}", path.display()));
        let options = naga::back::spv::Options {
            lang_version: (1, 0),
            // Reads and writes outside a buffer are clamped: a wrong size cannot touch other memory.
            bounds_check_policies: naga::proc::BoundsCheckPolicies {
                index: naga::proc::BoundsCheckPolicy::Restrict,
                buffer: naga::proc::BoundsCheckPolicy::Restrict,
                image_load: naga::proc::BoundsCheckPolicy::Restrict,
                binding_array: naga::proc::BoundsCheckPolicy::Restrict,
            },
            ..Default::default()
        };
        let words = naga::back::spv::write_vec(&module, &info, &options, None)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let stem = path.file_stem().and_then(|s| s.to_str()).expect("a shader name");
        fs::write(out.join(format!("{stem}.spv")), bytes).expect("write SPIR-V");
    }
}
