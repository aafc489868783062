//! The verifying reader on corrupted files: one test per rule, then exhaustive truncation
//! and byte-flip sweeps that must produce errors, never panics.

use hostrt_compiler::bef::{decode, write};
use hostrt_core::bef::format::{self as f, section};
use hostrt_core::bef::{BefErrorKind as K, BefFile};
use hostrt_std::AlignedBytes;
use hostrt_testing::{sample_module as sample, scratch};

fn valid() -> Vec<u8> {
    write(&sample(), None).unwrap()
}

fn load(bytes: &[u8]) -> Result<(), K> {
    let a = AlignedBytes::new(bytes);
    BefFile::load_unresolved(a.as_bytes(), scratch()).map(|_| ()).map_err(|e| e.kind)
}

fn rd(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn wr(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// (directory entry offset, section offset, size) of section `id`.
fn section_of(b: &[u8], id: u32) -> (usize, usize, usize) {
    let n = rd(b, 12) as usize;
    (0..n)
        .map(|i| f::HEADER_SIZE + i * f::SECTION_ENTRY_SIZE)
        .find(|at| rd(b, *at) == id)
        .map(|at| (at, rd(b, at + 4) as usize, rd(b, at + 8) as usize))
        .unwrap()
}

/// Apply `edit` to a valid file, re-seal its checksum (so the rule under test, not the
/// checksum, must catch it) and return the load error kind.
fn corrupt(edit: impl FnOnce(&mut Vec<u8>)) -> K {
    let mut b = valid();
    edit(&mut b);
    f::seal(&mut b);
    load(&b).expect_err("corrupted file must be rejected")
}

/// The rejection after rewriting the word at `at(file)` from its old value to `new(old)`.
fn corrupt_word(at: impl FnOnce(&[u8]) -> usize, new: impl FnOnce(u32) -> u32) -> K {
    corrupt(|b| {
        let at = at(b);
        let old = rd(b, at);
        wr(b, at, new(old))
    })
}

#[test]
fn valid_file_loads() {
    assert_eq!(load(&valid()), Ok(()));
}

#[test]
fn header_rules() {
    assert_eq!(load(&valid()[..10]), Err(K::Truncated));
    assert_eq!(corrupt(|b| b[0] = b'X'), K::BadMagic);
    assert_eq!(corrupt(|b| b[4] = 9), K::UnsupportedVersion);
    assert_eq!(corrupt(|b| b.push(0)), K::Truncated, "file_size must match the buffer");
    assert_eq!(corrupt(|b| wr(b, 12, 1000)), K::Truncated, "directory past the end");
    let b = valid();
    let mut flipped = b.clone();
    flipped[b.len() / 2] ^= 1;
    assert_eq!(load(&flipped), Err(K::BadChecksum), "unsealed corruption is caught by the checksum");
    let mut shifted = vec![0u8; b.len() + 1];
    shifted[1..].copy_from_slice(&b);
    let words = AlignedBytes::new(&shifted);
    let misaligned = &words.as_bytes()[1..];
    assert_eq!(BefFile::load_unresolved(misaligned, scratch()).unwrap_err().kind, K::Misaligned);
}

#[test]
fn section_rules() {
    assert_eq!(
        corrupt(|b| {
            let (at, ..) = section_of(b, section::POOL);
            wr(b, at + 4, 4)
        }),
        K::BadSection,
        "misaligned"
    );
    assert_eq!(
        corrupt(|b| {
            let (at, ..) = section_of(b, section::POOL);
            wr(b, at + 8, 1 << 30)
        }),
        K::BadSection,
        "past the end"
    );
    assert_eq!(
        corrupt(|b| {
            let (at, ..) = section_of(b, section::POOL);
            wr(b, at, section::STRINGS)
        }),
        K::BadSection,
        "duplicate"
    );
    assert_eq!(
        corrupt(|b| {
            let (at, ..) = section_of(b, section::MODULE);
            wr(b, at, 77)
        }),
        K::MissingSection
    );
    assert_eq!(
        corrupt(|b| {
            let (at, ..) = section_of(b, section::TYPES);
            let s = rd(b, at + 8);
            wr(b, at + 8, s - 4)
        }),
        K::BadSection,
        "partial record"
    );
}

#[test]
fn unknown_sections_are_skipped() {
    let mut b = valid();
    let (at, ..) = section_of(&b, section::STRINGS);
    let copy: Vec<u8> = b[at..at + 16].to_vec();
    // Turn the directory's first entry into an unknown id pointing at valid bytes, then
    // re-add STRINGS by replacing the module entry... simpler: an unknown id replacing a
    // duplicate is not possible without growing the directory, so check the skip rule by
    // renumbering a required section to an unknown id (must then be reported missing).
    wr(&mut b, at, 999);
    f::seal(&mut b);
    assert_eq!(load(&b), Err(K::MissingSection));
    b[at..at + 16].copy_from_slice(&copy);
    f::seal(&mut b);
    assert_eq!(load(&b), Ok(()));
}

#[test]
fn string_and_index_rules() {
    let type_name_at = |b: &[u8]| {
        let (_, types, _) = section_of(b, section::TYPES);
        section_of(b, section::STRINGS).1 + rd(b, types) as usize
    };
    assert_eq!(
        corrupt(|b| {
            let at = type_name_at(b);
            b[at] = 0xff
        }),
        K::BadString,
        "type name not UTF-8"
    );
    assert_eq!(
        corrupt(|b| {
            let (_, off, _) = section_of(b, section::STRINGS);
            b[off] = 0xff
        }),
        K::BadKernel,
        "attribute name not UTF-8"
    );
    assert_eq!(
        corrupt(|b| {
            let (_, off, _) = section_of(b, section::TYPES);
            wr(b, off, 1 << 20)
        }),
        K::BadString
    );
    assert_eq!(
        corrupt(|b| {
            let (_, off, _) = section_of(b, section::FUNCTIONS);
            wr(b, off + 12, 5000)
        }),
        K::BadIndex,
        "function location"
    );
    assert_eq!(
        corrupt(|b| {
            let (_, off, _) = section_of(b, section::KERNELS);
            wr(b, off, 5000)
        }),
        K::BadIndex,
        "kernel code"
    );
}

#[test]
fn attribute_rules() {
    // Find a SCALAR bool blob (the `value = true` of tfrt.constant.i1) and set it to 2.
    let b = valid();
    let (_, aoff, asize) = section_of(&b, section::ATTRIBUTES);
    let (_, ioff, isize) = section_of(&b, section::ATTR_INDEX);
    let blobs: Vec<usize> = (0..isize / 4).map(|i| aoff + rd(&b, ioff + 4 * i) as usize).collect();
    let bool_blob =
        *blobs.iter().find(|p| b[**p] == f::attr::SCALAR && b[**p + 1] == f::scalar::BOOL).unwrap();
    assert_eq!(corrupt(|b| b[bool_blob + 8] = 2), K::BadAttribute, "bool must be 0 or 1");
    assert_eq!(corrupt(|b| b[bool_blob] = 42), K::BadAttribute, "unknown kind");
    assert_eq!(
        corrupt(|b| wr(b, bool_blob + 4, (asize * 2) as u32)),
        K::BadAttribute,
        "length past the section"
    );
    assert_eq!(corrupt(|b| wr(b, ioff, 8)), K::BadAttribute, "index must match the blob layout");
    // An aggregate referring to itself (or a later attribute) would allow cycles.
    let agg = blobs.iter().position(|p| b[*p] == f::attr::AGGREGATE).unwrap();
    assert_eq!(corrupt(|b| wr(b, blobs[agg] + 8, agg as u32)), K::BadAttribute, "child must come first");
    let func_attr = *blobs.iter().find(|p| b[**p] == f::attr::FUNCTION).unwrap();
    assert_eq!(corrupt(|b| wr(b, func_attr + 8, 99)), K::BadAttribute, "function index");
}

/// Byte offset of field `word` of function `i`'s record.
fn func_field(b: &[u8], i: usize, word: usize) -> usize {
    section_of(b, section::FUNCTIONS).1 + i * 60 + 4 * word
}

/// Byte offset of field `word` of kernel `i`'s record.
fn kernel_field(b: &[u8], i: usize, word: usize) -> usize {
    section_of(b, section::KERNELS).1 + i * 32 + 4 * word
}

#[test]
fn function_rules() {
    assert_eq!(corrupt_word(|b| func_field(b, 0, 2), |_| 7), K::BadFunction, "kind");
    assert_eq!(corrupt_word(|b| func_field(b, 0, 5), |_| 3), K::BadFunction, "result count");
    assert_eq!(corrupt_word(|b| func_field(b, 0, 8), |n| n + 1), K::BadFunction, "register count");
    assert_eq!(corrupt_word(|b| func_field(b, 0, 12), |_| 1), K::BadFunction, "frame size");
    assert_eq!(corrupt_word(|b| func_field(b, 0, 11), |_| 1 << 20), K::BadFunction, "kernel range");
}

#[test]
fn kernel_rules() {
    // main: %x = constant (kernel 0), %y = add %x, %x (kernel 1).
    assert_eq!(corrupt_word(|b| kernel_field(b, 0, 5), |_| 1), K::BadKernel, "results out of order");
    assert_eq!(
        corrupt_word(|b| kernel_field(b, 1, 2), |c| c - 1),
        K::BadFunction,
        "users list longer than uses"
    );
    assert_eq!(
        corrupt_word(|b| kernel_field(b, 0, 2), |_| 1 | 1 << 16),
        K::BadKernel,
        "argument used before definition"
    );
    // branchy's tfrt.if is kernel 4 (main has 2; branchy's constant and add come first).
    let region_slot = |b: &[u8]| section_of(b, section::POOL).1 + 4 * rd(b, kernel_field(b, 4, 7)) as usize;
    assert_eq!(corrupt_word(region_slot, |_| 1), K::BadKernel, "a region that is its own owner");
    assert_eq!(corrupt_word(region_slot, |_| 2), K::BadKernel, "a native function as region");
    assert_eq!(corrupt_word(region_slot, |_| 99), K::BadKernel, "region index out of range");
}

#[test]
fn every_truncation_is_an_error() {
    let b = valid();
    for n in 0..b.len() {
        assert!(load(&b[..n]).is_err(), "truncated to {n} bytes was accepted");
    }
}

/// Every single-byte corruption of `b`: each byte XORed with 0xff, 0x01 and 0x80.
fn flips(b: &[u8]) -> impl Iterator<Item = (usize, u8, Vec<u8>)> + '_ {
    (0..b.len()).flat_map(move |i| {
        [0xffu8, 0x01, 0x80].into_iter().map(move |mask| {
            let mut c = b.to_vec();
            c[i] ^= mask;
            (i, mask, c)
        })
    })
}

#[test]
fn every_byte_flip_is_an_error() {
    for (i, mask, c) in flips(&valid()) {
        assert!(load(&c).is_err(), "flipping byte {i} with {mask:#x} was accepted");
    }
}

/// With the checksum re-sealed, flips reach the structural checks: each must be rejected or
/// give a file that decodes, never a panic.
#[test]
fn every_resealed_byte_flip_is_an_error_or_a_valid_file() {
    for (_, _, mut c) in flips(&valid()) {
        f::seal(&mut c);
        let a = AlignedBytes::new(&c);
        if let Ok(file) = BefFile::load_unresolved(a.as_bytes(), scratch()) {
            let _ = decode(&file);
        }
    }
}

#[test]
fn dense_attribute_rules() {
    // One DENSE blob, `tensor<2x3xf32>`: kind, code, len, type, then rank, dims, data.
    let text = r#"func.func @f() -> i32 {
  %x = "x.y"() {w = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>} : () -> i32
  tfrt.return %x : i32
}
"#;
    let good = hostrt_compiler::compile("t.mlir", text, Default::default()).unwrap();
    assert_eq!(load(&good), Ok(()));
    let (_, aoff, _) = section_of(&good, section::ATTRIBUTES);
    let (_, ioff, isize) = section_of(&good, section::ATTR_INDEX);
    let blob = (0..isize / 4)
        .map(|i| aoff + rd(&good, ioff + 4 * i) as usize)
        .find(|p| good[*p] == f::attr::DENSE)
        .unwrap();
    let (rank, dim0, dim1) = (blob + 8, blob + 16, blob + 24);
    let bad = |edit: &dyn Fn(&mut Vec<u8>)| {
        let mut b = good.clone();
        edit(&mut b);
        f::seal(&mut b);
        load(&b).expect_err("corrupted file must be rejected")
    };
    let put = |b: &mut Vec<u8>, at: usize, v: u64| b[at..at + 8].copy_from_slice(&v.to_le_bytes());
    assert_eq!(bad(&|b| b[blob + 1] = 15), K::BadAttribute, "unknown element type");
    assert_eq!(bad(&|b| b[blob + 1] = 12), K::BadAttribute, "f64 needs twice the data");
    assert_eq!(bad(&|b| put(b, rank, 17)), K::BadAttribute, "rank above 16");
    assert_eq!(bad(&|b| put(b, rank, 1)), K::BadAttribute, "rank 1 leaves the data too long");
    assert_eq!(bad(&|b| put(b, dim1, 4)), K::BadAttribute, "dims must match the data");
    assert_eq!(bad(&|b| put(b, dim1, u64::MAX)), K::BadAttribute, "negative dim");
    assert_eq!(bad(&|b| put(b, dim0, 1 << 62)), K::BadAttribute, "element count overflows");
    // A zero dim with a negative one is still rejected (the product is 0, the dim is not valid).
    assert_eq!(
        bad(&|b| {
            put(b, dim0, 0);
            put(b, dim1, u64::MAX)
        }),
        K::BadAttribute,
        "negative dim beside a zero dim"
    );
    assert_eq!(bad(&|b| wr(b, blob + 4, 8)), K::BadAttribute, "payload shorter than its dims");
}

#[test]
fn errors_give_the_offset_of_the_bad_record() {
    let error = |edit: &dyn Fn(&mut Vec<u8>)| {
        let mut b = valid();
        edit(&mut b);
        f::seal(&mut b);
        let a = AlignedBytes::new(&b);
        BefFile::load_unresolved(a.as_bytes(), scratch()).expect_err("corrupted file must be rejected")
    };
    // The second type name not UTF-8: the offset of its `StrRef` in TYPES.
    let e = error(&|b| {
        let (_, types, _) = section_of(b, section::TYPES);
        let at = section_of(b, section::STRINGS).1 + rd(b, types + 8) as usize;
        b[at] = 0xff;
    });
    assert_eq!((e.kind, e.offset), (K::BadString, section_of(&valid(), section::TYPES).1 + 8));
    // Module attributes naming an attribute that is not a dictionary: the MODULE word.
    let e = error(&|b| {
        let (_, module, _) = section_of(b, section::MODULE);
        wr(b, module, 0);
    });
    assert_eq!((e.kind, e.offset), (K::BadAttribute, section_of(&valid(), section::MODULE).1));
}
