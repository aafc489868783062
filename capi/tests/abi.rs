//! The headers in `include/` and what this crate exports agree: cbindgen writes the C
//! declarations of the crate's exported functions, one C (and one C++) translation unit
//! includes them with every header, and the compiler rejects any signature that differs.
//! Every function a header declares must be exported, and every export declared. Skips, with
//! a message, where no C compiler is installed.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The headers of the C API.
const HEADERS: &[&str] = &[
    "tensorflow/c/c_api_macros.h",
    "tensorflow/c/tf_datatype.h",
    "tensorflow/c/tf_status.h",
    "tensorflow/c/tf_tensor.h",
    "tensorflow/c/c_api.h",
    "tensorflow/c/ops.h",
    "tensorflow/c/kernels.h",
    "hostrt/tf_device_api.h",
    "hostrt/hostrt_vulkan.h",
];

/// Types the headers define; cbindgen must only name them.
const HEADER_TYPES: &[&str] = &[
    "TF_Status",
    "TF_Code",
    "TF_DataType",
    "TF_Tensor",
    "TF_Buffer",
    "TF_StringView",
    "TF_Bool",
    "TF_AllocatorAttributes",
    "TF_OpDefinitionBuilder",
    "TF_ShapeInferenceContext",
    "TF_ShapeHandle",
    "TF_DimensionHandle",
    "TF_KernelBuilder",
    "TF_OpKernelConstruction",
    "TF_OpKernelContext",
    "TF_InputRange_Args",
    "SP_Stream",
    "SP_Stream_st",
    "TF_FuncWrap",
];

fn include_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("include")
}

/// Names of the `TF_` functions declared in `decls` (the name is the identifier before a
/// declaration's first parenthesis).
fn functions<'a>(decls: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut names: Vec<String> = decls
        .filter_map(|decl| {
            let head = &decl[..decl.find('(')?];
            let name = head.rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).next()?;
            name.starts_with("TF_").then(|| name.to_owned())
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

fn have(tool: &str) -> bool {
    Command::new(tool).arg("--version").output().is_ok_and(|o| o.status.success())
}

fn compile(tool: &str, args: &[&str], file: &Path, dirs: &[&Path]) {
    let mut cmd = Command::new(tool);
    cmd.args(args).arg("-fsyntax-only").arg("-Wall").arg("-Wextra").arg("-Werror");
    for d in dirs {
        cmd.arg("-I").arg(d);
    }
    let out = cmd.arg(file).output().expect("runs the compiler");
    assert!(
        out.status.success(),
        "{tool} {args:?} {}:\n{}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn headers_declare_exactly_what_the_library_exports() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("capi-abi");
    std::fs::create_dir_all(&dir).unwrap();
    let mut config = cbindgen::Config {
        language: cbindgen::Language::C,
        cpp_compat: true,
        usize_is_size_t: true,
        ..Default::default()
    };
    config.export.exclude = HEADER_TYPES.iter().map(|s| (*s).to_owned()).collect();
    let exports = dir.join("hostrt_c_exports.h");
    cbindgen::Builder::new()
        .with_crate(env!("CARGO_MANIFEST_DIR"))
        .with_config(config)
        .generate()
        .expect("cbindgen reads the crate")
        .write_to_file(&exports);

    let declared: Vec<String> = HEADERS
        .iter()
        .flat_map(|h| {
            let text = std::fs::read_to_string(include_dir().join(h)).unwrap();
            functions(text.split("TF_CAPI_EXPORT").skip(1))
        })
        .collect();
    let generated = std::fs::read_to_string(&exports).unwrap();
    // cbindgen separates declarations with blank lines; a doc comment precedes some.
    let exported = functions(generated.split(';').map(|d| {
        let d = d.rsplit("\n\n").next().unwrap_or(d);
        d.rsplit("*/").next().unwrap_or(d)
    }));
    let mut declared_sorted = declared.clone();
    declared_sorted.sort();
    assert!(!declared.is_empty());
    assert_eq!(declared_sorted, exported, "declared in include/ vs exported by the crate");
    let mut kept: Vec<String> = hostrt_c::tf::plugins::EXPORTS.iter().map(|e| e.0.to_owned()).collect();
    kept.sort();
    assert_eq!(declared_sorted, kept, "declared in include/ vs kept for plugins (plugins::EXPORTS)");

    if !have("cc") {
        eprintln!("skipped: no C compiler (cc) to compare the declarations with");
        return;
    }
    let tu = dir.join("abi.c");
    let includes: String = HEADERS.iter().map(|h| format!("#include \"{h}\"\n")).collect();
    std::fs::write(&tu, format!("{includes}#include \"hostrt_c_exports.h\"\ntypedef int hostrt_nonempty;\n"))
        .unwrap();
    compile("cc", &["-std=c11"], &tu, &[&include_dir(), &dir]);
    if have("c++") {
        compile("c++", &["-std=c++17", "-x", "c++"], &tu, &[&include_dir(), &dir]);
    } else {
        eprintln!("skipped the C++ check: no c++ compiler");
    }
}

/// Each header compiles on its own, as C99 and as C++ (a plugin may include any one first).
#[test]
fn each_header_stands_alone_in_c_and_cpp() {
    if !have("cc") {
        eprintln!("skipped: no C compiler (cc)");
        return;
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("capi-headers");
    std::fs::create_dir_all(&dir).unwrap();
    for h in HEADERS {
        let tu = dir.join(format!("{}.c", h.replace('/', "_")));
        let text = format!("#include \"{h}\"\n#include \"{h}\"\ntypedef int hostrt_nonempty;\n");
        std::fs::write(&tu, text).unwrap();
        compile("cc", &["-std=c99", "-pedantic"], &tu, &[&include_dir()]);
        if have("c++") {
            compile("c++", &["-std=c++11", "-x", "c++"], &tu, &[&include_dir()]);
        }
    }
}

/// `hostrt_vk_stream` has the same layout in the header and in Rust (the compiler checks
/// the sizes and offsets Rust computes).
#[cfg(feature = "vulkan")]
#[test]
fn the_vulkan_stream_has_the_headers_layout() {
    use hostrt_c::tf::kernels::device_stream::hostrt_vk_stream as S;
    use std::mem::offset_of;
    if !have("cc") {
        eprintln!("skipped: no C compiler (cc)");
        return;
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("capi-layout");
    std::fs::create_dir_all(&dir).unwrap();
    let fields = [
        ("struct_size", offset_of!(S, struct_size)),
        ("instance", offset_of!(S, instance)),
        ("physical_device", offset_of!(S, physical_device)),
        ("device", offset_of!(S, device)),
        ("queue_family_index", offset_of!(S, queue_family_index)),
        ("get_instance_proc_addr", offset_of!(S, get_instance_proc_addr)),
        ("submit", offset_of!(S, submit)),
    ];
    let mut text = format!(
        "#include <stddef.h>\n#include \"hostrt/hostrt_vulkan.h\"\n\
         _Static_assert(sizeof(hostrt_vk_stream) == {}, \"size\");\n",
        size_of::<S>()
    );
    for (f, o) in fields {
        text += &format!("_Static_assert(offsetof(hostrt_vk_stream, {f}) == {o}, \"{f}\");\n");
    }
    let tu = dir.join("layout.c");
    std::fs::write(&tu, text).unwrap();
    compile("cc", &["-std=c11"], &tu, &[&include_dir()]);
}
