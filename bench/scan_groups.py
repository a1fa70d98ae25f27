#!/usr/bin/env python3
"""Size and decode speed of each scan group, against the original JPEGs.

usage: bench/scan_groups.py BUILD_DIR SRC_DIR [--scripts spectral,libjpeg] [--min-seconds S]

Converts every JPEG under SRC_DIR (recursively) with each scan script, then
prints one markdown table per script: per scan group k, the cumulative size
of fidelity k relative to the originals, mean bytes per image, and the
single-core decode rate relative to decoding the originals in the same run.
"""
import argparse
import json
import pathlib
import subprocess
import sys
import tempfile


def run(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build_dir")
    ap.add_argument("src_dir")
    ap.add_argument("--scripts", default="spectral,libjpeg")
    ap.add_argument("--min-seconds", default="1")
    args = ap.parse_args()
    build = pathlib.Path(args.build_dir)
    src = pathlib.Path(args.src_dir)
    files = sorted(p for p in src.rglob("*") if p.suffix.lower() in (".jpg", ".jpeg"))
    if not files:
        sys.exit(f"no JPEG files under {src}")
    original = sum(p.stat().st_size for p in files)
    with tempfile.TemporaryDirectory() as tmp:
        listing = pathlib.Path(tmp) / "list.csv"
        listing.write_text("".join(f"{p.relative_to(src)},0\n" for p in files))
        print(f"{src}: {len(files)} images, {original} bytes, "
              f"{original / len(files):.0f} bytes/image\n")
        for script in args.scripts.split(","):
            out = pathlib.Path(tmp) / script
            run([build / "tools/pcr-convert", "images", src, out, "--list", listing,
                 "--scan-script", script])
            dump = json.loads(run([build / "tools/pcr-dump", out, "--json"]))
            bench = json.loads(run([build / "tools/pcr-bench", "decode", out, "--src", src,
                                    "--min-seconds", args.min_seconds]))
            print(f"scan script `{script}`: files {dump['file_bytes'] / original:.3f}x the "
                  f"originals; originals decode at {bench['baseline_images_per_s']:.0f} images/s\n")
            print("| k | size vs original | bytes/image | decode rate vs original |")
            print("|---|---|---|---|")
            for g, f in zip(dump["groups"], bench["groups"]):
                print(f"| {g['group']} | {g['cumulative_bytes'] / original:.3f} | "
                      f"{g['cumulative_bytes'] / dump['images']:.0f} | {f['vs_baseline']:.2f} |")
            print()


if __name__ == "__main__":
    main()
