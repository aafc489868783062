//! The table of live handles: every handle the embedding API gives out is a slot here that
//! holds the object and its kind, and is turned back into a reference only after the slot
//! confirms it. A NULL,
//! destroyed, foreign or wrongly typed handle is then an error instead of undefined
//! behaviour (a handle destroyed while another thread uses it is still the caller's bug).

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

use super::status::{Error, HOSTRT_RESOURCE_EXHAUSTED};

/// What a handle points to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Host,
    Program,
    Tensor,
    Results,
    Call,
    Status,
}

impl Kind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Host => "hostrt_host",
            Kind::Program => "hostrt_program",
            Kind::Tensor => "hostrt_tensor",
            Kind::Results => "hostrt_results",
            Kind::Call => "hostrt_async_call",
            Kind::Status => "hostrt_status",
        }
    }
}

/// A handle is the address of a slot; the slot holds the object's address with its kind in
/// the low bits (0: free). Slots live in chunks that are never freed, so reading the slot of
/// any handle hostrt gave out is sound even after it was destroyed: that is what lets a
/// destroyed or foreign handle be an error instead of undefined behaviour, with no lock on
/// the way (a lookup is a range check and one atomic load).
#[repr(align(8))]
struct Slot(AtomicUsize);

/// Slots per chunk, and chunks at most: 2^20 live handles.
const CHUNK: usize = 4096;
const CHUNKS: usize = 256;

/// The chunks made so far (each `CHUNK` slots, leaked on purpose: handles must stay readable).
static CHUNK_TABLE: [AtomicPtr<Slot>; CHUNKS] = [const { AtomicPtr::new(std::ptr::null_mut()) }; CHUNKS];

/// Free slots, oldest first (a destroyed handle's slot is reused as late as possible, so a
/// stale handle is caught as long as possible), and how many chunks exist.
static FREE: Mutex<(VecDeque<usize>, usize)> = Mutex::new((VecDeque::new(), 0));

const KIND_BITS: usize = 0b111;

/// Every kind, in declaration order (`Kind as usize` indexes it).
const KINDS: [Kind; 6] = [Kind::Host, Kind::Program, Kind::Tensor, Kind::Results, Kind::Call, Kind::Status];

fn tag(kind: Kind) -> usize {
    kind as usize + 1
}

/// The slot at address `p`, if `p` is one.
fn slot(p: usize) -> Option<&'static Slot> {
    let size = std::mem::size_of::<Slot>();
    for chunk in &CHUNK_TABLE {
        let base = chunk.load(Ordering::Acquire);
        if base.is_null() {
            return None;
        }
        let base = base as usize;
        if p >= base && p < base + CHUNK * size && (p - base).is_multiple_of(size) {
            // SAFETY: a slot of a chunk, which is never freed.
            return Some(unsafe { &*(p as *const Slot) });
        }
    }
    None
}

/// A free slot (a new chunk when none is left); `None` when every chunk is made and full.
fn take_slot() -> Option<usize> {
    let mut free = FREE.lock().unwrap_or_else(|e| e.into_inner());
    if free.0.is_empty() {
        let n = free.1;
        if n == CHUNKS {
            return None;
        }
        let chunk: Box<[Slot]> = (0..CHUNK).map(|_| Slot(AtomicUsize::new(0))).collect();
        let base = Box::leak(chunk).as_mut_ptr();
        CHUNK_TABLE[n].store(base, Ordering::Release);
        free.1 = n + 1;
        let size = std::mem::size_of::<Slot>();
        free.0.extend((0..CHUNK).map(|i| base as usize + i * size));
    }
    free.0.pop_front()
}

/// The kind and object address of the live handle `p`.
fn lookup(p: usize) -> Option<(Kind, usize)> {
    let word = slot(p)?.0.load(Ordering::Acquire);
    // The inverse of `tag`: tag 0 is a free slot.
    let kind = *KINDS.get((word & KIND_BITS).checked_sub(1)?)?;
    Some((kind, word & !KIND_BITS))
}

/// An object behind a handle, aligned so that its address leaves the slot's kind bits free
/// (also where `T` itself is only 4-byte aligned, as on 32-bit targets).
#[repr(align(8))]
struct Aligned<T>(T);

/// Gives `value` out as a handle of `kind`; `RESOURCE_EXHAUSTED` when a million handles are
/// live.
pub(crate) fn publish<T>(kind: Kind, value: T) -> Result<*mut T, Error> {
    const { assert!(std::mem::align_of::<Aligned<T>>() > KIND_BITS) };
    let full =
        || Error::new(HOSTRT_RESOURCE_EXHAUSTED, format!("{} live handles: destroy some", CHUNK * CHUNKS));
    let at = take_slot().ok_or_else(full)?;
    let object = Box::into_raw(Box::new(Aligned(value))) as usize;
    slot(at).ok_or_else(full)?.0.store(object | tag(kind), Ordering::Release);
    Ok(at as *mut T)
}

/// The address of the object behind handle `p`, if it is a live handle of `kind`;
/// otherwise a message naming what is wrong.
fn object(p: usize, kind: Kind) -> Result<usize, String> {
    if p == 0 {
        return Err(format!("NULL {}", kind.name()));
    }
    match lookup(p) {
        Some((k, object)) if k == kind => Ok(object),
        Some((k, _)) => Err(format!("a {} was passed where a {} is expected", k.name(), kind.name())),
        None => Err(format!(
            "{} {:p} is not live (destroyed, or not made by hostrt)",
            kind.name(),
            p as *const ()
        )),
    }
}

/// The value behind handle `p`, if it is a live handle of `kind`; otherwise a message
/// naming what is wrong.
///
/// # Safety
/// No other thread destroys `p` while the reference is used.
pub(crate) unsafe fn get<'a, T>(p: *const T, kind: Kind) -> Result<&'a T, String> {
    // SAFETY: the slot holds a Box of `Aligned<T>` made by `publish` for this kind and not
    // yet taken back by `take`; the caller keeps it alive while the reference is used.
    object(p as usize, kind).map(|o| unsafe { &(*(o as *const Aligned<T>)).0 })
}

/// [`get`] for a handle the caller may change.
///
/// # Safety
/// As for [`get`], and no other reference to the value is in use.
pub(crate) unsafe fn get_mut<'a, T>(p: *mut T, kind: Kind) -> Result<&'a mut T, String> {
    // SAFETY: as for `get`; the Box's pointer is mutable and the value unshared by the
    // caller's contract.
    object(p as usize, kind).map(|o| unsafe { &mut (*(o as *mut Aligned<T>)).0 })
}

/// Takes the value of handle `p` of `kind` back (the handle is dead afterwards, its slot
/// free).
///
/// # Safety
/// As for [`get`].
pub(crate) unsafe fn take<T>(p: *mut T, kind: Kind) -> Result<T, String> {
    let object = object(p as usize, kind)? as *mut Aligned<T>;
    let s = slot(p as usize).ok_or_else(|| format!("{} {p:p} is not live", kind.name()))?;
    // Only one taker wins the slot: a second destroy of the same handle is an error.
    let word = object as usize | tag(kind);
    if s.0.compare_exchange(word, 0, Ordering::AcqRel, Ordering::Acquire).is_err() {
        return Err(format!("{} {p:p} is not live (destroyed twice at once)", kind.name()));
    }
    FREE.lock().unwrap_or_else(|e| e.into_inner()).0.push_back(p as usize);
    // SAFETY: made by `publish` from a Box<Aligned<T>>; the slot was cleared above, so this
    // is the only owner (the caller keeps no reference from `get`, by its contract).
    Ok(unsafe { Box::from_raw(object) }.0)
}

/// `Debug` for an opaque handle type: its C name.
macro_rules! opaque_debug {
    ($($t:ident),*) => {$(
        impl std::fmt::Debug for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(stringify!($t))
            }
        }
    )*};
}
pub(crate) use opaque_debug;
