//! What the images that report through defmt frames share (the example, `src/main.rs`, and
//! the model images, `src/model.rs`): diagnostics as error frames and the panic handler. The
//! frames go to semihosting's stdout (`defmt-semihosting`) and `cargo xtask defmt` decodes
//! them with the image's ELF, so these images link no `core::fmt`.

use hostrt_core::Diagnostic;

/// The host's `file:line:col: runtime error: message` line, as an error frame (the decoder
/// writes it to standard error).
pub fn print_diagnostic(d: &Diagnostic) {
    match &d.location {
        Some(l) => defmt::error!("{}: runtime error: {=str}\n", l, d.message()),
        None => defmt::error!("runtime error: {=str}\n", d.message()),
    }
}

/// A panic reports where it happened and exits with a failure status. Its message is left
/// alone, and the handler is inlined into `panic_fmt` so that the message's arguments are
/// seen to be unused: otherwise the `Display` code of every panic's arguments (bounds
/// checks, `expect`) stays in the image, about 2.2 KB of `core::fmt`. rustc warns that
/// `#[inline]` is ignored on this exported symbol, yet LTO does inline it (measured: without
/// it the image links `core::fmt`); `cargo xtask size` fails if that ever changes.
#[panic_handler]
#[allow(unused_attributes)]
#[inline(always)]
fn panic(info: &core::panic::PanicInfo) -> ! {
    let l = info.location();
    panicked(l.map_or("", |l| l.file()), l.map_or(0, |l| l.line()))
}

#[inline(never)]
fn panicked(file: &str, line: u32) -> ! {
    defmt::error!("panicked at {=str}:{=u32}\n", file, line);
    crate::semihosting::exit(false)
}
