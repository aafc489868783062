//! Typed readers of the builtin options tables the importer uses (field ids from the
//! format's schema). Each read verifies its field in place first.

use super::model::{OpInfo, OpOptions};
use super::schema::option_scalar;

/// Options type codes (`BuiltinOptions` union) of the options the importer reads.
pub mod kind {
    pub const CONV_2D: u8 = 1;
    pub const DEPTHWISE_CONV_2D: u8 = 2;
    pub const POOL_2D: u8 = 5;
    pub const RESIZE_BILINEAR: u8 = 15;
    pub const FULLY_CONNECTED: u8 = 8;
    pub const SOFTMAX: u8 = 9;
    pub const CONCATENATION: u8 = 10;
    pub const ADD: u8 = 11;
    pub const MUL: u8 = 21;
    pub const REDUCER: u8 = 27;
    pub const SUB: u8 = 28;
    pub const DIV: u8 = 29;
    pub const STRIDED_SLICE: u8 = 32;
    pub const MAXIMUM_MINIMUM: u8 = 39;
    pub const TRANSPOSE_CONV: u8 = 49;
    pub const PACK: u8 = 59;
    pub const UNPACK: u8 = 64;
    pub const UNIDIRECTIONAL_SEQUENCE_LSTM: u8 = 71;
    pub const RESIZE_NEAREST_NEIGHBOR: u8 = 74;
    pub const LEAKY_RELU: u8 = 75;
    pub const MIRROR_PAD: u8 = 77;
    pub const SQUARED_DIFFERENCE: u8 = 76;
    pub const BATCH_MATMUL: u8 = 101;
    pub const LRN: u8 = 13;
    pub const GATHER: u8 = 23;
}

/// Reads the options of `op`, which must be of type `expected` (absent options read as the
/// schema's defaults).
#[derive(Debug)]
pub struct Options<'o, 'a> {
    source: &'o OpOptions<'a>,
}

impl<'o, 'a> Options<'o, 'a> {
    pub fn of(op: &'o OpInfo<'a>, expected: u8) -> Result<Options<'o, 'a>, String> {
        match op.options {
            OpOptions::Absent => {}
            _ if op.options_type != expected => {
                return Err(format!("options of type {} where type {} belongs", op.options_type, expected));
            }
            _ => {}
        }
        Ok(Options { source: &op.options })
    }

    fn scalar<T>(&self, id: u16, default: T, from: fn(f64) -> T) -> Result<T, String>
    where
        T: for<'b> flatbuffers::Follow<'b, Inner = T> + flatbuffers::Verifiable + Copy,
    {
        match self.source {
            OpOptions::Absent => Ok(default),
            OpOptions::Table(t) => {
                option_scalar(*t, id, default).map_err(|e| format!("malformed options: {e}"))
            }
            OpOptions::Fields(f) => Ok(f.iter().find(|(k, _)| *k == id).map_or(default, |&(_, v)| from(v))),
        }
    }

    pub fn i8(&self, id: u16) -> Result<i8, String> {
        self.scalar::<i8>(id, 0, |v| v as i8)
    }

    pub fn i32(&self, id: u16, default: i32) -> Result<i32, String> {
        self.scalar::<i32>(id, default, |v| v as i32)
    }

    pub fn bool(&self, id: u16) -> Result<bool, String> {
        self.scalar::<bool>(id, false, |v| v != 0.0)
    }

    pub fn f32(&self, id: u16, default: f32) -> Result<f32, String> {
        self.scalar::<f32>(id, default, |v| v as f32)
    }

    /// An importer-only field (`ext`), set only by a translating importer.
    pub fn ext(&self, id: u16) -> Option<f64> {
        match self.source {
            OpOptions::Fields(f) => f.iter().find(|(k, _)| *k == id).map(|&(_, v)| v),
            _ => None,
        }
    }
}

/// Importer-only option fields, past every id of the schema's tables: what another format
/// (ONNX) states that TensorFlow Lite's options cannot.
pub mod ext {
    /// Explicit top and left padding of a convolution or pool (the output shape gives the
    /// rest), in place of SAME/VALID.
    pub const PAD_TOP: u16 = 200;
    pub const PAD_LEFT: u16 = 201;
    /// Float arithmetic without TensorFlow Lite's clamp to the finite range.
    pub const UNBOUNDED: u16 = 202;
    /// Parameters of importer-only operators (`ops::ext_op`): ELU/SELU alpha, SELU gamma,
    /// HardSigmoid alpha and beta, normalization axis and epsilon.
    pub const ALPHA: u16 = 203;
    pub const BETA: u16 = 204;
    pub const AXIS: u16 = 205;
    pub const EPSILON: u16 = 206;
    /// A transposed convolution's or a pool's dilation (TensorFlow Lite's have none).
    pub const DILATION_H: u16 = 207;
    pub const DILATION_W: u16 = 208;
    /// ONNX Resize: the coordinate rule (0 half_pixel, 1 asymmetric, 2 align_corners,
    /// 3 pytorch_half_pixel, 4 half_pixel_symmetric), the nearest rounding (0
    /// round_prefer_floor, 1 round_prefer_ceil, 2 floor, 3 ceil, 4 opset 10's), and the
    /// scale of each axis.
    pub const RESIZE_COORD: u16 = 209;
    pub const NEAREST_MODE: u16 = 210;
    pub const SCALE_H: u16 = 211;
    pub const SCALE_W: u16 = 212;
    /// ARG_MAX/ARG_MIN: the last of equal values wins (ONNX's `select_last_index`).
    pub const SELECT_LAST: u16 = 213;
    /// LOCAL_RESPONSE_NORMALIZATION: the radius above the channel when it differs from the
    /// one below (ONNX's even sizes).
    pub const RADIUS_HI: u16 = 214;
    /// MIRROR_PAD: a rule TensorFlow Lite's modes lack (2: the edge value repeated, 3: the
    /// other end's values; ONNX's `edge` and `wrap`), and no limit on the pads' length.
    pub const PAD_MODE: u16 = 215;
    /// ONNX Resize through RESIZE_BILINEAR: 1 for the cubic filter, its coefficient `a`,
    /// `exclude_outside` and `antialias` (each 0 or 1).
    pub const RESIZE_CUBIC: u16 = 216;
    pub const CUBIC_A: u16 = 217;
    pub const EXCLUDE_OUTSIDE: u16 = 218;
    pub const ANTIALIAS: u16 = 219;
}
