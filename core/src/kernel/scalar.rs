//! Scalar kernels: kernels over plain word-sized values (`fn(i32, i32) -> i32`), which the
//! executor may run on values kept in the frame's registers themselves instead of in async
//! values (docs/execution.md, "Scalar registers"). Declared with
//! [`scalar_kernel_entry!`](crate::scalar_kernel_entry); the same function is also an
//! ordinary typed kernel, which runs wherever a use cannot take the scalar path.

use core::cell::Cell;

use super::adaptors::{Attribute, Cursor, KernelParam};
use super::attribute::{AttrRef, AttrScalar};
use super::frame::KernelFrame;
use super::signature::{Param, SignedParam, SignedReturn, TypeKey, TypedKernel, sealed};
use crate::allocator::{AllocError, Allocator};
use crate::async_value::{AsyncValueRef, RcAsyncValue, Spare};

/// A value the executor can keep in a register word: `Copy`, and rebuilt from any word
/// [`to_word`](Self::to_word) made. Sealed: implemented for `bool`, `i32`, `u32`, `f32`,
/// `i64`, `u64` and `f64`; the 64-bit ones fit a word only on 64-bit targets ([`FITS`](Self::FITS)).
pub trait ScalarValue: Copy + Send + Sync + 'static + sealed::Param {
    /// Whether the value fits a register word on this target (a kernel with one that does
    /// not has no scalar form here).
    const FITS: bool = size_of::<Self>() <= size_of::<usize>();
    /// The value as a register word.
    fn to_word(self) -> usize;
    /// The value a word made by `to_word` holds (any other word gives some valid value).
    fn from_word(word: usize) -> Self;
}

macro_rules! scalar_int {
    ($($t:ty as $u:ty),*) => {$(
        impl ScalarValue for $t {
            #[inline(always)]
            fn to_word(self) -> usize {
                self as $u as usize
            }
            #[inline(always)]
            fn from_word(word: usize) -> Self {
                word as $u as $t
            }
        }
    )*};
}
scalar_int!(i32 as u32, u32 as u32, i64 as u64, u64 as u64);

impl ScalarValue for bool {
    #[inline(always)]
    fn to_word(self) -> usize {
        self as usize
    }
    #[inline(always)]
    fn from_word(word: usize) -> Self {
        word & 1 != 0
    }
}

impl ScalarValue for f32 {
    #[inline(always)]
    fn to_word(self) -> usize {
        self.to_bits() as usize
    }
    #[inline(always)]
    fn from_word(word: usize) -> Self {
        f32::from_bits(word as u32)
    }
}

impl ScalarValue for f64 {
    #[inline(always)]
    fn to_word(self) -> usize {
        self.to_bits() as usize
    }
    #[inline(always)]
    fn from_word(word: usize) -> Self {
        f64::from_bits(word as u64)
    }
}

// A scalar value as a kernel parameter is the next argument's payload, copied: the typed
// kernel reads it through `Argument`, the scalar path from its register word.
macro_rules! value_params {
    ($($t:ty),*) => {$(
        impl sealed::Param for $t {}
        impl SignedParam for $t {
            const PARAM: Param = Param::Arg(TypeKey::of::<$t>());
        }
        impl KernelParam for $t {
            type Item<'f> = $t;
            #[inline]
            fn fetch(frame: &KernelFrame<'_>, cursor: &mut Cursor) -> Option<$t> {
                super::Argument::<$t>::fetch(frame, cursor).map(|a| *a.get())
            }
        }
        impl ScalarParam for $t {
            const SLOT: Slot = Slot::Arg(TypeKey::of::<$t>());
            const FITS: bool = <$t as ScalarValue>::FITS;
            #[inline(always)]
            fn load_value(v: &RcAsyncValue) -> Option<usize> {
                v.get::<$t>().map(|x| x.to_word())
            }
            #[inline(always)]
            fn from_scalar<'f>(words: &[usize], _: &[AttrRef<'f>], cursor: &mut Cursor) -> Option<$t> {
                let w = *words.get(cursor.arg)?;
                cursor.arg += 1;
                Some(<$t>::from_word(w))
            }
        }
    )*};
}
value_params!(bool, i32, u32, f32, i64, u64, f64);

/// What a parameter of a scalar kernel reads.
#[derive(Clone, Copy, Debug)]
pub enum Slot {
    /// The next argument, a register word holding a value of this type.
    Arg(TypeKey),
    /// The next attribute; the function tells whether an attribute decodes as the
    /// parameter's type (the program's load checks every use before taking the scalar path).
    Attr(fn(&AttrRef<'_>) -> bool),
}

/// A parameter of a scalar kernel (sealed): a [`ScalarValue`] (the next argument) or an
/// [`Attribute`] of a scalar type.
pub trait ScalarParam: SignedParam {
    /// What the parameter reads.
    const SLOT: Slot;
    /// Whether an argument of its type fits a register word on this target.
    const FITS: bool = true;
    /// The word of an argument held in an async value, if it holds this parameter's type
    /// (`None` for an attribute).
    fn load_value(v: &RcAsyncValue) -> Option<usize> {
        let _ = v;
        None
    }
    /// The parameter from argument `words` and `attrs`, advancing the cursor; `None` when
    /// one is missing or of another type (which the load rules out for the scalar path).
    fn from_scalar<'f>(words: &[usize], attrs: &[AttrRef<'f>], cursor: &mut Cursor)
    -> Option<Self::Item<'f>>;
}

impl<T: AttrScalar> ScalarParam for Attribute<'_, T> {
    const SLOT: Slot = Slot::Attr(|a| a.get::<T>().is_some());
    #[inline(always)]
    fn from_scalar<'f>(_: &[usize], attrs: &[AttrRef<'f>], cursor: &mut Cursor) -> Option<Attribute<'f, T>> {
        let a = attrs.get(cursor.attr)?;
        cursor.attr += 1;
        a.get::<T>().map(Attribute::of)
    }
}

/// Makes an available async value holding a result word, in the spare block when it fits.
pub(crate) type MakeFn = fn(Allocator, &Cell<Option<Spare>>, usize) -> Result<RcAsyncValue, AllocError>;

/// The scalar half of a kernel entry: how the executor calls the kernel on register words
/// and, when a result must be an async value, makes one from the word.
#[derive(Clone, Copy, Debug)]
#[cfg_attr(not(feature = "scalar-registers"), allow(dead_code))]
pub struct ScalarFn {
    /// The kernel on argument words and attributes; `None` when one is missing or of
    /// another type.
    pub(crate) call: fn(&[usize], &[AttrRef<'_>]) -> Option<usize>,
    /// An available async value holding the result word, in `spare` when it fits there.
    pub(crate) make: MakeFn,
    /// The word of argument `i` held in an async value; `None` when the value holds
    /// another type.
    pub(crate) load: fn(usize, &RcAsyncValue) -> Option<usize>,
    /// The parameters in order.
    pub(crate) slots: &'static [Slot],
    /// The result's type.
    pub(crate) result: TypeKey,
}

#[cfg_attr(not(feature = "scalar-registers"), allow(dead_code))]
impl ScalarFn {
    /// The argument types in order (attributes left out).
    pub(crate) fn arg_types(&self) -> impl Iterator<Item = TypeKey> + '_ {
        self.slots.iter().filter_map(|s| if let Slot::Arg(t) = s { Some(*t) } else { None })
    }
}

/// A typed kernel whose parameters are all [`ScalarParam`]s and which returns one
/// [`ScalarValue`]: what [`scalar_kernel_entry!`](crate::scalar_kernel_entry) accepts.
/// Implemented for functions and closures only (sealed through [`TypedKernel`]), so the
/// scalar form is always the function's own.
pub trait ScalarKernel<Marker>: TypedKernel<Marker> {
    /// The parameters in order.
    const SLOTS: &'static [Slot];
    /// The result type.
    const RESULT: TypeKey;
    /// Whether every argument and the result fit a register word on this target.
    const FITS: bool;
    /// Call on argument words and attributes.
    fn call_scalar(&self, words: &[usize], attrs: &[AttrRef<'_>]) -> Option<usize>;
    /// An available value holding the result word.
    fn make(alloc: Allocator, spare: &Cell<Option<Spare>>, word: usize) -> Result<RcAsyncValue, AllocError>;
    /// The word of argument `i` held in the async value `v`, if it holds that argument's type.
    fn load_arg(i: usize, v: &RcAsyncValue) -> Option<usize>;
}

/// [`ScalarKernel::make`] for a result of type `T`.
fn make_value<T: ScalarValue>(
    alloc: Allocator,
    spare: &Cell<Option<Spare>>,
    word: usize,
) -> Result<RcAsyncValue, AllocError> {
    let value = T::from_word(word);
    if let Some(block) = spare.take() {
        match block.fill(alloc, value) {
            Ok(v) => return Ok(v),
            Err((block, _)) => spare.set(Some(block)),
        }
    }
    AsyncValueRef::available(alloc, value).map(AsyncValueRef::into_rc)
}

macro_rules! impl_scalar_kernel {
    ($($p:ident),*) => {
        #[allow(non_snake_case, unused_mut, unused_variables)]
        impl<Func, Ret, $($p: ScalarParam),*> ScalarKernel<fn($($p,)*) -> Ret> for Func
        where
            Func: Fn($($p),*) -> Ret,
            Func: for<'f> Fn($($p::Item<'f>),*) -> Ret,
            Ret: SignedReturn + ScalarValue,
        {
            const SLOTS: &'static [Slot] = &[$(<$p as ScalarParam>::SLOT),*];
            const RESULT: TypeKey = TypeKey::of::<Ret>();
            const FITS: bool = <Ret as ScalarValue>::FITS $(&& <$p as ScalarParam>::FITS)*;
            #[inline(always)]
            fn call_scalar(&self, words: &[usize], attrs: &[AttrRef<'_>]) -> Option<usize> {
                #[inline(always)]
                fn call_inner<Ret, $($p),*>(f: impl Fn($($p),*) -> Ret, $($p: $p),*) -> Ret {
                    f($($p),*)
                }
                let mut cursor = Cursor::default();
                $(let $p = $p::from_scalar(words, attrs, &mut cursor)?;)*
                Some(call_inner(self, $($p),*).to_word())
            }
            fn make(alloc: Allocator, spare: &Cell<Option<Spare>>, word: usize) -> Result<RcAsyncValue, AllocError> {
                make_value::<Ret>(alloc, spare, word)
            }
            fn load_arg(i: usize, v: &RcAsyncValue) -> Option<usize> {
                let mut j = 0;
                $(
                    if matches!(<$p as ScalarParam>::SLOT, Slot::Arg(_)) {
                        if j == i {
                            return <$p as ScalarParam>::load_value(v);
                        }
                        j += 1;
                    }
                )*
                let _ = (i, v, j);
                None
            }
        }
    };
}
impl_scalar_kernel!();
impl_scalar_kernel!(P0);
impl_scalar_kernel!(P0, P1);
impl_scalar_kernel!(P0, P1, P2);
impl_scalar_kernel!(P0, P1, P2, P3);

/// The [`ScalarFn`] of `f`, whose call is `call` (the function
/// [`scalar_kernel_entry!`](crate::scalar_kernel_entry) makes for the same `f`); `None` when
/// a value it takes or returns does not fit a register word on this target.
pub const fn scalar_of<M, F: ScalarKernel<M>>(
    _: &F,
    call: fn(&[usize], &[AttrRef<'_>]) -> Option<usize>,
) -> Option<ScalarFn> {
    if !F::FITS {
        return None;
    }
    Some(ScalarFn { call, make: F::make, load: F::load_arg, slots: F::SLOTS, result: F::RESULT })
}

/// Call `f` on argument words and attributes (what
/// [`scalar_kernel_entry!`](crate::scalar_kernel_entry) expands to).
#[inline(always)]
pub fn invoke_scalar<M, F: ScalarKernel<M>>(f: &F, words: &[usize], attrs: &[AttrRef<'_>]) -> Option<usize> {
    f.call_scalar(words, attrs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add(a: i32, b: i32) -> i32 {
        a.wrapping_add(b)
    }

    #[test]
    fn words_round_trip() {
        for v in [0, 1, -1, i32::MIN, i32::MAX] {
            assert_eq!(i32::from_word(v.to_word()), v);
        }
        for v in [0.0f32, -1.5, f32::INFINITY, f32::MIN_POSITIVE] {
            assert_eq!(f32::from_word(v.to_word()).to_bits(), v.to_bits());
        }
        assert!(bool::from_word(true.to_word()) && !bool::from_word(false.to_word()));
        if <i64 as ScalarValue>::FITS {
            for v in [0i64, -1, i64::MIN, i64::MAX] {
                assert_eq!(i64::from_word(v.to_word()), v);
            }
            assert_eq!(f64::from_word((-2.25f64).to_word()), -2.25);
        }
    }

    #[test]
    fn wide_values_fit_only_64_bit_words() {
        fn add64(a: i64, b: i64) -> i64 {
            a.wrapping_add(b)
        }
        let f = scalar_of(&add64, |w, a| invoke_scalar(&add64, w, a));
        assert_eq!(f.is_some(), cfg!(target_pointer_width = "64"));
        assert!(scalar_of(&add, |w, a| invoke_scalar(&add, w, a)).is_some());
    }

    #[test]
    fn a_scalar_kernel_runs_on_words() {
        let f = scalar_of(&add, |w, a| invoke_scalar(&add, w, a)).unwrap();
        let word = (f.call)(&[(-3i32).to_word(), 5i32.to_word()], &[]);
        assert_eq!(word.map(i32::from_word), Some(2));
        // A missing argument is refused, not read out of bounds.
        assert_eq!((f.call)(&[1], &[]), None);
        // Arguments held in async values: read when of the argument's type, refused otherwise.
        let arena = crate::testing::TestArena::new(4096);
        let seven = AsyncValueRef::available(arena.alloc, 7i32).unwrap().into_rc();
        let wrong = AsyncValueRef::available(arena.alloc, 7i64).unwrap().into_rc();
        assert_eq!((f.load)(1, &seven).map(i32::from_word), Some(7));
        assert_eq!((f.load)(0, &wrong), None);
        assert_eq!((f.load)(2, &seven), None, "no third argument");
        drop((seven, wrong));
        assert_eq!(f.arg_types().count(), 2);
        assert!(f.result == TypeKey::of::<i32>());
    }
}
