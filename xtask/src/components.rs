//! Flash per component of a firmware image, for the table in docs/porting.md. Each 2-byte
//! unit of `.text` goes to the innermost inlined frame whose function belongs to hostrt (so
//! an atomic load inlined into the executor counts for the async value that does it), or
//! else to the Rust core library, compiler builtins, or the rest; `.rodata` is split into
//! embedded programs and other constants.

use std::collections::BTreeMap;
use std::path::Path;

use object::{Object, ObjectSection, ObjectSymbol};

/// The component a function belongs to, from its demangled path; `None` for code outside
/// hostrt (the caller then looks at the next outer inlined frame).
fn component_of(function: &str) -> Option<&'static str> {
    if let Some(at) = function.find("hostrt_core::") {
        let rest = &function[at + "hostrt_core::".len()..];
        let module = rest.split("::").next().unwrap_or("");
        return Some(match module {
            "bef" | "utf8" => "BEF reader and verifier",
            "executor" => "executor",
            "async_value" | "callback" => "async values",
            "kernel" => "kernel interface (frames, adaptors, registry)",
            "allocator" => "allocator",
            "work_queue" | "host_context" | "sync" => "host context and work queue",
            "diagnostic" => "diagnostics",
            "basic_kernels" => match rest.split("::").nth(1).unwrap_or("") {
                "integer" => "kernels: integer",
                "float" => "kernels: float",
                "control" => "kernels: control",
                "print" | "print_defmt" => "kernels: print",
                _ => "kernels: other basic",
            },
            "tensor" | "tensor_kernels" => "tensor kernels",
            "driver" | "number_format" => "driver (printing results)",
            _ => "other hostrt",
        });
    }
    if function.contains("hostrt_dsp::") {
        return Some("DSP kernels");
    }
    None
}

/// Where code outside hostrt goes.
fn outside(function: &str) -> &'static str {
    let f = function.trim_start_matches('<');
    // (targets/small_mem.rs replaces the builtins' memory routines in the minimal image.)
    let small_mem = f.contains("::small_mem::");
    if f.starts_with("compiler_builtins") || f.starts_with("__aeabi") || f.starts_with("mem") || small_mem {
        "compiler builtins (memcpy, ...)"
    } else if f.starts_with("core::") {
        "Rust core library"
    } else {
        "start-up, the image's own code, other crates"
    }
}

/// Bytes per component of `elf`'s flash: `.text` by function, `.rodata` split into
/// `include_bef!` programs and other constants, and the vector table.
pub fn measure(elf: &Path) -> Result<BTreeMap<&'static str, u64>, String> {
    let err = |e: &dyn std::fmt::Display| format!("{}: {e}", elf.display());
    let bytes = std::fs::read(elf).map_err(|e| err(&e))?;
    let file = object::File::parse(&*bytes).map_err(|e| err(&e))?;
    let loader = addr2line::Loader::new(elf).map_err(|e| err(&e))?;
    let mut out = BTreeMap::new();
    for sec in file.sections() {
        match sec.name().unwrap_or("") {
            ".text" => {
                for addr in (sec.address()..sec.address() + sec.size()).step_by(2) {
                    let mut which = None;
                    let mut innermost = String::new();
                    let mut frames = loader.find_frames(addr).map_err(|e| err(&e))?;
                    while let Ok(Some(frame)) = frames.next() {
                        let Some(name) = frame.function.as_ref().and_then(|f| f.demangle().ok()) else {
                            continue;
                        };
                        if innermost.is_empty() {
                            innermost = name.to_string();
                        }
                        if let Some(c) = component_of(&name) {
                            which = Some(c);
                            break;
                        }
                    }
                    let which = which.unwrap_or_else(|| {
                        // No line info (builtins are built without it): the symbol's name.
                        if innermost.is_empty() {
                            innermost = symbol_at(&file, addr);
                        }
                        component_of(&innermost).unwrap_or_else(|| outside(&innermost))
                    });
                    *out.entry(which).or_default() += 2;
                }
            }
            ".rodata" => {
                let programs: u64 = file
                    .symbols()
                    .filter(|s| s.section_index() == Some(sec.index()))
                    .filter(|s| {
                        format!("{:#}", rustc_demangle::demangle(s.name().unwrap_or(""))).ends_with("::BEF")
                    })
                    .map(|s| s.size())
                    .sum();
                *out.entry("embedded BEF programs").or_default() += programs;
                *out.entry("constants and strings").or_default() += sec.size() - programs;
            }
            ".vector_table" => *out.entry("vector table").or_default() += sec.size(),
            ".data" => *out.entry("constants and strings").or_default() += sec.size(),
            _ => {}
        }
    }
    Ok(out)
}

/// The demangled name of the function symbol covering `addr`, or "".
fn symbol_at(file: &object::File<'_>, addr: u64) -> String {
    file.symbols()
        .filter(|s| s.kind() == object::SymbolKind::Text && s.size() > 0)
        .find(|s| (s.address() & !1) <= addr && addr < (s.address() & !1) + s.size())
        .map(|s| format!("{:#}", rustc_demangle::demangle(s.name().unwrap_or(""))))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn functions_map_to_their_hostrt_module() {
        assert_eq!(
            component_of("hostrt_core::bef::reader::BefFile::verify"),
            Some("BEF reader and verifier")
        );
        assert_eq!(
            component_of(
                "<hostrt_core::allocator::arena::FixedArena as hostrt_core::allocator::HostAllocator>::allocate"
            ),
            Some("allocator")
        );
        assert_eq!(
            component_of("hostrt_core::basic_kernels::integer::ADD_I32::__hostrt_kernel"),
            Some("kernels: integer")
        );
        assert_eq!(
            component_of("hostrt_core::basic_kernels::print_defmt::PRINT_I32::__hostrt_kernel"),
            Some("kernels: print")
        );
        assert_eq!(component_of("hostrt_core::utf8::is_utf8"), Some("BEF reader and verifier"));
        assert_eq!(component_of("core::ptr::drop_in_place<u8>"), None);
        assert_eq!(outside("compiler_builtins::mem::memcpy"), "compiler builtins (memcpy, ...)");
        assert_eq!(outside("minimal::small_mem::forward"), "compiler builtins (memcpy, ...)");
        assert_eq!(outside("core::str::converts::from_utf8"), "Rust core library");
    }
}
