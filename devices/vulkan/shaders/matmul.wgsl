// C[m, n] = A[m, k] * B[k, n], row-major f32, in 16x16 tiles staged in workgroup memory.
struct Params { m: u32, n: u32, k: u32 }
var<immediate> p: Params;
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
var<workgroup> ta: array<array<f32, 16>, 16>;
var<workgroup> tb: array<array<f32, 16>, 16>;

@compute @workgroup_size(16, 16)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(local_invocation_id) l: vec3<u32>) {
    let row = g.y;
    let col = g.x;
    var acc = 0.0;
    let tiles = (p.k + 15u) / 16u;
    for (var t = 0u; t < tiles; t++) {
        let ka = t * 16u + l.x;
        let kb = t * 16u + l.y;
        var va = 0.0;
        if (row < p.m && ka < p.k) {
            va = a[row * p.k + ka];
        }
        ta[l.y][l.x] = va;
        var vb = 0.0;
        if (kb < p.k && col < p.n) {
            vb = b[kb * p.n + col];
        }
        tb[l.y][l.x] = vb;
        workgroupBarrier();
        for (var i = 0u; i < 16u; i++) {
            acc = fma(ta[l.y][i], tb[i][l.x], acc);
        }
        workgroupBarrier();
    }
    if (row < p.m && col < p.n) {
        c[row * p.n + col] = acc;
    }
}
