//! `cargo xtask libs`: the static library `libhostrt.a` for each phone target (Android
//! aarch64, armv7 and x86_64; iOS aarch64), built with `cargo build --release -p hostrt-c`
//! (which names it after its crate, `libhostrt_c.a`) and copied to the name apps link, then
//! checked symbol by symbol: every function the headers declare is defined, nothing else
//! unmangled of ours is exported, and what the archive leaves undefined comes from the
//! platform (libc, libm, libdl, liblog, the unwinder and the compiler runtime). Then the size
//! a linker keeps of it for the example app, on the aarch64 Linux proxy with
//! `--gc-sections`. A target rustup cannot install is skipped with a message. Phone targets
//! named on the command line (`cargo xtask libs aarch64-apple-ios ...`) are the only ones
//! built; none named, all of them.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use object::read::archive::ArchiveFile;
use object::{Object, ObjectSymbol};

/// The phone targets.
const TARGETS: [&str; 4] =
    ["aarch64-linux-android", "armv7-linux-androideabi", "x86_64-linux-android", "aarch64-apple-ios"];

/// The crates of Rust's sysroot (std and what it is built from): their symbols are the Rust
/// runtime's, not hostrt's.
const SYSROOT: &[&str] = &[
    "std",
    "core",
    "alloc",
    "compiler_builtins",
    "panic_unwind",
    "panic_abort",
    "unwind",
    "libc",
    "std_detect",
    "hashbrown",
    "rustc_std_workspace_core",
    "rustc_std_workspace_alloc",
    "addr2line",
    "gimli",
    "object",
    "memchr",
    "miniz_oxide",
    "adler2",
    "rustc_demangle",
    "cfg_if",
];

/// Whether an archive member is hostrt's (or one of its dependencies'): a Rust object of a
/// crate outside the sysroot. Objects in C (the compiler runtime) are the toolchain's.
fn ours(member: &str) -> bool {
    member.ends_with(".rcgu.o") && !SYSROOT.contains(&member.split('-').next().unwrap_or(""))
}

/// Symbols of hostrt's members that are not API but may be global: mangled Rust (a crate
/// hash in every name), LLVM's private constants (`anon.<hash>.N.llvm.<hash>`, hidden), the
/// hidden pointer to the Rust personality routine that unwind tables share, and
/// the `critical-section` crate's process-wide lock, whose unmangled name is that crate's
/// own link-time contract.
fn internal(name: &str) -> bool {
    name.starts_with("_ZN")
        || name.starts_with("_R")
        || (name.starts_with("anon.") && name.contains(".llvm."))
        || name == "DW.ref.rust_eh_personality"
        || name.starts_with("_critical_section_1_0_")
}

/// Whether an undefined `name` is the platform's: a function of the C library (the names
/// glibc's libc, libm, libdl and libpthread export stand in for bionic's and libSystem's),
/// liblog, the unwinder, the compiler runtime, or one of the platform's own extras below.
fn platform(name: &str, libc: &BTreeSet<String>) -> bool {
    const EXTRAS: &[&str] = &[
        // String functions glibc exports as IFUNCs (not plain definitions).
        "memcmp",
        "memmove",
        "memset",
        "memcpy",
        "bcmp",
        "strlen",
        "strncmp",
        "strnlen",
        // ARM EHABI unwinder (libgcc / libunwind)
        "__gnu_unwind_frame",
        // bionic
        "__errno",
        "__system_property_get",
        "__android_log_write",
        "android_set_abort_message",
        "__sF",
        // libSystem (iOS)
        "__error",
        "__assert_rtn",
        "__stack_chk_guard",
        "CCRandomGenerateBytes",
        "memset_pattern16",
        "fclonefileat",
        "fcopyfile",
        "fsetattrlist",
        "setattrlist",
        "readdir_r",
        "mach_error_string",
        "mach_wait_until",
        "mach_absolute_time",
        "mach_timebase_info",
        "mach_task_self_",
        "vm_page_size",
        "arc4random_buf",
        "sysctl",
        "sysctlbyname",
        "sysctlnametomib",
        "getpeereid",
    ];
    let base = name.split('$').next().unwrap_or(name); // Darwin's `realpath$DARWIN_EXTSN`
    libc.contains(base)
        || EXTRAS.contains(&base)
        || ["_Unwind_", "_dyld_", "dispatch_", "copyfile_", "os_unfair_lock_", "_tlv_", "__ulock_", "_NSGet"]
            .iter()
            .any(|p| base.starts_with(p))
        || base.ends_with("_np")
        // The compiler runtime (libgcc / compiler-rt) the platform linker adds.
        || (base.starts_with("__") && ["tf3", "tf2", "ti3", "di3", "sf2", "df2", "ti2"].iter().any(|s| base.ends_with(s)))
}

/// The functions the host's C library exports (glibc: libc, libm, libdl, libpthread), the
/// reference list of C-library names.
fn libc_names() -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for lib in ["libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0"] {
        let found = ["/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64"]
            .iter()
            .find_map(|dir| std::fs::read(Path::new(dir).join(lib)).ok());
        let Some(data) = found else { continue };
        if let Ok(obj) = object::File::parse(&*data) {
            for s in obj.dynamic_symbols().filter(|s| s.is_definition()) {
                if let Ok(n) = s.name() {
                    names.insert(n.split('@').next().unwrap_or(n).to_owned());
                }
            }
        }
    }
    names
}

/// The functions `include/` declares: `hostrt_*` of hostrt.h and the `TF_*` of the
/// TensorFlow headers.
fn api(root: &Path) -> Result<BTreeSet<String>, String> {
    let mut names = BTreeSet::new();
    let ident =
        |s: &str| s.rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).next().map(str::to_owned);
    let hostrt =
        std::fs::read_to_string(root.join("capi/include/hostrt/hostrt.h")).map_err(|e| e.to_string())?;
    names.extend(hostrt.split('(').filter_map(ident).filter(|n| n.starts_with("hostrt_")));
    for h in ["tf_status.h", "tf_datatype.h", "tf_tensor.h", "c_api.h", "ops.h", "kernels.h"] {
        let text = std::fs::read_to_string(root.join("capi/include/tensorflow/c").join(h))
            .map_err(|e| e.to_string())?;
        names.extend(text.split("TF_CAPI_EXPORT").skip(1).filter_map(|d| ident(&d[..d.find('(')?])));
    }
    let device = std::fs::read_to_string(root.join("capi/include/hostrt/tf_device_api.h"))
        .map_err(|e| e.to_string())?;
    names.extend(device.split("TF_CAPI_EXPORT").skip(1).filter_map(|d| ident(&d[..d.find('(')?])));
    names.retain(|n| n.starts_with("TF_") || n.starts_with("hostrt_"));
    Ok(names)
}

/// The symbols of an archive: defined globals (all, and those of hostrt's own members) and
/// what no member defines.
struct Symbols {
    defined: BTreeSet<String>,
    ours: BTreeSet<String>,
    undefined: BTreeSet<String>,
}

/// Reads every object of the archive.
fn symbols(archive: &Path, macho: bool) -> Result<Symbols, String> {
    let data = std::fs::read(archive).map_err(|e| format!("{}: {e}", archive.display()))?;
    let ar = ArchiveFile::parse(&*data).map_err(|e| e.to_string())?;
    let (mut defined, mut ours_defined, mut undefined) = (BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
    for member in ar.members() {
        let member = member.map_err(|e| e.to_string())?;
        let obj = match object::File::parse(member.data(&*data).map_err(|e| e.to_string())?) {
            Ok(o) => o,
            Err(e) => {
                if std::env::var_os("XTASK_DEBUG").is_some() {
                    eprintln!("{}: {e}", String::from_utf8_lossy(member.name()));
                }
                continue;
            }
        };
        for sym in obj.symbols() {
            let Ok(name) = sym.name() else { continue };
            let name = if macho { name.strip_prefix('_').unwrap_or(name) } else { name }.to_owned();
            if sym.is_undefined() {
                undefined.insert(name);
            } else if sym.is_global() && sym.is_definition() {
                if ours(&String::from_utf8_lossy(member.name())) {
                    ours_defined.insert(name.clone());
                }
                defined.insert(name);
            }
        }
    }
    let undefined = undefined.difference(&defined).cloned().collect();
    Ok(Symbols { defined, ours: ours_defined, undefined })
}

fn installed() -> BTreeSet<String> {
    let out = Command::new("rustup").args(["target", "list", "--installed"]).output();
    out.map(|o| String::from_utf8_lossy(&o.stdout).lines().map(str::to_owned).collect()).unwrap_or_default()
}

/// Builds the release archive for `target` and returns its path under the name apps link.
fn cargo_build(root: &Path, target: &str, env: &[(&str, &str)]) -> Result<PathBuf, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(root)
        .envs(env.iter().copied())
        .args([
            "build",
            "-q",
            "--release",
            "-p",
            "hostrt-c",
            "--target",
            target,
            "--target-dir",
            "target/phone",
        ])
        .status()
        .map_err(|e| e.to_string())?;
    if !status.success() {
        return Err(format!("cargo build for {target} failed"));
    }
    // The archive apps link is `libhostrt.a` (docs/embedding.md).
    let release = root.join("target/phone").join(target).join("release");
    let lib = release.join("libhostrt.a");
    std::fs::copy(release.join("libhostrt_c.a"), &lib)
        .map_err(|e| format!("{target}: libhostrt_c.a: {e}"))?;
    Ok(lib)
}

/// Builds and checks the phone archives of `only` (every one when empty); then the linked size
/// on the aarch64 Linux proxy. A name that is not a phone target is an error.
pub fn run(root: &Path, only: &[String]) -> Result<bool, String> {
    if let Some(other) = only.iter().find(|t| !TARGETS.contains(&t.as_str())) {
        return Err(format!("{other} is not a phone target; they are {}", TARGETS.join(", ")));
    }
    let api = api(root)?;
    let libc = libc_names();
    let have = installed();
    let mut ok = true;
    for target in TARGETS.into_iter().filter(|t| only.is_empty() || only.iter().any(|o| o == t)) {
        if !have.contains(target) {
            println!("{target}: skipped (rustup target not installed; scripts/setup.sh installs it)");
            continue;
        }
        let lib = cargo_build(root, target, &[])?;
        let Symbols { defined, ours, undefined } = symbols(&lib, target.contains("apple"))?;
        let missing: Vec<_> = api.iter().filter(|f| !defined.contains(*f)).collect();
        // The JNI functions of the Android binding are API there too.
        let jni = ours.iter().filter(|s| s.starts_with("Java_ai_hostrt_")).count();
        let leaked: Vec<_> = ours
            .iter()
            .filter(|s| !api.contains(*s) && !internal(s) && !s.starts_with("Java_ai_hostrt_"))
            .collect();
        if target.contains("android") && jni == 0 {
            ok = false;
            println!("  FAIL: no JNI functions (src/embed/jni.rs) in the Android archive");
        }
        let foreign: Vec<_> = undefined.iter().filter(|s| !platform(s, &libc)).collect();
        let size = std::fs::metadata(&lib).map_err(|e| e.to_string())?.len();
        println!(
            "{target}: libhostrt.a {size} bytes; {} API functions and {jni} JNI functions defined; {} global symbols of hostrt's objects; {} symbols left to the platform",
            api.len() - missing.len(),
            ours.len(),
            undefined.len()
        );
        for (what, list) in [
            ("missing API function", &missing),
            ("leaked symbol", &leaked),
            ("undefined non-platform symbol", &foreign),
        ] {
            if !list.is_empty() {
                ok = false;
                println!("  FAIL: {} {what}(s): {list:?}", list.len());
            }
        }
    }
    linked_size(root)?;
    Ok(ok)
}

/// The example app linked against the release archive for aarch64 Linux with
/// `--gc-sections` and stripped: what an app pays for hostrt.
fn linked_size(root: &Path) -> Result<(), String> {
    let target = "aarch64-unknown-linux-gnu";
    let cc = "aarch64-linux-gnu-gcc";
    if !installed().contains(target) || Command::new(cc).arg("--version").output().is_err() {
        println!("linked size: skipped (needs the {target} target and {cc})");
        return Ok(());
    }
    let lib = cargo_build(root, target, &[("CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER", cc)])?;
    let app = root.join("target/phone/app-aarch64");
    let status = Command::new(cc)
        .args(["-std=c11", "-O2", "-ffunction-sections", "-fdata-sections", "-Wl,--gc-sections", "-s", "-I"])
        .arg(root.join("capi/include"))
        .arg(root.join("examples/app-c/main.c"))
        .arg(&lib)
        .args(["-ldl", "-lpthread", "-lm", "-o"])
        .arg(&app)
        .status()
        .map_err(|e| e.to_string())?;
    if !status.success() {
        return Err("linking the example app failed".into());
    }
    let empty = root.join("target/phone/empty-aarch64");
    let source = root.join("target/phone/empty.c");
    std::fs::write(&source, "int main(void) { return 0; }\n").map_err(|e| e.to_string())?;
    let status = Command::new(cc)
        .args(["-O2", "-Wl,--gc-sections", "-s"])
        .arg(&source)
        .arg("-o")
        .arg(&empty)
        .status()
        .map_err(|e| e.to_string())?;
    if !status.success() {
        return Err("linking an empty C program failed".into());
    }
    let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    println!(
        "linked size ({target}, --gc-sections, stripped): example app {} bytes, an empty C program {} bytes: hostrt adds {} bytes",
        size(&app),
        size(&empty),
        size(&app) - size(&empty)
    );
    Ok(())
}
