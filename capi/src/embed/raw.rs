//! The table of live handles: every handle the embedding API gives out is registered here
//! with its kind, and turned back into a reference only after the table confirms it. A NULL,
//! destroyed, foreign or wrongly typed handle is then an error instead of undefined
//! behaviour (a handle destroyed while another thread uses it is still the caller's bug).

use std::collections::HashMap;
use std::sync::RwLock;

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

/// Hashes a handle's address: one multiplication (addresses are already well spread; no
/// attacker chooses them).
#[derive(Default)]
struct AddressHasher(u64);

impl std::hash::Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8 | u64::from(*b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_usize(&mut self, n: usize) {
        self.0 = (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type Table = HashMap<usize, Kind, std::hash::BuildHasherDefault<AddressHasher>>;

/// Live handles: looked up on every call (readers share the lock), changed when a handle is
/// made or destroyed.
static LIVE: RwLock<Option<Table>> = RwLock::new(None);

fn lookup(p: usize) -> Option<Kind> {
    LIVE.read().unwrap_or_else(|e| e.into_inner()).as_ref().and_then(|t| t.get(&p).copied())
}

fn with_table<R>(f: impl FnOnce(&mut Table) -> R) -> R {
    let mut table = LIVE.write().unwrap_or_else(|e| e.into_inner());
    f(table.get_or_insert_with(Table::default))
}

/// Gives `value` out as a handle of `kind`.
pub(crate) fn publish<T>(kind: Kind, value: T) -> *mut T {
    let p = Box::into_raw(Box::new(value));
    with_table(|t| t.insert(p as usize, kind));
    p
}

/// The value behind handle `p`, if it is a live handle of `kind`; otherwise a message
/// naming what is wrong.
///
/// # Safety
/// No other thread destroys `p` while the reference is used.
pub(crate) unsafe fn get<'a, T>(p: *const T, kind: Kind) -> Result<&'a T, String> {
    if p.is_null() {
        return Err(format!("NULL {}", kind.name()));
    }
    match lookup(p as usize) {
        // SAFETY: registered by `publish` from a Box of `T` for this kind and not yet taken
        // back by `take`; the caller keeps it alive while the reference is used.
        Some(k) if k == kind => Ok(unsafe { &*p }),
        Some(k) => Err(format!("a {} was passed where a {} is expected", k.name(), kind.name())),
        None => Err(format!("{} {p:p} is not live (destroyed, or not made by hostrt)", kind.name())),
    }
}

/// [`get`] for a handle the caller may change.
///
/// # Safety
/// As for [`get`], and no other reference to the value is in use.
pub(crate) unsafe fn get_mut<'a, T>(p: *mut T, kind: Kind) -> Result<&'a mut T, String> {
    // SAFETY: the caller's contract, passed on.
    unsafe { get(p, kind) }?;
    // SAFETY: live and of this kind (checked above); unshared by the caller's contract.
    Ok(unsafe { &mut *p })
}

/// Takes handle `p` of `kind` back (the handle is dead afterwards).
///
/// # Safety
/// As for [`get`].
pub(crate) unsafe fn take<T>(p: *mut T, kind: Kind) -> Result<Box<T>, String> {
    // SAFETY: the caller's contract, passed on.
    unsafe { get(p, kind) }?;
    with_table(|t| t.remove(&(p as usize)));
    // SAFETY: live, of this kind and made by `publish` from a Box<T>; removed from the table
    // above, so this is the only owner.
    Ok(unsafe { Box::from_raw(p) })
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
