//! What a typed kernel may return: nothing, a value, a tuple of values, an async value, or a
//! `Result` whose error becomes the kernel's error.

use super::adaptors::Cursor;
use super::frame::KernelFrame;
use super::signature::{ReturnTypes, SignedReturn, TypeKey, sealed};
use crate::async_value::{AsyncValueRef, RcAsyncValue};
use crate::chain::Chain;
use crate::diagnostic::Diagnostic;

/// A kernel return value; `emit` fills the next result slot(s).
pub trait KernelReturn {
    /// Write the value(s) into the frame's next result slot(s).
    fn emit(self, frame: &KernelFrame<'_>, cursor: &mut Cursor);
}

fn next(cursor: &mut Cursor) -> usize {
    let i = cursor.result;
    cursor.result += 1;
    i
}

impl sealed::Return for () {}
impl SignedReturn for () {
    const RETURNS: ReturnTypes = ReturnTypes::NONE;
}

impl KernelReturn for () {
    #[inline]
    fn emit(self, _: &KernelFrame<'_>, _: &mut Cursor) {}
}

macro_rules! emplace_return {
    ($($t:ty),*) => {$(
        impl sealed::Return for $t {}
        impl SignedReturn for $t {
            const RETURNS: ReturnTypes = ReturnTypes::one(Some(TypeKey::of::<$t>()));
        }

        impl KernelReturn for $t {
            #[inline]
            fn emit(self, frame: &KernelFrame<'_>, cursor: &mut Cursor) {
                frame.emplace_result(next(cursor), self)
            }
        }
    )*};
}
emplace_return!(Chain, bool, i8, i16, i32, i64, u8, u16, u32, u64, usize, isize, f32, f64);

/// Wraps any payload type so a kernel can return it (`Value(my_tensor)`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Value<T>(pub T);

impl<T: Send + Sync + 'static> sealed::Return for Value<T> {}
impl<T: Send + Sync + 'static> SignedReturn for Value<T> {
    const RETURNS: ReturnTypes = ReturnTypes::one(Some(TypeKey::of::<T>()));
}

impl<T: Send + Sync + 'static> KernelReturn for Value<T> {
    fn emit(self, frame: &KernelFrame<'_>, cursor: &mut Cursor) {
        frame.emplace_result(next(cursor), self.0)
    }
}

impl<T: Send + Sync + 'static> sealed::Return for AsyncValueRef<T> {}
impl<T: Send + Sync + 'static> SignedReturn for AsyncValueRef<T> {
    // Not typed: a typed reference may stand for an indirect value of any type
    // (`RcAsyncValue::downcast`).
    const RETURNS: ReturnTypes = ReturnTypes::one(None);
}

impl<T> KernelReturn for AsyncValueRef<T>
where
    T: Send + Sync + 'static,
{
    fn emit(self, frame: &KernelFrame<'_>, cursor: &mut Cursor) {
        frame.set_result(next(cursor), self.into_rc())
    }
}

impl sealed::Return for RcAsyncValue {}
impl SignedReturn for RcAsyncValue {
    const RETURNS: ReturnTypes = ReturnTypes::one(None);
}

impl KernelReturn for RcAsyncValue {
    fn emit(self, frame: &KernelFrame<'_>, cursor: &mut Cursor) {
        frame.set_result(next(cursor), self)
    }
}

impl<R: SignedReturn> sealed::Return for Result<R, Diagnostic> {}
impl<R: SignedReturn> SignedReturn for Result<R, Diagnostic> {
    // An error sets every empty result to an error value, which no kernel reads; but it
    // leaves the result cursor where it was (`FALLIBLE`).
    const RETURNS: ReturnTypes = R::RETURNS;
    const FALLIBLE: bool = true;
}

impl<R: KernelReturn> KernelReturn for Result<R, Diagnostic> {
    fn emit(self, frame: &KernelFrame<'_>, cursor: &mut Cursor) {
        match self {
            Ok(r) => r.emit(frame, cursor),
            Err(d) => frame.report_error(d),
        }
    }
}

macro_rules! tuple_return {
    ($($t:ident),*) => {
        impl<$($t: SignedReturn),*> sealed::Return for ($($t,)*) {}
        impl<$($t: SignedReturn),*> SignedReturn for ($($t,)*) {
            // A fallible element followed by another leaves the cursor behind on its error,
            // so the next element's results land in its slots: no types then.
            const RETURNS: ReturnTypes = {
                let fallible = [$($t::FALLIBLE),*];
                let mut i = 0;
                let mut ok = true;
                while i + 1 < fallible.len() {
                    ok &= !fallible[i];
                    i += 1;
                }
                if ok { ReturnTypes::NONE$(.then($t::RETURNS))* } else { ReturnTypes::UNKNOWN }
            };
            const FALLIBLE: bool = false $(|| $t::FALLIBLE)*;
        }

        #[allow(non_snake_case)]
        impl<$($t: KernelReturn),*> KernelReturn for ($($t,)*) {
            fn emit(self, frame: &KernelFrame<'_>, cursor: &mut Cursor) {
                let ($($t,)*) = self;
                $($t.emit(frame, cursor);)*
            }
        }
    };
}
tuple_return!(A);
tuple_return!(A, B);
tuple_return!(A, B, C);
tuple_return!(A, B, C, D);
tuple_return!(A, B, C, D, E);
tuple_return!(A, B, C, D, E, F);
