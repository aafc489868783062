#!/usr/bin/env python3
"""Writes ONNX's backend node tests, as the installed `onnx` package generates them, to a
directory hostrt's conformance test reads (import/tests/onnx_node.rs). Nothing it writes is
committed: run it where the `onnx` package is installed (scripts/setup.sh installs it).

    python3 scripts/onnx_node_tests.py target/onnx-node

Each case becomes DIR/<name>/model.onnx, input_<i>.npy, output_<i>.npy and meta.json
(rtol, atol). A case whose data is not plain arrays (sequences, optionals, strings) gets a
`skip` file naming why.
"""
import json
import os
import sys
import warnings

import numpy as np


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "target/onnx-node"
    # An option is not a directory name: `--help` once wrote the tests to ./--help.
    if out.startswith("-"):
        print(__doc__.strip())
        return 0 if out in ("-h", "--help") else 2
    warnings.simplefilter("ignore")
    import onnx
    from onnx.backend.test.case import node

    cases = [c for c in node.collect_testcases(None) if c.kind == "node"]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "onnx-version"), "w") as f:
        f.write(onnx.__version__ + "\n")
    for c in cases:
        d = os.path.join(out, c.name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "model.onnx"), "wb") as f:
            f.write(c.model.SerializeToString())
        with open(os.path.join(d, "meta.json"), "w") as f:
            json.dump({"rtol": c.rtol, "atol": c.atol}, f)
        skip = None
        for stale in os.listdir(d):
            if stale.endswith(".npy") or stale == "skip":
                os.remove(os.path.join(d, stale))
        if not c.data_sets:
            skip = "no data set"
        else:
            inputs, outputs = c.data_sets[0]
            for kind, values in (("input", inputs), ("output", outputs)):
                for i, v in enumerate(values):
                    if isinstance(v, np.generic):
                        v = np.asarray(v)
                    if not isinstance(v, np.ndarray) or v.dtype.kind not in "biuf" or v.dtype.itemsize > 8:
                        skip = f"{kind} {i} is {type(v).__name__} {getattr(v, 'dtype', '')}".strip()
                        break
                    np.save(os.path.join(d, f"{kind}_{i}.npy"), np.ascontiguousarray(v), allow_pickle=False)
                if skip:
                    break
        if skip:
            with open(os.path.join(d, "skip"), "w") as f:
                f.write(skip + "\n")
    print(f"{len(cases)} node tests (onnx {onnx.__version__}) in {out}")


if __name__ == "__main__":
    sys.exit(main())
