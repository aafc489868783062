//! Loading plugins: shared objects built against `include/` that leave the `TF_*` symbols
//! undefined (as TensorFlow plugins do against `libtensorflow_framework`), resolved against
//! the process, which must export them ([`EXPORTS`]; the `hostrt` executable links with
//! `-rdynamic` for this). [`load_plugin`] opens one with `libloading`, calls its
//! `TF_InitKernel` and the seed's `InitPlugin` (whichever it defines), and reports every
//! registration that failed meanwhile. What registered stays registered; the library stays
//! loaded for the life of the process, since its kernels may run at any time.
//!
//! Three parts: this loader; `exports`, the table of exported functions ([`EXPORTS`]); and
//! `registration_log`, what the plugin being loaded registered.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

mod exports;
pub(crate) mod registration_log;

pub use exports::{EXPORTS, Export};

/// What a loaded plugin defined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loaded {
    /// Which entry points it has: `TF_InitKernel`, `InitPlugin`.
    pub entry_points: Vec<&'static str>,
}

/// Loads the plugin at `path` and runs its registration: `TF_InitKernel` and the seed's
/// `InitPlugin`, whichever it defines, or the static initializers that TensorFlow's own
/// kernel libraries register from (run when the library is opened). Errors: the library
/// cannot be opened; it has no entry point and registered nothing while opening; a
/// registration failed (each failure is listed; the registrations that succeeded stay).
///
/// Loading a library that was loaded before (the same file, by its canonical path) returns
/// what the first load found and registers nothing again.
pub fn load_plugin(path: &Path) -> Result<Loaded, String> {
    static LOADED: Mutex<Vec<(PathBuf, Loaded)>> = Mutex::new(Vec::new());
    // A bare file name is the file in the current folder, as a user means it (the dynamic
    // loader would search only the library path for it).
    let here;
    let path = if path.parent() == Some(Path::new("")) && path.is_file() {
        here = Path::new(".").join(path);
        &here
    } else {
        path
    };
    let canonical = std::fs::canonicalize(path).ok();
    let mut loaded = LOADED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, l)) = loaded.iter().find(|(p, _)| Some(p) == canonical.as_ref()) {
        return Ok(l.clone());
    }
    let result = load_once(path);
    if let (Ok(l), Some(p)) = (&result, canonical) {
        loaded.push((p, l.clone()));
    }
    result
}

/// Opens the library and runs its registration, once.
fn load_once(path: &Path) -> Result<Loaded, String> {
    let name = path.display();
    registration_log::start();
    // SAFETY: opening runs the library's initialisers; a plugin is trusted code the user
    // asked to load, as in TensorFlow.
    let lib = match unsafe { libloading::Library::new(path) } {
        Ok(lib) => lib,
        Err(e) => {
            registration_log::finish();
            return Err(format!("plugin {name}: cannot load: {e}"));
        }
    };
    let statically = registration_log::any();
    let mut entry_points = Vec::new();
    if statically {
        entry_points.push("static initializers");
    }
    let mut inits: Vec<(&str, unsafe extern "C-unwind" fn())> = Vec::new();
    for symbol in ["TF_InitKernel", "InitPlugin"] {
        // SAFETY: both entry points are `void f(void)` by the C API's contract.
        if let Ok(f) = unsafe { lib.get::<unsafe extern "C-unwind" fn()>(symbol.as_bytes()) } {
            entry_points.push(symbol);
            inits.push((symbol, *f));
        }
    }
    if entry_points.is_empty() {
        registration_log::finish();
        return Err(format!(
            "plugin {name}: not a plugin: it defines neither TF_InitKernel nor InitPlugin and registered nothing when loaded"
        ));
    }
    // The kernels' code must outlive every program: the library is never unloaded.
    std::mem::forget(lib);
    let mut panicked = Vec::new();
    for (symbol, init) in inits {
        // SAFETY: the plugin's registration function, called once, on this thread. What it
        // registered before a panic stays registered, complete.
        if std::panic::catch_unwind(|| unsafe { init() }).is_err() {
            panicked.push(format!("{symbol} panicked"));
        }
    }
    let mut failed = registration_log::finish();
    failed.extend(panicked);
    if failed.is_empty() {
        Ok(Loaded { entry_points })
    } else {
        Err(format!("plugin {name}: {}", failed.join("; ")))
    }
}
