//! Per-type static vtables and the global table that maps 16-bit type ids to them.
//!
//! An async value header stores only a `u16` type id; the id indexes [`TYPES`], whose entry
//! points at the type's static [`TypeInfo`] (drop, layout, name). Ids are assigned lazily and
//! lock-free the first time a type is used (no static initializers), keyed by `TypeId`.

use core::alloc::Layout;
use core::any::TypeId;
use core::hash::{Hash, Hasher};
use core::marker::PhantomData;
use core::ptr::{self, NonNull};

use portable_atomic::{AtomicPtr, Ordering};

use super::{AsyncValue, Concrete};

/// How many distinct payload types one program can use.
pub const MAX_TYPES: usize = 256;

/// What the runtime needs to know about a payload type, erased.
#[derive(Debug)]
pub(crate) struct TypeInfo {
    /// The type's id itself, not a function returning it: `id_is` compares it inline
    /// when the table entry is another copy of the same constant (one per codegen unit).
    pub(crate) type_id: TypeId,
    pub(crate) name: fn() -> &'static str,
    /// Layout of the whole `Concrete<T>` block.
    pub(crate) layout: Layout,
    /// Byte offset of the payload union from the start of the block.
    pub(crate) payload_offset: usize,
    /// Drops a payload in place; `None` when the type needs no drop (`i32`, `Chain`), so
    /// freeing or recycling its block makes no call.
    pub(crate) drop_payload: Option<unsafe fn(*mut u8)>,
}

struct InfoOf<T>(PhantomData<T>);

impl<T: 'static> InfoOf<T> {
    const INFO: TypeInfo = TypeInfo {
        type_id: TypeId::of::<T>(),
        // Names are for diagnostics' text: without it none is kept in flash.
        name: if cfg!(feature = "diagnostic-text") { core::any::type_name::<T> } else { no_name },
        layout: Layout::new::<Concrete<T>>(),
        payload_offset: core::mem::offset_of!(Concrete<T>, payload),
        drop_payload: if core::mem::needs_drop::<T>() { Some(drop_payload::<T>) } else { None },
    };
}

impl TypeInfo {
    /// Whether `self` describes the same type as `want` (another copy of its vtable, as
    /// each codegen unit may have, counts).
    #[inline]
    pub(crate) fn is(&self, want: &TypeInfo) -> bool {
        ptr::eq(self, want) || self.type_id == want.type_id
    }

    /// Drop the payload of the value block at `block` in place (nothing, not even the
    /// payload's address, for a type that needs no drop).
    ///
    /// # Safety
    /// `block` is a concrete value block of this type whose payload is initialised and is
    /// dropped exactly once, here.
    #[inline]
    pub(crate) unsafe fn drop_payload_in(&self, block: NonNull<AsyncValue>) {
        if let Some(drop_payload) = self.drop_payload {
            // SAFETY: the caller's contract; the payload lies at this offset of the block.
            unsafe { drop_payload(block.as_ptr().cast::<u8>().add(self.payload_offset)) }
        }
    }
}

/// Every type's name without the `diagnostic-text` feature.
fn no_name() -> &'static str {
    ""
}

unsafe fn drop_payload<T>(p: *mut u8) {
    // SAFETY: callers pass the address of an initialized `T` that is dropped exactly once.
    unsafe { ptr::drop_in_place(p.cast::<T>()) }
}

/// The static vtable of `T`.
#[inline]
pub(crate) const fn info_of<T: 'static>() -> &'static TypeInfo {
    const { &InfoOf::<T>::INFO }
}

/// Values without a payload type (errors made without one, indirect values) use id 0.
pub(crate) const NO_TYPE: u16 = 0;
pub(crate) static NO_PAYLOAD: TypeInfo = TypeInfo {
    type_id: TypeId::of::<()>(),
    name: if cfg!(feature = "diagnostic-text") { || "<none>" } else { no_name },
    layout: Layout::new::<Concrete<()>>(),
    payload_offset: core::mem::offset_of!(Concrete<()>, payload),
    drop_payload: None,
};

static TYPES: [AtomicPtr<TypeInfo>; MAX_TYPES] = [const { AtomicPtr::new(ptr::null_mut()) }; MAX_TYPES];

/// The vtable for a type id read from a live value header.
#[inline]
pub(crate) fn info(id: u16) -> &'static TypeInfo {
    if id == NO_TYPE {
        return &NO_PAYLOAD;
    }
    let p = TYPES[id as usize % MAX_TYPES].load(Ordering::Acquire);
    // SAFETY: a live header only holds ids returned by `id_of`, whose slot was set to a
    // `&'static TypeInfo` before the id was handed out; slots are never cleared.
    unsafe { &*p }
}

/// Whether a value with type id `id` holds a `T`.
#[inline]
pub(crate) fn id_is<T: 'static>(id: u16) -> bool {
    id_is_info(id, info_of::<T>())
}

/// [`id_is`], not generic: one copy of the table lookup and the `TypeId` comparison for
/// every payload type (each copy is about 90 bytes on Cortex-M).
#[inline(never)]
fn id_is_info(id: u16, want: &TypeInfo) -> bool {
    info(id).is(want)
}

/// The table has no room for another type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TypeTableFull;

struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn write_u64(&mut self, v: u64) {
        // A `TypeId` hashes as one `u64` of its own hash: mixing it again buys nothing
        // (and costs 64-bit multiplies on 32-bit targets).
        self.0 ^= v;
    }
}

/// The id of the type `want` describes (`info_of::<T>()`), assigning one on first use. Not
/// generic: one copy of the probe loop for every payload type.
pub(crate) fn id_of(want: &'static TypeInfo) -> Result<u16, TypeTableFull> {
    let mut h = Fnv(0xcbf2_9ce4_8422_2325);
    want.type_id.hash(&mut h);
    let start = (h.finish() >> 32) as usize;
    for probe in 0..MAX_TYPES {
        let slot = (start + probe) % MAX_TYPES;
        if slot == NO_TYPE as usize {
            continue;
        }
        let mut cur = TYPES[slot].load(Ordering::Acquire);
        if cur.is_null() {
            match TYPES[slot].compare_exchange(
                ptr::null_mut(),
                ptr::from_ref(want).cast_mut(),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Ok(slot as u16),
                Err(now) => cur = now,
            }
        }
        // SAFETY: non-null slots hold `&'static TypeInfo` pointers.
        let have = unsafe { &*cur };
        if have.is(want) {
            return Ok(slot as u16);
        }
    }
    Err(TypeTableFull)
}

/// The registered name of a type id (for diagnostics).
pub(crate) fn name_of(id: u16) -> &'static str {
    (info(id).name)()
}
