//! The `dsp.*` program kernels: the quantized digits model gives train.py's integer
//! reference classes on every kernel table, a layer gives a hand-computed answer, and bad
//! operands or attributes are error values naming the kernel that poison only their
//! dependents.
#![cfg(feature = "kernels")]

use std::sync::OnceLock;

use hostrt_core::allocator::{FailAfter, FixedArena};
use hostrt_core::basic_kernels::register_basic_kernels;
use hostrt_core::executor::{Program, Results};
use hostrt_core::kernel::KernelEntry;
use hostrt_core::tensor::DenseHostTensor;
use hostrt_core::tensor_kernels::register_tensor_kernels;
use hostrt_core::{
    Allocator, ConcurrentWorkQueue, ErrorCode, HostAllocator, HostContext, KernelRegistry,
    SingleThreadedWorkQueue,
};
use hostrt_dsp::kernels::{DSP_KERNELS, KERNELS, PORTABLE_KERNELS};
use hostrt_std::{AlignedBytes, leaked_arena};

const DIGITS_Q8: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/firmware/programs/digits_q8.mlir");

fn arena() -> Allocator {
    static A: OnceLock<Allocator> = OnceLock::new();
    *A.get_or_init(|| leaked_arena(16 << 20).unwrap().1)
}

/// Compiles `text` and runs `name` with the basic and tensor kernels and `dsp` on a
/// single-threaded host, with `args` results of other functions of the program.
fn run(text: &str, dsp: &[KernelEntry], calls: &[&str]) -> Vec<Results> {
    let bef = AlignedBytes::new(&hostrt_compiler::compile("dsp.mlir", text, Default::default()).unwrap());
    let mut registry: KernelRegistry<1024> = KernelRegistry::new();
    register_basic_kernels(&mut registry).unwrap();
    register_tensor_kernels(&mut registry).unwrap();
    registry.add_entries(dsp).unwrap();
    let queue = SingleThreadedWorkQueue::new();
    let host = HostContext::new(arena(), &queue);
    let program = Program::load(bef.as_bytes(), &registry, arena()).unwrap();
    let mut out: Vec<Results> = Vec::new();
    for name in calls {
        // Each call takes the first result of the previous one, if any.
        let args: Vec<_> = out.last().map(|r| vec![r[0].clone()]).unwrap_or_default();
        out.push(program.call(&host, name, &args).unwrap());
    }
    out
}

fn i32s(r: &Results, i: usize) -> Vec<i32> {
    r.get::<DenseHostTensor>(i).unwrap().read::<i32>().unwrap().to_vec()
}

fn i8s(r: &Results, i: usize) -> Vec<i8> {
    r.get::<DenseHostTensor>(i).unwrap().read::<i8>().unwrap().to_vec()
}

#[test]
fn quantized_digits_give_the_integer_reference_classes_on_every_table() {
    let text = std::fs::read_to_string(DIGITS_Q8).unwrap();
    let reference: Vec<i32> = text
        .lines()
        .find_map(|l| l.strip_prefix("// reference classes: "))
        .expect("train.py writes the reference classes")
        .split(' ')
        .map(|c| c.parse().unwrap())
        .collect();
    assert_eq!(reference.len(), 360);
    for table in [KERNELS, PORTABLE_KERNELS, DSP_KERNELS] {
        let results = run(&text, table, &["images", "classify"]);
        assert_eq!(i32s(&results[1], 0), reference);
    }
}

const T: &str = "!tfrt_tensor.tensor";

fn consts() -> String {
    // x = [[1, 2], [-3, 4]], w = [[3, 4], [-1, 0]], bias = [2, 10]
    [
        "  %x = \"tfrt_dht.const_dense_tensor\"() { value = dense<[[1, 2], [-3, 4]]> : tensor<2x2xi8> } : () -> !tfrt_tensor.tensor\n",
        "  %w = \"tfrt_dht.const_dense_tensor\"() { value = dense<[[3, 4], [-1, 0]]> : tensor<2x2xi8> } : () -> !tfrt_tensor.tensor\n",
        "  %b = \"tfrt_dht.const_dense_tensor\"() { value = dense<[2, 10]> : tensor<2xi32> } : () -> !tfrt_tensor.tensor\n",
        "  %f = \"tfrt_dht.const_dense_tensor\"() { value = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32> } : () -> !tfrt_tensor.tensor\n",
    ]
    .concat()
}

/// A `dsp.fully_connected.i8` line with `attrs` (in name order).
fn fc(name: &str, operands: &str, attrs: &str) -> String {
    format!("  %{name} = \"dsp.fully_connected.i8\"({operands}) {{ {attrs} }} : ({T}, {T}, {T}) -> {T}\n")
}

/// multiplier 2^30 with shift 0 is a scale of 0.5.
const HALF: &str = "act_max = 127 : i32, act_min = -128 : i32, input_offset = 1 : i32, multipliers = [1073741824 : i32, 1073741824 : i32], output_offset = -1 : i32, shifts = [0 : i32, 0 : i32]";

#[test]
fn a_layer_gives_the_hand_computed_answer() {
    let text = format!(
        "func.func @f() -> ({T}, {T}) {{\n{}{}  %c = \"dsp.argmax.i8\"(%y) : ({T}) -> {T}\n  tfrt.return %y, %c : {T}, {T}\n}}\n",
        consts(),
        fc("y", "%x, %w, %b", HALF)
    );
    for table in [KERNELS, PORTABLE_KERNELS, DSP_KERNELS] {
        let r = run(&text, table, &["f"]);
        // Input offset 1: rows [2, 3] and [-2, 5].
        // Row 0: 2*3 + 3*4 + 2 = 20 -> 10 - 1 = 9; 2*-1 + 10 = 8 -> 4 - 1 = 3.
        // Row 1: -2*3 + 5*4 + 2 = 16 -> 8 - 1 = 7; -2*-1 + 10 = 12 -> 6 - 1 = 5.
        assert_eq!(i8s(&r[0], 0), [9, 3, 7, 5]);
        assert_eq!(i32s(&r[0], 1), [0, 0]);
    }
}

#[test]
fn bad_operands_are_errors_naming_the_kernel_and_poison_only_their_dependents() {
    let cases = [
        (fc("y", "%f, %w, %b", HALF), "the input must be a rank-2 i8 tensor, got f32 [2, 2]"),
        (fc("y", "%x, %b, %b", HALF), "the weights must be a rank-2 i8 tensor"),
        (fc("y", "%x, %w, %w", HALF), "the bias must be a rank-1 i32 tensor"),
        (
            fc("y", "%x, %w, %b", &HALF.replace("[1073741824 : i32, 1073741824 : i32]", "[1 : i32]")),
            "multiplier: expected 2 elements, got 1",
        ),
        (
            fc(
                "y",
                "%x, %w, %b",
                &HALF.replace("act_max = 127 : i32, act_min = -128", "act_max = 0 : i32, act_min = 127"),
            ),
            "invalid parameter",
        ),
        (
            fc(
                "y",
                "%x, %w, %b",
                &HALF.replace("shifts = [0 : i32, 0 : i32]", "shifts = [0 : i32, 99 : i32]"),
            ),
            "invalid parameter",
        ),
        (
            fc("y", "%x, %w, %b", &HALF.replace("input_offset = 1", "input_offset = 1000")),
            "invalid parameter",
        ),
        (format!("  %y = \"dsp.argmax.i8\"(%b) : ({T}) -> {T}\n"), "dsp.argmax.i8: the input must be"),
    ];
    for (line, message) in cases {
        // %z depends on the failed %y; %ok does not.
        let rest = fc("ok", "%x, %w, %b", HALF);
        let text = format!(
            "func.func @f() -> ({T}, {T}, {T}) {{\n{}{line}  %z = \"dsp.argmax.i8\"(%y) : ({T}) -> {T}\n{rest}  tfrt.return %y, %z, %ok : {T}, {T}, {T}\n}}\n",
            consts(),
        );
        let r = run(&text, KERNELS, &["f"]).remove(0);
        let e = r.get::<DenseHostTensor>(0).expect_err(&line);
        assert_eq!(e.code, ErrorCode::InvalidArgument, "{line}");
        assert!(e.message().contains(message), "{line}: {}", e.message());
        assert!(e.message().starts_with("dsp."), "{}", e.message());
        assert!(r.get::<DenseHostTensor>(1).is_err(), "{line}: the dependent is poisoned");
        assert_eq!(i8s(&r, 2), [9, 3, 7, 5], "{line}: the independent layer runs");
    }
}

fn load<'r>(text: &str, registry: &'r mut KernelRegistry<512>) -> Program<'r> {
    register_basic_kernels(registry).unwrap();
    register_tensor_kernels(registry).unwrap();
    registry.add_entries(KERNELS).unwrap();
    let bef = AlignedBytes::new(&hostrt_compiler::compile("dsp.mlir", text, Default::default()).unwrap());
    Program::load(Box::leak(Box::new(bef)).as_bytes(), registry, arena()).unwrap()
}

#[test]
fn refused_allocations_are_resource_exhausted_and_everything_comes_back() {
    let text = format!(
        "func.func @f() -> {T} {{\n{}{}  tfrt.return %y : {T}\n}}\n",
        consts(),
        fc("y", "%x, %w, %b", HALF)
    );
    let mut registry = KernelRegistry::new();
    let program = load(&text, &mut registry);
    let (backing, _) = leaked_arena(1 << 20).unwrap();
    // Refuse the k-th allocation of the call and every later one, for every k up to a run
    // that succeeds.
    for k in 0.. {
        let faulty: &'static FailAfter<&FixedArena> = Box::leak(Box::new(FailAfter::new(backing, k)));
        let alloc = Allocator::register(faulty).unwrap();
        let queue = SingleThreadedWorkQueue::new();
        let done = {
            let host = HostContext::new(alloc, &queue);
            let r = program.call(&host, "f", &[]);
            queue.quiesce();
            match &r {
                Ok(r) => match r.get::<DenseHostTensor>(0) {
                    Ok(y) => y.read::<i8>().unwrap()[..] == [9, 3, 7, 5],
                    Err(e) => {
                        assert_eq!(e.code, ErrorCode::ResourceExhausted, "#{k}: {}", e.message());
                        false
                    }
                },
                Err(e) => {
                    assert_eq!(e.code(), ErrorCode::ResourceExhausted, "#{k}: {e}");
                    false
                }
            }
        };
        assert_eq!(faulty.live(), 0, "allocations refused from #{k}: blocks never returned");
        alloc.unregister().unwrap();
        if done {
            break;
        }
    }
}

#[test]
fn a_result_that_does_not_fit_is_an_error_at_the_layer() {
    // 16 KiB of input rows, then a 16 KiB result: some arena size fits the input and
    // the error value but not the result.
    let x = format!(
        "  %x = \"tfrt_dht.create_uninitialized_tensor.i8.2\"() {{ shape = [8192 : i64, 2 : i64] }} : () -> {T}\n"
    );
    let text = format!(
        "func.func @f() -> {T} {{\n{}{x}{}  tfrt.return %y : {T}\n}}\n",
        consts().replacen("  %x", "  %x0", 1),
        fc("y", "%x, %w, %b", HALF)
    );
    let mut registry = KernelRegistry::new();
    let program = load(&text, &mut registry);
    let mut at_layer = false;
    for kib in 16..48 {
        let (backing, alloc) = leaked_arena(kib << 10).unwrap();
        let queue = SingleThreadedWorkQueue::new();
        let host = HostContext::new(alloc, &queue);
        let Ok(r) = program.call(&host, "f", &[]) else { continue };
        match r.get::<DenseHostTensor>(0) {
            Ok(y) => {
                assert_eq!(y.shape().dims(), [8192, 2]);
                break;
            }
            // The input's own kernel says "Cannot allocate tensor" (TFRT's text, INTERNAL).
            Err(e) if e.message().starts_with("dsp.") => {
                assert_eq!(e.code, ErrorCode::ResourceExhausted, "{}", e.message());
                assert_eq!(e.message(), "dsp.fully_connected.i8: cannot allocate the result tensor");
                at_layer = true;
            }
            Err(e) => assert!(
                e.message() == "Cannot allocate tensor" || e.code == ErrorCode::ResourceExhausted,
                "{}",
                e.message()
            ),
        }
        drop(r);
        queue.quiesce();
        drop(host); // gives back the frame block it keeps for the next call
        assert_eq!(backing.stats().unwrap_or_default().in_use, 0);
    }
    assert!(at_layer, "no arena size failed at the layer");
}
