//! Arbitrary bytes as a BTF file: every record index, dtype and rank read gives a tensor
//! whose data lies inside the file and has exactly the shape's size, or an error with a
//! message; never a panic.
#![no_main]

use hostrt_core::tensor::{DType, btf};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let dtypes = [DType::F32, DType::I32, DType::I64, DType::I8, DType::U8, DType::Bool];
    for index in [-1, 0, 1, 2, 7, i32::MAX] {
        for dtype in dtypes {
            for rank in [0, 1, 2, 4, 17] {
                match btf::read_dense(data, index, dtype, rank) {
                    Ok(t) => {
                        let size = t.shape.checked_num_elements().unwrap() * dtype.size();
                        assert_eq!(t.data.len(), size);
                        assert_eq!(t.shape.rank(), rank);
                        let start = t.data.as_ptr().addr() - data.as_ptr().addr();
                        assert!(size == 0 || start + size <= data.len());
                    }
                    Err(e) => assert!(!e.message("f.btf").to_string().is_empty()),
                }
            }
        }
    }
});
