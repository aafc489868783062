//! `btf.read_dense_tensor.<dt>.<r>`: read one tensor of a Binary Tensor Format file in a
//! blocking task. With `std` the file is mapped privately (copy-on-write) and the tensor
//! borrows the mapping, so nothing is copied unless the data is misaligned for its dtype;
//! without `std` there are no files and the kernel reports that.

use hostrt_core::kernel::{Argument, Detached, KernelEntry, KernelRegistry, Output, RegistryError};
use hostrt_core::tensor::{DType, DenseHostTensor};
use hostrt_core::{Diagnostic, kernel};

use crate::TfrtString;

/// Read record `index` of `path` as a `dtype` tensor of `rank` dims.
#[cfg(feature = "std")]
fn read(
    host: &hostrt_core::HostContext<'_>,
    path: &str,
    index: i32,
    dtype: DType,
    rank: usize,
) -> Result<DenseHostTensor, Diagnostic> {
    use hostrt_core::tensor::{HostBuffer, TensorMetadata, btf};

    use hostrt_std::MappedFile;

    /// A window of a private file mapping: the tensor's bytes.
    struct Window {
        map: MappedFile,
        start: usize,
        len: usize,
    }
    impl AsMut<[u8]> for Window {
        fn as_mut(&mut self) -> &mut [u8] {
            // A private mapping, so writable (`MappedFile::private`).
            self.map.bytes_mut().map_or(&mut [][..], |b| &mut b[self.start..self.start + self.len])
        }
    }

    let cannot_open = || hostrt_core::diag!(Internal, "failed to open file {} for reading", path);
    let file = std::fs::File::open(path).map_err(|_| cannot_open())?;
    let map = MappedFile::private(&file).map_err(|_| cannot_open())?;
    let record = btf::read_dense(map.bytes(), index, dtype, rank)
        .map_err(|e| hostrt_core::diag_fmt!(Internal, "{}", e.message(path)))?;
    let metadata = TensorMetadata { dtype, shape: record.shape.clone() };
    let cannot_allocate = || Diagnostic::internal("cannot allocate result tensor");
    let start = record.data.as_ptr().addr() - map.bytes().as_ptr().addr();
    let len = record.data.len();
    if record.data.as_ptr().addr().is_multiple_of(dtype.align()) {
        let buffer = HostBuffer::from_owner_mut(host.allocator(), Window { map, start, len })
            .map_err(|_| cannot_allocate())?;
        return DenseHostTensor::from_buffer(metadata, buffer)
            .map_err(|e| hostrt_core::diag_fmt!(Internal, "{}", e));
    }
    let tensor = DenseHostTensor::new(host.allocator(), metadata).map_err(|_| cannot_allocate())?;
    tensor
        .write_bytes()
        .map_err(|e| hostrt_core::diag_fmt!(Internal, "{}", e))?
        .copy_from_slice(&map.bytes()[start..start + len]);
    Ok(tensor)
}

#[cfg(not(feature = "std"))]
fn read(
    _: &hostrt_core::HostContext<'_>,
    path: &str,
    _: i32,
    _: DType,
    _: usize,
) -> Result<DenseHostTensor, Diagnostic> {
    Err(hostrt_core::diag!(Internal, "failed to open file {} for reading", path))
}

fn read_dense_tensor<const CODE: u8, const RANK: usize>(
    path: Argument<TfrtString>,
    index: Argument<i32>,
    out: Output<DenseHostTensor>,
    d: Detached,
) {
    let Some(result) = out.allocate() else { return };
    let (path, index) = (path.clone(), *index);
    let Some(dtype) = DType::from_btf(CODE) else { return };
    let unread = result.clone();
    let task = move || match read(d.host(), &path, index, dtype, RANK) {
        Ok(t) => result.emplace(t),
        Err(e) => d.report_error(e, &[&*result]),
    };
    if let Err(e) = d.host().enqueue_blocking_work(task, true) {
        d.report_error(e, &[&*unread]);
    }
}

macro_rules! ranks {
    ($sfx:literal, $code:literal) => {
        [
            KernelEntry::strict(
                concat!("btf.read_dense_tensor.", $sfx, ".0"),
                kernel!(read_dense_tensor::<$code, 0>),
            ),
            KernelEntry::strict(
                concat!("btf.read_dense_tensor.", $sfx, ".1"),
                kernel!(read_dense_tensor::<$code, 1>),
            ),
            KernelEntry::strict(
                concat!("btf.read_dense_tensor.", $sfx, ".2"),
                kernel!(read_dense_tensor::<$code, 2>),
            ),
            KernelEntry::strict(
                concat!("btf.read_dense_tensor.", $sfx, ".3"),
                kernel!(read_dense_tensor::<$code, 3>),
            ),
            KernelEntry::strict(
                concat!("btf.read_dense_tensor.", $sfx, ".4"),
                kernel!(read_dense_tensor::<$code, 4>),
            ),
        ]
    };
}

/// Every `btf.read_dense_tensor.<dt>.<r>`: dtypes f32, i32, i64, i8, ui8; ranks 0 to 4.
pub const ENTRIES: [[KernelEntry; 5]; 5] =
    [ranks!("f32", 4), ranks!("i32", 2), ranks!("i64", 3), ranks!("i8", 0), ranks!("ui8", 6)];

pub(crate) fn register<const N: usize>(r: &mut KernelRegistry<N>) -> Result<(), RegistryError> {
    for group in &ENTRIES {
        r.add_entries(group)?;
    }
    Ok(())
}
