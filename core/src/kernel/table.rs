//! `KernelTable`: a kernel registry built at compile time. Firmware that knows its kernels
//! puts them in a `static`: the entries are sorted (and checked for duplicates) by the
//! compiler, the table lives in flash, and the image carries no registration code.

use super::registry::{KernelEntry, KernelLookup};

/// A fixed set of kernels, sorted by name when the `const` is evaluated; a duplicate name
/// is a compile error. Looks kernels up by binary search, as [`KernelRegistry`] does.
///
/// ```
/// use hostrt_core::basic_kernels::{control, integer};
/// use hostrt_core::kernel::{KernelLookup, KernelTable};
///
/// static KERNELS: KernelTable<3> = KernelTable::new([integer::ADD_I32, control::CALL, integer::CONSTANT_I32]);
/// assert_eq!(KERNELS.lookup("tfrt.call").map(|k| k.name), Some("tfrt.call"));
/// assert!(KERNELS.lookup("tfrt.add.i64").is_none());
/// ```
///
/// [`KernelRegistry`]: super::KernelRegistry
#[derive(Clone, Copy, Debug)]
pub struct KernelTable<const N: usize> {
    entries: [KernelEntry; N],
}

impl<const N: usize> KernelTable<N> {
    /// The table of `entries`, sorted by name. Panics (a compile error in a `const` or
    /// `static`) if two entries share a name.
    pub const fn new(mut entries: [KernelEntry; N]) -> Self {
        // Insertion sort: a handful of entries, once, at compile time.
        let mut i = 1;
        while i < N {
            let mut j = i;
            while j > 0 && before(entries[j].name, entries[j - 1].name) {
                let t = entries[j];
                entries[j] = entries[j - 1];
                entries[j - 1] = t;
                j -= 1;
            }
            i += 1;
        }
        let mut k = 1;
        while k < N {
            assert!(before(entries[k - 1].name, entries[k].name), "KernelTable: a kernel name appears twice");
            k += 1;
        }
        KernelTable { entries }
    }

    /// The entries, sorted by name.
    pub const fn entries(&self) -> &[KernelEntry] {
        &self.entries
    }
}

/// Whether `a` sorts strictly before `b` (byte order, as `str`'s `Ord`).
const fn before(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut i = 0;
    while i < a.len() && i < b.len() {
        if a[i] != b[i] {
            return a[i] < b[i];
        }
        i += 1;
    }
    a.len() < b.len()
}

impl<const N: usize> KernelLookup for KernelTable<N> {
    fn lookup(&self, name: &str) -> Option<KernelEntry> {
        super::registry::find(&self.entries, name)
    }
}

#[cfg(test)]
mod tests {
    use super::{KernelTable, before};
    use crate::basic_kernels::{control, float, integer};
    use crate::kernel::KernelLookup;

    #[test]
    fn sorts_like_str_and_finds_every_entry() {
        for (a, b) in [("a", "b"), ("a", "ab"), ("tfrt.add.i32", "tfrt.add.i64"), ("", "x")] {
            assert!(before(a, b) && !before(b, a), "{a} {b}");
            assert_eq!(before(a, b), a < b);
        }
        assert!(!before("same", "same"));
        const T: KernelTable<5> = KernelTable::new([
            integer::LESSEQUAL_I32,
            control::IF,
            float::ADD_F32,
            integer::ADD_I32,
            control::CALL,
        ]);
        let names: heapless::Vec<&str, 5> = T.entries().iter().map(|e| e.name).collect();
        assert!(names.windows(2).all(|w| w[0] < w[1]), "{names:?}");
        for e in T.entries() {
            assert_eq!(T.lookup(e.name).map(|k| k.func() as usize), Some(e.func() as usize));
        }
        assert!(T.lookup("tfrt.add").is_none());
    }

    #[test]
    #[should_panic(expected = "appears twice")]
    fn a_duplicate_name_is_refused() {
        let _ = KernelTable::new([integer::ADD_I32, integer::ADD_I32]);
    }
}
