#!/usr/bin/env python3
"""Conversion throughput of pcr-convert against libjpeg-turbo's own lossless
transcode, `jpegtran -progressive`, on the same files.

usage: bench/convert_bench.py BUILD_DIR SRC_DIR LIST [--jobs 1,2] [--rounds 3]
                              [--script spectral5,libjpeg] [--work DIR]

LIST holds CSV lines "path,label" with paths relative to SRC_DIR (the --list
format of pcr-convert). jpegtran runs once per file, writing its output to a
file as a conversion would; its process start-up is measured by running it
the same number of times on a 1x1 JPEG and subtracted. pcr-convert runs
once per (script, jobs) over the whole list. Rounds interleave every
configuration and the best round of each counts. Prints one markdown table:
images/s, images/s per core, and the ratio per core to jpegtran.
"""
import argparse
import os
import pathlib
import shutil
import subprocess
import tempfile
import time

# A 1x1 JPEG, to time jpegtran's start-up.
TINY_JPEG = pathlib.Path(__file__).resolve().parent.parent / "tests/data/sample/misc/jpg-size-1x1.jpg"


def jpegtran_seconds(jpegtran, files, out_dir):
    start = time.perf_counter()
    for i, f in enumerate(files):
        subprocess.run([jpegtran, "-progressive", "-copy", "all", "-outfile", str(out_dir / f"{i}.jpg"), str(f)],
                       check=True)
    return time.perf_counter() - start


def pcr_seconds(convert, src, listing, out_dir, script, jobs):
    shutil.rmtree(out_dir, ignore_errors=True)
    start = time.perf_counter()
    subprocess.run([convert, "images", src, str(out_dir), "--list", listing, "--jobs", str(jobs),
                    "--scan-script", script], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build_dir")
    ap.add_argument("src_dir")
    ap.add_argument("list")
    ap.add_argument("--jobs", default=f"1,{os.cpu_count()}")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--script", default="spectral5,libjpeg")
    ap.add_argument("--work", default=None, help="scratch directory (default: a temporary one)")
    args = ap.parse_args()
    jpegtran = shutil.which("jpegtran")
    if jpegtran is None:
        raise SystemExit("jpegtran not found (Debian: apt-get install libjpeg-turbo-progs)")
    convert = pathlib.Path(args.build_dir) / "tools/pcr-convert"
    files = [pathlib.Path(args.src_dir) / line.rsplit(",", 1)[0]
             for line in pathlib.Path(args.list).read_text().splitlines() if line.strip()]
    input_bytes = sum(f.stat().st_size for f in files)
    work = pathlib.Path(args.work or tempfile.mkdtemp(prefix="pcr-convert-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    tiny = TINY_JPEG
    (work / "jpegtran").mkdir(exist_ok=True)
    configs = [(s, int(j)) for s in args.script.split(",") for j in args.jobs.split(",")]
    best = {"jpegtran": float("inf"), "startup": float("inf")}
    best.update({c: float("inf") for c in configs})
    for _ in range(args.rounds):
        best["startup"] = min(best["startup"], jpegtran_seconds(jpegtran, [tiny] * len(files), work / "jpegtran"))
        best["jpegtran"] = min(best["jpegtran"], jpegtran_seconds(jpegtran, files, work / "jpegtran"))
        for script, jobs in configs:
            best[(script, jobs)] = min(best[(script, jobs)],
                                       pcr_seconds(convert, args.src_dir, args.list, work / "pcr", script, jobs))
    shutil.rmtree(work, ignore_errors=True)

    n = len(files)
    base = n / (best["jpegtran"] - best["startup"])
    print(f"{n} images, {input_bytes / n / 1024:.0f} KiB each on average; best of {args.rounds} interleaved rounds; "
          f"jpegtran start-up {best['startup'] / n * 1000:.2f} ms per run, subtracted\n")
    print("| converter | jobs | images/s | images/s per core | per core vs jpegtran |")
    print("|---|---|---|---|---|")
    print(f"| `jpegtran -progressive -copy all` | 1 | {base:.4g} | {base:.4g} | 1.00 |")
    for script, jobs in configs:
        rate = n / best[(script, jobs)]
        print(f"| `pcr-convert --scan-script {script}` | {jobs} | {rate:.4g} | {rate / jobs:.4g} | "
              f"{rate / jobs / base:.2f} |")


if __name__ == "__main__":
    main()
