//! TensorFlow Lite's builtin operator codes and tensor types that the importer names
//! (values from the format's `BuiltinOperator` and `TensorType` enums).

/// `(code, name)` of every builtin operator of the schema (the format's `BuiltinOperator`
/// enum), so that messages name any operator a model holds.
pub const BUILTIN_NAMES: &[(i32, &str)] = &[
    (0, "ADD"),
    (1, "AVERAGE_POOL_2D"),
    (2, "CONCATENATION"),
    (3, "CONV_2D"),
    (4, "DEPTHWISE_CONV_2D"),
    (5, "DEPTH_TO_SPACE"),
    (6, "DEQUANTIZE"),
    (7, "EMBEDDING_LOOKUP"),
    (8, "FLOOR"),
    (9, "FULLY_CONNECTED"),
    (10, "HASHTABLE_LOOKUP"),
    (11, "L2_NORMALIZATION"),
    (12, "L2_POOL_2D"),
    (13, "LOCAL_RESPONSE_NORMALIZATION"),
    (14, "LOGISTIC"),
    (15, "LSH_PROJECTION"),
    (16, "LSTM"),
    (17, "MAX_POOL_2D"),
    (18, "MUL"),
    (19, "RELU"),
    (20, "RELU_N1_TO_1"),
    (21, "RELU6"),
    (22, "RESHAPE"),
    (23, "RESIZE_BILINEAR"),
    (24, "RNN"),
    (25, "SOFTMAX"),
    (26, "SPACE_TO_DEPTH"),
    (27, "SVDF"),
    (28, "TANH"),
    (29, "CONCAT_EMBEDDINGS"),
    (30, "SKIP_GRAM"),
    (31, "CALL"),
    (32, "CUSTOM"),
    (33, "EMBEDDING_LOOKUP_SPARSE"),
    (34, "PAD"),
    (35, "UNIDIRECTIONAL_SEQUENCE_RNN"),
    (36, "GATHER"),
    (37, "BATCH_TO_SPACE_ND"),
    (38, "SPACE_TO_BATCH_ND"),
    (39, "TRANSPOSE"),
    (40, "MEAN"),
    (41, "SUB"),
    (42, "DIV"),
    (43, "SQUEEZE"),
    (44, "UNIDIRECTIONAL_SEQUENCE_LSTM"),
    (45, "STRIDED_SLICE"),
    (46, "BIDIRECTIONAL_SEQUENCE_RNN"),
    (47, "EXP"),
    (48, "TOPK_V2"),
    (49, "SPLIT"),
    (50, "LOG_SOFTMAX"),
    (51, "DELEGATE"),
    (52, "BIDIRECTIONAL_SEQUENCE_LSTM"),
    (53, "CAST"),
    (54, "PRELU"),
    (55, "MAXIMUM"),
    (56, "ARG_MAX"),
    (57, "MINIMUM"),
    (58, "LESS"),
    (59, "NEG"),
    (60, "PADV2"),
    (61, "GREATER"),
    (62, "GREATER_EQUAL"),
    (63, "LESS_EQUAL"),
    (64, "SELECT"),
    (65, "SLICE"),
    (66, "SIN"),
    (67, "TRANSPOSE_CONV"),
    (68, "SPARSE_TO_DENSE"),
    (69, "TILE"),
    (70, "EXPAND_DIMS"),
    (71, "EQUAL"),
    (72, "NOT_EQUAL"),
    (73, "LOG"),
    (74, "SUM"),
    (75, "SQRT"),
    (76, "RSQRT"),
    (77, "SHAPE"),
    (78, "POW"),
    (79, "ARG_MIN"),
    (80, "FAKE_QUANT"),
    (81, "REDUCE_PROD"),
    (82, "REDUCE_MAX"),
    (83, "PACK"),
    (84, "LOGICAL_OR"),
    (85, "ONE_HOT"),
    (86, "LOGICAL_AND"),
    (87, "LOGICAL_NOT"),
    (88, "UNPACK"),
    (89, "REDUCE_MIN"),
    (90, "FLOOR_DIV"),
    (91, "REDUCE_ANY"),
    (92, "SQUARE"),
    (93, "ZEROS_LIKE"),
    (94, "FILL"),
    (95, "FLOOR_MOD"),
    (96, "RANGE"),
    (97, "RESIZE_NEAREST_NEIGHBOR"),
    (98, "LEAKY_RELU"),
    (99, "SQUARED_DIFFERENCE"),
    (100, "MIRROR_PAD"),
    (101, "ABS"),
    (102, "SPLIT_V"),
    (103, "UNIQUE"),
    (104, "CEIL"),
    (105, "REVERSE_V2"),
    (106, "ADD_N"),
    (107, "GATHER_ND"),
    (108, "COS"),
    (109, "WHERE"),
    (110, "RANK"),
    (111, "ELU"),
    (112, "REVERSE_SEQUENCE"),
    (113, "MATRIX_DIAG"),
    (114, "QUANTIZE"),
    (115, "MATRIX_SET_DIAG"),
    (116, "ROUND"),
    (117, "HARD_SWISH"),
    (118, "IF"),
    (119, "WHILE"),
    (120, "NON_MAX_SUPPRESSION_V4"),
    (121, "NON_MAX_SUPPRESSION_V5"),
    (122, "SCATTER_ND"),
    (123, "SELECT_V2"),
    (124, "DENSIFY"),
    (125, "SEGMENT_SUM"),
    (126, "BATCH_MATMUL"),
    (127, "PLACEHOLDER_FOR_GREATER_OP_CODES"),
    (128, "CUMSUM"),
    (129, "CALL_ONCE"),
    (130, "BROADCAST_TO"),
    (131, "RFFT2D"),
    (132, "CONV_3D"),
    (136, "HASHTABLE"),
    (137, "HASHTABLE_FIND"),
    (138, "HASHTABLE_IMPORT"),
    (139, "HASHTABLE_SIZE"),
    (140, "REDUCE_ALL"),
    (141, "CONV_3D_TRANSPOSE"),
    (142, "VAR_HANDLE"),
    (143, "READ_VARIABLE"),
    (144, "ASSIGN_VARIABLE"),
    (145, "BROADCAST_ARGS"),
    (146, "RANDOM_STANDARD_NORMAL"),
    (147, "BUCKETIZE"),
    (148, "RANDOM_UNIFORM"),
    (149, "MULTINOMIAL"),
    (150, "GELU"),
    (151, "DYNAMIC_UPDATE_SLICE"),
    (152, "RELU_0_TO_1"),
    (153, "UNSORTED_SEGMENT_PROD"),
    (154, "UNSORTED_SEGMENT_MAX"),
    (155, "UNSORTED_SEGMENT_SUM"),
    (156, "ATAN2"),
    (157, "UNSORTED_SEGMENT_MIN"),
    (158, "SIGN"),
    (159, "BITCAST"),
    (160, "BITWISE_XOR"),
    (161, "RIGHT_SHIFT"),
    (162, "STABLEHLO_LOGISTIC"),
    (163, "STABLEHLO_ADD"),
    (164, "STABLEHLO_DIVIDE"),
    (165, "STABLEHLO_MULTIPLY"),
    (166, "STABLEHLO_MAXIMUM"),
    (167, "STABLEHLO_RESHAPE"),
    (168, "STABLEHLO_CLAMP"),
    (169, "STABLEHLO_CONCATENATE"),
    (170, "STABLEHLO_BROADCAST_IN_DIM"),
    (171, "STABLEHLO_CONVOLUTION"),
    (172, "STABLEHLO_SLICE"),
    (173, "STABLEHLO_CUSTOM_CALL"),
    (174, "STABLEHLO_REDUCE"),
    (175, "STABLEHLO_ABS"),
    (176, "STABLEHLO_AND"),
    (177, "STABLEHLO_COSINE"),
    (178, "STABLEHLO_EXPONENTIAL"),
    (179, "STABLEHLO_FLOOR"),
    (180, "STABLEHLO_LOG"),
    (181, "STABLEHLO_MINIMUM"),
    (182, "STABLEHLO_NEGATE"),
    (183, "STABLEHLO_OR"),
    (184, "STABLEHLO_POWER"),
    (185, "STABLEHLO_REMAINDER"),
    (186, "STABLEHLO_RSQRT"),
    (187, "STABLEHLO_SELECT"),
    (188, "STABLEHLO_SUBTRACT"),
    (189, "STABLEHLO_TANH"),
    (190, "STABLEHLO_SCATTER"),
    (191, "STABLEHLO_COMPARE"),
    (192, "STABLEHLO_CONVERT"),
    (193, "STABLEHLO_DYNAMIC_SLICE"),
    (194, "STABLEHLO_DYNAMIC_UPDATE_SLICE"),
    (195, "STABLEHLO_PAD"),
    (196, "STABLEHLO_IOTA"),
    (197, "STABLEHLO_DOT_GENERAL"),
    (198, "STABLEHLO_REDUCE_WINDOW"),
    (199, "STABLEHLO_SORT"),
    (200, "STABLEHLO_WHILE"),
    (201, "STABLEHLO_GATHER"),
    (202, "STABLEHLO_TRANSPOSE"),
    (203, "DILATE"),
    (204, "STABLEHLO_RNG_BIT_GENERATOR"),
    (205, "REDUCE_WINDOW"),
    (206, "STABLEHLO_COMPOSITE"),
    (207, "STABLEHLO_SHIFT_LEFT"),
    (208, "STABLEHLO_CBRT"),
    (209, "STABLEHLO_CASE"),
];

/// Importer-only operator codes, past every builtin: operators another format (ONNX) has
/// and TensorFlow Lite does not. Only a translating importer creates them.
pub mod ext_op {
    pub const RECIPROCAL: i32 = 1001;
    pub const ERF: i32 = 1002;
    pub const SOFTPLUS: i32 = 1003;
    pub const SELU: i32 = 1004;
    pub const HARD_SIGMOID: i32 = 1005;
    pub const SIGN: i32 = 1006;
    /// Inputs x, scale, bias; options `ext::AXIS`, `ext::EPSILON`.
    pub const LAYER_NORM: i32 = 1010;
    /// Inputs x (`[N, C, spatial...]`), scale, bias; option `ext::EPSILON`.
    pub const INSTANCE_NORM: i32 = 1011;
    /// Inputs a (8-bit `[..., K]`), b (int16 `[K, N]`, zero points subtracted), and the
    /// optional zero point of a (a one-value constant or run-time tensor); int32 output.
    pub const MATMUL_INTEGER: i32 = 1012;
    /// Inputs x (8-bit NHWC), filter (int16 `[kh, kw, in, out]`, zero points subtracted),
    /// and the optional zero point of x; options stride (fields 1 and 2, w and h),
    /// `ext::PAD_TOP`/`PAD_LEFT`, `ext::DILATION_H`/`_W`; int32 NHWC output.
    pub const CONV_INTEGER: i32 = 1013;
}

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
