"""Joins hostrt's per-kernel instruction table (`cargo xtask defmt` of an image built with
`layer-profile`, on stdin: the rows of the host's `--profile` table, with instructions) with TFLM's per-operator counts (`op N NAME COUNT` lines of a
`scripts/tflm_baseline.sh` result file, argv[1]) by operator index; prints markdown tables
per layer and per operator type. Used by scripts/layers_vs_tflm.sh."""
import re
import sys
from collections import defaultdict

tflm = {}
for line in open(sys.argv[1]):
    m = re.match(r"op (\d+) (\S+) (\d+)$", line.strip())
    if m:
        tflm[int(m[1])] = (m[2], int(m[3]))

hostrt = defaultdict(int)  # operator index -> instructions
other = defaultdict(int)  # kernels of no operator (arena, input, output) -> instructions
for line in sys.stdin:
    # `location  kernel  calls  self instructions  mean instructions  share` rows
    parts = line.rstrip("\n").split("  ")
    if len(parts) < 6 or not parts[2].isdigit() or not parts[3].isdigit():
        continue
    layer, kernel, count = parts[0], parts[1], int(parts[3])
    m = re.match(r"op#(\d+) ", layer)
    if m:
        hostrt[int(m[1])] += count
    else:
        other[kernel] += count

def ratio(h, t):
    return f"{h / t:.2f}" if t else "-"

print("| op | operator | hostrt | TFLM + CMSIS-NN | ratio |")
print("|---:|---|---:|---:|---:|")
by_type = defaultdict(lambda: [0, 0])
for i in sorted(set(tflm) | set(hostrt)):
    name, t = tflm.get(i, ("?", 0))
    h = hostrt.get(i, 0)
    by_type[name][0] += h
    by_type[name][1] += t
    print(f"| {i} | {name} | {h:,} | {t:,} | {ratio(h, t)} |")
for kernel, h in sorted(other.items()):
    print(f"| - | {kernel} | {h:,} | - | - |")
print()
print("| operator type | hostrt | TFLM + CMSIS-NN | ratio |")
print("|---|---:|---:|---:|")
for name, (h, t) in sorted(by_type.items(), key=lambda kv: -kv[1][1]):
    print(f"| {name} | {h:,} | {t:,} | {ratio(h, t)} |")
h_all, t_all = sum(hostrt.values()) + sum(other.values()), sum(t for _, t in tflm.values())
print(f"| all (hostrt with its arena, input and output kernels) | {h_all:,} | {t_all:,} | {ratio(h_all, t_all)} |")
