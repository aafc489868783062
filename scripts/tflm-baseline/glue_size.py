#!/usr/bin/env python3
"""Bytes of .text + .rodata that the baseline's own objects put in an image.

    glue_size.py IMAGE.map MODEL_OBJECT_NAME

Reads a GNU ld map file and sums the input sections placed in the .text and .rodata output
sections from main.o, startup.o and the model's object (the image's start-up, counting,
printing and operator registration), leaving out the model's bytes (kModel). The rest of
.text + .rodata - model bytes is TFLM, CMSIS-NN and the C/C++ libraries.
"""
import re
import sys


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    path, model_obj = sys.argv[1:]
    ours = re.compile(r"/(main|startup|" + re.escape(model_obj) + r")\.o$")
    lines = open(path).read().split("\n")
    output = None
    total = 0
    i = 0
    while i < len(lines):
        line = lines[i]
        if re.match(r"^\.\S+", line):
            output = line.split()[0]
        m = re.match(r"^ (\.\S+)(?:\s+(0x\S+)\s+(0x\S+)\s+(\S+))?\s*$", line)
        if m and output in (".text", ".rodata"):
            name, size, obj = m.group(1), m.group(3), m.group(4)
            if size is None:  # a long section name: address, size and file on the next line
                i += 1
                parts = lines[i].split()
                if len(parts) < 3 or not parts[0].startswith("0x"):
                    continue
                size, obj = parts[1], parts[2]
            if ours.search(obj) and "kModel" not in name:
                total += int(size, 16)
        i += 1
    print(total)


if __name__ == "__main__":
    main()
