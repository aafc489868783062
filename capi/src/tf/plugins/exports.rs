//! The export table: every `TF_*` function the headers declare, by C name and address, for
//! the plugins that leave these symbols undefined and resolve them against the process
//! (docs/capi.md, "Plugins"). `tests/abi.rs` keeps it equal to the headers.

/// One exported function: its C name and address.
#[derive(Debug)]
pub struct Export(pub &'static str, pub *const ());

// SAFETY: the addresses are of functions, which are immutable and callable from any thread.
unsafe impl Sync for Export {}

/// Every function the headers declare. Referencing this table (as the `hostrt` executable
/// does) keeps them all linked, so that plugins loaded later find them.
pub static EXPORTS: &[Export] = &[
    Export("TF_DataTypeSize", crate::tf::tf_datatype::TF_DataTypeSize as *const ()),
    Export("TF_NewStatus", crate::tf::tf_status::TF_NewStatus as *const ()),
    Export("TF_DeleteStatus", crate::tf::tf_status::TF_DeleteStatus as *const ()),
    Export("TF_SetStatus", crate::tf::tf_status::TF_SetStatus as *const ()),
    Export("TF_SetPayload", crate::tf::tf_status::TF_SetPayload as *const ()),
    Export("TF_SetStatusFromIOError", crate::tf::tf_status::TF_SetStatusFromIOError as *const ()),
    Export("TF_GetCode", crate::tf::tf_status::TF_GetCode as *const ()),
    Export("TF_Message", crate::tf::tf_status::TF_Message as *const ()),
    Export("TF_NewTensor", crate::tf::tf_tensor::TF_NewTensor as *const ()),
    Export("TF_AllocateTensor", crate::tf::tf_tensor::TF_AllocateTensor as *const ()),
    Export("TF_TensorMaybeMove", crate::tf::tf_tensor::TF_TensorMaybeMove as *const ()),
    Export("TF_DeleteTensor", crate::tf::tf_tensor::TF_DeleteTensor as *const ()),
    Export("TF_TensorType", crate::tf::tf_tensor::TF_TensorType as *const ()),
    Export("TF_SetShape", crate::tf::tf_tensor::TF_SetShape as *const ()),
    Export("TF_TensorDefaultAlignment", crate::tf::tf_tensor::TF_TensorDefaultAlignment as *const ()),
    Export("TF_NumDims", crate::tf::tf_tensor::TF_NumDims as *const ()),
    Export("TF_Dim", crate::tf::tf_tensor::TF_Dim as *const ()),
    Export("TF_TensorByteSize", crate::tf::tf_tensor::TF_TensorByteSize as *const ()),
    Export("TF_TensorData", crate::tf::tf_tensor::TF_TensorData as *const ()),
    Export("TF_TensorElementCount", crate::tf::tf_tensor::TF_TensorElementCount as *const ()),
    Export("TF_TensorBitcastFrom", crate::tf::tf_tensor::TF_TensorBitcastFrom as *const ()),
    Export("TF_TensorIsAligned", crate::tf::tf_tensor::TF_TensorIsAligned as *const ()),
    Export("TF_NewBufferFromString", crate::tf::c_api::TF_NewBufferFromString as *const ()),
    Export("TF_NewBuffer", crate::tf::c_api::TF_NewBuffer as *const ()),
    Export("TF_DeleteBuffer", crate::tf::c_api::TF_DeleteBuffer as *const ()),
    Export("TF_GetBuffer", crate::tf::c_api::TF_GetBuffer as *const ()),
    Export("TF_NewOpDefinitionBuilder", crate::tf::ops::TF_NewOpDefinitionBuilder as *const ()),
    Export("TF_RegisterOpDefinition", crate::tf::ops::TF_RegisterOpDefinition as *const ()),
    Export("TF_DeleteOpDefinitionBuilder", crate::tf::ops::TF_DeleteOpDefinitionBuilder as *const ()),
    Export("TF_OpDefinitionBuilderAddAttr", crate::tf::ops::TF_OpDefinitionBuilderAddAttr as *const ()),
    Export("TF_OpDefinitionBuilderAddInput", crate::tf::ops::TF_OpDefinitionBuilderAddInput as *const ()),
    Export("TF_OpDefinitionBuilderAddOutput", crate::tf::ops::TF_OpDefinitionBuilderAddOutput as *const ()),
    Export(
        "TF_OpDefinitionBuilderSetIsCommutative",
        crate::tf::ops::TF_OpDefinitionBuilderSetIsCommutative as *const (),
    ),
    Export(
        "TF_OpDefinitionBuilderSetIsAggregate",
        crate::tf::ops::TF_OpDefinitionBuilderSetIsAggregate as *const (),
    ),
    Export(
        "TF_OpDefinitionBuilderSetIsStateful",
        crate::tf::ops::TF_OpDefinitionBuilderSetIsStateful as *const (),
    ),
    Export(
        "TF_OpDefinitionBuilderSetAllowsUninitializedInput",
        crate::tf::ops::TF_OpDefinitionBuilderSetAllowsUninitializedInput as *const (),
    ),
    Export("TF_OpDefinitionBuilderDeprecated", crate::tf::ops::TF_OpDefinitionBuilderDeprecated as *const ()),
    Export(
        "TF_OpDefinitionBuilderSetShapeInferenceFunction",
        crate::tf::ops::TF_OpDefinitionBuilderSetShapeInferenceFunction as *const (),
    ),
    Export(
        "TF_ShapeInferenceContextNumInputs",
        crate::tf::ops::TF_ShapeInferenceContextNumInputs as *const (),
    ),
    Export("TF_NewShapeHandle", crate::tf::ops::TF_NewShapeHandle as *const ()),
    Export("TF_ShapeInferenceContextGetInput", crate::tf::ops::TF_ShapeInferenceContextGetInput as *const ()),
    Export(
        "TF_ShapeInferenceContextSetOutput",
        crate::tf::ops::TF_ShapeInferenceContextSetOutput as *const (),
    ),
    Export(
        "TF_ShapeInferenceContextVectorFromSize",
        crate::tf::ops::TF_ShapeInferenceContextVectorFromSize as *const (),
    ),
    Export("TF_ShapeInferenceContextScalar", crate::tf::ops::TF_ShapeInferenceContextScalar as *const ()),
    Export("TF_NewDimensionHandle", crate::tf::ops::TF_NewDimensionHandle as *const ()),
    Export(
        "TF_ShapeInferenceContext_GetAttrType",
        crate::tf::ops::TF_ShapeInferenceContext_GetAttrType as *const (),
    ),
    Export("TF_ShapeInferenceContextRank", crate::tf::ops::TF_ShapeInferenceContextRank as *const ()),
    Export(
        "TF_ShapeInferenceContextRankKnown",
        crate::tf::ops::TF_ShapeInferenceContextRankKnown as *const (),
    ),
    Export("TF_ShapeInferenceContextWithRank", crate::tf::ops::TF_ShapeInferenceContextWithRank as *const ()),
    Export(
        "TF_ShapeInferenceContextWithRankAtLeast",
        crate::tf::ops::TF_ShapeInferenceContextWithRankAtLeast as *const (),
    ),
    Export(
        "TF_ShapeInferenceContextWithRankAtMost",
        crate::tf::ops::TF_ShapeInferenceContextWithRankAtMost as *const (),
    ),
    Export("TF_ShapeInferenceContextDim", crate::tf::ops::TF_ShapeInferenceContextDim as *const ()),
    Export("TF_ShapeInferenceContextSubshape", crate::tf::ops::TF_ShapeInferenceContextSubshape as *const ()),
    Export(
        "TF_ShapeInferenceContextSetUnknownShape",
        crate::tf::ops::TF_ShapeInferenceContextSetUnknownShape as *const (),
    ),
    Export("TF_DimensionHandleValueKnown", crate::tf::ops::TF_DimensionHandleValueKnown as *const ()),
    Export("TF_DimensionHandleValue", crate::tf::ops::TF_DimensionHandleValue as *const ()),
    Export(
        "TF_ShapeInferenceContextConcatenateShapes",
        crate::tf::ops::TF_ShapeInferenceContextConcatenateShapes as *const (),
    ),
    Export("TF_DeleteShapeHandle", crate::tf::ops::TF_DeleteShapeHandle as *const ()),
    Export("TF_DeleteDimensionHandle", crate::tf::ops::TF_DeleteDimensionHandle as *const ()),
    Export("TF_NewKernelBuilder", crate::tf::kernels::TF_NewKernelBuilder as *const ()),
    Export(
        "TF_KernelBuilder_TypeConstraint",
        crate::tf::kernels::TF_KernelBuilder_TypeConstraint as *const (),
    ),
    Export("TF_KernelBuilder_HostMemory", crate::tf::kernels::TF_KernelBuilder_HostMemory as *const ()),
    Export("TF_KernelBuilder_Priority", crate::tf::kernels::TF_KernelBuilder_Priority as *const ()),
    Export("TF_KernelBuilder_Label", crate::tf::kernels::TF_KernelBuilder_Label as *const ()),
    Export("TF_RegisterKernelBuilder", crate::tf::kernels::TF_RegisterKernelBuilder as *const ()),
    Export(
        "TF_RegisterKernelBuilderWithKernelDef",
        crate::tf::kernels::TF_RegisterKernelBuilderWithKernelDef as *const (),
    ),
    Export("TF_DeleteKernelBuilder", crate::tf::kernels::TF_DeleteKernelBuilder as *const ()),
    Export("TF_GetStream", crate::tf::kernels::context::TF_GetStream as *const ()),
    Export("TF_NumInputs", crate::tf::kernels::context::TF_NumInputs as *const ()),
    Export("TF_NumOutputs", crate::tf::kernels::context::TF_NumOutputs as *const ()),
    Export("TF_GetInput", crate::tf::kernels::context::TF_GetInput as *const ()),
    Export("TF_InputRange", crate::tf::kernels::context::TF_InputRange as *const ()),
    Export("TF_SetOutput", crate::tf::kernels::context::TF_SetOutput as *const ()),
    Export(
        "TF_OpKernelConstruction_Failure",
        crate::tf::kernels::construction::TF_OpKernelConstruction_Failure as *const (),
    ),
    Export(
        "TF_OpKernelContext_Failure",
        crate::tf::kernels::context::TF_OpKernelContext_Failure as *const (),
    ),
    Export("TF_ExpectedOutputDataType", crate::tf::kernels::context::TF_ExpectedOutputDataType as *const ()),
    Export("TF_StepId", crate::tf::kernels::context::TF_StepId as *const ()),
    Export("TF_GetMutableOutput", crate::tf::kernels::context::TF_GetMutableOutput as *const ()),
    Export(
        "TF_GetSerializedFunctionDefLibrary",
        crate::tf::kernels::context::TF_GetSerializedFunctionDefLibrary as *const (),
    ),
    Export(
        "TF_GetSerializedConfigProto",
        crate::tf::kernels::context::TF_GetSerializedConfigProto as *const (),
    ),
    Export("TF_IsHostMemoryInput", crate::tf::kernels::context::TF_IsHostMemoryInput as *const ()),
    Export("TF_IsHostMemoryOutput", crate::tf::kernels::context::TF_IsHostMemoryOutput as *const ()),
    Export("TF_GetFrameId", crate::tf::kernels::context::TF_GetFrameId as *const ()),
    Export("TF_GetIterId", crate::tf::kernels::context::TF_GetIterId as *const ()),
    Export("TF_GetGraphDefVersion", crate::tf::kernels::context::TF_GetGraphDefVersion as *const ()),
    Export(
        "TF_GetResourceMgrDefaultContainerName",
        crate::tf::kernels::context::TF_GetResourceMgrDefaultContainerName as *const (),
    ),
    Export(
        "TF_OpKernelConstruction_GetAttrFunction",
        crate::tf::kernels::construction::TF_OpKernelConstruction_GetAttrFunction as *const (),
    ),
    Export(
        "TF_OpKernelConstruction_GetNodeDef",
        crate::tf::kernels::construction::TF_OpKernelConstruction_GetNodeDef as *const (),
    ),
    Export("TF_GetOpKernelName", crate::tf::kernels::context::TF_GetOpKernelName as *const ()),
    Export(
        "TF_GetOpKernelRequestedInput",
        crate::tf::kernels::context::TF_GetOpKernelRequestedInput as *const (),
    ),
    Export(
        "TF_OpKernelConstruction_GetAttrSize",
        crate::tf::kernels::construction::TF_OpKernelConstruction_GetAttrSize as *const (),
    ),
    Export(
        "TF_OpKernelConstruction_GetAttrType",
        crate::tf::kernels::construction::TF_OpKernelConstruction_GetAttrType as *const (),
    ),
    Export(
        "TF_OpKernelConstruction_GetAttrInt32",
        crate::tf::kernels::construction::TF_OpKernelConstruction_GetAttrInt32 as *const (),
    ),
    Export(
        "TF_OpKernelConstruction_GetAttrInt64",
        crate::tf::kernels::construction::TF_OpKernelConstruction_GetAttrInt64 as *const (),
    ),
    Export(
        "TF_OpKernelConstruction_GetAttrFloat",
        crate::tf::kernels::construction::TF_OpKernelConstruction_GetAttrFloat as *const (),
    ),
    Export(
        "TF_OpKernelConstruction_GetAttrBool",
        crate::tf::kernels::construction::TF_OpKernelConstruction_GetAttrBool as *const (),
    ),
    Export(
        "TF_OpKernelConstruction_GetAttrString",
        crate::tf::kernels::construction::TF_OpKernelConstruction_GetAttrString as *const (),
    ),
    Export(
        "TF_OpKernelConstruction_GetAttrTensor",
        crate::tf::kernels::construction::TF_OpKernelConstruction_GetAttrTensor as *const (),
    ),
    Export(
        "TF_OpKernelConstruction_GetAttrTypeList",
        crate::tf::kernels::construction::TF_OpKernelConstruction_GetAttrTypeList as *const (),
    ),
    Export(
        "TF_OpKernelConstruction_GetAttrInt32List",
        crate::tf::kernels::construction::TF_OpKernelConstruction_GetAttrInt32List as *const (),
    ),
    Export(
        "TF_OpKernelConstruction_GetAttrInt64List",
        crate::tf::kernels::construction::TF_OpKernelConstruction_GetAttrInt64List as *const (),
    ),
    Export(
        "TF_OpKernelConstruction_GetAttrFloatList",
        crate::tf::kernels::construction::TF_OpKernelConstruction_GetAttrFloatList as *const (),
    ),
    Export(
        "TF_OpKernelConstruction_GetAttrBoolList",
        crate::tf::kernels::construction::TF_OpKernelConstruction_GetAttrBoolList as *const (),
    ),
    Export(
        "TF_OpKernelConstruction_GetAttrStringList",
        crate::tf::kernels::construction::TF_OpKernelConstruction_GetAttrStringList as *const (),
    ),
    Export(
        "TF_OpKernelConstruction_GetAttrTensorList",
        crate::tf::kernels::construction::TF_OpKernelConstruction_GetAttrTensorList as *const (),
    ),
    Export(
        "TF_OpKernelConstruction_HasAttr",
        crate::tf::kernels::construction::TF_OpKernelConstruction_HasAttr as *const (),
    ),
    Export(
        "TF_OpKernelConstruction_GetName",
        crate::tf::kernels::construction::TF_OpKernelConstruction_GetName as *const (),
    ),
    Export("TF_AllocateOutput", crate::tf::kernels::context::TF_AllocateOutput as *const ()),
    Export(
        "TF_ForwardInputOrAllocateOutput",
        crate::tf::kernels::context::TF_ForwardInputOrAllocateOutput as *const (),
    ),
    Export("TF_AllocateTemp", crate::tf::kernels::context::TF_AllocateTemp as *const ()),
    Export("TF_ThreadPool_Schedule", crate::tf::kernels::threads::TF_ThreadPool_Schedule as *const ()),
    Export(
        "TF_ThreadPool_ScheduleWithHint",
        crate::tf::kernels::threads::TF_ThreadPool_ScheduleWithHint as *const (),
    ),
    Export("TF_ThreadPool_ParallelFor", crate::tf::kernels::threads::TF_ThreadPool_ParallelFor as *const ()),
    Export(
        "TF_ThreadPool_ParallelForWithWorkerId",
        crate::tf::kernels::threads::TF_ThreadPool_ParallelForWithWorkerId as *const (),
    ),
    Export(
        "TF_ThreadPool_ScheduleFuncWrap",
        crate::tf::kernels::threads::TF_ThreadPool_ScheduleFuncWrap as *const (),
    ),
    Export(
        "TF_OpKernelContext_UpdateStatus",
        crate::tf::kernels::threads::TF_OpKernelContext_UpdateStatus as *const (),
    ),
];
