//! hostrt's messages through the `log` facade, so an application on an operating system
//! routes them into its own logging (`env_logger`, logcat through `android_logger`, tracing's
//! `log` bridge), as firmware routes them through defmt (docs/porting.md, "Output without
//! core::fmt"). Give the sinks to a [`HostContext`](hostrt_core::HostContext).
//!
//! ```
//! use hostrt_core::{Allocator, HostContext, SingleThreadedWorkQueue};
//! use hostrt_std::{SystemAllocator, log_diagnostic, log_output};
//!
//! static SYSTEM: SystemAllocator = SystemAllocator::new();
//! let queue = SingleThreadedWorkQueue::new();
//! let host = HostContext::new(Allocator::register(&SYSTEM).unwrap(), &queue)
//!     .with_diagnostics(&log_diagnostic)
//!     .with_output(&log_output);
//! # drop(host);
//! ```

use std::fmt;

use hostrt_core::Diagnostic;

/// The `log` target of [`log_diagnostic`]'s records.
pub const DIAGNOSTICS_TARGET: &str = "hostrt";
/// The `log` target of [`log_output`]'s records.
pub const OUTPUT_TARGET: &str = "hostrt::print";

/// A diagnostics sink: each error a kernel reports becomes one `error` record, with target
/// [`DIAGNOSTICS_TARGET`] and the text `Diagnostic`'s `Display` writes
/// (`file:line:col: message (CODE)`).
pub fn log_diagnostic(d: &Diagnostic) {
    log::error!(target: DIAGNOSTICS_TARGET, "{d}");
}

/// An output sink for print kernels: each line they print becomes one `info` record, with
/// target [`OUTPUT_TARGET`] and the line's text without its (one) final newline.
pub fn log_output(args: fmt::Arguments<'_>) {
    if log::log_enabled!(target: OUTPUT_TARGET, log::Level::Info) {
        let line = args.to_string();
        log::info!(target: OUTPUT_TARGET, "{}", line.strip_suffix('\n').unwrap_or(&line));
    }
}
