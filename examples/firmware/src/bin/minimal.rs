//! The smallest useful hostrt firmware, for the size report: the BEF reader (the program was
//! verified when the image was built, so only its checksum and kernel names are checked on
//! the device: `Program::load_preverified`), the executor, the five kernels the embedded fib
//! program uses (a `KernelTable` sorted at compile time, so the linker drops every other
//! kernel and the image has no registration code) and a fixed arena; it reports only
//! through the exit status (no printing, no float formatting). Its program keeps no source
//! locations, and it links `targets/small_mem.rs`'s flash-lean `memcpy` family instead of
//! the compiler-builtins' (docs/porting.md, item 8).
//! Program: `programs/fib_quiet.mlir`.
#![no_std]
#![no_main]

#[path = "../../../../targets/interrupts.rs"]
mod interrupts;
#[path = "../../../../targets/small_mem.rs"]
mod small_mem;

use cortex_m_rt::entry;
use cortex_m_semihosting::debug;
use hostrt_core::allocator::HostAllocator;
use hostrt_core::basic_kernels::{control, integer};
use hostrt_core::executor::Program;
use hostrt_core::kernel::KernelTable;
use hostrt_core::{Allocator, FixedArena, HostContext, SingleThreadedWorkQueue};

static ARENA: FixedArena = FixedArena::empty();
static QUEUE: SingleThreadedWorkQueue = SingleThreadedWorkQueue::new();
/// The five kernels fib uses, sorted at compile time: no registration code in the image.
static KERNELS: KernelTable<5> = KernelTable::new([
    integer::CONSTANT_I32,
    integer::ADD_I32,
    integer::LESSEQUAL_I32,
    control::IF,
    control::CALL,
]);

/// Run `fib_driver` (which returns fib(5) and fib(12)) and check the results. Errors are
/// only counted (`.ok()?`): formatting them would link `Display` code this image leaves out.
fn run(alloc: Allocator) -> Option<bool> {
    let host = HostContext::new(alloc, &QUEUE);
    let fib = hostrt_core::include_bef!(concat!(env!("OUT_DIR"), "/fib_quiet.bef"));
    // SAFETY: build.rs verified these bytes with this hostrt-core's reader before embedding
    // them, and flash is trusted as the code is (the load's checksum check still refuses a
    // flipped bit).
    let program = unsafe { Program::load_preverified(fib, &KERNELS, &host) }.ok()?;
    let results = program.call(&host, "fib_driver", &[]).ok()?;
    Some(results[0].get::<i32>() == Some(&5) && results[1].get::<i32>() == Some(&144))
}

/// A panic exits with a failure status without formatting its message: a formatting panic
/// handler would link `core::fmt`, which this image leaves out.
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    debug::exit(debug::EXIT_FAILURE);
    loop {
        cortex_m::asm::wfi();
    }
}

#[entry]
fn main() -> ! {
    let ok = hostrt_core::static_buffer!(8 * 1024).is_some_and(|b| ARENA.init(b).is_ok())
        && Allocator::register(&ARENA).is_ok_and(|alloc| run(alloc) == Some(true))
        && ARENA.stats().is_some_and(|s| s.in_use == 0);
    debug::exit(if ok { debug::EXIT_SUCCESS } else { debug::EXIT_FAILURE });
    loop {
        cortex_m::asm::wfi();
    }
}
