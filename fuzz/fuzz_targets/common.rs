//! Shared by the fuzz targets: a scratch allocator, the load → decode → print check, the
//! text → BEF → text → BEF round trip, byte edits of a valid file, and for the targets that
//! run programs, their arena and call budget.

use hostrt_compiler::bef::{decode, write};
use hostrt_compiler::text::{PrintOptions, parse, print};
use hostrt_core::Allocator;
use hostrt_core::bef::BefFile;
use hostrt_std::AlignedBytes;

/// One arena for the verifier's scratch memory, shared by every run.
pub fn scratch() -> Allocator {
    static A: std::sync::OnceLock<Allocator> = std::sync::OnceLock::new();
    *A.get_or_init(|| hostrt_std::leaked_arena(4 << 20).unwrap().1)
}

/// `valid` with the edits `data` encodes: each 3 bytes, an offset (2 bytes, wrapped to the
/// file) and the byte written there.
#[allow(dead_code)]
pub fn apply_edits(valid: &[u8], data: &[u8]) -> Vec<u8> {
    let mut bytes = valid.to_vec();
    for edit in data.chunks_exact(3) {
        let at = usize::from(u16::from_le_bytes([edit[0], edit[1]])) % bytes.len();
        bytes[at] = edit[2];
    }
    bytes
}

/// One arena for running programs, reused by every run so the allocator table never fills.
#[allow(dead_code)]
pub fn run_arena() -> (&'static hostrt_core::allocator::FixedArena, Allocator) {
    static A: std::sync::OnceLock<(&'static hostrt_core::allocator::FixedArena, Allocator)> =
        std::sync::OnceLock::new();
    *A.get_or_init(|| hostrt_std::leaked_arena(256 << 10).unwrap())
}

/// Calls and branches the current run may still make: recursion may never exhaust the
/// arena, so work is bounded by counting them.
#[allow(dead_code)]
pub static BUDGET: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Spend one call of the budget; `false` once it is spent.
#[allow(dead_code)]
pub fn spend() -> bool {
    use std::sync::atomic::Ordering::Relaxed;
    BUDGET.fetch_update(Relaxed, Relaxed, |b| b.checked_sub(1)).is_ok()
}

/// `entry`, failing once the run's call budget ([`BUDGET`]) is spent. (Without the
/// signature: the wrapper reads nothing itself, and the wrapped kernels are written against
/// the frame.)
#[allow(unused_macros)]
macro_rules! budgeted {
    ($entry:expr) => {{
        fn run(frame: &hostrt_core::KernelFrame<'_>) {
            if !crate::common::spend() {
                return frame.report_error(hostrt_core::Diagnostic::internal("fuzz call budget spent"));
            }
            ($entry.func())(frame)
        }
        if $entry.is_non_strict() {
            hostrt_core::kernel::KernelEntry::non_strict($entry.name, run)
        } else {
            hostrt_core::kernel::KernelEntry::strict($entry.name, run)
        }
    }};
}
#[allow(unused_imports)]
pub(crate) use budgeted;

/// Load arbitrary bytes (re-sealed, so the checksum does not stop them at the door);
/// whatever loads must decode, print and parse again without panicking, and when it
/// re-compiles, the result must load too.
#[allow(dead_code)]
pub fn check_bef(bytes: &[u8]) {
    let mut sealed = bytes.to_vec();
    hostrt_core::bef::format::seal(&mut sealed);
    let aligned = AlignedBytes::new(&sealed);
    let Ok(file) = BefFile::load_unresolved(aligned.as_bytes(), scratch()) else { return };
    let Ok(module) = decode(&file) else { return };
    let text = print(&module, &PrintOptions { locations: true });
    if let Ok(reparsed) = parse("fuzz.mlir", &text)
        && let Ok(again) = write(&reparsed, None)
    {
        let a = AlignedBytes::new(&again);
        assert!(BefFile::load_unresolved(a.as_bytes(), scratch()).is_ok(), "writer produced an invalid file");
    }
}

/// Whatever of `text` parses and compiles must survive compile → load → disassemble → parse →
/// compile with identical bytes.
#[allow(dead_code)]
pub fn check_round_trip(text: &str) {
    let Ok(module) = parse("fuzz.mlir", text) else { return };
    let Ok(bef) = write(&module, None) else { return };
    let aligned = AlignedBytes::new(&bef);
    let file = BefFile::load_unresolved(aligned.as_bytes(), scratch()).expect("compiled file loads");
    let decoded = decode(&file).expect("compiled file decodes");
    let dis = print(&decoded, &PrintOptions { locations: true });
    let reparsed =
        parse("fuzz.mlir", &dis).unwrap_or_else(|e| panic!("disassembly does not parse: {e}\n{dis}"));
    let again = write(&reparsed, None).unwrap_or_else(|e| panic!("disassembly does not compile: {e}\n{dis}"));
    assert!(bef == again, "text -> BEF -> text -> BEF is not byte-identical\n{dis}");
}
