//! Recycled value blocks (docs/execution.md, "Result blocks"): when the executor drops the
//! last reference to an available operand, it may keep the block instead of freeing it, and
//! write the next result of the same type and allocator into it. On a dependency chain this
//! saves one allocation and one free per kernel.

use core::mem::ManuallyDrop;
use core::ptr::{self, NonNull};

use super::{AsyncValue, CONCRETE, KIND_CONCRETE, RcAsyncValue, type_table, typed_payload_ptr};
use crate::allocator::Allocator;
use crate::sync::{Ordering, fence};

/// An empty value block (its payload dropped) that still belongs to its allocator: reused
/// by [`Spare::fill`], or freed when dropped.
pub struct Spare {
    ptr: NonNull<AsyncValue>,
}

impl core::fmt::Debug for Spare {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // SAFETY: the block is ours; its header stays initialised.
        let h = unsafe { self.ptr.as_ref() };
        f.debug_struct("Spare").field("type", &type_table::name_of(h.type_id)).finish()
    }
}

impl RcAsyncValue {
    /// The block of this value, emptied for reuse, when this is the last reference to an
    /// available, non-error value with a payload type; otherwise the handle back, unchanged.
    /// The payload is dropped here, as the last `drop` would.
    pub fn into_spare(self) -> Result<Spare, RcAsyncValue> {
        let h = self.header();
        let reusable = h.kind == KIND_CONCRETE
            && h.type_id != type_table::NO_TYPE
            && h.refcount.load(Ordering::Acquire) == 1
            && h.state_bits() == CONCRETE;
        if !reusable {
            return Err(self);
        }
        // As in `drop`: the last owner; see the writes of earlier owners before dropping.
        fence(Ordering::Acquire);
        let ptr = self.into_raw();
        // SAFETY: the last reference: nobody else can reach the block. A concrete value
        // holds an initialised payload of its type, dropped exactly once, here.
        unsafe { type_table::info(ptr.as_ref().type_id).drop_payload_in(ptr) };
        Ok(Spare { ptr })
    }
}

impl Spare {
    /// A new available value holding `value` in this block, if the block held a `T` from
    /// `alloc`; otherwise the block and the value back.
    pub fn fill<T: Send + Sync + 'static>(
        self,
        alloc: Allocator,
        value: T,
    ) -> Result<RcAsyncValue, (Spare, T)> {
        // SAFETY: the block is ours; its header stays initialised.
        let h = unsafe { self.ptr.as_ref() };
        if h.alloc != alloc.id() || !type_table::id_is::<T>(h.type_id) {
            return Err((self, value));
        }
        let type_id = h.type_id;
        let ptr = ManuallyDrop::new(self).ptr;
        // SAFETY: a block laid out for `Concrete<T>` (its type id is `T`'s), owned and
        // unshared: a fresh header (one reference, available) and the payload are written
        // before anyone can see it.
        unsafe {
            ptr.as_ptr().write(AsyncValue::new(KIND_CONCRETE, alloc, type_id, CONCRETE));
            ptr::write(&mut (*typed_payload_ptr::<T>(ptr)).value, ManuallyDrop::new(value));
            Ok(RcAsyncValue::from_raw(ptr))
        }
    }
}

impl Drop for Spare {
    fn drop(&mut self) {
        // SAFETY: the block is ours; its header stays initialised.
        let h = unsafe { self.ptr.as_ref() };
        let layout = type_table::info(h.type_id).layout;
        // SAFETY: the block came from this allocator with its type's layout, and its payload
        // was already dropped.
        unsafe { Allocator::from_id(h.alloc).deallocate(self.ptr.cast(), layout) };
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::sync::Arc;

    use crate::async_value::{AsyncValueRef, RcAsyncValue};
    use crate::diagnostic::Diagnostic;
    use crate::testing::TestArena;

    #[test]
    fn a_last_reference_gives_its_block_to_the_next_value_of_its_type() {
        let arena = TestArena::new(4096);
        let alloc = arena.alloc;
        let a = AsyncValueRef::available(alloc, 7i32).unwrap().into_rc();
        // Shared: not reusable.
        let other = a.clone();
        let a = a.into_spare().unwrap_err();
        drop(other);
        let addr = a.clone().into_raw();
        // SAFETY: the reference just taken.
        drop(unsafe { RcAsyncValue::from_raw(addr) });
        let spare = a.into_spare().unwrap();
        // Another type does not fit; the same type reuses the block.
        let (spare, v) = spare.fill(alloc, 1u64).unwrap_err();
        assert_eq!(v, 1);
        let b = spare.fill(alloc, 9i32).unwrap();
        assert_eq!(b.get::<i32>(), Some(&9));
        assert_eq!(b.clone().into_raw(), addr);
        // SAFETY: the reference just taken.
        drop(unsafe { RcAsyncValue::from_raw(addr) });
        drop(b);
        // Errors and unavailable values are not recycled.
        let e = RcAsyncValue::error(alloc, Diagnostic::internal("x")).unwrap();
        assert!(e.into_spare().is_err());
        let u = AsyncValueRef::<i32>::unconstructed(alloc).unwrap().into_rc();
        assert!(u.into_spare().is_err());
    }

    #[test]
    fn a_dropped_spare_frees_its_block_and_the_payload_drops_once() {
        let arena = TestArena::new(4096);
        let payload = Arc::new(5);
        let v = AsyncValueRef::available(arena.alloc, payload.clone()).unwrap().into_rc();
        let spare = v.into_spare().unwrap();
        assert_eq!(Arc::strong_count(&payload), 1, "the payload was dropped");
        drop(spare);
        assert_eq!(arena.in_use(), 0);
    }
}
