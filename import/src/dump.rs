//! Every layer's output as files, for comparing a run with another runtime's or another
//! machine's (docs/profiling.md, "Layer by layer"): one `.npy` per operator output, named
//! after the model's tensor, and `layers.txt`, which lists them in execution order.

#[cfg(feature = "npy")]
use std::path::Path;

#[cfg(feature = "npy")]
use crate::npy::{self, NpyTensor};

/// One operator output a program imported with `dump_tensors` returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DumpedTensor {
    /// Which of `@main`'s results holds it: a model output's own index, or one after them.
    pub result: usize,
    /// The tensor's index in the model (an ONNX model's: in the translated graph).
    pub tensor: usize,
    /// The tensor's name in the model.
    pub name: String,
    /// The operator that computes it: `op#7 AVERAGE_POOL_2D`, `node#3 Conv`.
    pub layer: String,
    /// Holds an ONNX model's channels-first (NCHW) value channels-last: the source model's
    /// value is this tensor with its last dimension moved to the second place.
    pub channels_last: bool,
}

impl DumpedTensor {
    /// Its file name: `0012_conv1_Relu.npy` (tensor index, then the name with characters
    /// outside `[A-Za-z0-9._-]` as `_`, cut to 96).
    pub fn file_name(&self) -> String {
        let clean: String = self
            .name
            .chars()
            .take(96)
            .map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' })
            .collect();
        format!("{:04}_{clean}.npy", self.tensor)
    }
}

/// Writes each of `dumped` from `results` (all of `@main`'s results, in order) into `dir`,
/// created if missing, and `dir/layers.txt`: a header line, then per tensor, in execution
/// order, its result, file, tensor index, layer, layout (`nhwc` for a channels-last copy of
/// a channels-first value, else `-`) and name, separated by tabs.
///
/// Fails, naming the file, when a result is missing or a file cannot be written.
#[cfg(feature = "npy")]
pub fn write(dir: &Path, dumped: &[DumpedTensor], results: &[NpyTensor]) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut list = String::from("result\tfile\ttensor\tlayer\tlayout\tname\n");
    for d in dumped {
        let t = results.get(d.result).ok_or_else(|| {
            format!("tensor {} '{}': result {} of {} missing", d.tensor, d.name, d.result, results.len())
        })?;
        let path = dir.join(d.file_name());
        std::fs::write(&path, npy::write(t)?).map_err(|e| format!("{}: {e}", path.display()))?;
        let name = d.name.replace(['\t', '\n'], " ");
        let layout = if d.channels_last { "nhwc" } else { "-" };
        list += &format!("{}\t{}\t{}\t{}\t{layout}\t{name}\n", d.result, d.file_name(), d.tensor, d.layer);
    }
    let path = dir.join("layers.txt");
    std::fs::write(&path, list).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_each_layer_and_the_list_in_order() {
        let dir = std::env::temp_dir().join(format!("hostrt-dump-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let t = |v: i8| NpyTensor { dtype: "i8", shape: vec![1], data: vec![v as u8] };
        let d = |result, tensor, name: &str| DumpedTensor {
            result,
            tensor,
            name: name.into(),
            layer: format!("op#{tensor} ADD"),
            channels_last: tensor == 3,
        };
        let dumped = [d(1, 7, "a/b:0"), d(0, 3, "out\tput")];
        write(&dir, &dumped, &[t(5), t(-2)]).unwrap();
        assert_eq!(npy::read(&std::fs::read(dir.join("0007_a_b_0.npy")).unwrap()).unwrap(), t(-2));
        assert_eq!(npy::read(&std::fs::read(dir.join("0003_out_put.npy")).unwrap()).unwrap(), t(5));
        let list = std::fs::read_to_string(dir.join("layers.txt")).unwrap();
        assert_eq!(
            list,
            "result\tfile\ttensor\tlayer\tlayout\tname\n1\t0007_a_b_0.npy\t7\top#7 ADD\t-\ta/b:0\n\
             0\t0003_out_put.npy\t3\top#3 ADD\tnhwc\tout put\n"
        );
        let missing = write(&dir, &[d(2, 1, "x")], &[t(0)]).unwrap_err();
        assert!(missing.contains("tensor 1 'x': result 2 of 1 missing"), "{missing}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
