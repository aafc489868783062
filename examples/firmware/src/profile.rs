//! Instructions per layer, for the model images built with the `layer-profile` feature: each
//! kernel of the image's table is wrapped ([`wrap`]) in a function that counts the
//! instructions (QEMU `-icount`; core cycles on hardware) of every call and adds them to the
//! row of the call's location, which for an imported model names the layer
//! (`op#12 CONV_2D:conv1/Relu`). [`print`] writes the table in program order.

use core::cell::RefCell;

use cortex_m::interrupt::{Mutex, free};
use hostrt_core::kernel::{KernelEntry, KernelFn, KernelFrame};

use crate::instructions::{self, Counter};

/// Most rows (layers) the table keeps; calls past them count in the last row.
const ROWS: usize = 64;
/// Bytes of a layer's name kept.
const NAME: usize = 48;

#[derive(Clone, Copy)]
struct Row {
    kernel: &'static str,
    name: [u8; NAME],
    name_len: usize,
    line: u32,
    ticks: u64,
}

const EMPTY: Row = Row { kernel: "", name: [0; NAME], name_len: 0, line: 0, ticks: 0 };

struct Table {
    rows: [Row; ROWS],
    used: usize,
}

static TABLE: Mutex<RefCell<Table>> = Mutex::new(RefCell::new(Table { rows: [EMPTY; ROWS], used: 0 }));

/// Adds `ticks` to the row of the kernel `kernel` at `frame`'s location.
fn record(kernel: &'static str, frame: &KernelFrame<'_>, ticks: u64) {
    let (file, line) = frame.location().map_or(("", 0), |l| (l.file, l.line));
    let name = &file.as_bytes()[..file.len().min(NAME)];
    free(|cs| {
        let mut t = TABLE.borrow(cs).borrow_mut();
        let used = t.used;
        let at = t.rows[..used]
            .iter()
            .position(|r| r.kernel == kernel && r.line == line && &r.name[..r.name_len] == name);
        let at = match at {
            Some(at) => at,
            None if used < ROWS => {
                let mut row = Row { kernel, line, name_len: name.len(), ..EMPTY };
                row.name[..name.len()].copy_from_slice(name);
                t.rows[used] = row;
                t.used += 1;
                used
            }
            None => ROWS - 1,
        };
        t.rows[at].ticks += ticks;
    });
}

/// Kernel `I` of `K`, counted.
fn timed<K: Kernels, const I: usize>(frame: &KernelFrame<'_>) {
    let entry = K::ENTRIES[I];
    let start = instructions::ticks();
    (entry.func())(frame);
    record(entry.name, frame, instructions::ticks() - start);
}

/// The kernel list of an image, for [`wrap`].
pub trait Kernels {
    const ENTRIES: &'static [KernelEntry];
}

/// Kernel `i` of `K`, counted (at most 16 kernels: an imported model calls about ten).
const fn timed_fn<K: Kernels>(i: usize) -> KernelFn {
    match i {
        0 => timed::<K, 0>,
        1 => timed::<K, 1>,
        2 => timed::<K, 2>,
        3 => timed::<K, 3>,
        4 => timed::<K, 4>,
        5 => timed::<K, 5>,
        6 => timed::<K, 6>,
        7 => timed::<K, 7>,
        8 => timed::<K, 8>,
        9 => timed::<K, 9>,
        10 => timed::<K, 10>,
        11 => timed::<K, 11>,
        12 => timed::<K, 12>,
        13 => timed::<K, 13>,
        14 => timed::<K, 14>,
        15 => timed::<K, 15>,
        _ => panic!("more than 16 kernels to profile"),
    }
}

/// `K`'s kernels, each counted per call (strict kernels only, as imported models use).
pub const fn wrap<K: Kernels, const N: usize>() -> [KernelEntry; N] {
    let mut out = [EMPTY_ENTRY; N];
    let mut i = 0;
    while i < N {
        out[i] = KernelEntry::strict(K::ENTRIES[i].name, timed_fn::<K>(i));
        i += 1;
    }
    out
}

const EMPTY_ENTRY: KernelEntry = KernelEntry::strict("", |_| {});

/// Clears the table (before the inference profiled).
pub fn reset() {
    free(|cs| TABLE.borrow(cs).borrow_mut().used = 0);
}

/// Prints the table: per layer in program order, its kernel, calls, instructions and share.
pub fn print(counter: Counter) {
    free(|cs| {
        let t = TABLE.borrow(cs).borrow();
        let rows = &t.rows[..t.used];
        let total: u64 = rows.iter().map(|r| r.ticks).sum::<u64>().max(1);
        let n = |ticks: u64| ticks * 2_000_000 / counter.ticks_per_2m.max(1);
        defmt::info!("instructions  share  kernel  layer\n");
        for r in rows {
            let name = core::str::from_utf8(&r.name[..r.name_len]).unwrap_or("?");
            let share = r.ticks * 1000 / total;
            defmt::info!(
                "{=u64}  {=u64}.{=u64}%  {=str}  {=str}\n",
                n(r.ticks),
                share / 10,
                share % 10,
                r.kernel,
                name
            );
        }
        defmt::info!("{=u64} in kernels\n", n(total));
    });
}
