#!/usr/bin/env python3
"""Image conversions on Dask (pcr.dask.convert_images) against pcr-convert in
one process, in the same run: images/s with 1 and 2 worker processes (one
thread each, one task per worker), the fixed cost of a task, and the same
through s3rver on loopback (s3:// to s3://).

usage: /usr/bin/python3 bench/dask_convert_bench.py BUILD_DIR WORK_DIR [--photos DIR] [--copies K] [--runs N]

Input: every .jpg under DIR (default ../shared/corpus/jpeg, without its
malformed/ folder), K times over (default 4), in one class folder of
WORK_DIR; conversions skip what pcr refuses (--skip-bad), the same files
every time. The cluster is started before the clock; a run's time ends
when the dataset is complete (for Dask: shards, then the merge). The fixed
cost of a task is (time with 32 shards - time with 2 shards) / 30 on 2
workers. Median of N runs (default 3). Needs s3rver (npm install -g
s3rver@3) for the s3:// rows. Prints a Markdown table.
"""
import argparse
import glob
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
from s3_put import put  # noqa: E402
from upload_bench import S3rver, free_port  # noqa: E402


def prepare(photos_dir, work, copies):
    src = os.path.join(work, "src")
    if not os.path.isdir(src):
        files = sorted(f for f in glob.glob(os.path.join(photos_dir, "**", "*.jpg"), recursive=True)
                       if "/malformed/" not in f)
        os.makedirs(os.path.join(src + ".tmp", "c0"))
        for c in range(copies):
            for i, f in enumerate(files):
                shutil.copyfile(f, os.path.join(src + ".tmp", "c0", f"{c:02d}-{i:05d}.jpg"))
        os.rename(src + ".tmp", src)
    return src


def timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("work")
    ap.add_argument("--photos", default=os.path.join(HERE, "..", "..", "shared", "corpus", "jpeg"))
    ap.add_argument("--copies", type=int, default=4)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    build, work = os.path.abspath(a.build), os.path.abspath(a.work)
    sys.path.insert(0, os.path.join(build, "python"))
    import distributed
    import pcr
    import pcr.dask

    os.makedirs(work, exist_ok=True)
    src = prepare(a.photos, work, a.copies)
    out = os.path.join(work, "out")
    convert = os.path.join(build, "tools", "pcr-convert")
    os.environ.update(AWS_ACCESS_KEY_ID="S3RVER", AWS_SECRET_ACCESS_KEY="S3RVER",
                      NODE_OPTIONS="--openssl-legacy-provider")
    times = {}
    images = pcr.convert_images(src, out, skip_bad=True, progress=False)["images"]
    shutil.rmtree(out)

    def record(name, fn):
        shutil.rmtree(out, ignore_errors=True)
        times.setdefault(name, []).append(timed(fn))

    def cli(jobs, source=src, target=out, env=None):
        subprocess.run([convert, "images", source, target, "--skip-bad", "--jobs", str(jobs)], check=True,
                       capture_output=True, env=dict(os.environ, **(env or {})))

    store = S3rver(os.path.join(work, "store"), "127.0.0.1", free_port())
    try:
        for root, _, files in os.walk(src):
            for f in files:
                with open(os.path.join(root, f), "rb") as fh:
                    put(store.endpoint, "bench", "src/" + os.path.relpath(os.path.join(root, f), src), fh.read())
        remote = {"s3_endpoint": store.endpoint}
        n = 0

        def s3_out():
            nonlocal n
            n += 1
            return f"s3://bench/out-{n}"

        for workers in (1, 2):
            with distributed.LocalCluster(n_workers=workers, processes=True, threads_per_worker=1,
                                          host="127.0.0.1", dashboard_address=None,
                                          local_directory=os.path.join(work, "dask")) as cluster, \
                    distributed.Client(cluster):
                for _ in range(a.runs):
                    if workers == 1:
                        record("cli 1", lambda: cli(1))
                        record("cli 2", lambda: cli(2))
                        record("cli s3", lambda: cli(1, "s3://bench/src", s3_out(),
                                                     {"AWS_ENDPOINT_URL": store.endpoint}))
                    record(f"dask {workers}", lambda: pcr.dask.convert_images(src, out, skip_bad=True,
                                                                              progress=False))
                    record(f"dask {workers} s3", lambda: pcr.dask.convert_images(
                        "s3://bench/src", s3_out(), skip_bad=True, remote=remote, progress=False,
                        work_dir=os.path.join(work, "upload")))
                    if workers == 2:
                        record("dask 2 x32", lambda: pcr.dask.convert_images(src, out, num_shards=32, skip_bad=True,
                                                                             progress=False))
    finally:
        store.close()
    med = {k: statistics.median(v) for k, v in times.items()}
    base, base_s3 = med["cli 1"], med["cli s3"]
    mib = sum(os.path.getsize(os.path.join(src, "c0", f)) for f in os.listdir(os.path.join(src, "c0"))) / 2**20
    print(f"{images} images converted of {mib:.1f} MiB; median of {a.runs}\n")
    print("| conversion | images/s | vs pcr-convert, 1 job |")
    print("|---|---|---|")
    rows = [("pcr-convert, --jobs 1", "cli 1", base), ("pcr-convert, --jobs 2", "cli 2", base),
            ("pcr.dask, 1 worker", "dask 1", base), ("pcr.dask, 2 workers", "dask 2", base),
            ("pcr-convert s3:// to s3://, --jobs 1", "cli s3", base_s3),
            ("pcr.dask s3:// to s3://, 1 worker", "dask 1 s3", base_s3),
            ("pcr.dask s3:// to s3://, 2 workers", "dask 2 s3", base_s3)]
    for label, key, against in rows:
        print(f"| {label} | {images / med[key]:.0f} | {against / med[key]:.2f} |")
    print(f"\nfixed cost per task (2 workers, 32 shards against 2): "
          f"{(med['dask 2 x32'] - med['dask 2']) / 30 * 1000:.1f} ms")


if __name__ == "__main__":
    main()
