//! Writer → verifying reader → decoder → writer on hand-built programs (independent of the
//! text parser).

mod common;

use common::{sample, scratch, t};
use hostrt_compiler::bef::{decode, write};
use hostrt_core::KernelRegistry;
use hostrt_core::bef::BefFile;
use hostrt_std::AlignedBytes;

#[test]
fn write_load_decode_write_is_byte_identical() {
    let bytes = write(&sample(), None).unwrap();
    let aligned = AlignedBytes::new(&bytes);
    let file = BefFile::load_unresolved(aligned.as_bytes(), scratch()).expect("valid BEF");
    assert_eq!(file.num_functions(), 5, "three named functions and two regions");
    let main = file.function_by_name("main").unwrap();
    assert_eq!(main.kernels().len(), 2);
    assert_eq!(main.registers()[0].num_uses, 2, "%x is used twice by the add");
    let again = write(&decode(&file).unwrap(), None).unwrap();
    assert_eq!(bytes, again);
}

#[test]
fn unknown_kernel_names_kernel_and_location() {
    let bytes = AlignedBytes::new(&write(&sample(), None).unwrap());
    let registry: KernelRegistry = KernelRegistry::new();
    let err = BefFile::load(bytes.as_bytes(), &registry, scratch()).unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with("hand.mlir:2:3: unknown kernel 'tfrt.constant.i32'"), "{text}");
}

#[test]
fn type_errors_are_located() {
    let mut m = sample();
    m.funcs[0].results = vec![t("f32")];
    let e = write(&m, None).unwrap_err();
    assert_eq!(e.message, "type of return operand 0 ('i32') doesn't match function result type ('f32')");
    let mut m = sample();
    m.funcs[0].body.as_mut().unwrap().ops[1].operands[0].name = "nope".into();
    let e = write(&m, None).unwrap_err();
    assert!(e.message.contains("use of undeclared SSA value name '%nope'"), "{e}");
}
