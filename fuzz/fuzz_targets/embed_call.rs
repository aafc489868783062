//! The embedding C API (include/hostrt/hostrt.h) under arbitrary input, as an app would
//! call it. The first byte picks the mode: arbitrary bytes loaded as a program (copied or
//! borrowed) and, when one loads, its functions listed; or calls of a fixed program with
//! arguments of arbitrary types, dtypes, shapes and values (tensors given as arguments
//! where scalars are expected, shapes that do not fit the kernels, handles that are not
//! tensors). Every failure must be a status; afterwards the host must be destroyable with
//! its arena empty (nothing leaked, also after exhaustion: the arena is small on purpose).
#![no_main]

use std::ffi::CStr;
use std::ptr::{null, null_mut};
use std::sync::OnceLock;

use hostrt_c::embed::*;
use libfuzzer_sys::fuzz_target;

/// Functions with scalar, tensor and chain parameters over the tensor kernels: shapes that
/// do not fit are errors of their kernels (no loops: every call ends quickly).
const PROGRAM: &str = r#"func.func @divmod(%a: i32, %b: i32) -> (i32, i32) {
  %q, %r = tfrt.div.i32 %a, %b
  tfrt.return %q, %r : i32, i32
}

func.func @same(%x: !t.tensor) -> !t.tensor {
  tfrt.return %x : !t.tensor
}

func.func @matmul(%a: !t.tensor, %b: !t.tensor, %c: !t.tensor, %ch: !tfrt.chain) -> !tfrt.chain {
  %one = tfrt.constant.f32 1.0
  %ch1 = "tfrt_test.matmul.f32.2"(%one, %a, %b, %one, %c, %ch) : (f32, !t.tensor, !t.tensor, f32, !t.tensor, !tfrt.chain) -> !tfrt.chain
  tfrt.return %ch1 : !tfrt.chain
}

func.func @classify(%x: !t.tensor, %ch: !tfrt.chain) -> !t.tensor {
  %ch1 = "tfrt_test.relu_inplace.f32"(%x, %ch) : (!t.tensor, !tfrt.chain) -> !tfrt.chain
  %c = "tfrt_test.argmax.f32.2"(%x, %ch1) : (!t.tensor, !tfrt.chain) -> !t.tensor
  tfrt.return %c : !t.tensor
}

func.func @mixed(%f: f32, %d: f64, %l: i64, %b: i1, %x: !t.tensor) -> (f64, i64, i1, !t.tensor) {
  tfrt.return %d, %l, %b, %x : f64, i64, i1, !t.tensor
}
"#;

const FUNCTIONS: [&CStr; 6] = [c"divmod", c"same", c"matmul", c"classify", c"mixed", c"missing"];

fn bef() -> &'static [u8] {
    static BEF: OnceLock<Vec<u8>> = OnceLock::new();
    BEF.get_or_init(|| {
        hostrt_compiler::compile("fuzz.mlir", PROGRAM, Default::default()).expect("the program compiles")
    })
}

/// Reads the fuzzer's bytes front to back (zeros once they run out).
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn byte(&mut self) -> u8 {
        let (b, rest) = self.0.split_first().map_or((0, &[][..]), |(b, r)| (*b, r));
        self.0 = rest;
        b
    }
}

/// A tensor of an arbitrary dtype and shape (small dims), zeroed or filled from the input.
fn tensor(host: *const hostrt_host, input: &mut Input<'_>, status: *mut hostrt_status) -> *mut hostrt_tensor {
    const DTYPES: [hostrt_dtype; 8] = [
        HOSTRT_DTYPE_F32,
        HOSTRT_DTYPE_I32,
        HOSTRT_DTYPE_F64,
        HOSTRT_DTYPE_I8,
        HOSTRT_DTYPE_BOOL,
        HOSTRT_DTYPE_I64,
        7,
        0,
    ];
    let dtype = DTYPES[usize::from(input.byte() % 8)];
    let rank = usize::from(input.byte() % 4);
    let dims: Vec<i64> = (0..rank).map(|_| i64::from(input.byte() % 9) - 1).collect();
    let fill = input.byte();
    let data: Vec<u8> = (0..4096).map(|i| fill.wrapping_mul(i as u8)).collect();
    // SAFETY: `dims` holds `rank` values; `data` is readable for any length asked below.
    unsafe {
        if fill % 2 == 0 {
            hostrt_tensor_new(host, dtype, dims.as_ptr(), rank, null(), 0, status)
        } else {
            let n: i64 = dims.iter().product::<i64>().max(0) * 4;
            let len = (n as usize).min(data.len());
            hostrt_tensor_new(host, dtype, dims.as_ptr(), rank, data.as_ptr().cast(), len, status)
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input(data);
    let mode = input.byte();
    // SAFETY: every handle below comes from the API and is destroyed once; pointers to
    // locals outlive the calls that get them.
    unsafe {
        let status = hostrt_status_new();
        let mut options = std::mem::zeroed();
        hostrt_host_options_init(&mut options);
        options.arena_bytes = 64 * 1024;
        let host = hostrt_host_new(&options, status);
        assert!(!host.is_null());
        if mode % 2 == 0 {
            // Arbitrary bytes as a program, copied or borrowed (8-aligned or not).
            let copy: Vec<u64> = input
                .0
                .chunks(8)
                .map(|c| {
                    let mut w = [0u8; 8];
                    w[..c.len()].copy_from_slice(c);
                    u64::from_le_bytes(w)
                })
                .collect();
            let (bytes, len) = if mode % 4 == 0 {
                (input.0.as_ptr().cast(), input.0.len())
            } else {
                (copy.as_ptr().cast::<u8>().add(usize::from(mode >> 6) % 2), input.0.len().saturating_sub(1))
            };
            let how = if mode % 8 < 4 { HOSTRT_LOAD_COPY } else { HOSTRT_LOAD_BORROW };
            let p = hostrt_program_load(host, bytes.cast(), len, how, status);
            if p.is_null() {
                assert_ne!(hostrt_status_code(status), HOSTRT_OK);
            } else {
                for i in 0..hostrt_program_function_count(p) {
                    let name = hostrt_program_function_name(p, i);
                    let (mut a, mut r) = (0, 0);
                    hostrt_program_signature(p, name, &mut a, &mut r, status);
                }
                assert_eq!(hostrt_program_destroy(p, status), HOSTRT_OK);
            }
        } else {
            let b = bef();
            let p = hostrt_program_load(host, b.as_ptr().cast(), b.len(), HOSTRT_LOAD_COPY, status);
            assert!(!p.is_null(), "{:?}", CStr::from_ptr(hostrt_status_message(status)));
            let mut made = Vec::new();
            for _ in 0..(input.byte() % 4 + 1) {
                let function = FUNCTIONS[usize::from(input.byte()) % FUNCTIONS.len()];
                let n = usize::from(input.byte() % 7);
                let mut args = Vec::with_capacity(n);
                for _ in 0..n {
                    let kind = input.byte();
                    let mut v = hostrt_value { type_: i32::from(kind % 9), i: 0, f: 0.0, tensor: null_mut() };
                    v.i = i64::from(input.byte() as i8) * 3;
                    v.f = f64::from(input.byte() as i8) / 4.0;
                    if kind / 9 % 3 == 1 {
                        let t = tensor(host, &mut input, status);
                        made.push(t);
                        v.tensor = t;
                    } else if kind / 9 % 3 == 2 {
                        v.tensor = p.cast(); // a handle of another kind
                    }
                    args.push(v);
                }
                let fast = input.byte();
                if fast % 2 == 1 {
                    // The index fast path: index and room for results are fuzzed too; on
                    // failure nothing is left to destroy.
                    let mut index = usize::from(fast / 2 % 8);
                    if fast & 0x80 != 0 {
                        hostrt_program_function_index(p, function.as_ptr(), &mut index, status);
                    }
                    let room = usize::from(input.byte() % 4);
                    let mut out = vec![std::mem::zeroed::<hostrt_value>(); room];
                    let code = hostrt_call_into(p, index, args.as_ptr(), n, out.as_mut_ptr(), room, status);
                    if code == HOSTRT_OK {
                        made.extend(out.iter().map(|v| v.tensor));
                    }
                    continue;
                }
                let mut results = null_mut();
                let code = hostrt_call(p, function.as_ptr(), args.as_ptr(), n, &mut results, status);
                if code != HOSTRT_OK {
                    assert!(results.is_null());
                    continue;
                }
                for i in 0..hostrt_results_count(results) + 1 {
                    let mut v = std::mem::zeroed::<hostrt_value>();
                    if hostrt_results_get(results, i, &mut v, status) == HOSTRT_OK && !v.tensor.is_null() {
                        let _ = (
                            hostrt_tensor_rank(v.tensor),
                            hostrt_tensor_dims(v.tensor),
                            hostrt_tensor_data(v.tensor),
                        );
                        made.push(v.tensor);
                    }
                }
                assert_eq!(hostrt_results_destroy(results, status), HOSTRT_OK);
            }
            for t in made.into_iter().filter(|t| !t.is_null()) {
                assert_eq!(hostrt_tensor_destroy(t, status), HOSTRT_OK);
            }
            assert_eq!(hostrt_program_destroy(p, status), HOSTRT_OK);
        }
        let mut stats = hostrt_allocator_stats::default();
        hostrt_host_allocator_stats(host, &mut stats, status);
        assert_eq!(
            (stats.in_use, stats.live_allocations),
            (0, 0),
            "the arena holds nothing once all is destroyed"
        );
        assert_eq!(hostrt_host_destroy(host, status), HOSTRT_OK);
        hostrt_status_destroy(status);
    }
});
