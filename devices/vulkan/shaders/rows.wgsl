// Row-wise reductions of x[rows, cols], one invocation per row: op 0 softmax (into y, f32),
// op 1 argmax (into y as i32 bits: the first largest non-NaN value's index, 0 for none).
struct Params { rows: u32, cols: u32, op: u32 }
var<immediate> p: Params;
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    let r = g.x;
    if (r >= p.rows) {
        return;
    }
    let base = r * p.cols;
    if (p.op == 1u) {
        var best = 0u;
        var found = false;
        var top = 0.0;
        for (var j = 0u; j < p.cols; j++) {
            let v = x[base + j];
            if (v == v && (!found || v > top)) {
                best = j;
                top = v;
                found = true;
            }
        }
        y[r] = best;
        return;
    }
    var m = x[base];
    for (var j = 1u; j < p.cols; j++) {
        m = max(m, x[base + j]);
    }
    var sum = 0.0;
    for (var j = 0u; j < p.cols; j++) {
        sum += exp(x[base + j] - m);
    }
    for (var j = 0u; j < p.cols; j++) {
        y[base + j] = bitcast<u32>(exp(x[base + j] - m) / sum);
    }
}
