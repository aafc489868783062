//! What the kernels need from an operating system: sleeping, clocks, thread numbers and a
//! little randomness. Without the `std` feature sleeps return at once and clocks read zero.

use core::fmt;
use core::sync::atomic::{AtomicU64, Ordering};

/// Sleep for `us` microseconds (no-op without `std`).
pub(crate) fn sleep_us(us: u64) {
    #[cfg(feature = "std")]
    std::thread::sleep(std::time::Duration::from_micros(us));
    #[cfg(not(feature = "std"))]
    let _ = us;
}

/// Sleep a random 1–10 ms, like TFRT's `SleepForRandomDuration`.
pub(crate) fn sleep_random_duration() {
    sleep_us(1000 * (1 + random() % 10));
}

/// A pseudo-random number (splitmix64 over a process-wide counter, seeded from the clock).
pub(crate) fn random() -> u64 {
    static STATE: AtomicU64 = AtomicU64::new(0);
    const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut s = STATE.load(Ordering::Relaxed);
    if s == 0 {
        let seed = wall_clock_ns() | 1;
        let _ = STATE.compare_exchange(0, seed, Ordering::Relaxed, Ordering::Relaxed);
    }
    s = STATE.fetch_add(GAMMA, Ordering::Relaxed).wrapping_add(GAMMA);
    let mut z = s;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Nanoseconds since the Unix epoch (0 without `std`).
pub(crate) fn wall_clock_ns() -> u64 {
    #[cfg(feature = "std")]
    {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }
    #[cfg(not(feature = "std"))]
    0
}

/// A monotonic clock in nanoseconds, from an arbitrary origin (0 without `std`).
pub(crate) fn monotonic_ns() -> u64 {
    #[cfg(feature = "std")]
    {
        static ORIGIN: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        let origin = *ORIGIN.get_or_init(std::time::Instant::now);
        u64::try_from(origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
    #[cfg(not(feature = "std"))]
    0
}

/// CPU time consumed by the process, in nanoseconds. On Linux this reads `utime + stime`
/// from `/proc/self/stat` (clock ticks of 1/100 s, Linux's `USER_HZ`); elsewhere, and when
/// that fails, the monotonic clock stands in (as if the process had been busy throughout).
pub(crate) fn process_cpu_ns() -> u64 {
    #[cfg(all(feature = "std", target_os = "linux"))]
    if let Some(ns) = linux_cpu_ns() {
        return ns;
    }
    monotonic_ns()
}

#[cfg(all(feature = "std", target_os = "linux"))]
fn linux_cpu_ns() -> Option<u64> {
    const TICKS_PER_SEC: u64 = 100;
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) may contain spaces; fields after its ')' are plain.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace();
    // `rest` starts at field 3 (state); utime and stime are fields 14 and 15.
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some((utime + stime) * (1_000_000_000 / TICKS_PER_SEC))
}

/// A small number per OS thread, assigned on the thread's first call from a process-wide
/// counter starting at 0 (always 0 without `std`).
pub(crate) fn thread_index() -> i32 {
    #[cfg(feature = "std")]
    {
        use core::sync::atomic::AtomicI32;
        static NEXT: AtomicI32 = AtomicI32::new(0);
        std::thread_local! {
            static INDEX: i32 = NEXT.fetch_add(1, Ordering::Relaxed);
        }
        INDEX.with(|i| *i)
    }
    #[cfg(not(feature = "std"))]
    0
}

/// Log severities (TFRT_LOG's INFO, WARNING, ERROR).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    /// `I`
    Info,
    /// `W`
    Warning,
    /// `E`
    Error,
}

/// The prefix of a TFRT log line:
/// `<S> <YYYY-MM-DD HH:MM:SS>.<µs> <thread> <file>:<line>] `. The time is UTC (the
/// reference prints local time; tests match only the message).
#[derive(Clone, Copy, Debug)]
pub struct LogPrefix {
    /// Severity letter.
    pub severity: Severity,
    /// Source file base name the reference logs from.
    pub file: &'static str,
    /// Source line the reference logs from.
    pub line: u32,
}

impl fmt::Display for LogPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self.severity {
            Severity::Info => 'I',
            Severity::Warning => 'W',
            Severity::Error => 'E',
        };
        let ns = wall_clock_ns();
        let secs = ns / 1_000_000_000;
        let micros = (ns % 1_000_000_000) / 1000;
        let (y, m, d) = civil_from_days((secs / 86_400) as i64);
        let t = secs % 86_400;
        write!(
            f,
            "{s} {y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}.{micros:06} {} {}:{}] ",
            t / 3600,
            (t / 60) % 60,
            t % 60,
            thread_index(),
            self.file,
            self.line
        )
    }
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian calendar
/// (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
    }

    #[test]
    fn random_durations_stay_in_range() {
        for _ in 0..100 {
            let ms = 1 + random() % 10;
            assert!((1..=10).contains(&ms));
        }
        assert_ne!(random(), random());
    }

    #[cfg(feature = "std")]
    #[test]
    fn thread_indices_are_per_thread_and_stable() {
        let here = thread_index();
        assert_eq!(thread_index(), here);
        let there = std::thread::spawn(thread_index).join().unwrap();
        assert_ne!(here, there);
    }

    #[cfg(feature = "std")]
    #[test]
    fn log_prefix_shape() {
        use alloc::string::ToString;
        let p = LogPrefix { severity: Severity::Warning, file: "x.cc", line: 7 }.to_string();
        assert!(p.starts_with("W 20"), "{p}");
        assert!(p.ends_with(" x.cc:7] "), "{p}");
        let time = p.split(' ').nth(2).unwrap();
        assert_eq!(time.len(), "HH:MM:SS.uuuuuu".len(), "{p}");
    }
}
