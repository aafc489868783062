//! The part of TensorFlow Lite's FlatBuffers schema the importer reads, written by hand
//! (field ids and types are the format's; names follow `schema.fbs`).
//!
//! Each table is declared once with [`fb_table!`], which generates both its accessors and
//! its verifier from the same field list, so a field is never read as another type than the
//! one it was verified as. [`root`] verifies the whole buffer before any accessor runs.

use flatbuffers::{ForwardsUOffset, InvalidFlatbuffer, Table, Vector, Verifiable, Verifier, VerifierOptions};

/// Verifies `bytes` as a TensorFlow Lite model and returns its root table.
pub fn root(bytes: &[u8]) -> Result<Model<'_>, InvalidFlatbuffer> {
    let opts = VerifierOptions { max_tables: 10_000_000, ..Default::default() };
    flatbuffers::root_with_opts::<Model>(&opts, bytes)
}

/// A field's vtable slot from its id.
const fn slot(id: u16) -> u16 {
    4 + 2 * id
}

macro_rules! fb_table {
    ($(#[$doc:meta])* $name:ident { $($field:ident : $kind:ident $(<$arg:ident>)? = $id:literal $(, $default:expr)? ;)* }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug)]
        pub struct $name<'a>(Table<'a>);

        impl<'a> flatbuffers::Follow<'a> for $name<'a> {
            type Inner = $name<'a>;
            unsafe fn follow(buf: &'a [u8], loc: usize) -> Self {
                // SAFETY: the caller gives the position of a table (Follow's contract); the
                // verifier checked it before any accessor reached it.
                $name(unsafe { Table::new(buf, loc) })
            }
        }

        impl Verifiable for $name<'_> {
            fn run_verifier(v: &mut Verifier, pos: usize) -> Result<(), InvalidFlatbuffer> {
                v.visit_table(pos)?
                    $(.visit_field::<fb_table!(@vty $kind $(<$arg>)?)>(stringify!($field), slot($id), false)?)*
                    .finish();
                Ok(())
            }
        }

        impl<'a> $name<'a> {
            $(fb_table!(@get $field $kind $(<$arg>)? = $id $(, $default)?);)*
        }
    };
    (@vty scalar<$t:ident>) => { $t };
    (@vty string) => { ForwardsUOffset<&str> };
    (@vty vector<$t:ident>) => { ForwardsUOffset<Vector<'_, $t>> };
    (@vty tables<$t:ident>) => { ForwardsUOffset<Vector<'_, ForwardsUOffset<$t<'_>>>> };
    (@vty table<$t:ident>) => { ForwardsUOffset<$t<'_>> };
    (@get $field:ident scalar<$t:ident> = $id:literal, $default:expr) => {
        #[doc = concat!("Field `", stringify!($field), "` (id ", stringify!($id), ").")]
        pub fn $field(&self) -> $t {
            // SAFETY: the verifier checked this slot holds a `$t` (same field list).
            unsafe { self.0.get::<$t>(slot($id), Some($default)) }.unwrap_or($default)
        }
    };
    (@get $field:ident string = $id:literal) => {
        #[doc = concat!("Field `", stringify!($field), "` (id ", stringify!($id), ").")]
        pub fn $field(&self) -> Option<&'a str> {
            // SAFETY: the verifier checked this slot holds an offset to a UTF-8 string.
            unsafe { self.0.get::<ForwardsUOffset<&'a str>>(slot($id), None) }
        }
    };
    (@get $field:ident vector<$t:ident> = $id:literal) => {
        #[doc = concat!("Field `", stringify!($field), "` (id ", stringify!($id), ").")]
        pub fn $field(&self) -> Option<Vector<'a, $t>> {
            // SAFETY: the verifier checked this slot holds an offset to a vector of `$t`.
            unsafe { self.0.get::<ForwardsUOffset<Vector<'a, $t>>>(slot($id), None) }
        }
    };
    (@get $field:ident tables<$t:ident> = $id:literal) => {
        #[doc = concat!("Field `", stringify!($field), "` (id ", stringify!($id), ").")]
        pub fn $field(&self) -> Option<Vector<'a, ForwardsUOffset<$t<'a>>>> {
            // SAFETY: the verifier checked this slot holds a vector of offsets to `$t` tables.
            unsafe { self.0.get::<ForwardsUOffset<Vector<'a, ForwardsUOffset<$t<'a>>>>>(slot($id), None) }
        }
    };
    (@get $field:ident table<$t:ident> = $id:literal) => {
        #[doc = concat!("Field `", stringify!($field), "` (id ", stringify!($id), ").")]
        pub fn $field(&self) -> Option<$t<'a>> {
            // SAFETY: the verifier checked this slot holds an offset to a `$t` table.
            unsafe { self.0.get::<ForwardsUOffset<$t<'a>>>(slot($id), None) }
        }
    };
}

fb_table! {
    /// `Model`: the root.
    Model {
        version: scalar<u32> = 0, 0;
        operator_codes: tables<OperatorCode> = 1;
        subgraphs: tables<SubGraph> = 2;
        description: string = 3;
        buffers: tables<Buffer> = 4;
    }
}

fb_table! {
    /// `OperatorCode`: a builtin op (old `int8` code or new `int32` one) or a custom one.
    OperatorCode {
        deprecated_builtin_code: scalar<i8> = 0, 0;
        custom_code: string = 1;
        version: scalar<i32> = 2, 1;
        builtin_code: scalar<i32> = 3, 0;
    }
}

fb_table! {
    /// `SubGraph`: tensors, operators in execution order, inputs and outputs.
    SubGraph {
        tensors: tables<Tensor> = 0;
        inputs: vector<i32> = 1;
        outputs: vector<i32> = 2;
        operators: tables<Operator> = 3;
        name: string = 4;
    }
}

fb_table! {
    /// `Buffer`: constant data, inline or (large models) at an offset in the file.
    Buffer {
        data: vector<u8> = 0;
        offset: scalar<u64> = 1, 0;
        size: scalar<u64> = 2, 0;
    }
}

fb_table! {
    /// `Tensor`.
    Tensor {
        shape: vector<i32> = 0;
        tensor_type: scalar<i8> = 1, 0;
        buffer: scalar<u32> = 2, 0;
        name: string = 3;
        quantization: table<QuantizationParameters> = 4;
        is_variable: scalar<bool> = 5, false;
        sparsity: table<Options> = 6;
    }
}

fb_table! {
    /// `QuantizationParameters`: per-tensor or per-axis scale and zero point.
    QuantizationParameters {
        scale: vector<f32> = 2;
        zero_point: vector<i64> = 3;
        details_type: scalar<u8> = 4, 0;
        quantized_dimension: scalar<i32> = 6, 0;
    }
}

fb_table! {
    /// `Operator`: an op code index, input, output and intermediate tensor indices, options.
    Operator {
        opcode_index: scalar<u32> = 0, 0;
        inputs: vector<i32> = 1;
        outputs: vector<i32> = 2;
        builtin_options_type: scalar<u8> = 3, 0;
        builtin_options: table<Options> = 4;
        intermediates: vector<i32> = 8;
    }
}

fb_table! {
    /// Any builtin options table, read through [`Options::field`] with the layout the
    /// operator's options type names (see `options.rs`).
    Options {}
}

impl<'a> Options<'a> {
    /// The raw table, for the typed option readers of `options.rs`.
    pub fn table(&self) -> Table<'a> {
        self.0
    }
}

/// Reads scalar field `id` of an options table, verifying it in place first: options tables
/// differ per op, so they are checked when read rather than by [`root`].
pub fn option_scalar<T>(table: Table<'_>, id: u16, default: T) -> Result<T, InvalidFlatbuffer>
where
    T: for<'b> flatbuffers::Follow<'b, Inner = T> + Verifiable + Copy,
{
    let buf = table.buf();
    let opts = VerifierOptions::default();
    let mut v = Verifier::new(&opts, buf);
    v.visit_table(table.loc())?.visit_field::<T>("option", slot(id), false)?.finish();
    // SAFETY: the slot was just verified to hold a `T` inside the buffer.
    Ok(unsafe { table.get::<T>(slot(id), Some(default)) }.unwrap_or(default))
}
