//! The BEF byte layout (version 1), shared by the reader here and the writer in
//! `hostrt-compiler`. `docs/bef.md` documents every byte; keep the two in sync.
//!
//! All integers are little-endian. Records are fixed-width arrays of `u32`, read in place.

/// File magic.
pub const MAGIC: [u8; 4] = *b"HBEF";
/// Major version: readers reject files with another major version.
pub const VERSION_MAJOR: u16 = 1;
/// Minor version: a newer minor version only adds sections or attribute kinds. Older readers
/// skip unknown sections and reject unknown attribute kinds with a clear error. Minor 2 added
/// [`attr::DENSE`], minor 3 the ARENA section, minor 4 the ARENA_ALT section.
pub const VERSION_MINOR: u16 = 4;
/// Byte size of the file header.
pub const HEADER_SIZE: usize = 24;
/// Offset of the header's CRC-32 field.
pub const CHECKSUM_OFFSET: usize = 16;

/// The CRC-32 (IEEE) of a file, computed with its checksum field read as zero. The header
/// stores it, so any flipped bit or byte (in flash, on disk, in transit) fails to load.
/// Returns 0 for buffers shorter than a header.
pub fn checksum(file: &[u8]) -> u32 {
    if file.len() < HEADER_SIZE {
        return 0;
    }
    let mut h = Crc::new();
    h.update(&file[..CHECKSUM_OFFSET]);
    h.update(&[0; 4]);
    h.update(&file[CHECKSUM_OFFSET + 4..]);
    h.finalize()
}

/// CRC-32 (IEEE) with crc32fast's SIMD on hosted targets.
#[cfg(not(target_os = "none"))]
type Crc = crc32fast::Hasher;

/// CRC-32 (IEEE) for bare metal: four bits at a time from a 64-byte table built at compile
/// time. A byte-wide table would take 1 KiB of flash for about half the instructions per
/// byte; the checksum runs once per load.
#[cfg(any(test, target_os = "none"))]
struct NibbleCrc(u32);

#[cfg(target_os = "none")]
type Crc = NibbleCrc;

#[cfg(any(test, target_os = "none"))]
impl NibbleCrc {
    const TABLE: [u32; 16] = {
        let mut t = [0u32; 16];
        let mut i = 0;
        while i < 16 {
            let mut c = i as u32;
            let mut k = 0;
            while k < 4 {
                c = if c & 1 != 0 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 };
                k += 1;
            }
            t[i] = c;
            i += 1;
        }
        t
    };
    fn new() -> Self {
        NibbleCrc(!0)
    }
    fn update(&mut self, bytes: &[u8]) {
        for b in bytes {
            let c = self.0 ^ u32::from(*b);
            let c = Self::TABLE[(c & 0xf) as usize] ^ (c >> 4);
            self.0 = Self::TABLE[(c & 0xf) as usize] ^ (c >> 4);
        }
    }
    fn finalize(self) -> u32 {
        !self.0
    }
}

/// Store the checksum of `file` in its header (what writers do last).
pub fn seal(file: &mut [u8]) {
    if file.len() >= HEADER_SIZE {
        let c = checksum(file);
        file[CHECKSUM_OFFSET..CHECKSUM_OFFSET + 4].copy_from_slice(&c.to_le_bytes());
    }
}
/// Byte size of one section directory entry.
pub const SECTION_ENTRY_SIZE: usize = 16;
/// Alignment of sections and attributes (and of the whole file in memory).
pub const ALIGN: usize = 8;
/// "No index" marker (no location, no attribute).
pub const NONE: u32 = u32::MAX;
/// Attribute nesting limit (aggregates and dictionaries).
pub const MAX_ATTR_DEPTH: usize = 32;

/// Section ids.
pub mod section {
    /// UTF-8 bytes, referenced by [`StrRef`](super::StrRef).
    pub const STRINGS: u32 = 1;
    /// Type names: `[StrRef]`.
    pub const TYPES: u32 = 2;
    /// Kernel names: `[StrRef]`; a kernel record's `code` indexes it.
    pub const KERNEL_NAMES: u32 = 3;
    /// Attribute blobs, each 8-aligned: [`AttrHeader`](super::AttrHeader) + payload.
    pub const ATTRIBUTES: u32 = 4;
    /// `[FunctionRecord]`.
    pub const FUNCTIONS: u32 = 5;
    /// `[KernelRecord]` of all functions; each function owns a contiguous run.
    pub const KERNELS: u32 = 6;
    /// `[u32]` holding every variable-length list.
    pub const POOL: u32 = 7;
    /// `[LocationRecord]`.
    pub const LOCATIONS: u32 = 8;
    /// Module attributes: one `u32`, the index of a dictionary attribute (or NONE).
    pub const MODULE: u32 = 9;
    /// `[u32]`: byte offset in ATTRIBUTES of each attribute blob, in file order. Attributes
    /// are referenced everywhere by their index in this table.
    pub const ATTR_INDEX: u32 = 10;
    /// Optional (minor version 1): `[u32]` stream ids (docs/execution.md), first the root stream of
    /// each function (its pseudo kernel), then one per kernel in KERNELS order. Without it
    /// every kernel of a function shares one stream.
    pub const STREAMS: u32 = 11;
    /// Optional: `[u32; 2]` per function, the arena it needs (docs/bef.md, "Arena sizes"):
    /// bytes, then flags ([`arena`](super::arena)). `hostrt run --record-arena-peak` writes it.
    pub const ARENA: u32 = 12;
    /// Optional (minor version 4): a second ARENA, the same records for another pointer
    /// size (`hostrt import` on a 64-bit host records its 32-bit bound here).
    pub const ARENA_ALT: u32 = 13;
    /// Every id a version-1 reader requires.
    pub const REQUIRED: [u32; 10] =
        [STRINGS, TYPES, KERNEL_NAMES, ATTRIBUTES, FUNCTIONS, KERNELS, POOL, LOCATIONS, MODULE, ATTR_INDEX];
}

/// The flags word of an ARENA record.
pub mod arena {
    /// Bits 0-7: the pointer size, in bytes, of the machine that measured the figure.
    pub const POINTER_BYTES_MASK: u32 = 0xFF;
    /// Bit 8: the figure is a measured peak (else a bound derived from the program).
    pub const MEASURED: u32 = 1 << 8;
}

/// A string: byte range of the STRINGS section.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct StrRef {
    /// Offset in the STRINGS section.
    pub offset: u32,
    /// Length in bytes.
    pub len: u32,
}

/// A function (60 bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct FunctionRecord {
    /// Name; empty for a region (an op's nested body).
    pub name: StrRef,
    /// [`FUNC_BEF`] or [`FUNC_NATIVE`].
    pub kind: u32,
    /// Location index or NONE.
    pub location: u32,
    /// Argument count; the arguments are registers `0..num_args`.
    pub num_args: u32,
    /// Result count.
    pub num_results: u32,
    /// POOL offset of `num_args` argument type indices, then `num_results` result type
    /// indices.
    pub signature: u32,
    /// POOL offset of `num_results` register indices returned by `tfrt.return`.
    pub result_regs: u32,
    /// Register count.
    pub num_registers: u32,
    /// POOL offset of `num_registers` [`RegisterRecord`]s (4 words each).
    pub registers: u32,
    /// Index of the function's first record in the KERNELS section.
    pub first_kernel: u32,
    /// Number of kernels.
    pub num_kernels: u32,
    /// Executor frame bytes on 32-bit targets ([`frame_bytes`]`(4, ..)`), for sizing arenas.
    pub frame_bytes32: u32,
    /// Executor frame bytes on 64-bit targets ([`frame_bytes`]`(8, ..)`).
    pub frame_bytes64: u32,
    /// Index of the function's attribute dictionary (`attributes {...}`), or NONE.
    pub attrs: u32,
}

/// A function with a body executed by the BEF executor.
pub const FUNC_BEF: u32 = 0;
/// A declaration implemented natively (`attributes {tfrt.native}`), no body.
pub const FUNC_NATIVE: u32 = 1;

/// One register of a function (4 words in POOL).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct RegisterRecord {
    /// Type index.
    pub ty: u32,
    /// Uses by kernels plus uses by `tfrt.return` (the reference count a value in this
    /// register starts with).
    pub num_uses: u32,
    /// POOL offset of the users list: kernel indices (within the function), ascending, one
    /// entry per use (a kernel using the register twice appears twice).
    pub users: u32,
    /// Length of the users list.
    pub num_users: u32,
}

/// One kernel invocation (32 bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct KernelRecord {
    /// Index into KERNEL_NAMES.
    pub code: u32,
    /// Location index or NONE.
    pub location: u32,
    /// Low 16 bits: argument count; high 16 bits: result count.
    pub counts: u32,
    /// Low 16 bits: attribute count; high 16 bits: region count.
    pub counts2: u32,
    /// POOL offset of the argument register indices.
    pub args: u32,
    /// First result register; results are consecutive registers, and each kernel's results
    /// follow the previous kernel's (arguments first), so every register is defined once.
    pub first_result: u32,
    /// POOL offset of `num_attrs` attribute indices, followed by `num_attrs` name
    /// [`StrRef`]s (2 words each). Attributes are sorted by name.
    pub attrs: u32,
    /// POOL offset of `num_regions` function indices (the op's nested bodies).
    pub regions: u32,
}

impl KernelRecord {
    /// Number of arguments.
    pub fn num_args(&self) -> u32 {
        self.counts & 0xffff
    }
    /// Number of results.
    pub fn num_results(&self) -> u32 {
        self.counts >> 16
    }
    /// Number of attributes.
    pub fn num_attrs(&self) -> u32 {
        self.counts2 & 0xffff
    }
    /// Number of regions.
    pub fn num_regions(&self) -> u32 {
        self.counts2 >> 16
    }
}

/// A source location (16 bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct LocationRecord {
    /// File name (a name location's name; empty for an unknown location).
    pub file: StrRef,
    /// 1-based line; [`LOC_NAME`] marks a name location.
    pub line: u32,
    /// 1-based column.
    pub col: u32,
}

/// `line` value of a name location (`loc("name")`).
pub const LOC_NAME: u32 = u32::MAX;

/// Header of an attribute blob (8 bytes); the payload follows at the next 8-byte boundary.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct AttrHeader {
    /// `kind` (byte 0), scalar element kind (byte 1), type index (bytes 2-3, 0xffff: none).
    pub tag: u32,
    /// Payload length in bytes.
    pub len: u32,
}

impl AttrHeader {
    /// Attribute kind ([`attr`] constants).
    pub fn kind(&self) -> u8 {
        self.tag as u8
    }
    /// Scalar element kind ([`scalar`] constants) for scalars and arrays.
    pub fn scalar(&self) -> u8 {
        (self.tag >> 8) as u8
    }
    /// Type index of a scalar or array element (0xffff when none).
    pub fn ty(&self) -> u16 {
        (self.tag >> 16) as u16
    }
    /// Pack a header.
    pub fn new(kind: u8, scalar: u8, ty: u16, len: u32) -> Self {
        AttrHeader { tag: u32::from(kind) | u32::from(scalar) << 8 | u32::from(ty) << 16, len }
    }
}

/// Attribute kinds.
pub mod attr {
    /// No value (`{tfrt.native}`); payload empty.
    pub const UNIT: u8 = 0;
    /// One scalar (bool / int / float by `scalar`); payload: the value's bytes.
    pub const SCALAR: u8 = 1;
    /// UTF-8 text.
    pub const STRING: u8 = 2;
    /// Homogeneous scalar array; payload: the elements.
    pub const ARRAY: u8 = 3;
    /// Heterogeneous or nested array; payload: `u32` attribute indices, each smaller than
    /// this attribute's own index (children come first, so there are no cycles).
    pub const AGGREGATE: u8 = 4;
    /// Function reference; payload: one `u32` function index, or (scalar byte
    /// [`FUNCTION_ARRAY`]) an array of them (`[@f, @g]`).
    pub const FUNCTION: u8 = 5;
    /// Scalar byte of a FUNCTION attribute holding an array of function indices.
    pub const FUNCTION_ARRAY: u8 = 1;
    /// Type; payload: one `u32` type index.
    pub const TYPE: u8 = 6;
    /// Dictionary; payload: entries of 3 `u32`: name StrRef (2 words), attribute index
    /// (smaller than this attribute's index).
    pub const DICT: u8 = 7;
    /// Dense elements (`dense<...> : tensor<2x3xf32>`; since minor version 2). The header's
    /// scalar byte is the element type ([`dense`](super::dense)); payload: `u64` rank, `rank`
    /// × `i64` dims (non-negative), then the row-major elements (little-endian, bools 0/1).
    /// The data therefore starts 8-byte aligned, enough to read any element type in place.
    pub const DENSE: u8 = 8;
}

/// Element types of [`attr::DENSE`] attributes: their codes and MLIR names.
pub mod dense {
    /// `(code, MLIR element type, bytes per element)`, the code being the table index.
    pub const TYPES: [(u8, &str, usize); 15] = [
        (0, "i1", 1),
        (1, "i8", 1),
        (2, "i16", 2),
        (3, "i32", 4),
        (4, "i64", 8),
        (5, "ui8", 1),
        (6, "ui16", 2),
        (7, "ui32", 4),
        (8, "ui64", 8),
        (9, "f16", 2),
        (10, "bf16", 2),
        (11, "f32", 4),
        (12, "f64", 8),
        (13, "complex<f32>", 8),
        (14, "complex<f64>", 16),
    ];

    /// The code of an MLIR element type name.
    pub fn code(name: &str) -> Option<u8> {
        TYPES.iter().find(|t| t.1 == name).map(|t| t.0)
    }

    /// Bytes per element, by code: a table of its own so firmware links 15 bytes, not the names.
    const SIZES: [u8; 15] = [1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 2, 4, 8, 8, 16];

    const _: () = {
        let mut i = 0;
        while i < TYPES.len() {
            assert!(TYPES[i].0 as usize == i && TYPES[i].2 == SIZES[i] as usize);
            i += 1;
        }
    };

    /// Bytes per element of a code (0 if unknown).
    pub const fn size(code: u8) -> usize {
        if (code as usize) < SIZES.len() { SIZES[code as usize] as usize } else { 0 }
    }

    /// Largest rank a dense attribute may have (the tensor layer's inline shapes).
    pub const MAX_RANK: usize = 16;
}

/// Scalar element kinds.
pub mod scalar {
    /// One byte, 0 or 1.
    pub const BOOL: u8 = 1;
    /// 8-bit integer.
    pub const I8: u8 = 2;
    /// 32-bit integer (signed or unsigned per the type).
    pub const I32: u8 = 3;
    /// 64-bit integer.
    pub const I64: u8 = 4;
    /// 32-bit float.
    pub const F32: u8 = 5;
    /// 64-bit float.
    pub const F64: u8 = 6;

    /// Byte size of a scalar kind (0 if unknown).
    pub const fn size(k: u8) -> usize {
        match k {
            BOOL | I8 => 1,
            I32 | F32 => 4,
            I64 | F64 => 8,
            _ => 0,
        }
    }
}

/// Bytes of arena memory one execution of a function needs for its executor frame, on a
/// target with `pointer_bytes`-byte pointers: a fixed part, one value slot per register, and
/// per kernel a ready counter and a ready-list link. The executor allocates exactly this;
/// async values themselves are extra, one per live register at most.
pub const fn frame_bytes(pointer_bytes: usize, num_registers: usize, num_kernels: usize) -> usize {
    8 * pointer_bytes + num_registers * pointer_bytes + num_kernels * 8
}

#[cfg(test)]
mod tests {
    use super::NibbleCrc;

    #[test]
    fn the_bare_metal_crc_matches_crc32fast() {
        let data: std::vec::Vec<u8> = (0..1000u32).map(|i| (i * 7 + i / 3) as u8).collect();
        for len in [0, 1, 3, 16, 999, 1000] {
            let mut n = NibbleCrc::new();
            n.update(&data[..len]);
            assert_eq!(n.finalize(), crc32fast::hash(&data[..len]), "{len} bytes");
        }
        // The standard check value.
        let mut n = NibbleCrc::new();
        n.update(b"123456789");
        assert_eq!(n.finalize(), 0xCBF4_3926);
    }
}
