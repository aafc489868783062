//! What the firmware images share: printing through semihosting (QEMU's `-semihosting`
//! writes it to the host's stdout and stderr), running a loaded program with the test
//! driver, and ending QEMU with a status. Each image uses part of it.
#![allow(dead_code)]

use cortex_m_semihosting::{debug, heprint, hprint, hprintln};
use hostrt_core::bef::BefError;
use hostrt_core::driver::{DriverOptions, run_functions};
use hostrt_core::executor::Program;
use hostrt_core::{Diagnostic, HostContext};

/// The host's `file:line:col: runtime error: message` line, on stderr.
pub fn print_diagnostic(d: &Diagnostic) {
    match &d.location {
        Some(l) => heprint!("{}: runtime error: {}\n", l, d.message()),
        None => heprint!("runtime error: {}\n", d.message()),
    }
}

/// Run every function of a loaded program as `hostrt run` does; false if it did not load
/// or the driver failed.
pub fn run_program(loaded: Result<Program<'_>, BefError>, host: &HostContext<'_>) -> bool {
    match loaded {
        Ok(program) => {
            let mut out = |a: core::fmt::Arguments<'_>| hprint!("{}", a);
            run_functions(&program, host, &DriverOptions::default(), &mut out).is_ok()
        }
        Err(e) => {
            hprintln!("load failed: {}", e);
            false
        }
    }
}

/// End QEMU with success or failure.
pub fn exit(success: bool) -> ! {
    debug::exit(if success { debug::EXIT_SUCCESS } else { debug::EXIT_FAILURE });
    loop {
        cortex_m::asm::wfi();
    }
}
