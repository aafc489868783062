//! The native half of the Android binding (`examples/android`: `ai.hostrt.Program`,
//! `ai.hostrt.Tensor`): JNI functions over the embedding API of [`crate::embed`]. Built into
//! the library for Android targets, and with feature `jni` elsewhere (the host's
//! `libhostrt.so`, so the Java classes are tested with a JDK on this machine).
//!
//! Handles are the embedding API's (checked against its table of live handles), carried as
//! `long`s; errors become `ai.hostrt.HostrtException` (code, message, location); no panic
//! crosses into Java.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, OnceLock};

use jni::JNIEnv;
use jni::objects::{
    JByteArray, JClass, JFloatArray, JIntArray, JLongArray, JObject, JObjectArray, JString, JValue,
};
use jni::sys::{jfloatArray, jint, jintArray, jlong, jlongArray, jobjectArray, jstring};

use super::host::HostInner;
use super::raw::{self, Kind};
use super::status::{Error, HOSTRT_INTERNAL, HOSTRT_INVALID_ARGUMENT};
use super::{
    HOSTRT_DTYPE_F32, HOSTRT_DTYPE_I32, HOSTRT_TYPE_BOOL, HOSTRT_TYPE_F32, HOSTRT_TYPE_F64, HOSTRT_TYPE_I32,
    HOSTRT_TYPE_I64, HOSTRT_TYPE_TENSOR, hostrt_host_options, hostrt_program, hostrt_tensor, hostrt_value,
};

/// A failure on the Java side of the boundary (a pending exception, a bad class).
fn java(e: jni::errors::Error) -> Error {
    Error::new(HOSTRT_INTERNAL, format!("JNI: {e}"))
}

/// Runs `f`; an error or a panic becomes a thrown `HostrtException` and `default`.
fn guarded<'l, R>(
    env: &mut JNIEnv<'l>,
    default: R,
    f: impl FnOnce(&mut JNIEnv<'l>) -> Result<R, Error>,
) -> R {
    let r = catch_unwind(AssertUnwindSafe(|| f(env)))
        .unwrap_or_else(|_| Err(Error::new(HOSTRT_INTERNAL, "a panic inside hostrt (a bug)")));
    match r {
        Ok(v) => v,
        Err(e) => {
            throw(env, &e);
            default
        }
    }
}

/// Throws `ai.hostrt.HostrtException(code, message)` (the location, if any, ends the
/// message).
fn throw(env: &mut JNIEnv<'_>, e: &Error) {
    if env.exception_check().unwrap_or(true) {
        return; // a Java exception is already on its way
    }
    let message = match &e.location {
        Some((file, line, col)) => format!("{} ({file}:{line}:{col})", e.message),
        None => e.message.clone(),
    };
    let Ok(text) = env.new_string(message) else { return };
    let args = [JValue::Int(e.code), JValue::Object(&text)];
    if let Ok(ex) = env.new_object("ai/hostrt/HostrtException", "(ILjava/lang/String;)V", &args) {
        let _ = env.throw(jni::objects::JThrowable::from(ex));
    }
}

/// The host of tensors made from Java: the system heap, single-threaded queue.
fn tensor_host() -> Result<Arc<HostInner>, Error> {
    static HOST: OnceLock<Result<Arc<HostInner>, Error>> = OnceLock::new();
    HOST.get_or_init(|| {
        // SAFETY: no caller memory: hostrt allocates nothing for the heap.
        unsafe { super::host::new_host(&hostrt_host_options::default()) }
    })
    .clone()
}

/// The program behind a Java handle.
fn program<'a>(handle: jlong) -> Result<&'a hostrt_program, Error> {
    // SAFETY: checked by the table; Java closes a program once, after its last use.
    unsafe { raw::get(handle as *const hostrt_program, Kind::Program) }.map_err(Error::invalid)
}

/// The tensor behind a Java handle.
fn tensor<'a>(handle: jlong) -> Result<&'a hostrt_tensor, Error> {
    // SAFETY: as for `program`.
    unsafe { raw::get(handle as *const hostrt_tensor, Kind::Tensor) }.map_err(Error::invalid)
}

/// A host of its own for a Java program: an arena of `arena_bytes` (0: the system heap) and
/// `workers` threads.
fn new_host(arena_bytes: jlong, workers: jint) -> Result<std::sync::Arc<super::host::HostInner>, Error> {
    let options = hostrt_host_options {
        arena_bytes: usize::try_from(arena_bytes).map_err(|_| Error::invalid("negative arena size"))?,
        worker_threads: u32::try_from(workers).map_err(|_| Error::invalid("negative worker count"))?,
        blocking_threads: 1,
        ..Default::default()
    };
    // SAFETY: no caller memory (hostrt allocates the arena).
    unsafe { super::host::new_host(&options) }
}

/// `Program.nativeLoad(byte[] bef, long arenaBytes, int workers)`: a program (copied) on a
/// host of its own.
#[unsafe(no_mangle)]
pub extern "system" fn Java_ai_hostrt_Program_nativeLoad<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    bef: JByteArray<'l>,
    arena_bytes: jlong,
    workers: jint,
) -> jlong {
    guarded(&mut env, 0, |env| {
        let bytes = env.convert_byte_array(&bef).map_err(java)?;
        let host = new_host(arena_bytes, workers)?;
        let inner = super::program::load_copy(host, &bytes)?;
        Ok(hostrt_program::publish(inner)? as jlong)
    })
}

/// `Program.nativeFromTflite(byte[] model, long arenaBytes, int workers)`: a TensorFlow Lite
/// model imported (docs/models.md) into a program on a host of its own.
#[unsafe(no_mangle)]
pub extern "system" fn Java_ai_hostrt_Program_nativeFromTflite<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    model: JByteArray<'l>,
    arena_bytes: jlong,
    workers: jint,
) -> jlong {
    guarded(&mut env, 0, |env| {
        let bytes = env.convert_byte_array(&model).map_err(java)?;
        let host = new_host(arena_bytes, workers)?;
        let inner = super::program::load_tflite(host, &bytes)?;
        Ok(hostrt_program::publish(inner)? as jlong)
    })
}

/// `Program.nativeFromOnnx(byte[] model, long arenaBytes, int workers)`: an ONNX model
/// imported (docs/onnx.md) into a program on a host of its own.
#[unsafe(no_mangle)]
pub extern "system" fn Java_ai_hostrt_Program_nativeFromOnnx<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    model: JByteArray<'l>,
    arena_bytes: jlong,
    workers: jint,
) -> jlong {
    guarded(&mut env, 0, |env| {
        let bytes = env.convert_byte_array(&model).map_err(java)?;
        let host = new_host(arena_bytes, workers)?;
        let inner = super::program::load_onnx(host, &bytes, None)?;
        Ok(hostrt_program::publish(inner)? as jlong)
    })
}

/// `Program.nativeFunctions(long handle)`: the function names.
#[unsafe(no_mangle)]
pub extern "system" fn Java_ai_hostrt_Program_nativeFunctions<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
) -> jobjectArray {
    guarded(&mut env, std::ptr::null_mut(), |env| {
        let p = program(handle)?;
        let names: Vec<&str> = super::program::function_names(&p.inner).collect();
        let array =
            env.new_object_array(names.len() as i32, "java/lang/String", JObject::null()).map_err(java)?;
        for (i, n) in names.iter().enumerate() {
            let s = env.new_string(n).map_err(java)?;
            env.set_object_array_element(&array, i as i32, s).map_err(java)?;
        }
        Ok(array.into_raw())
    })
}

/// A Java argument as a value: `Integer`, `Long`, `Float`, `Double`, `Boolean` or `Tensor`.
fn argument(env: &mut JNIEnv<'_>, o: &JObject<'_>, i: usize) -> Result<hostrt_value, Error> {
    let mut v = hostrt_value { type_: HOSTRT_TYPE_I32, i: 0, f: 0.0, tensor: std::ptr::null_mut() };
    let is = |env: &mut JNIEnv<'_>, class: &str| env.is_instance_of(o, class).unwrap_or(false);
    if is(env, "java/lang/Integer") {
        v.i = i64::from(env.call_method(o, "intValue", "()I", &[]).and_then(|r| r.i()).map_err(java)?);
    } else if is(env, "java/lang/Long") {
        v.type_ = HOSTRT_TYPE_I64;
        v.i = env.call_method(o, "longValue", "()J", &[]).and_then(|r| r.j()).map_err(java)?;
    } else if is(env, "java/lang/Float") {
        v.type_ = HOSTRT_TYPE_F32;
        v.f = f64::from(env.call_method(o, "floatValue", "()F", &[]).and_then(|r| r.f()).map_err(java)?);
    } else if is(env, "java/lang/Double") {
        v.type_ = HOSTRT_TYPE_F64;
        v.f = env.call_method(o, "doubleValue", "()D", &[]).and_then(|r| r.d()).map_err(java)?;
    } else if is(env, "java/lang/Boolean") {
        v.type_ = HOSTRT_TYPE_BOOL;
        v.i = i64::from(env.call_method(o, "booleanValue", "()Z", &[]).and_then(|r| r.z()).map_err(java)?);
    } else if is(env, "ai/hostrt/Tensor") {
        v.type_ = HOSTRT_TYPE_TENSOR;
        v.tensor = env.get_field(o, "handle", "J").and_then(|r| r.j()).map_err(java)? as *mut hostrt_tensor;
    } else {
        return Err(Error::new(
            HOSTRT_INVALID_ARGUMENT,
            format!("argument {i}: not an Integer, Long, Float, Double, Boolean or Tensor"),
        ));
    }
    Ok(v)
}

/// A result value as a Java object (a `Tensor` owns the new handle).
fn result<'l>(env: &mut JNIEnv<'l>, v: &hostrt_value) -> Result<JObject<'l>, Error> {
    let o = match v.type_ {
        HOSTRT_TYPE_I32 => env.new_object("java/lang/Integer", "(I)V", &[JValue::Int(v.i as i32)]),
        HOSTRT_TYPE_I64 => env.new_object("java/lang/Long", "(J)V", &[JValue::Long(v.i)]),
        HOSTRT_TYPE_F32 => env.new_object("java/lang/Float", "(F)V", &[JValue::Float(v.f as f32)]),
        HOSTRT_TYPE_F64 => env.new_object("java/lang/Double", "(D)V", &[JValue::Double(v.f)]),
        HOSTRT_TYPE_BOOL => env.new_object("java/lang/Boolean", "(Z)V", &[JValue::Bool(u8::from(v.i != 0))]),
        HOSTRT_TYPE_TENSOR => env.new_object("ai/hostrt/Tensor", "(J)V", &[JValue::Long(v.tensor as jlong)]),
        _ => return Ok(JObject::null()), // a chain: no value
    };
    o.map_err(java)
}

/// `Program.nativeCall(long handle, String function, Object[] args)`: the results.
#[unsafe(no_mangle)]
pub extern "system" fn Java_ai_hostrt_Program_nativeCall<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    function: JString<'l>,
    args: JObjectArray<'l>,
) -> jobjectArray {
    guarded(&mut env, std::ptr::null_mut(), |env| {
        let p = program(handle)?;
        let name: String = env.get_string(&function).map_err(java)?.into();
        let n = env.get_array_length(&args).map_err(java)? as usize;
        let mut values = Vec::with_capacity(n);
        for i in 0..n {
            let o = env.get_object_array_element(&args, i as i32).map_err(java)?;
            values.push(argument(env, &o, i)?);
        }
        // SAFETY: `values` holds `n` values whose tensor handles the table checks.
        let results = unsafe { super::call::call(&p.inner, &name, values.as_ptr(), n) }?;
        let array =
            env.new_object_array(results.len() as i32, "java/lang/Object", JObject::null()).map_err(java)?;
        for i in 0..results.len() {
            let v = results.get(i)?;
            let o = result(env, &v)?;
            env.set_object_array_element(&array, i as i32, o).map_err(java)?;
        }
        Ok(array.into_raw())
    })
}

/// `Program.nativeTraceBegin(long handle)`: starts tracing the program's host, as
/// `hostrt_trace_begin` does (docs/profiling.md).
#[unsafe(no_mangle)]
pub extern "system" fn Java_ai_hostrt_Program_nativeTraceBegin<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
) {
    guarded(&mut env, (), |_| program(handle)?.inner.host.trace().begin())
}

/// `Program.nativeTraceEnd(long handle)`: ends the program's host's trace and returns it as
/// a JSON string, as `hostrt_trace_end` writes it.
#[unsafe(no_mangle)]
pub extern "system" fn Java_ai_hostrt_Program_nativeTraceEnd<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
) -> jstring {
    guarded(&mut env, std::ptr::null_mut(), |env| {
        let mut text = None;
        program(handle)?.inner.host.trace().end(|json| {
            // The recorder writes JSON text, UTF-8 by construction.
            let json = std::str::from_utf8(json).map_err(|e| Error::new(HOSTRT_INTERNAL, e.to_string()))?;
            text = Some(env.new_string(json).map_err(java)?);
            Ok(true)
        })?;
        Ok(text.map_or(std::ptr::null_mut(), |t| t.into_raw()))
    })
}

/// `Program.nativeClose(long handle)`.
#[unsafe(no_mangle)]
pub extern "system" fn Java_ai_hostrt_Program_nativeClose<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
) {
    guarded(&mut env, (), |_| {
        // SAFETY: checked by the table; Java closes once.
        unsafe { raw::take(handle as *mut hostrt_program, Kind::Program) }.map(drop).map_err(Error::invalid)
    })
}

/// `Tensor.nativeFromFloats(float[] data, long[] dims)`: a tensor holding a copy.
#[unsafe(no_mangle)]
pub extern "system" fn Java_ai_hostrt_Tensor_nativeFromFloats<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    data: JFloatArray<'l>,
    dims: JLongArray<'l>,
) -> jlong {
    guarded(&mut env, 0, |env| {
        let mut values = vec![0f32; env.get_array_length(&data).map_err(java)? as usize];
        env.get_float_array_region(&data, 0, &mut values).map_err(java)?;
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
        new_tensor(env, HOSTRT_DTYPE_F32, &dims, &bytes)
    })
}

/// `Tensor.nativeFromInts(int[] data, long[] dims)`: a tensor holding a copy.
#[unsafe(no_mangle)]
pub extern "system" fn Java_ai_hostrt_Tensor_nativeFromInts<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    data: JIntArray<'l>,
    dims: JLongArray<'l>,
) -> jlong {
    guarded(&mut env, 0, |env| {
        let mut values = vec![0i32; env.get_array_length(&data).map_err(java)? as usize];
        env.get_int_array_region(&data, 0, &mut values).map_err(java)?;
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
        new_tensor(env, HOSTRT_DTYPE_I32, &dims, &bytes)
    })
}

fn new_tensor(env: &mut JNIEnv<'_>, dtype: i32, dims: &JLongArray<'_>, bytes: &[u8]) -> Result<jlong, Error> {
    let mut d = vec![0i64; env.get_array_length(dims).map_err(java)? as usize];
    env.get_long_array_region(dims, 0, &mut d).map_err(java)?;
    Ok(super::tensor::new_tensor(tensor_host()?, dtype, &d, Some(bytes))? as jlong)
}

/// `Tensor.nativeDtype(long handle)`: the dtype (TensorFlow's numbers).
#[unsafe(no_mangle)]
pub extern "system" fn Java_ai_hostrt_Tensor_nativeDtype<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
) -> jint {
    guarded(&mut env, 0, |_| Ok(tensor(handle)?.dtype))
}

/// `Tensor.nativeDims(long handle)`: the dims.
#[unsafe(no_mangle)]
pub extern "system" fn Java_ai_hostrt_Tensor_nativeDims<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
) -> jlongArray {
    guarded(&mut env, std::ptr::null_mut(), |env| {
        let dims = tensor(handle)?.tensor.shape().dims().to_vec();
        let array = env.new_long_array(dims.len() as i32).map_err(java)?;
        env.set_long_array_region(&array, 0, &dims).map_err(java)?;
        Ok(array.into_raw())
    })
}

/// The elements of a tensor of `dtype`, read as `T`.
fn elements<T: hostrt_core::tensor::Plain + Copy>(
    handle: jlong,
    dtype: i32,
    what: &str,
) -> Result<Vec<T>, Error> {
    let t = tensor(handle)?;
    if t.dtype != dtype {
        return Err(Error::invalid(format!("the tensor does not hold {what}s (dtype {})", t.dtype)));
    }
    Ok(t.tensor.read::<T>().map_err(|e| Error::invalid(e.to_string()))?.to_vec())
}

/// `Tensor.nativeFloats(long handle)`: the elements of an f32 tensor.
#[unsafe(no_mangle)]
pub extern "system" fn Java_ai_hostrt_Tensor_nativeFloats<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
) -> jfloatArray {
    guarded(&mut env, std::ptr::null_mut(), |env| {
        let v = elements::<f32>(handle, HOSTRT_DTYPE_F32, "float")?;
        let array = env.new_float_array(v.len() as i32).map_err(java)?;
        env.set_float_array_region(&array, 0, &v).map_err(java)?;
        Ok(array.into_raw())
    })
}

/// `Tensor.nativeInts(long handle)`: the elements of an i32 tensor.
#[unsafe(no_mangle)]
pub extern "system" fn Java_ai_hostrt_Tensor_nativeInts<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
) -> jintArray {
    guarded(&mut env, std::ptr::null_mut(), |env| {
        let v = elements::<i32>(handle, HOSTRT_DTYPE_I32, "int")?;
        let array = env.new_int_array(v.len() as i32).map_err(java)?;
        env.set_int_array_region(&array, 0, &v).map_err(java)?;
        Ok(array.into_raw())
    })
}

/// `Tensor.nativeClose(long handle)`.
#[unsafe(no_mangle)]
pub extern "system" fn Java_ai_hostrt_Tensor_nativeClose<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
) {
    guarded(&mut env, (), |_| {
        // SAFETY: checked by the table; Java closes once.
        unsafe { raw::take(handle as *mut hostrt_tensor, Kind::Tensor) }.map(drop).map_err(Error::invalid)
    })
}
