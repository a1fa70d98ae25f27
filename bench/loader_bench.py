#!/usr/bin/env python3
"""Decode-ahead: how long a training loop waits for decoded records.

usage: bench/loader_bench.py BUILD_DIR PCR_DIR [--records N] [--threads N] [--fidelity K]

First the loop runs with no step, which gives the decode time per record d.
Then each record is followed by a step of f * d milliseconds asleep (as on an
accelerator), for f = 0.5, 1 and 1.5 and 1, 2 and 4 records decoded ahead.
A loop that decoded inside Next() would wait d per record, a share
d / (d + step) of its time: the table shows that share beside the measured
one, both after the first record (which waits for the pipeline to fill).
Prints a markdown table.
"""
import argparse
import json
import pathlib
import subprocess


def loop(bench, args, step_ms, ahead):
    cmd = [bench, "loop", args.pcr_dir, "--threads", str(args.threads), "--records", str(args.records),
           "--records-ahead", str(ahead), "--step-ms", f"{step_ms:.3f}"]
    if args.fidelity:
        cmd += ["--fidelity", args.fidelity]
    return json.loads(subprocess.run([str(c) for c in cmd], check=True, capture_output=True, text=True).stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build_dir")
    ap.add_argument("pcr_dir")
    ap.add_argument("--records", type=int, default=12)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--fidelity", default="")
    args = ap.parse_args()
    bench = pathlib.Path(args.build_dir) / "tools/pcr-bench"
    free = loop(bench, args, 0, 2)
    d = free["seconds"] / free["records"] * 1000
    print(f"{free['records']} records of {free['images'] // free['records']} images, {args.threads} decoding "
          f"thread(s): decoding alone takes d = {d:.0f} ms per record ({free['images_per_s']:.0f} images/s)\n")
    print("| step | records ahead | images/s | waited in Next() after the first record | "
          "decoding inside Next() would wait |")
    print("|---|---|---|---|---|")
    for f in (0.5, 1.0, 1.5):
        for ahead in (1, 2, 4):
            r = loop(bench, args, f * d, ahead)
            print(f"| {f:g} d | {ahead} | {r['images_per_s']:.0f} | {r['wait_share']:.1%} | {1 / (1 + f):.1%} |")


if __name__ == "__main__":
    main()
