// c[i] = a[i] op b[i] for n elements: op 0 add, 1 mul, 2 relu (of a), 3 bias add
// (b[i % cols]). The grid is two-dimensional (width invocations per row) to pass the
// 65535-workgroup limit of one dimension.
struct Params { n: u32, op: u32, width: u32, cols: u32 }
var<immediate> p: Params;
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    let i = g.y * p.width + g.x;
    if (i >= p.n) {
        return;
    }
    let x = a[i];
    switch p.op {
        case 0u: { c[i] = x + b[i]; }
        case 1u: { c[i] = x * b[i]; }
        case 2u: { c[i] = max(x, 0.0); }
        default: { c[i] = x + b[i % p.cols]; }
    }
}
