#!/usr/bin/env python3
"""Reader threads sharing one dataset: images/s of random single-image reads
(O_DIRECT) on 1, 2 and 4 threads, per engine, in one run.

usage: bench/threads_bench.py BUILD_DIR PCR_DIR [--count N] [--fidelity K] [--queue-depth D]

Each thread issues its share of --count requests in batches of --queue-depth
through the dataset's one engine. Figures are ratios to pread on one thread
of the same run. Prints a markdown table.
"""
import argparse
import json
import pathlib
import subprocess


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build_dir")
    ap.add_argument("pcr_dir")
    ap.add_argument("--count", type=int, default=40000)
    ap.add_argument("--fidelity", default="1")
    ap.add_argument("--queue-depth", type=int, default=8)
    args = ap.parse_args()
    bench = pathlib.Path(args.build_dir) / "tools/pcr-bench"
    rows = []
    for engine in ("pread", "uring"):
        for threads in (1, 2, 4):
            cmd = [bench, "read", args.pcr_dir, "--fidelity", args.fidelity, "--mode", "random", "--direct",
                   "--engine", engine, "--queue-depth", str(args.queue_depth), "--count", str(args.count),
                   "--threads", str(threads)]
            out = json.loads(subprocess.run([str(c) for c in cmd], check=True, capture_output=True,
                                            text=True).stdout)
            rows.append((engine, threads, out["images_per_s"]))
    base = rows[0][2]
    one = {e: r for e, t, r in rows if t == 1}
    print(f"Random single images at fidelity {args.fidelity}, O_DIRECT, batches of {args.queue_depth}, "
          f"{args.count} images per run\n")
    print("| engine | threads | images/s | vs pread, 1 thread | vs same engine, 1 thread |")
    print("|---|---|---|---|---|")
    for engine, threads, rate in rows:
        print(f"| {engine} | {threads} | {rate:.0f} | {rate / base:.2f} | {rate / one[engine]:.2f} |")


if __name__ == "__main__":
    main()
