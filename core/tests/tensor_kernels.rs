//! The tensor kernels end to end: MLIR text → BEF → the test driver, with the basic and
//! tensor kernels registered, on a fixed arena that must be empty again afterwards. Error
//! texts are TFRT's where TFRT defines them; cases TFRT leaves undefined
//! (wrong dtype or rank, out-of-range reads) are errors here, never a crash.

use std::sync::Mutex;

use hostrt_compiler::compile;
use hostrt_core::basic_kernels::register_basic_kernels;
use hostrt_core::driver::{DriverOptions, run_functions};
use hostrt_core::executor::Program;
use hostrt_core::tensor_kernels::register_tensor_kernels;
use hostrt_core::{
    ConcurrentWorkQueue, Diagnostic, HostAllocator, HostContext, KernelRegistry, SingleThreadedWorkQueue,
};
use hostrt_std::{AlignedBytes, leaked_arena};

fn registry() -> KernelRegistry<1024> {
    let mut r = KernelRegistry::new();
    register_basic_kernels(&mut r).unwrap();
    register_tensor_kernels(&mut r).unwrap();
    r
}

/// Run every function of `text` on an arena of `arena` bytes: the output (driver lines,
/// prints, `runtime error: MSG` lines) and the bytes still allocated afterwards. `None` when
/// the program does not even load in that arena.
fn run_in(text: &str, arena: usize) -> Option<(String, usize)> {
    run_loaded(text, arena, false).map(|(out, in_use, _)| (out, in_use))
}

/// [`run_in`], loading the program with `Program::load_static` (from leaked bytes) when
/// `static_bytes`; also returns the arena's peak.
fn run_loaded(text: &str, arena: usize, static_bytes: bool) -> Option<(String, usize, usize)> {
    let bef =
        AlignedBytes::new(&compile("t.mlir", text, Default::default()).unwrap_or_else(|e| panic!("{e}")));
    let (arena, alloc) = leaked_arena(arena).unwrap();
    let reg = registry();
    let queue = SingleThreadedWorkQueue::new();
    let output = Mutex::new(String::new());
    let sink = |a: std::fmt::Arguments<'_>| output.lock().unwrap().push_str(&a.to_string());
    let diag = |d: &Diagnostic| output.lock().unwrap().push_str(&format!("runtime error: {}\n", d.message()));
    let loaded = {
        let host = HostContext::new(alloc, &queue).with_output(&sink).with_diagnostics(&diag);
        let program = if static_bytes {
            Program::load_static(Box::leak(Box::new(bef)).as_bytes(), &reg, alloc)
        } else {
            Program::load(bef.as_bytes(), &reg, alloc)
        };
        match program {
            Ok(program) => {
                run_functions(&program, &host, &DriverOptions::default(), &mut |a| sink(a)).unwrap();
                queue.quiesce();
                true
            }
            Err(_) => false,
        }
    };
    let stats = arena.stats().unwrap();
    if stats.in_use == 0 {
        alloc.unregister().unwrap();
    }
    loaded.then(|| (output.into_inner().unwrap(), stats.in_use, stats.peak))
}

/// Run on a roomy arena; nothing may stay allocated. Returns the printed lines (in order,
/// `--- Running` banners dropped), then the errors sorted (the executor orders an error
/// after the prints of other streams as it likes).
fn run(text: &str) -> Vec<String> {
    let (out, in_use) = run_in(text, 1 << 20).expect("loads");
    assert_eq!(in_use, 0, "the run leaked; output:\n{out}");
    let lines = out.lines().filter(|l| !l.starts_with("--- "));
    let (mut errors, prints): (Vec<&str>, Vec<&str>) = lines.partition(|l| l.starts_with("runtime error: "));
    errors.sort();
    prints.into_iter().chain(errors).map(str::to_owned).collect()
}

#[test]
fn shapes_build_compare_convert_and_fail_clearly() {
    let out = run(r#"
func.func @f() {
  %ch = tfrt.new.chain
  %a = ts.build_shape [2 : i64, 0 : i64, 3 : i64]
  %b = ts.build_shape []
  %eq = ts.equal_shape %a, %b
  %ch1 = tfrt.print.i1 %eq, %ch
  %n = ts.get_num_elements %a
  %ch2 = tfrt.print.i64 %n, %ch1
  %i = tfrt.constant.i32 2
  %d = ts.get_dimension %a, %i
  %ch3 = tfrt.print.i64 %d, %ch2
  %f = ts.as_fixed_rank_shape.3 %a
  %ch4 = ts.print_fixed_rank_shape.3 %f, %ch3
  %bad = tfrt.constant.i32 3
  %e = ts.get_dimension %a, %bad
  %g = ts.as_fixed_rank_shape.2 %a
  %p = ts.build_partial_shape [-1 : i64, 4 : i64, -1 : i64]
  %s = ts.to_shape %p
  %u = ts.build_unranked_partial_shape
  %s2 = ts.to_shape %u
  %ch5 = ts.print_partial_shape %p, %ch4
  tfrt.return
}
"#);
    assert_eq!(
        out,
        [
            "int1 = 0",
            "int64 = 0",
            "int64 = 3",
            "fixed_rank_shape = []",
            "partial_tensor_shape = [-1, 4, -1]",
            "runtime error: Unknown dimensions at following indices = [0, 2]",
            "runtime error: Unknown rank",
            "runtime error: dimension index 3 is out of range for shape [2, 0, 3]",
            "runtime error: shape [2, 0, 3] does not have rank 2",
        ]
    );
}

#[test]
fn tensors_of_every_family_are_made_filled_set_and_printed() {
    let out = run(r#"
func.func @f() {
  %ch = tfrt.new.chain
  %b = "tfrt_dht.create_uninitialized_tensor.bool.1"() { shape = [3 : i64] } : () -> !tfrt_tensor.tensor
  %ch1 = "tfrt_dht.set_tensor_with_constant_values.bool"(%b, %ch) { values = [true, false, true] } : (!tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  %ch2 = tfrt_dht.print_tensor %b, %ch1
  %u = "tfrt_dht.create_uninitialized_tensor.ui8.2"() { shape = [1 : i64, 2 : i64] } : () -> !tfrt_tensor.tensor
  %ch3 = "tfrt_dht.fill_tensor_with_constant.ui8"(%u, %ch2) { value = -1 : i8 } : (!tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  %ch4 = tfrt_dht.print_tensor %u, %ch3
  %c = "tfrt_dht.create_uninitialized_tensor.complex64.1"() { shape = [2 : i64] } : () -> !tfrt_tensor.tensor
  %ch5 = "tfrt_dht.set_tensor_with_constant_values.complex64"(%c, %ch4) { values = [1.0 : f32, -2.0 : f32, 0.5 : f32, 0.0 : f32] } : (!tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  %ch6 = tfrt_dht.print_tensor %c, %ch5
  %ch7 = "tfrt_dht.set_tensor_with_constant_values.complex64"(%c, %ch6) { values = [1.0 : f32] } : (!tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  %i = "tfrt_dht.create_uninitialized_tensor.i32.1"() { shape = [20 : i64] } : () -> !tfrt_tensor.tensor
  %ch8 = "tfrt_dht.fill_tensor_with_constant.i32"(%i, %ch6) { value = 7 : i32 } : (!tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  %ch9 = tfrt_dht.print_tensor %i, %ch8
  %ch10 = "tfrt_dht.set_tensor_with_constant_values.i32"(%i, %ch9) { values = [1 : i32, 2 : i32] } : (!tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  %one = tfrt.constant.i32 1
  %ch11 = "tfrt_dht.set_tensor_with_values.i32"(%i, %ch9, %one) : (!tfrt_tensor.tensor, !tfrt.chain, i32) -> !tfrt.chain
  %ch12 = "tfrt_dht.print_tensor_shape"(%i, %ch9) : (!tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  %f = "tfrt_dht.create_uninitialized_tensor.f32.0"() { shape = [] } : () -> !tfrt_tensor.tensor
  %ch13 = "tfrt_dht.fill_tensor_with_constant.i32"(%f, %ch12) { value = 7 : i32 } : (!tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  tfrt.return
}
"#);
    assert_eq!(
        out,
        [
            "DenseHostTensor dtype = i1, shape = [3], values = [1, 0, 1]",
            "DenseHostTensor dtype = u8, shape = [1, 2], values = [255, 255]",
            "DenseHostTensor dtype = complex64, shape = [2], values = [(1.000000e+00,-2.000000e+00), (5.000000e-01,0.000000e+00)]",
            "DenseHostTensor dtype = i32, shape = [20], values = [7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, ... ]",
            "[20]",
            "runtime error: Incorrect number of real and imaginary values for the complex tensor: 1, but expected 4",
            "runtime error: Incorrect number of values for the tensor: 1, but expected 20",
            "runtime error: Incorrect number of values for the tensor: 2, but expected 20",
            "runtime error: tensor of dtype f32 used as i32",
        ]
    );
}

#[test]
fn buffers_share_slice_and_make_tensors() {
    let out = run(r#"
func.func @f() {
  %ch = tfrt.new.chain
  %size = tfrt.constant.i64 16
  %align = tfrt.constant.i64 8
  %buf = tfrt_dht.allocate_buffer %size, %align
  %off = tfrt.constant.i64 8
  %eight = tfrt.constant.i64 8
  %tail = tfrt_dht.get_buffer_slice %buf, %off, %eight
  %shape = ts.build_shape [2 : i64]
  %t, %ch1 = tfrt_dht.make_tensor.i32 %tail, %shape, %ch
  %ch2 = "tfrt_dht.set_tensor_with_constant_values.i32"(%t, %ch1) { values = [5 : i32, 6 : i32] } : (!tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  %whole = ts.build_shape [4 : i64]
  %all, %ch3 = tfrt_dht.make_tensor.i32 %buf, %whole, %ch2
  %ch4 = tfrt_dht.print_tensor %all, %ch3
  %bad, %ch5 = "tfrt_dht.make_tensor.f64"(%tail, %whole, %ch4) : (!ht.host_buffer, !ts.shape, !tfrt.chain) -> (!tfrt_tensor.tensor, !tfrt.chain)
  %far = tfrt.constant.i64 12
  %out = tfrt_dht.get_buffer_slice %buf, %far, %eight
  %huge = tfrt.constant.i64 1000000000000
  %no = tfrt_dht.allocate_buffer %huge, %align
  tfrt.return
}
"#);
    assert_eq!(
        out,
        [
            "DenseHostTensor dtype = i32, shape = [4], values = [0, 0, 5, 6]",
            "runtime error: Cannot allocate host buffer",
            "runtime error: buffer slice [12, +8) is outside a buffer of 16 bytes",
            "runtime error: dht.make_tensor failed: buffer_size (8) is not equal to the number of elements in shape ([4]) times element size (8)",
        ]
    );
}

/// A rank-2 f32 tensor `%name` of `dims` holding `values`, chained after `%ch`.
fn f32_tensor(name: &str, dims: [i64; 2], values: &[f32]) -> String {
    let values: Vec<String> = values.iter().map(|v| format!("{v:?} : f32")).collect();
    format!(
        "  %{name} = \"tfrt_dht.create_uninitialized_tensor.f32.2\"() {{ shape = [{} : i64, {} : i64] }} : () -> !tfrt_tensor.tensor\n  \
         %ch_{name} = \"tfrt_dht.set_tensor_with_constant_values.f32\"(%{name}, %ch) {{ values = [{}] }} : (!tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain\n",
        dims[0],
        dims[1],
        values.join(", ")
    )
}

#[test]
fn model_kernels_compute_check_shapes_and_work_in_place() {
    let mut text = String::from("func.func @f() {\n  %ch = tfrt.new.chain\n");
    text += &f32_tensor("a", [2, 3], &[1.0, -2.0, 3.0, 4.0, 5.0, -6.0]);
    text += &f32_tensor("b", [3, 2], &[1.0, 0.0, 0.0, 1.0, 1.0, 1.0]);
    text += &f32_tensor("c", [2, 2], &[0.0; 4]);
    text += &f32_tensor("x", [2, 2], &[-1.0, 1.0, 2.0, 2.0]);
    text += r#"
  %ch0 = tfrt.merge.chains %ch_a, %ch_b, %ch_c, %ch_x : !tfrt.chain, !tfrt.chain, !tfrt.chain, !tfrt.chain
  %one = tfrt.constant.f32 1.0
  %zero = tfrt.constant.f32 0.0
  %ch1 = "tfrt_test.matmul.f32.2"(%one, %a, %b, %zero, %c, %ch0) : (f32, !tfrt_tensor.tensor, !tfrt_tensor.tensor, f32, !tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  %ch2 = tfrt_dht.print_tensor %c, %ch1
  %ch3 = "tfrt_test.add_inplace.f32"(%c, %c, %ch2) : (!tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  %ch4 = "tfrt_test.relu_inplace.f32"(%c, %ch3) : (!tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  %ch5 = tfrt_dht.print_tensor %c, %ch4
  %am = "tfrt_test.argmax.f32.2"(%x, %ch5) : (!tfrt_tensor.tensor, !tfrt.chain) -> !tfrt_tensor.tensor
  %ch6 = tfrt_dht.print_tensor %am, %ch5
  %ch7 = "tfrt_test.matmul.f32.2"(%one, %a, %a, %zero, %c, %ch6) : (f32, !tfrt_tensor.tensor, !tfrt_tensor.tensor, f32, !tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  %ch8 = "tfrt_test.relu.f32"(%a, %c, %ch6) : (!tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  %ch9 = "tfrt_test.relu.i32"(%c, %c, %ch6) : (!tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  %s = ts.build_shape [3 : i64, 2 : i64]
  %bc = "tfrt_test.broadcast.f32.2"(%a, %s, %ch6) : (!tfrt_tensor.tensor, !ts.shape, !tfrt.chain) -> !tfrt_tensor.tensor
  %ch10 = "tfrt_test.matmul.f32.2"(%one, %a, %b, %zero, %a, %ch6) : (f32, !tfrt_tensor.tensor, !tfrt_tensor.tensor, f32, !tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  tfrt.return
}
"#;
    assert_eq!(
        run(&text),
        [
            "DenseHostTensor dtype = f32, shape = [2, 2], values = [4.000000e+00, 1.000000e+00, -2.000000e+00, -1.000000e+00]",
            "DenseHostTensor dtype = f32, shape = [2, 2], values = [8.000000e+00, 2.000000e+00, 0.000000e+00, 0.000000e+00]",
            "DenseHostTensor dtype = i32, shape = [2], values = [1, 0]",
            "runtime error: broadcast needs a rank-1 input, got [2, 3]",
            "runtime error: matmul shapes do not agree: [2, 3] x [2, 3] into [2, 2]",
            "runtime error: matmul shapes do not agree: [2, 3] x [3, 2] into [2, 3]",
            "runtime error: tensor of dtype f32 used as i32",
            "runtime error: tensor shape mismatch: [2, 3] vs. [2, 2]",
        ]
    );
}

#[test]
fn resnet_kernels_pool_pad_transpose_and_reduce() {
    let mut text = String::from("func.func @f() {\n  %ch = tfrt.new.chain\n");
    text += &f32_tensor("a", [2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    text += &f32_tensor("t", [3, 2], &[0.0; 6]);
    text += &f32_tensor("m", [1, 3], &[0.0; 3]);
    text += r#"
  %ch0 = tfrt.merge.chains %ch_a, %ch_t, %ch_m : !tfrt.chain, !tfrt.chain, !tfrt.chain
  %ch1 = "tfrt_test.tensor_transpose.f32"(%a, %t, %ch0) : (!tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  %ch2 = tfrt_dht.print_tensor %t, %ch1
  %ch3 = "tfrt_test.tensor_transpose.f32"(%a, %a, %ch2) : (!tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  %v = "tfrt_dht.create_uninitialized_tensor.f32.1"() { shape = [3 : i64] } : () -> !tfrt_tensor.tensor
  %ch4 = "tfrt_test.mean_axis_zero.f32"(%a, %v, %ch2) : (!tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  %ch5 = tfrt_dht.print_tensor %v, %ch4
  %ch6 = "tfrt_test.softmax_inplace.f32"(%v, %ch5) : (!tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  %ch7 = tfrt_dht.print_tensor %v, %ch6
  %in = "tfrt_dht.create_uninitialized_tensor.f32.4"() { shape = [1 : i64, 3 : i64, 3 : i64, 1 : i64] } : () -> !tfrt_tensor.tensor
  %ch8 = "tfrt_dht.set_tensor_with_constant_values.f32"(%in, %ch7) { values = [1.0 : f32, 2.0 : f32, 3.0 : f32, 4.0 : f32, 9.0 : f32, 6.0 : f32, 7.0 : f32, 8.0 : f32, 5.0 : f32] } : (!tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  %out = "tfrt_dht.create_uninitialized_tensor.f32.4"() { shape = [1 : i64, 2 : i64, 2 : i64, 1 : i64] } : () -> !tfrt_tensor.tensor
  %ch9 = "tfrt_test.max_pooling_2d.f32"(%in, %out, %ch8) { padding = "same", pool_size = [2 : i32, 2 : i32], strides = [2 : i32, 2 : i32] } : (!tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  %ch10 = tfrt_dht.print_tensor %out, %ch9
  %pad = "tfrt_dht.create_uninitialized_tensor.f32.4"() { shape = [1 : i64, 4 : i64, 4 : i64, 1 : i64] } : () -> !tfrt_tensor.tensor
  %ch11 = "tfrt_test.zero_padding.f32"(%out, %pad, %ch10) { padding = [1 : i32, 1 : i32] } : (!tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  %ch12 = tfrt_dht.print_tensor %pad, %ch11
  %ch13 = "tfrt_test.max_pooling_2d.f32"(%in, %out, %ch12) { padding = "valid", pool_size = [2 : i32, 2 : i32], strides = [2 : i32, 2 : i32] } : (!tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  %g = "tfrt_dht.create_uninitialized_tensor.f32.2"() { shape = [1 : i64, 1 : i64] } : () -> !tfrt_tensor.tensor
  %ch14 = "tfrt_test.global_average_pooling.f32"(%in, %g, %ch12) : (!tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  %ch15 = tfrt_dht.print_tensor %g, %ch14
  %ch16 = "tfrt_test.global_average_pooling.f32"(%a, %g, %ch15) : (!tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  tfrt.return
}
"#;
    assert_eq!(
        run(&text),
        [
            "DenseHostTensor dtype = f32, shape = [3, 2], values = [1.000000e+00, 4.000000e+00, 2.000000e+00, 5.000000e+00, 3.000000e+00, 6.000000e+00]",
            "DenseHostTensor dtype = f32, shape = [3], values = [2.500000e+00, 3.500000e+00, 4.500000e+00]",
            "DenseHostTensor dtype = f32, shape = [3], values = [9.003057e-02, 2.447285e-01, 6.652410e-01]",
            "DenseHostTensor dtype = f32, shape = [1, 2, 2, 1], values = [9.000000e+00, 6.000000e+00, 8.000000e+00, 5.000000e+00]",
            "DenseHostTensor dtype = f32, shape = [1, 4, 4, 1], values = [0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 9.000000e+00, 6.000000e+00, 0.000000e+00, 0.000000e+00, 8.000000e+00, 5.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00]",
            "DenseHostTensor dtype = f32, shape = [1, 1], values = [5.000000e+00]",
            "runtime error: MaxPool2D output shape [1, 2, 2, 1] does not match the expected output shape [1, 1, 1, 1]",
            "runtime error: TensorTranspose output shape [2, 3] does not match the input shape [2, 3]",
            "runtime error: Unsupported reduction ranks: input_rank=2 reduction_rank=2",
        ]
    );
}

/// Every arena size from too small to load up to roomy: the program either does not load
/// or runs to the end with error results, and never leaks or panics.
#[test]
fn exhaustion_inside_tensor_kernels_is_an_error_and_leaks_nothing() {
    let mut text = String::from("func.func @f() {\n  %ch = tfrt.new.chain\n");
    text += &f32_tensor("a", [8, 8], &[1.5; 64]);
    text += &f32_tensor("c", [8, 8], &[0.0; 64]);
    text += r#"
  %ch0 = tfrt.merge.chains %ch_a, %ch_c : !tfrt.chain, !tfrt.chain
  %one = tfrt.constant.f32 1.0
  %ch1 = "tfrt_test.matmul.f32.2"(%one, %a, %a, %one, %c, %ch0) : (f32, !tfrt_tensor.tensor, !tfrt_tensor.tensor, f32, !tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  %am = "tfrt_test.argmax.f32.2"(%c, %ch1) : (!tfrt_tensor.tensor, !tfrt.chain) -> !tfrt_tensor.tensor
  %s = ts.build_shape [8 : i64, 8 : i64]
  %v = "tfrt_dht.create_uninitialized_tensor.f32.1"() { shape = [8 : i64] } : () -> !tfrt_tensor.tensor
  %bc = "tfrt_test.broadcast.f32.2"(%v, %s, %ch1) : (!tfrt_tensor.tensor, !ts.shape, !tfrt.chain) -> !tfrt_tensor.tensor
  %ch2 = tfrt_dht.print_tensor %am, %ch1
  tfrt.return
}
"#;
    let full = run(&text);
    assert_eq!(full, ["DenseHostTensor dtype = i32, shape = [8], values = [0, 0, 0, 0, 0, 0, 0, 0]"]);
    let (mut loaded, mut failed) = (0, 0);
    for size in (256..24 * 1024).step_by(64) {
        if let Some((out, in_use)) = run_in(&text, size) {
            assert_eq!(in_use, 0, "arena of {size} bytes leaked; output:\n{out}");
            loaded += 1;
            if out.contains("runtime error") {
                failed += 1;
                assert!(
                    out.contains("Cannot allocate")
                        || out.contains("cannot allocate")
                        || out.contains("out of memory"),
                    "{size}: {out}"
                );
            }
        }
    }
    assert!(loaded > 0 && failed > 0, "the sweep reached both loading and failing runs ({loaded}, {failed})");
}

/// A `dense` constant becomes a tensor: copied into the arena by `Program::load` (and then
/// writable), borrowed from the program's bytes by `Program::load_static` (no arena memory for
/// the data, and read-only, so a write is an error rather than a write to flash).
#[test]
fn constant_tensors_borrow_static_programs_and_are_copied_otherwise() {
    let text = r#"func.func @f() {
  %ch0 = tfrt.new.chain
  %t = "tfrt_dht.const_dense_tensor"() {value = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>} : () -> !tfrt_tensor.tensor
  %ch1 = tfrt_dht.print_tensor %t, %ch0
  %ch2 = tfrt_dht.fill_tensor_with_constant.f32 %t, %ch1 0.5 : f32
  %ch3 = tfrt_dht.print_tensor %t, %ch2
  %big = "tfrt_dht.const_dense_tensor"() {value = dense<0.25> : tensor<64x64xf32>} : () -> !tfrt_tensor.tensor
  %ch4 = "tfrt_dht.print_tensor_shape"(%big, %ch3) : (!tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  tfrt.return
}
"#;
    let lines = |out: &str| -> Vec<String> {
        out.lines().filter(|l| !l.starts_with("--- ")).map(str::to_owned).collect()
    };
    let (copied, in_use, copy_peak) = run_loaded(text, 1 << 20, false).expect("loads");
    assert_eq!(in_use, 0);
    assert_eq!(
        lines(&copied),
        [
            "DenseHostTensor dtype = f32, shape = [2, 2], values = [1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]",
            "DenseHostTensor dtype = f32, shape = [2, 2], values = [5.000000e-01, 5.000000e-01, 5.000000e-01, 5.000000e-01]",
            "[64, 64]",
        ]
    );
    let (borrowed, in_use, static_peak) = run_loaded(text, 1 << 20, true).expect("loads");
    assert_eq!(in_use, 0);
    let borrowed = lines(&borrowed);
    assert_eq!(borrowed[0], lines(&copied)[0]);
    assert!(
        borrowed
            .contains(&"runtime error: tensor buffer is read-only (it borrows constant bytes)".to_owned()),
        "{borrowed:?}"
    );
    assert!(!borrowed.iter().any(|l| l.contains("5.000000e-01")), "{borrowed:?}");
    // The 16 KiB constant is in the arena when copied, not when borrowed.
    let data = 64 * 64 * 4;
    assert!(copy_peak > data && static_peak < data, "peaks: copied {copy_peak}, static {static_peak}");
}

/// `eigen.conv2d.*` and `eigen.batch_norm.f32` on a 3×3 image: a 2×2 filter whose channel 0
/// sums the window and channel 1 subtracts the bottom-right tap from the bottom-left one.
#[test]
fn convolution_kernels_compute_fuse_and_check_shapes() {
    let text = r#"func.func @f() {
  %ch0 = tfrt.new.chain
  %x = "tfrt_dht.const_dense_tensor"() {value = dense<[[[[1.0], [2.0], [3.0]], [[4.0], [5.0], [6.0]], [[7.0], [8.0], [9.0]]]]> : tensor<1x3x3x1xf32>} : () -> !tfrt_tensor.tensor
  %w = "tfrt_dht.const_dense_tensor"() {value = dense<[[[[1.0, 0.0]], [[1.0, 0.0]]], [[[1.0, 1.0]], [[1.0, -1.0]]]]> : tensor<2x2x1x2xf32>} : () -> !tfrt_tensor.tensor
  %bias = "tfrt_dht.const_dense_tensor"() {value = dense<[10.0, 20.0]> : tensor<2xf32>} : () -> !tfrt_tensor.tensor
  %scale = "tfrt_dht.const_dense_tensor"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> !tfrt_tensor.tensor
  %offset = "tfrt_dht.const_dense_tensor"() {value = dense<[0.0, 1.0]> : tensor<2xf32>} : () -> !tfrt_tensor.tensor
  %mean = "tfrt_dht.const_dense_tensor"() {value = dense<[12.0, 0.0]> : tensor<2xf32>} : () -> !tfrt_tensor.tensor
  %var = "tfrt_dht.const_dense_tensor"() {value = dense<[3.0, 0.0]> : tensor<2xf32>} : () -> !tfrt_tensor.tensor
  %three = "tfrt_dht.const_dense_tensor"() {value = dense<1.0> : tensor<3xf32>} : () -> !tfrt_tensor.tensor
  %flat = "tfrt_dht.const_dense_tensor"() {value = dense<1.0> : tensor<3x3xf32>} : () -> !tfrt_tensor.tensor
  %o = "tfrt_dht.create_uninitialized_tensor.f32.4"() { shape = [1 : i64, 2 : i64, 2 : i64, 2 : i64] } : () -> !tfrt_tensor.tensor
  %ch1 = "eigen.conv2d.f32"(%x, %w, %o, %ch0) {padding = "valid", strides = [1 : i64, 1 : i64]} : (!tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  %ch2 = tfrt_dht.print_tensor %o, %ch1
  %ch3 = "eigen.batch_norm.f32"(%o, %scale, %offset, %mean, %var, %ch2) {epsilon = 1.0 : f32} : (!tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  %ch4 = tfrt_dht.print_tensor %o, %ch3
  %ch5 = "eigen.conv2d.f32"(%x, %w, %o, %ch4) {padding = "SAME", strides = [2 : i64, 2 : i64]} : (!tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  %ch6 = tfrt_dht.print_tensor %o, %ch5
  %ch7 = "eigen.conv2d.bias.f32"(%x, %w, %bias, %o, %ch6) {padding = "valid", strides = [1 : i64, 1 : i64]} : (!tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  %ch8 = tfrt_dht.print_tensor %o, %ch7
  %ch9 = "eigen.conv2d.batch_norm.f32"(%x, %w, %scale, %offset, %mean, %var, %o, %ch8) {epsilon = 1.0 : f32, padding = "valid", strides = [1 : i64, 1 : i64]} : (!tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  %ch10 = tfrt_dht.print_tensor %o, %ch9
  %ch11 = "eigen.conv2d.batch_norm.relu.f32"(%x, %w, %scale, %offset, %mean, %var, %o, %ch10) {epsilon = 1.0 : f32, padding = "valid", strides = [1 : i64, 1 : i64]} : (!tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  %ch12 = tfrt_dht.print_tensor %o, %ch11
  %e1 = "eigen.conv2d.f32"(%x, %w, %o, %ch12) {padding = "full", strides = [1 : i64, 1 : i64]} : (!tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  %e2 = "eigen.conv2d.f32"(%x, %o, %o, %ch12) {padding = "valid", strides = [1 : i64, 1 : i64]} : (!tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  %e3 = "eigen.conv2d.f32"(%x, %w, %x, %ch12) {padding = "valid", strides = [1 : i64, 1 : i64]} : (!tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  %e4 = "eigen.conv2d.f32"(%x, %w, %o, %ch12) {padding = "valid", strides = [1 : i64, 0 : i64]} : (!tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  %e5 = "eigen.conv2d.f32"(%x, %w, %o, %ch12) {padding = "valid", strides = [1 : i64, 1 : i64, 1 : i64]} : (!tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  %e6 = "eigen.conv2d.bias.f32"(%x, %w, %three, %o, %ch12) {padding = "valid", strides = [1 : i64, 1 : i64]} : (!tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  %e7 = "eigen.batch_norm.f32"(%o, %scale, %three, %mean, %var, %ch12) {epsilon = 1.0 : f32} : (!tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  %e8 = "eigen.conv2d.f32"(%flat, %w, %o, %ch12) {padding = "valid", strides = [1 : i64, 1 : i64]} : (!tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  %e9 = "eigen.conv2d.batch_norm.f32"(%x, %w, %scale, %offset, %three, %var, %o, %ch12) {epsilon = 1.0 : f32, padding = "valid", strides = [1 : i64, 1 : i64]} : (!tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  %e10 = "eigen.conv2d.f32"(%x, %w, %w, %ch12) {padding = "valid", strides = [2 : i64, 2 : i64]} : (!tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  tfrt.return
}
"#;
    let t = |v: &str| format!("DenseHostTensor dtype = f32, shape = [1, 2, 2, 2], values = [{v}]");
    assert_eq!(
        run(text),
        [
            t("1.200000e+01, -1.000000e+00, 1.600000e+01, -1.000000e+00, 2.400000e+01, -1.000000e+00, 2.800000e+01, -1.000000e+00"),
            t("0.000000e+00, -1.000000e+00, 2.000000e+00, -1.000000e+00, 6.000000e+00, -1.000000e+00, 8.000000e+00, -1.000000e+00"),
            t("1.200000e+01, -1.000000e+00, 9.000000e+00, 6.000000e+00, 1.500000e+01, 0.000000e+00, 9.000000e+00, 0.000000e+00"),
            t("2.200000e+01, 1.900000e+01, 2.600000e+01, 1.900000e+01, 3.400000e+01, 1.900000e+01, 3.800000e+01, 1.900000e+01"),
            t("0.000000e+00, -1.000000e+00, 2.000000e+00, -1.000000e+00, 6.000000e+00, -1.000000e+00, 8.000000e+00, -1.000000e+00"),
            t("0.000000e+00, 0.000000e+00, 2.000000e+00, 0.000000e+00, 6.000000e+00, 0.000000e+00, 8.000000e+00, 0.000000e+00"),
            "runtime error: BatchNorm parameter dimension does not match the input channel number 2".to_owned(),
            "runtime error: Conv2D expects 2 strides, got 3".to_owned(),
            "runtime error: Conv2D input expects a rank-4 tensor, got [3, 3]".to_owned(),
            "runtime error: Dimensions does not match: bias shape is 3 and output channels size is 2".to_owned(),
            "runtime error: Dimensions does not match: estimated mean shape is 3 and output channels size is 2".to_owned(),
            "runtime error: Dimensions does not match: input channels is 1 and kernel depth is 2".to_owned(),
            "runtime error: Stride must be > 0, but got 0".to_owned(),
            "runtime error: Tensor shapes do not match: output tensor shape is [1, 3, 3, 1] and computed output shape is [1, 2, 2, 2]".to_owned(),
            "runtime error: Tensor shapes do not match: output tensor shape is [2, 2, 1, 2] and computed output shape is [1, 1, 1, 2]".to_owned(),
            "runtime error: Unknown padding type full".to_owned(),
        ]
    );
}

/// A convolution in arenas from too small to roomy: when its im2col scratch does not fit,
/// the kernel convolves directly and prints the same tensor; otherwise the run fails with an
/// allocation error and leaks nothing.
#[test]
fn convolution_without_room_for_scratch_computes_directly() {
    // A hex blob: little-endian f32 bytes.
    let values = |n: usize, k: usize| -> String {
        let bytes = (0..n).flat_map(|i| (((i * k) % 11) as f32 - 5.0).to_le_bytes());
        bytes.map(|b| format!("{b:02X}")).collect()
    };
    let text = format!(
        r#"func.func @f() {{
  %ch0 = tfrt.new.chain
  %x = "tfrt_dht.const_dense_tensor"() {{value = dense<"0x{}"> : tensor<1x8x8x4xf32>}} : () -> !tfrt_tensor.tensor
  %w = "tfrt_dht.const_dense_tensor"() {{value = dense<"0x{}"> : tensor<3x3x4x3xf32>}} : () -> !tfrt_tensor.tensor
  %o = "tfrt_dht.create_uninitialized_tensor.f32.4"() {{ shape = [1 : i64, 4 : i64, 4 : i64, 3 : i64] }} : () -> !tfrt_tensor.tensor
  %ch1 = "eigen.conv2d.f32"(%x, %w, %o, %ch0) {{padding = "same", strides = [2 : i64, 2 : i64]}} : (!tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  %ch2 = tfrt_dht.print_tensor %o, %ch1
  tfrt.return
}}
"#,
        values(256, 3),
        values(108, 7)
    );
    let roomy = run(&text);
    assert_eq!(roomy.len(), 1, "{roomy:?}");
    let scratch = 16 * 36 * 4;
    let (mut direct, mut failed) = (0, 0);
    for size in (1024..16 * 1024).step_by(64) {
        let Some((out, in_use, peak)) = run_loaded(&text, size, false) else { continue };
        assert_eq!(in_use, 0, "arena of {size} bytes leaked; output:\n{out}");
        if out.contains("runtime error") {
            failed += 1;
            assert!(out.contains("Cannot allocate") || out.contains("out of memory"), "{size}: {out}");
        } else {
            assert!(out.contains(&roomy[0]), "{size}: {out}");
            direct += usize::from(size < peak + scratch);
        }
    }
    assert!(direct > 0 && failed > 0, "runs without scratch: {direct}, failed runs: {failed}");
}
