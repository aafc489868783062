//! TensorFlow Lite's builtin operator codes and tensor types that the importer names
//! (values from the format's `BuiltinOperator` and `TensorType` enums).

/// `(code, name)` of the builtin operators the importer can name in messages.
pub const BUILTIN_NAMES: &[(i32, &str)] = &[
    (0, "ADD"),
    (1, "AVERAGE_POOL_2D"),
    (2, "CONCATENATION"),
    (3, "CONV_2D"),
    (4, "DEPTHWISE_CONV_2D"),
    (6, "DEQUANTIZE"),
    (9, "FULLY_CONNECTED"),
    (14, "LOGISTIC"),
    (17, "MAX_POOL_2D"),
    (18, "MUL"),
    (19, "RELU"),
    (20, "RELU_N1_TO_1"),
    (21, "RELU6"),
    (22, "RESHAPE"),
    (23, "RESIZE_BILINEAR"),
    (25, "SOFTMAX"),
    (28, "TANH"),
    (32, "CUSTOM"),
    (34, "PAD"),
    (39, "TRANSPOSE"),
    (40, "MEAN"),
    (41, "SUB"),
    (42, "DIV"),
    (43, "SQUEEZE"),
    (44, "UNIDIRECTIONAL_SEQUENCE_LSTM"),
    (45, "STRIDED_SLICE"),
    (49, "SPLIT"),
    (50, "LOG_SOFTMAX"),
    (54, "PRELU"),
    (55, "MAXIMUM"),
    (57, "MINIMUM"),
    (60, "PADV2"),
    (65, "SLICE"),
    (67, "TRANSPOSE_CONV"),
    (70, "EXPAND_DIMS"),
    (74, "SUM"),
    (83, "PACK"),
    (88, "UNPACK"),
    (97, "RESIZE_NEAREST_NEIGHBOR"),
    (98, "LEAKY_RELU"),
    (99, "SQUARED_DIFFERENCE"),
    (102, "SPLIT_V"),
    (114, "QUANTIZE"),
    (117, "HARD_SWISH"),
    (126, "BATCH_MATMUL"),
];

/// The name of builtin operator `code` (`BUILTIN_<code>` for one the importer does not know).
pub fn builtin_name(code: i32) -> String {
    BUILTIN_NAMES
        .iter()
        .find(|(c, _)| *c == code)
        .map(|(_, n)| (*n).to_string())
        .unwrap_or_else(|| format!("BUILTIN_{code}"))
}

/// A tensor's element type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElemType {
    F32,
    I32,
    U8,
    I64,
    Bool,
    I16,
    I8,
}

impl ElemType {
    /// From `TensorType`; `None` for types the importer does not take (strings, complex,
    /// 4-bit, half floats, resources).
    pub fn from_code(code: i8) -> Option<ElemType> {
        Some(match code {
            0 => ElemType::F32,
            2 => ElemType::I32,
            3 => ElemType::U8,
            4 => ElemType::I64,
            6 => ElemType::Bool,
            7 => ElemType::I16,
            9 => ElemType::I8,
            _ => return None,
        })
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            ElemType::F32 | ElemType::I32 => 4,
            ElemType::I64 => 8,
            ElemType::I16 => 2,
            ElemType::U8 | ElemType::Bool | ElemType::I8 => 1,
        }
    }

    /// The MLIR / hostrt name (`f32`, `i8`, ...).
    pub fn name(self) -> &'static str {
        match self {
            ElemType::F32 => "f32",
            ElemType::I32 => "i32",
            ElemType::U8 => "ui8",
            ElemType::I64 => "i64",
            ElemType::Bool => "i1",
            ElemType::I16 => "i16",
            ElemType::I8 => "i8",
        }
    }
}
