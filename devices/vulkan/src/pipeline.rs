//! The compute pipelines: one per shader of `shaders/`, compiled to SPIR-V at build time
//! and made on first use.

use std::io::Cursor;

use ash::vk;

use crate::device::Device;
use crate::error::VkError;

/// The shaders (`shaders/<name>.wgsl`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shader {
    /// Tiled f32 matrix product (16x16 tiles in workgroup memory), for GPUs.
    Matmul,
    /// f32 matrix product without workgroup memory, for CPU devices.
    MatmulSimple,
    /// add, mul, relu, bias add.
    Elementwise,
    /// Row-wise softmax and argmax.
    Rows,
    /// Direct 2-D convolution.
    Conv2d,
}

impl Shader {
    pub(crate) const COUNT: usize = 5;

    /// The SPIR-V words' bytes, its storage-buffer bindings and its push-constant bytes.
    fn code(self) -> (&'static [u8], u32, u32) {
        match self {
            Shader::Matmul => (include_bytes!(concat!(env!("OUT_DIR"), "/matmul.spv")), 3, 12),
            Shader::MatmulSimple => (include_bytes!(concat!(env!("OUT_DIR"), "/matmul_simple.spv")), 3, 12),
            Shader::Elementwise => (include_bytes!(concat!(env!("OUT_DIR"), "/elementwise.spv")), 3, 16),
            Shader::Rows => (include_bytes!(concat!(env!("OUT_DIR"), "/rows.spv")), 2, 12),
            Shader::Conv2d => (include_bytes!(concat!(env!("OUT_DIR"), "/conv2d.spv")), 3, 48),
        }
    }

    /// The SPIR-V of the shader (for validation with `spirv-val`).
    pub fn spirv(self) -> &'static [u8] {
        self.code().0
    }

    /// Every shader.
    pub const ALL: [Shader; Shader::COUNT] =
        [Shader::Matmul, Shader::MatmulSimple, Shader::Elementwise, Shader::Rows, Shader::Conv2d];
}

/// A compute pipeline and its layouts.
#[derive(Debug)]
pub(crate) struct Pipeline {
    pub(crate) set_layout: vk::DescriptorSetLayout,
    pub(crate) layout: vk::PipelineLayout,
    pub(crate) pipeline: vk::Pipeline,
    pub(crate) bindings: u32,
    pub(crate) push_bytes: u32,
}

impl Pipeline {
    fn new(d: &ash::Device, shader: Shader) -> Result<Pipeline, VkError> {
        let (bytes, bindings, push_bytes) = shader.code();
        let words = ash::util::read_spv(&mut Cursor::new(bytes))
            .map_err(|e| VkError::invalid(format!("{shader:?}: bad SPIR-V: {e}")))?;
        let binding: Vec<_> = (0..bindings)
            .map(|i| {
                vk::DescriptorSetLayoutBinding::default()
                    .binding(i)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .descriptor_count(1)
                    .stage_flags(vk::ShaderStageFlags::COMPUTE)
            })
            .collect();
        // SAFETY: each create-info is valid and outlives its call; every object made is
        // destroyed on the error paths below or by `destroy`.
        unsafe {
            let set_layout = d
                .create_descriptor_set_layout(
                    &vk::DescriptorSetLayoutCreateInfo::default().bindings(&binding),
                    None,
                )
                .map_err(|r| VkError::call("vkCreateDescriptorSetLayout", r))?;
            let ranges = [vk::PushConstantRange::default()
                .stage_flags(vk::ShaderStageFlags::COMPUTE)
                .size(push_bytes)];
            let layouts = [set_layout];
            let layout = match d.create_pipeline_layout(
                &vk::PipelineLayoutCreateInfo::default().set_layouts(&layouts).push_constant_ranges(&ranges),
                None,
            ) {
                Ok(l) => l,
                Err(r) => {
                    d.destroy_descriptor_set_layout(set_layout, None);
                    return Err(VkError::call("vkCreatePipelineLayout", r));
                }
            };
            let module =
                match d.create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&words), None) {
                    Ok(m) => m,
                    Err(r) => {
                        d.destroy_pipeline_layout(layout, None);
                        d.destroy_descriptor_set_layout(set_layout, None);
                        return Err(VkError::call("vkCreateShaderModule", r));
                    }
                };
            let stage = vk::PipelineShaderStageCreateInfo::default()
                .stage(vk::ShaderStageFlags::COMPUTE)
                .module(module)
                .name(c"main");
            let made = d.create_compute_pipelines(
                vk::PipelineCache::null(),
                &[vk::ComputePipelineCreateInfo::default().stage(stage).layout(layout)],
                None,
            );
            d.destroy_shader_module(module, None);
            match made {
                Ok(p) => Ok(Pipeline { set_layout, layout, pipeline: p[0], bindings, push_bytes }),
                Err((_, r)) => {
                    d.destroy_pipeline_layout(layout, None);
                    d.destroy_descriptor_set_layout(set_layout, None);
                    Err(VkError::call("vkCreateComputePipelines", r))
                }
            }
        }
    }

    /// Destroys the pipeline's objects.
    ///
    /// # Safety
    /// No work using the pipeline is pending, and it is not used again.
    pub(crate) unsafe fn destroy(&self, d: &ash::Device) {
        // SAFETY: by the caller's contract nothing uses these objects any more.
        unsafe {
            d.destroy_pipeline(self.pipeline, None);
            d.destroy_pipeline_layout(self.layout, None);
            d.destroy_descriptor_set_layout(self.set_layout, None);
        }
    }
}

impl Device {
    /// The pipeline of `shader`, made on first use.
    pub(crate) fn pipeline(&self, shader: Shader) -> Result<&Pipeline, VkError> {
        self.pipelines[shader as usize]
            .get_or_init(|| Pipeline::new(&self.raw, shader))
            .as_ref()
            .map_err(Clone::clone)
    }
}

#[cfg(test)]
mod tests {
    use super::Shader;

    /// Every shader passes the SPIR-V validator, where `spirv-val` is installed.
    #[test]
    fn every_shader_is_valid_spirv() {
        if std::process::Command::new("spirv-val").arg("--version").output().is_err() {
            eprintln!("SKIP: spirv-val not found (apt package spirv-tools)");
            return;
        }
        let dir = std::env::temp_dir().join(format!("hostrt-spirv-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for s in Shader::ALL {
            let path = dir.join(format!("{s:?}.spv"));
            std::fs::write(&path, s.spirv()).unwrap();
            let out = std::process::Command::new("spirv-val")
                .args(["--target-env", "vulkan1.1"])
                .arg(&path)
                .output()
                .unwrap();
            assert!(out.status.success(), "{s:?}: {}", String::from_utf8_lossy(&out.stderr));
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
