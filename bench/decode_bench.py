#!/usr/bin/env python3
"""Decode rate at every fidelity, with and without DCT downscaling, on one
thread and on all cores, against the original JPEGs decoded in the same run.

usage: bench/decode_bench.py BUILD_DIR PCR_DATASET SRC_DIR [--scales 1,2,4]
                             [--threads 1,N] [--min-seconds S]

Runs `pcr-bench decode --fidelity all` once per (threads, scale); each run
decodes the originals first with the same settings, so every ratio compares
figures from one process. Prints one markdown table: images/s per fidelity
and configuration, and the ratio to the originals.
"""
import argparse
import json
import os
import pathlib
import subprocess


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build_dir")
    ap.add_argument("dataset")
    ap.add_argument("src_dir")
    ap.add_argument("--scales", default="1,2,4")
    ap.add_argument("--threads", default=f"1,{os.cpu_count()}")
    ap.add_argument("--min-seconds", default="2")
    args = ap.parse_args()
    bench = pathlib.Path(args.build_dir) / "tools/pcr-bench"
    dump = pathlib.Path(args.build_dir) / "tools/pcr-dump"
    summary = json.loads(subprocess.run([dump, args.dataset, "--json"], check=True,
                                        capture_output=True, text=True).stdout)
    configs, runs = [], []
    for threads in args.threads.split(","):
        for scale in args.scales.split(","):
            out = subprocess.run([bench, "decode", args.dataset, "--src", args.src_dir,
                                  "--fidelity", "all", "--scale", f"1/{scale}", "--threads", threads,
                                  "--min-seconds", args.min_seconds],
                                 check=True, capture_output=True, text=True).stdout
            configs.append(f"{threads} thread{'s' if threads != '1' else ''}, "
                           f"{'full size' if scale == '1' else '1/' + scale}")
            runs.append(json.loads(out))
    print(f"{args.dataset}: {summary['images']} images, scan script `{summary['scan_script']}`; "
          "images/s (ratio to the originals)\n")
    print("| k | size vs full | " + " | ".join(configs) + " |")
    print("|---|---|" + "---|" * len(configs))
    print("| originals | | " + " | ".join(f"{r['baseline_images_per_s']:.0f}" for r in runs) + " |")
    full = summary["groups"][-1]["cumulative_bytes"]
    for i, g in enumerate(summary["groups"]):
        cells = [f"{r['groups'][i]['images_per_s']:.0f} ({r['groups'][i]['vs_baseline']:.2f})" for r in runs]
        print(f"| {g['group']} | {g['cumulative_bytes'] / full:.3f} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
