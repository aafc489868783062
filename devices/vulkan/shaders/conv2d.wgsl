// Direct 2-D convolution, NHWC input, HWIO filter, NHWC output, zero padding; one
// invocation per output element (grid: x = output channel and column, y = row, z = image).
struct Params {
    h: u32, w: u32, c: u32,
    kh: u32, kw: u32, co: u32,
    oh: u32, ow: u32,
    sh: u32, sw: u32, top: u32, left: u32,
}
var<immediate> p: Params;
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> f: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    let o = g.x % p.co;
    let col = g.x / p.co;
    let row = g.y;
    let n = g.z;
    if (col >= p.ow || row >= p.oh) {
        return;
    }
    var acc = 0.0;
    for (var i = 0u; i < p.kh; i++) {
        let yy = i32(row * p.sh + i) - i32(p.top);
        if (yy < 0 || yy >= i32(p.h)) {
            continue;
        }
        for (var j = 0u; j < p.kw; j++) {
            let xx = i32(col * p.sw + j) - i32(p.left);
            if (xx < 0 || xx >= i32(p.w)) {
                continue;
            }
            let xi = ((n * p.h + u32(yy)) * p.w + u32(xx)) * p.c;
            let fi = (i * p.kw + j) * p.c * p.co + o;
            for (var k = 0u; k < p.c; k++) {
                acc = fma(x[xi + k], f[fi + k * p.co], acc);
            }
        }
    }
    y[((n * p.oh + row) * p.ow + col) * p.co + o] = acc;
}
