//! Writer → verifying reader → decoder → writer on hand-built programs (independent of the
//! text parser).

use hostrt_compiler::bef::{WriteOptions, decode, write, write_with};
use hostrt_core::KernelRegistry;
use hostrt_core::bef::BefFile;
use hostrt_core::bef::format::NONE;
use hostrt_core::executor::Program;
use hostrt_std::AlignedBytes;
use hostrt_testing::{sample_module as sample, scratch, t};

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

#[test]
fn program_load_reports_an_unknown_kernel_as_the_reader_does() {
    // `Program` resolves each name once itself (not through `BefFile::load`'s check): the
    // error must still name the kernel, the offset of its name record and its first use.
    let bytes = AlignedBytes::new(&write(&sample(), None).unwrap());
    let registry: KernelRegistry = KernelRegistry::new();
    let from_reader = BefFile::load(bytes.as_bytes(), &registry, scratch()).unwrap_err();
    let from_program = Program::load(bytes.as_bytes(), &registry, scratch()).unwrap_err();
    assert_eq!(from_program.to_string(), from_reader.to_string());
    assert_eq!(from_program.offset, from_reader.offset);
    assert!(from_program.offset > 0, "the offset of the name record, not the file start");
}

#[test]
fn stripped_locations_leave_the_program_and_no_location() {
    let options = WriteOptions { streams: true, locations: false, ..Default::default() };
    let with = write(&sample(), None).unwrap();
    let bytes = write_with(&sample(), None, options).unwrap();
    assert!(bytes.len() < with.len(), "{} bytes stripped, {} with locations", bytes.len(), with.len());
    let aligned = AlignedBytes::new(&bytes);
    let file = BefFile::load_unresolved(aligned.as_bytes(), scratch()).expect("valid BEF");
    for i in 0..file.num_functions() as u32 {
        let f = file.function(i).unwrap();
        assert_eq!(f.record().location, NONE, "function {i}");
        assert!(f.kernels().iter().all(|k| k.location == NONE), "kernels of function {i}");
    }
    // The same program otherwise: decoding and writing it again with locations stripped
    // gives the same bytes, and the error for an unknown kernel names no position.
    let again = write_with(&decode(&file).unwrap(), None, options).unwrap();
    assert_eq!(bytes, again);
    let registry: KernelRegistry = KernelRegistry::new();
    let err = BefFile::load(aligned.as_bytes(), &registry, scratch()).unwrap_err();
    assert!(err.location.is_none());
    assert!(err.to_string().contains("unknown kernel 'tfrt.constant.i32'"), "{err}");
    assert!(!err.to_string().contains("hand.mlir"), "{err}");
}
