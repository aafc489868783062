//! Prepared state (docs/execution.md): a kernel registered with a prepare function is called
//! with the block it made at load and no attributes; a use it declines to prepare, or any
//! use when the program is loaded without the feature, is called with its attributes, and
//! both give the same answer.

use hostrt_core::allocator::HostAllocator;
use hostrt_core::executor::Program;
use hostrt_core::kernel::{KernelEntry, KernelFrame, PrepareInput, Prepared, Span};
use hostrt_core::{HostContext, KernelRegistry, SingleThreadedWorkQueue};
use hostrt_std::{AlignedBytes, leaked_arena};

/// `test.poly`: `x * factor + sum(table)`, from attributes `factor` (i32) and `table` (an i32
/// array), in name order.
const PROGRAM: &str = r#"
func.func @main(%x: i32) -> (i32, i32, i32) {
  %a = "test.poly"(%x) {factor = 3 : i32, table = [1 : i32, 2 : i32, 4 : i32]} : (i32) -> i32
  %b = "test.poly"(%a) {factor = -2 : i32, table = [10 : i32]} : (i32) -> i32
  %c = "test.poly"(%b) {factor = 5 : i32, table = [100 : i32, 200 : i32]} : (i32) -> i32
  tfrt.return %a, %b, %c : i32, i32, i32
}
"#;

/// The record `prepare` keeps: the factor and where the table lies.
fn prepare(input: &PrepareInput<'_>) -> Option<Prepared> {
    let [factor, table] = input.attrs() else { return None };
    let factor = factor.get::<i32>()?;
    // Declines negative factors, so that one use runs unprepared.
    if factor < 0 {
        return None;
    }
    let span = input.span_of(bytes_of(table.get_array::<i32>()?))?;
    let mut record = [0u8; 12];
    record[..4].copy_from_slice(&factor.to_le_bytes());
    record[4..8].copy_from_slice(&span.start.to_le_bytes());
    record[8..].copy_from_slice(&span.len.to_le_bytes());
    Prepared::new(&record)
}

fn bytes_of(v: &[i32]) -> &[u8] {
    // SAFETY: an i32 slice's memory is 4 initialised bytes per element.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast(), size_of_val(v)) }
}

/// The kernel: from the prepared record when there is one (it must then see no
/// attributes), else from its attributes; prepared calls are counted in `PREPARED_CALLS`.
fn poly(frame: &KernelFrame<'_>) {
    let x = *frame.arg(0).and_then(|v| v.get::<i32>()).unwrap();
    let (factor, table): (i32, Vec<i32>) = match frame.prepared() {
        Some(p) => {
            assert!(frame.attrs().is_empty(), "a prepared use is called without attributes");
            let b = p.bytes();
            let word = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
            let table = frame.span(Span { start: word(4), len: word(8) }).unwrap();
            PREPARED_CALLS.with(|c| c.set(c.get() + 1));
            (word(0) as i32, table.chunks(4).map(|c| i32::from_le_bytes(c.try_into().unwrap())).collect())
        }
        None => {
            let a = frame.attrs();
            (a[0].get::<i32>().unwrap(), a[1].get_array::<i32>().unwrap().to_vec())
        }
    };
    frame.emplace_result(0, x * factor + table.iter().sum::<i32>());
}

thread_local! {
    static PREPARED_CALLS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

fn run(entry: KernelEntry) -> (Vec<i32>, Vec<bool>, u32) {
    let bef = AlignedBytes::new(&hostrt_compiler::compile("p.mlir", PROGRAM, Default::default()).unwrap());
    let mut reg: KernelRegistry<8> = KernelRegistry::new();
    reg.add_entries(&[entry]).unwrap();
    let (arena, alloc) = leaked_arena(1 << 16).unwrap();
    let out = {
        let queue = SingleThreadedWorkQueue::new();
        let host = HostContext::new(alloc, &queue);
        let program = Program::load(bef.as_bytes(), &reg, alloc).unwrap();
        let prepared = (0..3).map(|k| program.is_prepared("main", k).unwrap()).collect();
        PREPARED_CALLS.with(|c| c.set(0));
        let x = host.make_available(7i32).unwrap().into_rc();
        let results = program.call(&host, "main", &[x]).unwrap();
        let values = (0..3).map(|i| *results.get::<i32>(i).unwrap()).collect();
        (values, prepared, PREPARED_CALLS.with(|c| c.get()))
    };
    let s = arena.stats().unwrap();
    assert_eq!(s.live_allocations, 0, "the prepared table is given back with the program: {s:?}");
    out
}

#[test]
fn prepared_uses_get_their_block_and_the_same_answers() {
    // 7 * 3 + 7 = 28; 28 * -2 + 10 = -46; -46 * 5 + 300 = 70.
    let want = vec![28, -46, 70];
    let (plain, prepared, calls) = run(KernelEntry::strict("test.poly", poly));
    assert_eq!(plain, want);
    assert_eq!((prepared, calls), (vec![false; 3], 0), "no prepare function, no prepared state");
    let (values, prepared, calls) = run(KernelEntry::strict("test.poly", poly).with_prepare(prepare));
    assert_eq!(values, want);
    assert_eq!(prepared, vec![true, false, true], "the use with a negative factor is declined");
    assert_eq!(calls, 2);
}
