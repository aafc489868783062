"""Correctness check shared by the MNIST benchmark's runners.

`check(y, out_dir)` compares a runtime's [100, 10] output with expected.bin (numpy's
float64 result rounded to f32): the largest absolute error must be at most 1e-3 times the
largest |expected| value, a bound float32 summation over 784 terms meets with margin.

Run as a script, it reads hostrt's `hostrt.print_tensor_all` output on standard input
(`DenseHostTensor dtype = f32, shape = [100, 10], values = [...]`) and checks it:

  hostrt run mnist.mlir --functions=check_mnist_mlp | python compare.py OUT_DIR
"""

import pathlib
import re
import sys

import numpy as np

REL_TOL = 1e-3


def check(name, y, out_dir):
    """Exit with a message unless `y` matches expected.bin; return the max abs error."""
    expected = np.fromfile(pathlib.Path(out_dir) / "expected.bin", "<f4").reshape(100, 10)
    y = np.asarray(y, np.float32).reshape(expected.shape)
    err = float(np.abs(y.astype(np.float64) - expected).max())
    bound = REL_TOL * float(np.abs(expected).max())
    if not err <= bound:
        sys.exit(f"{name}: output differs from expected.bin: max abs error {err:.3g} > {bound:.3g}")
    print(f"{name}: output matches expected.bin (max abs error {err:.3g}, bound {bound:.3g})")
    return err


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    text = sys.stdin.read()
    m = re.search(r"DenseHostTensor dtype = f32, shape = \[100, 10\], values = \[([^\]]*)\]", text)
    if not m:
        sys.exit(f"hostrt: no [100, 10] f32 tensor in its output:\n{text[:2000]}")
    check("hostrt", [float(v) for v in m.group(1).split(",")], sys.argv[1])


if __name__ == "__main__":
    main()
