//! Tensors on the device and the operations on them. Each operation checks shapes, makes
//! its output buffer and records its dispatch into a [`Recorder`]; nothing waits here.

use std::sync::Arc;

use hostrt_core::tensor::conv::Conv2dParams;
use hostrt_core::tensor::{DType, DenseHostTensor, TensorMetadata, TensorShape};
use hostrt_core::{Allocator, Diagnostic};

use crate::buffer::Buffer;
use crate::device::Device;
use crate::error::VkError;
use crate::pipeline::Shader;
use crate::work::{Download, Recorder};

/// A dense tensor whose elements live in a device buffer (`!vk.tensor` in programs).
/// Cloning shares the buffer.
#[derive(Clone, Debug)]
pub struct DeviceTensor {
    buffer: Arc<Buffer>,
    dims: Vec<i64>,
    dtype: DType,
}

/// The elementwise operations of `shaders/elementwise.wgsl`, by their op codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elementwise {
    /// `a + b`.
    Add = 0,
    /// `a * b`.
    Mul = 1,
    /// `max(a, 0)`.
    Relu = 2,
    /// `a + bias` broadcast along the last dim.
    BiasAdd = 3,
}

fn count(dims: &[i64]) -> Result<usize, VkError> {
    dims.iter()
        .try_fold(1usize, |n, &d| usize::try_from(d).ok().and_then(|d| n.checked_mul(d)))
        .filter(|&n| n <= u32::MAX as usize)
        .ok_or_else(|| VkError::invalid(format!("bad or too large dims {dims:?}")))
}

fn u32_of(n: i64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

impl DeviceTensor {
    /// An uninitialised tensor of `dims` on `device`.
    pub fn new(device: &Arc<Device>, dtype: DType, dims: &[i64]) -> Result<DeviceTensor, VkError> {
        let n = count(dims)?;
        let bytes = n.checked_mul(dtype.size()).ok_or_else(|| VkError::invalid("tensor too large"))?;
        Ok(DeviceTensor { buffer: Buffer::new(device, bytes)?, dims: dims.to_vec(), dtype })
    }

    /// A copy of `host` on `device`, its upload recorded into `rec`.
    pub fn upload(
        rec: &mut Recorder,
        device: &Arc<Device>,
        host: &DenseHostTensor,
    ) -> Result<DeviceTensor, VkError> {
        let t = DeviceTensor::new(device, host.dtype(), host.shape().dims())?;
        let bytes = host.read_bytes().map_err(|e| VkError::invalid(e.to_string()))?;
        rec.upload(&t.buffer, &bytes)?;
        Ok(t)
    }

    /// Records the download of this tensor; [`Fetch::finish`] makes the host tensor once the
    /// recorder's work completed.
    pub fn download(&self, rec: &mut Recorder) -> Result<Fetch, VkError> {
        Ok(Fetch { from: rec.download(&self.buffer)?, dims: self.dims.clone(), dtype: self.dtype })
    }

    /// The same elements with other dims (no copy).
    pub fn reshape(&self, dims: &[i64]) -> Result<DeviceTensor, VkError> {
        if count(dims)? != count(&self.dims)? {
            return Err(VkError::invalid(format!("vk.reshape: {:?} cannot become {dims:?}", self.dims)));
        }
        Ok(DeviceTensor { buffer: self.buffer.clone(), dims: dims.to_vec(), dtype: self.dtype })
    }

    /// Its dims.
    pub fn dims(&self) -> &[i64] {
        &self.dims
    }

    /// Its element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The device it lives on.
    pub fn device(&self) -> &Arc<Device> {
        &self.buffer.device
    }

    fn f32(&self, what: &str, rank: Option<usize>) -> Result<(), VkError> {
        if self.dtype != DType::F32 {
            return Err(VkError::invalid(format!("{what} takes f32 tensors, got {:?}", self.dtype)));
        }
        match rank {
            Some(r) if self.dims.len() != r => {
                Err(VkError::invalid(format!("{what} takes rank-{r} tensors, got dims {:?}", self.dims)))
            }
            _ => Ok(()),
        }
    }
}

/// A device tensor's bytes on their way to the host.
#[derive(Debug)]
pub struct Fetch {
    from: Download,
    dims: Vec<i64>,
    dtype: DType,
}

impl Fetch {
    /// The host tensor, from `alloc` (call after the work completed).
    pub fn finish(&self, alloc: Allocator) -> Result<DenseHostTensor, Diagnostic> {
        let shape = TensorShape::new(&self.dims).map_err(|e| hostrt_core::diag_fmt!(Internal, "{}", e))?;
        let t = DenseHostTensor::new(alloc, TensorMetadata { dtype: self.dtype, shape })
            .map_err(|e| hostrt_core::diag_fmt!(ResourceExhausted, "vulkan: {}", e))?;
        {
            let mut bytes = t.write_bytes().map_err(|e| hostrt_core::diag_fmt!(Internal, "{}", e))?;
            self.from.read(&mut bytes);
        }
        Ok(t)
    }
}

/// Workgroups of `size` covering `n` invocations.
fn groups(n: u32, size: u32) -> u32 {
    n.div_ceil(size).max(1)
}

/// `a[m, k] x b[k, n]`, with the shader that suits the device: tiles in workgroup memory
/// on GPUs, one invocation per output on CPU devices.
pub fn matmul(rec: &mut Recorder, a: &DeviceTensor, b: &DeviceTensor) -> Result<DeviceTensor, VkError> {
    let shader = if a.device().is_cpu() { Shader::MatmulSimple } else { Shader::Matmul };
    matmul_with(rec, a, b, shader)
}

/// [`matmul`] with a given matrix-product shader.
pub fn matmul_with(
    rec: &mut Recorder,
    a: &DeviceTensor,
    b: &DeviceTensor,
    shader: Shader,
) -> Result<DeviceTensor, VkError> {
    a.f32("vk.matmul.f32", Some(2))?;
    b.f32("vk.matmul.f32", Some(2))?;
    let ([m, k], [k2, n]) = ([a.dims[0], a.dims[1]], [b.dims[0], b.dims[1]]);
    if k != k2 {
        return Err(VkError::invalid(format!(
            "vk.matmul.f32: inner dims differ: {:?} x {:?}",
            a.dims, b.dims
        )));
    }
    if !matches!(shader, Shader::Matmul | Shader::MatmulSimple) {
        return Err(VkError::invalid(format!("{shader:?} is not a matrix product")));
    }
    let c = DeviceTensor::new(a.device(), DType::F32, &[m, n])?;
    let (m, n, k) = (u32_of(m), u32_of(n), u32_of(k));
    rec.dispatch(shader, &[&a.buffer, &b.buffer, &c.buffer], &[m, n, k], [groups(n, 16), groups(m, 16), 1])?;
    Ok(c)
}

/// An elementwise operation (`b` unused for relu; a vector of the last dim for bias add).
pub fn elementwise(
    rec: &mut Recorder,
    op: Elementwise,
    a: &DeviceTensor,
    b: &DeviceTensor,
) -> Result<DeviceTensor, VkError> {
    let what = format!("vk.{op:?}.f32").to_lowercase();
    a.f32(&what, None)?;
    b.f32(&what, None)?;
    let cols = a.dims.last().copied().unwrap_or(1);
    let fits = match op {
        Elementwise::Relu => true,
        Elementwise::BiasAdd => b.dims == [cols],
        Elementwise::Add | Elementwise::Mul => a.dims == b.dims,
    };
    if !fits {
        return Err(VkError::invalid(format!("{what}: shapes {:?} and {:?} do not fit", a.dims, b.dims)));
    }
    let c = DeviceTensor::new(a.device(), DType::F32, &a.dims)?;
    let n = count(&a.dims)? as u32;
    let width_groups = groups(n, 64).min(65_535);
    let rows = groups(n, width_groups * 64);
    let push = [n, op as u32, width_groups * 64, u32_of(cols).max(1)];
    rec.dispatch(Shader::Elementwise, &[&a.buffer, &b.buffer, &c.buffer], &push, [width_groups, rows, 1])?;
    Ok(c)
}

/// Row-wise softmax (`argmax` false) or argmax (an i32 vector) of a rank-2 tensor.
pub fn rows(rec: &mut Recorder, x: &DeviceTensor, argmax: bool) -> Result<DeviceTensor, VkError> {
    let what = if argmax { "vk.argmax.f32" } else { "vk.softmax.f32" };
    x.f32(what, Some(2))?;
    let (r, c) = (u32_of(x.dims[0]), u32_of(x.dims[1]));
    let y = if argmax {
        DeviceTensor::new(x.device(), DType::I32, &x.dims[..1])?
    } else {
        DeviceTensor::new(x.device(), DType::F32, &x.dims)?
    };
    rec.dispatch(Shader::Rows, &[&x.buffer, &y.buffer], &[r, c, u32::from(argmax)], [groups(r, 64), 1, 1])?;
    Ok(y)
}

/// A 2-D convolution: input NHWC, filter HWIO, `padding` "same" or "valid", `strides`
/// (height, width), with the host kernels' geometry and errors.
pub fn conv2d(
    rec: &mut Recorder,
    x: &DeviceTensor,
    f: &DeviceTensor,
    padding: &str,
    strides: [i64; 2],
) -> Result<DeviceTensor, VkError> {
    x.f32("vk.conv2d.f32", Some(4))?;
    f.f32("vk.conv2d.f32", Some(4))?;
    let dims4 = |d: &[i64]| [d[0], d[1], d[2], d[3]];
    let p = Conv2dParams::new(dims4(&x.dims), dims4(&f.dims), padding, strides)
        .map_err(|e| VkError::invalid(format!("vk.conv2d.f32: {e}")))?;
    let y = DeviceTensor::new(x.device(), DType::F32, &p.output)?;
    let [n, h, w, c] = p.input.map(u32_of);
    let [kh, kw, _, co] = p.filter.map(u32_of);
    let [_, oh, ow, _] = p.output.map(u32_of);
    let [sh, sw] = p.strides.map(u32_of);
    let push = [h, w, c, kh, kw, co, oh, ow, sh, sw, u32_of(p.padding[0]), u32_of(p.padding[2])];
    rec.dispatch(
        Shader::Conv2d,
        &[&x.buffer, &f.buffer, &y.buffer],
        &push,
        [groups(ow * co, 64), oh.max(1), n.max(1)],
    )?;
    Ok(y)
}

#[cfg(test)]
mod tests {
    use hostrt_core::tensor::DType;

    use super::{DeviceTensor, matmul_with};
    use crate::device::{Device, Options};
    use crate::pipeline::Shader;
    use crate::work::Recorder;

    /// Both matrix-product shaders agree with a host loop on sizes that are not multiples
    /// of the 16x16 tile.
    #[test]
    fn both_matmul_shaders_match_the_host() {
        let d = match Device::open(Options::default()) {
            Ok(d) => d,
            Err(e) if std::env::var("HOSTRT_REQUIRE_VULKAN").is_ok_and(|v| v == "1") => panic!("{e}"),
            Err(e) => return eprintln!("SKIP: {e}"),
        };
        let (m, k, n) = (37usize, 53usize, 29usize);
        let a: Vec<f32> = (0..m * k).map(|i| ((i * 7) % 13) as f32 / 13.0 - 0.5).collect();
        let b: Vec<f32> = (0..k * n).map(|i| ((i * 5) % 11) as f32 / 11.0 - 0.5).collect();
        let mut want = vec![0.0f32; m * n];
        for i in 0..m {
            for j in 0..n {
                want[i * n + j] = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
            }
        }
        let bytes = |v: &[f32]| v.iter().flat_map(|x| x.to_ne_bytes()).collect::<Vec<u8>>();
        for shader in [Shader::Matmul, Shader::MatmulSimple] {
            let mut rec = Recorder::new(&d).unwrap();
            let ta = DeviceTensor::new(&d, DType::F32, &[m as i64, k as i64]).unwrap();
            let tb = DeviceTensor::new(&d, DType::F32, &[k as i64, n as i64]).unwrap();
            rec.upload(&ta.buffer, &bytes(&a)).unwrap();
            rec.upload(&tb.buffer, &bytes(&b)).unwrap();
            let c = matmul_with(&mut rec, &ta, &tb, shader).unwrap();
            let down = rec.download(&c.buffer).unwrap();
            rec.submit().unwrap().wait().unwrap();
            let mut out = vec![0u8; m * n * 4];
            down.read(&mut out);
            let got: Vec<f32> = out.chunks(4).map(|c| f32::from_ne_bytes([c[0], c[1], c[2], c[3]])).collect();
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!((g - w).abs() < 1e-4, "{shader:?}: element {i}: {g} vs {w}");
            }
        }
    }
}
