//! Shared by the hostrt-std integration tests.

use std::time::Duration;

/// Run `f` on a thread and fail if it takes longer than `secs`: a bug must fail a test, never
/// hang it.
pub fn with_deadline(secs: u64, f: impl FnOnce() + Send + 'static) {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        f();
        let _ = tx.send(());
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(()) => {}
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => panic!("deadline of {secs} s exceeded (hang?)"),
        Err(_) => panic!("test body panicked"),
    }
}
