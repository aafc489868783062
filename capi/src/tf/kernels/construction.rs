//! `TF_OpKernelConstruction`: what a kernel's create function sees (its attrs and name) and
//! `TF_OpKernelConstruction_*`, TensorFlow's attr readers with its size conventions
//! (`GetAttrSize`: list size -1 for a scalar; total size the string's bytes, the strings'
//! bytes of a list, the shape's rank, else -1).

use std::ffi::{c_char, c_int, c_void};

use crate::ffi::text;
use crate::tf::c_api::{TF_Bool, TF_Buffer, TF_StringView};
use crate::tf::op_def::{AttrKind, AttrValue, ShapeValue, TensorAttr};
use crate::tf::tf_datatype::TF_DataType;
use crate::tf::tf_status::{
    TF_Code, TF_INVALID_ARGUMENT, TF_NOT_FOUND, TF_OK, TF_Status, TF_UNIMPLEMENTED, report,
};
use crate::tf::tf_tensor::TF_Tensor;

/// A kernel being created (opaque to C).
#[derive(Debug)]
pub struct TF_OpKernelConstruction {
    name: String,
    op: String,
    attrs: Vec<(String, AttrValue)>,
    failure: Option<(TF_Code, String)>,
}

impl TF_OpKernelConstruction {
    pub(crate) fn new(name: &str, op: &str, attrs: &[(String, AttrValue)]) -> Self {
        TF_OpKernelConstruction {
            name: name.to_owned(),
            op: op.to_owned(),
            attrs: attrs.to_vec(),
            failure: None,
        }
    }

    /// The failure the create function reported, if any.
    pub(crate) fn failure(&self) -> Option<(TF_Code, String)> {
        self.failure.clone()
    }

    fn attr(&self, name: &str) -> Result<&AttrValue, (TF_Code, String)> {
        self.attrs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
            .ok_or_else(|| (TF_NOT_FOUND, format!("No attr named '{name}' in the node of op '{}'", self.op)))
    }
}

fn kind_name(v: &AttrValue) -> String {
    let scalar = |v: &AttrValue| match v {
        AttrValue::S(_) => AttrKind::String.name(),
        AttrValue::I(_) => AttrKind::Int.name(),
        AttrValue::F(_) => AttrKind::Float.name(),
        AttrValue::B(_) => AttrKind::Bool.name(),
        AttrValue::Type(_) => AttrKind::Type.name(),
        AttrValue::Shape(_) => AttrKind::Shape.name(),
        AttrValue::Tensor(_) => AttrKind::Tensor.name(),
        AttrValue::List(_) => "list",
    };
    match v {
        AttrValue::List(items) => format!("list({})", items.first().map_or("", scalar)),
        other => scalar(other).to_owned(),
    }
}

fn mismatch(name: &str, v: &AttrValue, want: &str) -> (TF_Code, String) {
    (
        TF_INVALID_ARGUMENT,
        format!("Attr '{name}' has value of type '{}' when '{want}' expected", kind_name(v)),
    )
}

/// Runs a reader on the construction context and reports to `status`.
///
/// # Safety
/// `ctx` and `status` are NULL or live; `attr_name` NULL or a C string.
unsafe fn read(
    ctx: *mut TF_OpKernelConstruction,
    attr_name: *const c_char,
    status: *mut TF_Status,
    f: impl FnOnce(&str, &AttrValue) -> Result<(), (TF_Code, String)>,
) {
    // SAFETY: NULL or live / a C string, by the caller's contract.
    let (c, name) = unsafe { (ctx.as_ref(), text(attr_name)) };
    let r = match (c, name) {
        (Some(c), Some(name)) => c.attr(&name).and_then(|v| f(&name, v)),
        _ => Err((TF_INVALID_ARGUMENT, "NULL construction context or attr name".to_owned())),
    };
    let (code, m) = r.err().unwrap_or((TF_OK, String::new()));
    // SAFETY: NULL or live, by the caller's contract.
    unsafe { report(status, code, &m) }
}

/// Writes `v` to `out` when it is not NULL.
///
/// # Safety
/// `out` is NULL or writable.
unsafe fn put<T>(out: *mut T, v: T) {
    // SAFETY: NULL or writable, by the caller's contract.
    if let Some(o) = unsafe { out.as_mut() } {
        *o = v;
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_OpKernelConstruction_GetAttrSize(
    ctx: *mut TF_OpKernelConstruction,
    attr_name: *const c_char,
    list_size: *mut i32,
    total_size: *mut i32,
    status: *mut TF_Status,
) {
    let size = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
    // SAFETY: the caller's contract, passed on; the outputs are NULL or writable.
    unsafe {
        read(ctx, attr_name, status, |_, v| {
            let (list, total) = match v {
                AttrValue::S(s) => (-1, size(s.len())),
                AttrValue::Shape(ShapeValue::Dims(d)) => (-1, size(d.len())),
                AttrValue::List(items) => {
                    // Strings sum their lengths and shapes their ranks (unknown rank: 0);
                    // any other list, empty ones included, has no total.
                    let total = items.iter().try_fold(0usize, |t, i| match i {
                        AttrValue::S(s) => Some(t + s.len()),
                        AttrValue::Shape(ShapeValue::Dims(d)) => Some(t + d.len()),
                        AttrValue::Shape(ShapeValue::Unknown) => Some(t),
                        _ => None,
                    });
                    let total = total.filter(|_| !items.is_empty());
                    (size(items.len()), total.map_or(-1, size))
                }
                _ => (-1, -1),
            };
            put(list_size, list);
            put(total_size, total);
            Ok(())
        })
    }
}

/// Reads a scalar attr converted by `conv` into `val`.
///
/// # Safety
/// As [`read`]; `val` is NULL or writable.
unsafe fn scalar<T>(
    ctx: *mut TF_OpKernelConstruction,
    attr_name: *const c_char,
    val: *mut T,
    status: *mut TF_Status,
    want: &str,
    conv: impl Fn(&AttrValue) -> Option<T>,
) {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        read(ctx, attr_name, status, |name, v| match conv(v) {
            Some(x) => {
                put(val, x);
                Ok(())
            }
            None => Err(mismatch(name, v, want)),
        })
    }
}

fn as_type(v: &AttrValue) -> Option<TF_DataType> {
    if let AttrValue::Type(t) = v { Some(*t) } else { None }
}

fn as_i32(v: &AttrValue) -> Option<i32> {
    if let AttrValue::I(i) = v { i32::try_from(*i).ok() } else { None }
}

fn as_i64(v: &AttrValue) -> Option<i64> {
    if let AttrValue::I(i) = v { Some(*i) } else { None }
}

fn as_f32(v: &AttrValue) -> Option<f32> {
    if let AttrValue::F(f) = v { Some(*f) } else { None }
}

fn as_bool(v: &AttrValue) -> Option<u8> {
    if let AttrValue::B(b) = v { Some(u8::from(*b)) } else { None }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_OpKernelConstruction_GetAttrType(
    ctx: *mut TF_OpKernelConstruction,
    attr_name: *const c_char,
    val: *mut TF_DataType,
    status: *mut TF_Status,
) {
    // SAFETY: the caller's contract, passed on.
    unsafe { scalar(ctx, attr_name, val, status, "type", as_type) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_OpKernelConstruction_GetAttrInt32(
    ctx: *mut TF_OpKernelConstruction,
    attr_name: *const c_char,
    val: *mut i32,
    status: *mut TF_Status,
) {
    // SAFETY: the caller's contract, passed on.
    unsafe { scalar(ctx, attr_name, val, status, "int (in int32 range)", as_i32) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_OpKernelConstruction_GetAttrInt64(
    ctx: *mut TF_OpKernelConstruction,
    attr_name: *const c_char,
    val: *mut i64,
    status: *mut TF_Status,
) {
    // SAFETY: the caller's contract, passed on.
    unsafe { scalar(ctx, attr_name, val, status, "int", as_i64) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_OpKernelConstruction_GetAttrFloat(
    ctx: *mut TF_OpKernelConstruction,
    attr_name: *const c_char,
    val: *mut f32,
    status: *mut TF_Status,
) {
    // SAFETY: the caller's contract, passed on.
    unsafe { scalar(ctx, attr_name, val, status, "float", as_f32) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_OpKernelConstruction_GetAttrBool(
    ctx: *mut TF_OpKernelConstruction,
    attr_name: *const c_char,
    val: *mut TF_Bool,
    status: *mut TF_Status,
) {
    // SAFETY: the caller's contract, passed on.
    unsafe { scalar(ctx, attr_name, val, status, "bool", as_bool) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_OpKernelConstruction_GetAttrString(
    ctx: *mut TF_OpKernelConstruction,
    attr_name: *const c_char,
    val: *mut c_char,
    max_length: usize,
    status: *mut TF_Status,
) {
    // SAFETY: the caller's contract, passed on; `val` holds `max_length` bytes.
    unsafe {
        read(ctx, attr_name, status, |name, v| match v {
            AttrValue::S(s) => {
                if !val.is_null() {
                    std::ptr::copy_nonoverlapping(s.as_ptr(), val.cast::<u8>(), s.len().min(max_length));
                }
                Ok(())
            }
            other => Err(mismatch(name, other, "string")),
        })
    }
}

/// Reads a list attr, each item converted by `conv`, up to `max_vals` items into `vals`.
///
/// # Safety
/// As [`read`]; `vals` is NULL or holds `max_vals` items.
unsafe fn list<T>(
    ctx: *mut TF_OpKernelConstruction,
    attr_name: *const c_char,
    vals: *mut T,
    max_vals: c_int,
    status: *mut TF_Status,
    want: &str,
    conv: impl Fn(&AttrValue) -> Option<T>,
) {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        read(ctx, attr_name, status, |name, value| {
            let bad = || mismatch(name, value, &format!("list({want})"));
            let AttrValue::List(items) = value else { return Err(bad()) };
            let items: Vec<T> = items.iter().map(&conv).collect::<Option<_>>().ok_or_else(bad)?;
            let n = items.len().min(usize::try_from(max_vals).unwrap_or(0));
            if !vals.is_null() {
                std::ptr::copy_nonoverlapping(items.as_ptr(), vals, n);
            }
            Ok(())
        })
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_OpKernelConstruction_GetAttrTypeList(
    ctx: *mut TF_OpKernelConstruction,
    attr_name: *const c_char,
    vals: *mut TF_DataType,
    max_vals: c_int,
    status: *mut TF_Status,
) {
    // SAFETY: the caller's contract, passed on.
    unsafe { list(ctx, attr_name, vals, max_vals, status, "type", as_type) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_OpKernelConstruction_GetAttrInt32List(
    ctx: *mut TF_OpKernelConstruction,
    attr_name: *const c_char,
    vals: *mut i32,
    max_vals: c_int,
    status: *mut TF_Status,
) {
    // SAFETY: the caller's contract, passed on.
    unsafe { list(ctx, attr_name, vals, max_vals, status, "int (in int32 range)", as_i32) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_OpKernelConstruction_GetAttrInt64List(
    ctx: *mut TF_OpKernelConstruction,
    attr_name: *const c_char,
    vals: *mut i64,
    max_vals: c_int,
    status: *mut TF_Status,
) {
    // SAFETY: the caller's contract, passed on.
    unsafe { list(ctx, attr_name, vals, max_vals, status, "int", as_i64) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_OpKernelConstruction_GetAttrFloatList(
    ctx: *mut TF_OpKernelConstruction,
    attr_name: *const c_char,
    vals: *mut f32,
    max_vals: c_int,
    status: *mut TF_Status,
) {
    // SAFETY: the caller's contract, passed on.
    unsafe { list(ctx, attr_name, vals, max_vals, status, "float", as_f32) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_OpKernelConstruction_GetAttrBoolList(
    ctx: *mut TF_OpKernelConstruction,
    attr_name: *const c_char,
    vals: *mut TF_Bool,
    max_vals: c_int,
    status: *mut TF_Status,
) {
    // SAFETY: the caller's contract, passed on.
    unsafe { list(ctx, attr_name, vals, max_vals, status, "bool", as_bool) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_OpKernelConstruction_GetAttrStringList(
    ctx: *mut TF_OpKernelConstruction,
    attr_name: *const c_char,
    vals: *mut *mut c_char,
    lengths: *mut usize,
    max_values: c_int,
    storage: *mut c_void,
    storage_size: usize,
    status: *mut TF_Status,
) {
    // SAFETY: the caller's contract, passed on: `vals` and `lengths` hold `max_values`
    // items, `storage` `storage_size` bytes.
    unsafe {
        read(ctx, attr_name, status, |name, list| {
            let AttrValue::List(items) = list else { return Err(mismatch(name, list, "list(string)")) };
            let strings: Option<Vec<&String>> =
                items.iter().map(|v| if let AttrValue::S(s) = v { Some(s) } else { None }).collect();
            let strings = strings.ok_or_else(|| mismatch(name, list, "list(string)"))?;
            let n = strings.len().min(usize::try_from(max_values).unwrap_or(0));
            let need: usize = strings[..n].iter().map(|s| s.len()).sum();
            if need > storage_size
                || (need > 0 && storage.is_null())
                || (n > 0 && (vals.is_null() || lengths.is_null()))
            {
                return Err((
                    TF_INVALID_ARGUMENT,
                    format!("Not enough storage to hold the requested list of strings ({need} bytes)"),
                ));
            }
            let mut at = storage.cast::<c_char>();
            for (i, s) in strings[..n].iter().enumerate() {
                std::ptr::copy_nonoverlapping(s.as_ptr(), at.cast::<u8>(), s.len());
                vals.add(i).write(at);
                lengths.add(i).write(s.len());
                at = at.add(s.len());
            }
            Ok(())
        })
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_OpKernelConstruction_GetAttrTensor(
    ctx: *mut TF_OpKernelConstruction,
    attr_name: *const c_char,
    val: *mut *mut TF_Tensor,
    status: *mut TF_Status,
) {
    // SAFETY: the caller's contract, passed on; `val` is NULL or writable.
    unsafe {
        put(val, std::ptr::null_mut());
        read(ctx, attr_name, status, |name, v| match v {
            AttrValue::Tensor(t) if !val.is_null() => {
                put(val, Box::into_raw(Box::new(t.0.clone())));
                Ok(())
            }
            AttrValue::Tensor(_) => Err((TF_INVALID_ARGUMENT, "NULL output for a tensor attr".to_owned())),
            _ => Err(mismatch(name, v, "tensor")),
        })
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_OpKernelConstruction_GetAttrTensorList(
    ctx: *mut TF_OpKernelConstruction,
    attr_name: *const c_char,
    vals: *mut *mut TF_Tensor,
    max_values: c_int,
    status: *mut TF_Status,
) {
    // SAFETY: the caller's contract, passed on; `vals` holds `max_values` writable slots.
    unsafe {
        read(ctx, attr_name, status, |name, v| {
            let tensors: Option<Vec<&TensorAttr>> = match v {
                AttrValue::List(items) => {
                    items.iter().map(|i| if let AttrValue::Tensor(t) = i { Some(t) } else { None }).collect()
                }
                _ => None,
            };
            let tensors = tensors.ok_or_else(|| mismatch(name, v, "list(tensor)"))?;
            let n = tensors.len().min(usize::try_from(max_values).unwrap_or(0));
            if n > 0 && vals.is_null() {
                return Err((TF_INVALID_ARGUMENT, "NULL output for a list of tensors".to_owned()));
            }
            for (i, t) in tensors[..n].iter().enumerate() {
                vals.add(i).write(Box::into_raw(Box::new(t.0.clone())));
            }
            Ok(())
        })
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_OpKernelConstruction_HasAttr(
    ctx: *mut TF_OpKernelConstruction,
    attr_name: *const c_char,
    status: *mut TF_Status,
) -> bool {
    // SAFETY: NULL or live / a C string, by the contract.
    let (c, name) = unsafe { (ctx.as_ref(), text(attr_name)) };
    let (code, has) = match (c, name) {
        (Some(c), Some(name)) => (TF_OK, c.attr(&name).is_ok()),
        _ => (TF_INVALID_ARGUMENT, false),
    };
    // SAFETY: NULL or live, by the contract.
    unsafe {
        report(status, code, if code == TF_OK { "" } else { "NULL construction context or attr name" })
    };
    has
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_OpKernelConstruction_GetName(ctx: *mut TF_OpKernelConstruction) -> TF_StringView {
    // SAFETY: NULL or live, by the contract; the name lives as long as the context.
    match unsafe { ctx.as_ref() } {
        Some(c) => TF_StringView { data: c.name.as_ptr().cast(), len: c.name.len() },
        None => TF_StringView { data: c"".as_ptr(), len: 0 },
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_OpKernelConstruction_GetAttrFunction(
    ctx: *mut TF_OpKernelConstruction,
    attr_name: *const c_char,
    status: *mut TF_Status,
) -> *mut TF_Buffer {
    let _ = (ctx, attr_name);
    // SAFETY: NULL or live, by the contract.
    unsafe { report(status, TF_UNIMPLEMENTED, "hostrt programs have no function attrs") };
    std::ptr::null_mut()
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_OpKernelConstruction_GetNodeDef(
    ctx: *mut TF_OpKernelConstruction,
    status: *mut TF_Status,
) -> *mut TF_Buffer {
    let _ = ctx;
    // SAFETY: NULL or live, by the contract.
    unsafe { report(status, TF_UNIMPLEMENTED, "hostrt kernels have no NodeDef proto") };
    std::ptr::null_mut()
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_OpKernelConstruction_Failure(
    ctx: *mut TF_OpKernelConstruction,
    status: *mut TF_Status,
) {
    // SAFETY: NULL or live, by the contract.
    if let (Some(c), Some(s)) = unsafe { (ctx.as_mut(), status.as_ref()) }
        && s.code() != TF_OK
    {
        c.failure.get_or_insert((s.code(), s.message().to_owned()));
    }
}
