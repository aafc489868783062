//! C-API plugins through `hostrt run --plugin`: `examples/plugins/c/scale_by.c` is built
//! with the system C compiler against `capi/include` only (the `TF_*` symbols left undefined,
//! as TensorFlow plugins leave them) and its program passes `hostrt check --plugin` (RUN and
//! CHECK lines); so do the C++ and Rust examples. A library that
//! is not a plugin, or one whose registrations fail, is a clear error. Skips, with a message,
//! where no C compiler is installed.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn hostrt(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hostrt")).args(args).output().expect("run hostrt")
}

/// Builds `source` (C, or C++ for `.cc`) into a shared object named `name` in the test's temp
/// dir.
fn shared_object(source: &Path, name: &str) -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("plugins");
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join(name);
    let include = root().join("capi/include");
    let cpp = source.extension().is_some_and(|e| e == "cc");
    let (compiler, std) = if cpp { ("c++", "-std=c++17") } else { ("cc", "-std=c11") };
    let built = Command::new(compiler)
        .args(["-shared", "-fPIC", std, "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(&include)
        .arg(source)
        .arg("-o")
        .arg(&out)
        .output();
    match built {
        Err(_) => {
            eprintln!("skipped: no {compiler} to build the example plugin");
            None
        }
        Ok(o) => {
            assert!(
                o.status.success(),
                "{compiler} {}:\n{}",
                source.display(),
                String::from_utf8_lossy(&o.stderr)
            );
            Some(out)
        }
    }
}

/// Checks `program` (its RUN and CHECK lines, through `hostrt check`) with the plugin at
/// `lib` loaded.
fn check_with(lib: &Path, program: &Path) {
    let out = hostrt(&["check", program.to_str().unwrap(), "--plugin", lib.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Builds the plugin from `source` and checks `program` with it.
fn run_checked(source: &str, lib: &str, program: &str) -> Option<()> {
    let lib = shared_object(&root().join(source), lib)?;
    check_with(&lib, &root().join(program));
    Some(())
}

#[test]
fn the_c_example_plugin_runs_its_program() {
    let program = root().join("examples/plugins/c/scale_by.mlir");
    if run_checked("examples/plugins/c/scale_by.c", "libscale_by.so", "examples/plugins/c/scale_by.mlir")
        .is_none()
    {
        return;
    }
    // Without the plugin the op does not exist: a load error at the kernel's location, and
    // the check fails.
    let out = hostrt(&["run", program.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("unknown kernel name 'tf.ScaleBy'"), "{stderr}");
    assert!(!hostrt(&["check", program.to_str().unwrap()]).status.success());
}

#[test]
fn a_bare_library_name_is_the_file_in_the_current_folder() {
    // As the example programs' comments write it: `--plugin libscale_by.so`, run from the
    // folder holding the library (dlopen alone would search only the library path).
    let Some(lib) = shared_object(&root().join("examples/plugins/c/scale_by.c"), "libscale_by_bare.so")
    else {
        return;
    };
    let program = root().join("examples/plugins/c/scale_by.mlir");
    let out = Command::new(env!("CARGO_BIN_EXE_hostrt"))
        .args(["check", program.to_str().unwrap(), "--plugin", "libscale_by_bare.so"])
        .current_dir(lib.parent().unwrap())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn libraries_that_are_not_plugins_or_fail_to_register_are_errors() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("plugins");
    std::fs::create_dir_all(&dir).unwrap();
    let source = dir.join("not_a_plugin.c");
    std::fs::write(&source, "int not_a_plugin(void) { return 0; }\n").unwrap();
    let Some(lib) = shared_object(&source, "libnot_a_plugin.so") else { return };
    let program = root().join("examples/plugins/c/scale_by.mlir");
    let out = hostrt(&["run", program.to_str().unwrap(), "--plugin", lib.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && stderr.contains("not a plugin: it defines neither TF_InitKernel nor InitPlugin and registered nothing when loaded"),
        "{stderr}"
    );

    let out = hostrt(&["run", program.to_str().unwrap(), "--plugin", "/nonexistent/libx.so"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot load"));

    // The same library twice is loaded once; two libraries that define the same op: the
    // second one's registrations fail (the op and the kernel exist).
    let source = root().join("examples/plugins/c/scale_by.c");
    let (Some(good), Some(twin)) =
        (shared_object(&source, "libscale_by_once.so"), shared_object(&source, "libscale_by_twin.so"))
    else {
        return;
    };
    let (good, twin) = (good.to_str().unwrap(), twin.to_str().unwrap());
    let out = hostrt(&["run", program.to_str().unwrap(), "--plugin", good, "--plugin", good]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = hostrt(&["run", program.to_str().unwrap(), "--plugin", good, "--plugin", twin]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("op 'ScaleBy' is already registered") && stderr.contains("a kernel for op 'ScaleBy'"),
        "{stderr}"
    );
}

#[test]
fn the_cpp_example_plugin_runs_its_program_through_the_header_only_layer() {
    run_checked("examples/plugins/cpp/clip.cc", "libclip.so", "examples/plugins/cpp/clip.mlir");
}

#[test]
fn the_rust_example_plugin_runs_its_program() {
    // A separate cdylib crate that declares the C API itself and leaves it undefined.
    let manifest = root().join("examples/plugins/rust/Cargo.toml");
    let target = root().join("target/plugins-rust");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let built = Command::new(cargo)
        .args(["build", "-q", "--manifest-path"])
        .arg(&manifest)
        .arg("--target-dir")
        .arg(&target)
        .output()
        .expect("run cargo");
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    check_with(&target.join("debug/libaffine_plugin.so"), &root().join("examples/plugins/rust/affine.mlir"));
}
