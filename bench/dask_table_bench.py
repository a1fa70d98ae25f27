#!/usr/bin/env python3
"""Table conversions on Dask (pcr.dask.convert_table) against pcr-convert
table in one process, in the same run: rows/s with 1 and 2 worker processes
(one thread each), the fixed cost of a shard, and the same from and to
s3rver on loopback.

usage: /usr/bin/python3 bench/dask_table_bench.py BUILD_DIR WORK_DIR [--rows N] [--split-mb M] [--runs N]

Inputs, made once in WORK_DIR: a CSV shaped like Criteo's click logs (a
label, 13 integer and 26 hashed categorical columns; --rows, default
1,000,000) and bench/make_table's JSON Lines of map rows (label, 100 dense
and 20 sparse features; a tenth of the rows). Every conversion uses
--split-mb M (default 16), so the outputs are equal. The cluster is
started before the clock; a Dask run's time ends when the table is
complete (scans, plan, shards, merge). The fixed cost of a shard is (time
with 16 shards - time with 2 shards) / 14 on 2 workers. Median of N runs
(default 3). Needs s3rver (npm install -g s3rver@3) for the s3:// rows.
Prints a Markdown table.
"""
import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
from s3_put import put  # noqa: E402
from upload_bench import S3rver, free_port  # noqa: E402


def criteo_csv(path, rows):
    if os.path.exists(path):
        return
    rng = random.Random(1)
    with open(path + ".tmp", "w") as f:
        f.write(",".join(["label"] + [f"I{i}" for i in range(1, 14)] + [f"C{i}" for i in range(1, 27)]) + "\n")
        for _ in range(rows):
            ints = [str(int(rng.expovariate(0.05))) if rng.random() > 0.2 else "" for _ in range(13)]
            cats = [f"{rng.getrandbits(32):08x}" if rng.random() > 0.1 else "" for _ in range(26)]
            f.write(",".join([str(int(rng.random() < 0.25))] + ints + cats) + "\n")
    os.rename(path + ".tmp", path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("work")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--split-mb", type=int, default=16)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    build, work = os.path.abspath(a.build), os.path.abspath(a.work)
    sys.path.insert(0, os.path.join(build, "python"))
    import distributed
    import pcr
    import pcr.dask

    os.makedirs(work, exist_ok=True)
    csv = os.path.join(work, "criteo.csv")
    criteo_csv(csv, a.rows)
    jsonl = os.path.join(work, "maps", "table.jsonl")
    if not os.path.exists(jsonl):
        subprocess.run([os.path.join(build, "bench", "make_table"), os.path.join(work, "maps"), "--rows",
                        str(a.rows // 10), "--dense", "100", "--sparse", "20"], check=True, capture_output=True)
    convert = os.path.join(build, "tools", "pcr-convert")
    os.environ.update(AWS_ACCESS_KEY_ID="S3RVER", AWS_SECRET_ACCESS_KEY="S3RVER",
                      NODE_OPTIONS="--openssl-legacy-provider")
    out = os.path.join(work, "out")
    times = {}
    rows = {}

    def record(name, fn):
        shutil.rmtree(out, ignore_errors=True)
        start = time.perf_counter()
        fn()
        times.setdefault(name, []).append(time.perf_counter() - start)

    def cli(source, target=out, env=None):
        subprocess.run([convert, "table", source, target, "--split-mb", str(a.split_mb)], check=True,
                       capture_output=True, env=dict(os.environ, **(env or {})))

    store = S3rver(os.path.join(work, "store"), "127.0.0.1", free_port())
    n = 0

    def s3_out():
        nonlocal n
        n += 1
        return f"s3://bench/out-{n}"

    try:
        with open(csv, "rb") as f:
            put(store.endpoint, "bench", "criteo.csv", f.read())
        remote = {"s3_endpoint": store.endpoint}
        for name, path in (("csv", csv), ("jsonl", jsonl)):
            shutil.rmtree(out, ignore_errors=True)
            rows[name] = pcr.convert_table(path, out, split_mb=a.split_mb)["rows"]
        for workers in (1, 2):
            with distributed.LocalCluster(n_workers=workers, processes=True, threads_per_worker=1,
                                          host="127.0.0.1", dashboard_address=None,
                                          local_directory=os.path.join(work, "dask")) as cluster, \
                    distributed.Client(cluster):
                for _ in range(a.runs):
                    for name, path in (("csv", csv), ("jsonl", jsonl)):
                        if workers == 1:
                            record(f"cli {name}", lambda: cli(path))
                        record(f"dask {workers} {name}", lambda: pcr.dask.convert_table(
                            path, out, split_mb=a.split_mb, progress=False))
                    if workers == 1:
                        record("cli s3", lambda: cli("s3://bench/criteo.csv", s3_out(),
                                                     {"AWS_ENDPOINT_URL": store.endpoint}))
                    record(f"dask {workers} s3", lambda: pcr.dask.convert_table(
                        "s3://bench/criteo.csv", s3_out(), split_mb=a.split_mb, remote=remote, progress=False,
                        work_dir=os.path.join(work, "upload")))
                    if workers == 2:
                        record("dask 2 x16", lambda: pcr.dask.convert_table(csv, out, num_shards=16,
                                                                            split_mb=a.split_mb, progress=False))
    finally:
        store.close()
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"CSV: {rows['csv']:,} rows, {os.path.getsize(csv) / 2**20:.0f} MiB; JSON Lines: {rows['jsonl']:,} rows, "
          f"{os.path.getsize(jsonl) / 2**20:.0f} MiB; --split-mb {a.split_mb}; median of {a.runs}\n")
    print("| conversion | rows/s | vs pcr-convert table |")
    print("|---|---|---|")
    table = [("CSV: pcr-convert table", "cli csv", "csv"), ("CSV: pcr.dask, 1 worker", "dask 1 csv", "csv"),
             ("CSV: pcr.dask, 2 workers", "dask 2 csv", "csv"), ("JSON Lines: pcr-convert table", "cli jsonl", "jsonl"),
             ("JSON Lines: pcr.dask, 1 worker", "dask 1 jsonl", "jsonl"),
             ("JSON Lines: pcr.dask, 2 workers", "dask 2 jsonl", "jsonl"),
             ("CSV s3:// to s3://: pcr-convert table", "cli s3", "s3"),
             ("CSV s3:// to s3://: pcr.dask, 1 worker", "dask 1 s3", "s3"),
             ("CSV s3:// to s3://: pcr.dask, 2 workers", "dask 2 s3", "s3")]
    for label, key, kind in table:
        base = med["cli s3" if kind == "s3" else f"cli {kind}"]
        print(f"| {label} | {rows['jsonl' if kind == 'jsonl' else 'csv'] / med[key]:,.0f} | {base / med[key]:.2f} |")
    print(f"\nfixed cost per shard (2 workers, CSV, 16 shards against 2): "
          f"{(med['dask 2 x16'] - med['dask 2 csv']) / 14 * 1000:.1f} ms")


if __name__ == "__main__":
    main()
