// C[m, n] = A[m, k] * B[k, n], row-major f32, one invocation per output element and no
// workgroup barriers: the faster form on CPU implementations (lavapipe runs barriers as
// coroutine switches), chosen for them by ops::matmul.
struct Params { m: u32, n: u32, k: u32 }
var<immediate> p: Params;
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;

@compute @workgroup_size(16, 16)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    let row = g.y;
    let col = g.x;
    if (row >= p.m || col >= p.n) {
        return;
    }
    var acc = 0.0;
    for (var i = 0u; i < p.k; i++) {
        acc = fma(a[row * p.k + i], b[i * p.n + col], acc);
    }
    c[row * p.n + col] = acc;
}
