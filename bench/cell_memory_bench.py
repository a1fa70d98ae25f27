#!/usr/bin/env python3
"""Peak memory of pcr-convert table on inputs with one huge cell, as a
multiple of the cell's size, against converting the same rows with a
one-byte cell in the same run.

usage: /usr/bin/python3 bench/cell_memory_bench.py BUILD_DIR WORK_DIR [--mb N]

Each input, made once in WORK_DIR, holds a few small rows and one cell of
N MiB (default 200): a string of one repeated letter (zstd makes it tiny),
random base64 (zstd saves a quarter), a quoted CSV cell with a doubled
quote in it, the same strings as JSON Lines, a JSON string of escapes
(newlines, quotes, \\u00e9), and a JSON Lines sparse feature of random
62-bit ids. Peak resident set (ru_maxrss of the child) of one run each;
what the cell costs is the peak less the one-byte cell's. Prints a
Markdown table.
"""
import argparse
import base64
import os
import random
import shutil
import subprocess
import sys


def peak_mb(argv):
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    err = p.stderr.read().decode()
    p.stderr.close()
    if status != 0:
        sys.exit(f"{' '.join(argv)} failed: {err}")
    return usage.ru_maxrss / 1024


def make_inputs(work, n):
    """Writes each input in pieces, so that this process stays small (a
    child's peak counts what it shares with its parent before exec).
    Returns each input's path and the size of its huge cell as written."""
    chunk = 1 << 20

    def letter(c, count):
        for at in range(0, count, chunk):
            yield c * min(chunk, count - at)

    def noise():
        rng = random.Random(1)
        for at in range(0, n, chunk):
            yield base64.b64encode(rng.randbytes(chunk * 3 // 4)).decode()[:min(chunk, n - at)]

    def escaped():
        pattern = 'ab\\n\\"c\\u00e9'
        piece = pattern * (chunk // len(pattern))
        for _ in range(0, n, len(piece)):
            yield piece

    def ids():
        rng = random.Random(2)
        size = 0
        while size < n:
            piece = ("," if size else "") + ",".join(str(rng.getrandbits(62)) for _ in range(10000))
            yield piece
            size += len(piece)

    inputs = {
        "CSV, one letter": ("a.csv", ["id,text\n1,small\n2,", letter("x", n), "\n3,end\n"]),
        "CSV, random base64": ("b.csv", ["id,text\n1,small\n2,", noise(), "\n3,end\n"]),
        "CSV, quoted": ("c.csv", ['id,text\n1,small\n2,', '"', letter("x", n // 2), '""', letter("y", n // 2),
                                  '"', "\n3,end\n"]),
        "JSON Lines, one letter": ("d.jsonl", ['{"id": 1, "text": "small"}\n{"id": 2, "text": ', '"',
                                               letter("x", n), '"', '}\n{"id": 3, "text": "end"}\n']),
        "JSON Lines, random base64": ("e.jsonl", ['{"id": 1, "text": "small"}\n{"id": 2, "text": ', '"', noise(),
                                                  '"', '}\n{"id": 3, "text": "end"}\n']),
        "JSON Lines, escapes": ("g.jsonl", ['{"id": 1, "text": "small"}\n{"id": 2, "text": ', '"', escaped(),
                                            '"', '}\n{"id": 3, "text": "end"}\n']),
        "JSON Lines, sparse ids": ("f.jsonl", ['{"id": 1}\n{"id": 2, "sparse": {"7": ', "[", ids(), "]",
                                               '}}\n{"id": 3}\n']),
    }
    out = {}
    for label, (name, parts) in inputs.items():
        path = os.path.join(work, name)
        if not os.path.exists(path):
            with open(path + ".tmp", "w") as f:
                for part in parts:
                    for piece in [part] if isinstance(part, str) else part:
                        f.write(piece)
            os.rename(path + ".tmp", path)
        # The same rows with a one-byte cell: the baseline.
        base = os.path.join(work, "small-" + name)
        with open(base, "w") as f:
            f.write("".join(part if isinstance(part, str) else "1" for part in parts))
        # The cell is all but the first and last parts.
        out[label] = (path, base, os.path.getsize(path) - len(parts[0]) - len(parts[-1]))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("work")
    ap.add_argument("--mb", type=int, default=200)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    convert = os.path.join(os.path.abspath(a.build), "tools", "pcr-convert")
    inputs = make_inputs(a.work, a.mb << 20)
    out = os.path.join(a.work, "out")
    print("| input | cell | one-byte cell | huge cell | (huge - one-byte) / cell |")
    print("|---|---|---|---|---|")
    for label, (path, base, cell) in inputs.items():
        peaks = []
        for source in (base, path):
            shutil.rmtree(out, ignore_errors=True)
            peaks.append(peak_mb([convert, "table", source, out]))
        mib = cell / 2**20
        print(f"| {label} | {mib:,.0f} MiB | {peaks[0]:,.0f} MiB | {peaks[1]:,.0f} MiB | "
              f"{(peaks[1] - peaks[0]) / mib:.1f}x |")
    shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
