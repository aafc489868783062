//! Kernel signatures: the payload types a typed kernel takes and sets, derived from its Rust
//! parameter and return types when it is declared with [`kernel_entry!`](crate::kernel_entry),
//! so that a program's argument types are verified once, at load, instead of on every call
//! (docs/execution.md, "Types checked at load").

use core::fmt;

use crate::async_value::{TypeInfo, info_of};

/// A payload type, compared by identity (two copies of one type's vtable are equal).
#[derive(Clone, Copy)]
pub struct TypeKey(&'static TypeInfo);

impl TypeKey {
    /// The key of `T`.
    pub const fn of<T: 'static>() -> Self {
        TypeKey(info_of::<T>())
    }

    /// The type's name as `core::any::type_name` writes it.
    pub fn name(self) -> &'static str {
        (self.0.name)()
    }

    /// The layout of an async value block holding a `T` (docs/bef.md, "Arena sizes").
    pub fn block_layout(self) -> core::alloc::Layout {
        self.0.layout
    }

    /// The name without its module path (`Chain`, not `hostrt_core::chain::Chain`), for
    /// messages that must stay short.
    pub fn short_name(self) -> &'static str {
        let name = self.name();
        let base = name.split('<').next().unwrap_or(name);
        let start = base.rfind("::").map_or(0, |i| i + 2);
        &name[start..]
    }
}

impl PartialEq for TypeKey {
    fn eq(&self, other: &TypeKey) -> bool {
        self.0.is(other.0)
    }
}

impl Eq for TypeKey {}

impl fmt::Debug for TypeKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What one parameter of a typed kernel takes from its frame ([`SignedParam::PARAM`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Param {
    /// Neither an argument nor a result, and something through which the kernel can reach
    /// the host (the execution context, a detach handle): it may allocate anything.
    Other,
    /// The next attribute, which must be of this kind (read in place).
    Attribute(super::AttrKind),
    /// A [`KernelErrorHandler`](super::KernelErrorHandler): the kernel may set error results.
    ErrorHandler,
    /// The next argument, which must hold a `T`.
    Arg(TypeKey),
    /// Every remaining argument, of any type.
    RestArgs,
    /// The next result, of a type the kernel does not promise (it may set any value).
    Result,
    /// Every remaining result, of any type.
    RestResults,
}

/// Sealed traits: only `hostrt-core`'s own adaptors and return types describe themselves in
/// a signature, because the load-time proof trusts what they say (docs/execution.md, "Types
/// checked at load").
pub(crate) mod sealed {
    /// Implemented by `hostrt-core`'s kernel parameter types only.
    pub trait Param {}
    /// Implemented by `hostrt-core`'s kernel return types only.
    pub trait Return {}
    /// Implemented only for the functions (and closures) `hostrt-core`'s own adaptor
    /// implementations cover: what keeps a signature or a scalar form tied to the function
    /// that runs.
    pub trait Kernel<Marker> {}
}

/// A kernel parameter type of `hostrt-core` with its part in a kernel's [`Signature`]
/// (sealed: a parameter type defined elsewhere cannot be part of a typed kernel).
pub trait SignedParam: super::KernelParam + sealed::Param {
    /// What the parameter takes from the frame.
    const PARAM: Param;
}

/// A kernel return type of `hostrt-core` with the results it sets (sealed, like
/// [`SignedParam`]).
pub trait SignedReturn: super::KernelReturn + sealed::Return {
    /// The results `emit` sets, and the type each holds unless it is an error.
    const RETURNS: ReturnTypes;
    /// Whether an error return leaves results unset (a `Result`): its results' slots are
    /// then filled with errors, but later results would not move past them.
    const FALLIBLE: bool = false;
}

/// A kernel function all of whose parameters are [`SignedParam`]s and whose return type is
/// a [`SignedReturn`]: what [`kernel_entry!`](crate::kernel_entry) accepts. Implemented for
/// functions (and closures) only, through [`KernelImpl`](super::KernelImpl)'s own
/// implementation, so the kernel that runs is the one the signature describes (sealed: no
/// other type can implement it).
///
/// ```compile_fail
/// use hostrt_core::kernel::{KernelFrame, KernelImpl, ReturnTypes, Signature, TypedKernel};
///
/// struct Fake;
/// impl KernelImpl<()> for Fake {
///     fn call(&self, _: &KernelFrame<'_>) {}
/// }
/// // Refused: a signature must come from the function that runs.
/// impl TypedKernel<()> for Fake {
///     const SIGNATURE: Signature = Signature::new(&[], ReturnTypes::NONE);
/// }
/// ```
pub trait TypedKernel<Marker>: super::KernelImpl<Marker> + sealed::Kernel<Marker> {
    /// The function's parameters and results.
    const SIGNATURE: Signature;
}

/// Most results a signature records types for; a kernel returning more has no signature.
const MAX_RETURNS: usize = 4;

/// The results a kernel's return value sets, in order, with the type each is guaranteed to
/// hold when it is not an error ([`SignedReturn::RETURNS`]).
#[derive(Clone, Copy, Debug)]
pub struct ReturnTypes {
    /// `u8::MAX` when unknown.
    len: u8,
    types: [Option<TypeKey>; MAX_RETURNS],
}

impl ReturnTypes {
    /// No results.
    pub const NONE: ReturnTypes = ReturnTypes { len: 0, types: [None; MAX_RETURNS] };
    /// Not declared (the kernel then has no signature).
    pub const UNKNOWN: ReturnTypes = ReturnTypes { len: u8::MAX, types: [None; MAX_RETURNS] };

    /// One result, holding a `T` when `ty` is `Some(T)` and anything when `None`.
    pub const fn one(ty: Option<TypeKey>) -> ReturnTypes {
        let mut r = ReturnTypes::NONE;
        r.types[0] = ty;
        r.len = 1;
        r
    }

    /// `self`'s results followed by `next`'s (unknown when either is, or when there are
    /// more than a signature records).
    pub const fn then(self, next: ReturnTypes) -> ReturnTypes {
        if self.len == u8::MAX || next.len == u8::MAX || self.len as usize + next.len as usize > MAX_RETURNS {
            return ReturnTypes::UNKNOWN;
        }
        let mut r = self;
        let mut i = 0;
        while i < next.len as usize {
            r.types[self.len as usize + i] = next.types[i];
            i += 1;
        }
        r.len = self.len + next.len;
        r
    }

    /// Whether the results are declared.
    pub const fn is_known(&self) -> bool {
        self.len != u8::MAX
    }
}

/// What a typed kernel takes and sets: its parameters in order, then its return value's
/// results (which follow the results its parameters set).
#[derive(Clone, Copy, Debug)]
pub struct Signature {
    params: &'static [Param],
    returns: ReturnTypes,
    /// Whether the return value may be an error (a `Result`).
    fallible: bool,
}

impl Signature {
    /// A signature from parameter and return descriptions (what
    /// [`TypedKernel::SIGNATURE`] builds).
    pub const fn new(params: &'static [Param], returns: ReturnTypes) -> Signature {
        Signature { params, returns, fallible: false }
    }

    /// The signature of a kernel whose return value may be an error
    /// ([`SignedReturn::FALLIBLE`]).
    pub const fn fallible(self, fallible: bool) -> Signature {
        Signature { fallible, ..self }
    }

    /// The parameters in order.
    pub fn params(&self) -> &'static [Param] {
        self.params
    }

    /// How many results the return value sets, when known.
    pub fn returned(&self) -> Option<usize> {
        self.returns.is_known().then_some(self.returns.len as usize)
    }

    /// Whether the kernel may set error results: its return value may be an error, or it
    /// takes an error handler.
    pub fn may_fail(&self) -> bool {
        self.fallible || self.params.contains(&Param::ErrorHandler)
    }

    /// Whether the return value's results are known (not a fallible tuple element followed
    /// by another): only then is the signature used.
    pub fn is_known(&self) -> bool {
        self.returns.is_known()
    }

    /// The arguments with a fixed type, as (position, type).
    pub fn typed_args(&self) -> impl Iterator<Item = (usize, TypeKey)> + '_ {
        let fixed = self.params.iter().take_while(|p| **p != Param::RestArgs);
        fixed.filter_map(|p| if let Param::Arg(t) = p { Some(*t) } else { None }).enumerate()
    }

    /// The type result `i` is guaranteed to hold when it is not an error, if any.
    pub fn result_type(&self, i: usize) -> Option<TypeKey> {
        let mut n = 0;
        for p in self.params {
            match p {
                Param::Result => n += 1,
                Param::RestResults => return None,
                _ => {}
            }
        }
        let j = i.checked_sub(n)?;
        if !self.returns.is_known() || j >= self.returns.len as usize {
            return None;
        }
        self.returns.types[j]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::Chain;

    const I32: TypeKey = TypeKey::of::<i32>();

    #[test]
    fn type_keys_compare_by_type() {
        assert_eq!(TypeKey::of::<i32>(), I32);
        assert_ne!(I32, TypeKey::of::<u32>());
        assert_eq!(TypeKey::of::<Chain>().short_name(), "Chain");
        assert_eq!(I32.short_name(), "i32");
    }

    #[test]
    fn typed_args_stop_at_the_rest() {
        const PARAMS: &[Param] =
            &[Param::Arg(I32), Param::Other, Param::Arg(TypeKey::of::<Chain>()), Param::RestArgs];
        let sig = Signature::new(PARAMS, ReturnTypes::NONE);
        let args: heapless::Vec<(usize, TypeKey), 4> = sig.typed_args().collect();
        assert_eq!(&args[..], &[(0, I32), (1, TypeKey::of::<Chain>())]);
        assert!(sig.is_known());
        assert!(!Signature::new(&[], ReturnTypes::UNKNOWN).is_known());
    }

    #[test]
    fn result_types_follow_the_parameters_results() {
        let returns = ReturnTypes::one(Some(I32)).then(ReturnTypes::one(None));
        let sig = Signature::new(&[Param::Result], returns);
        assert_eq!(sig.result_type(0), None);
        assert_eq!(sig.result_type(1), Some(I32));
        assert_eq!(sig.result_type(2), None);
        assert_eq!(sig.result_type(3), None);
        let rest = Signature::new(&[Param::RestResults], ReturnTypes::one(Some(I32)));
        assert_eq!(rest.result_type(0), None);
        let five = ReturnTypes::one(None).then(ReturnTypes::one(None));
        assert!(!five.then(five).then(ReturnTypes::one(None)).is_known());
    }
}
