#!/usr/bin/env python3
"""Conversions from object storage against the same conversions from local disk.

usage: bench/input_bench.py BUILD_DIR PHOTOS_DIR WORK_DIR [--shards N] [--rows N]
                            [--links 50:100] [--concurrency 64,24] [--rounds N]

Needs s3rver (npm install -g s3rver@3); the link runs need root and
/dev/net/tun. Prepares WORK_DIR once: the JPEGs of PHOTOS_DIR as one class
folder (photos/c0), the same photos as N WebDataset shards (wds/, a .jpg and
a .cls member each), and a table like bench/table_bench.py's with ROWS rows
(table/table.jsonl). Then, in ROUNDS rounds that interleave the
configurations, times as fresh processes pcr-convert images, webdataset and
table into a local directory, reading:

- the files on local disk;
- the same objects in s3rver on 127.0.0.1;
- the same objects in s3rver inside bench/link_emulator.py's namespace,
  behind a link of each RTT_MS:MBIT, with each PCR_REMOTE_CONCURRENCY of
  --concurrency (GETs in flight at most).

The best round of each counts. "bound" is what the slower of converting and
moving the input's bytes once over the link allows: max(local seconds,
input bytes / link bandwidth) for images and shards, which are converted
while they stream; local seconds + input bytes / link bandwidth for a table,
which is read whole before it is converted. Prints Markdown tables and the raw results as
JSON.
"""
import argparse
import concurrent.futures
import glob
import json
import os
import shutil
import sys
import tarfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
from s3_put import put  # noqa: E402
from upload_bench import ADDRESS, NAMESPACE, Link, S3rver, free_port, run  # noqa: E402


def prepare(build, photos_dir, work, shards, rows):
    """The inputs on local disk, each as (kind, local path, key under the bucket, bytes)."""
    files = sorted(glob.glob(os.path.join(photos_dir, "**", "*.jpg"), recursive=True))
    photos = os.path.join(work, "photos")
    if not os.path.isdir(photos):
        os.makedirs(os.path.join(photos + ".tmp", "c0"))
        for i, p in enumerate(files):
            os.link(p, os.path.join(photos + ".tmp", "c0", f"{i:06d}.jpg"))
        os.rename(photos + ".tmp", photos)
    wds = os.path.join(work, "wds")
    if not os.path.isdir(wds):
        os.makedirs(wds + ".tmp")
        for s in range(shards):
            with tarfile.open(os.path.join(wds + ".tmp", f"shard-{s}.tar"), "w") as tar:
                for i in range(s, len(files), shards):
                    tar.add(files[i], f"{i:06d}.jpg")
                    cls = os.path.join(wds + ".tmp", "cls")
                    with open(cls, "w") as f:
                        f.write(str(i % 10))
                    tar.add(cls, f"{i:06d}.cls")
        os.remove(os.path.join(wds + ".tmp", "cls"))
        os.rename(wds + ".tmp", wds)
    table = os.path.join(work, "table")
    if not os.path.exists(os.path.join(table, "table.jsonl")):
        run([f"{build}/bench/make_table", table, "--rows", rows, "--history", "0", "--jobs", "0"])
    photo_bytes = sum(os.path.getsize(p) for p in glob.glob(os.path.join(photos, "c0", "*")))
    shard_paths = sorted(glob.glob(os.path.join(wds, "*.tar")))
    return [("images", photos, "photos", photo_bytes, len(files)),
            ("webdataset", shard_paths, "wds", sum(os.path.getsize(p) for p in shard_paths), len(files)),
            ("table", os.path.join(table, "table.jsonl"), "table.jsonl",
             os.path.getsize(os.path.join(table, "table.jsonl")), rows)]


def upload(endpoint, work, inputs):
    """Every input file as an object of the bucket "bench", 16 at a time."""
    jobs = []
    for kind, local, key, _, _ in inputs:
        if kind == "images":
            for f in sorted(os.listdir(os.path.join(local, "c0"))):
                jobs.append((os.path.join(local, "c0", f), f"{key}/c0/{f}"))
        elif kind == "webdataset":
            for p in local:
                jobs.append((p, f"{key}/{os.path.basename(p)}"))
        else:
            jobs.append((local, key))

    def one(job):
        with open(job[0], "rb") as f:
            put(endpoint, "bench", job[1], f.read())

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        list(pool.map(one, jobs))


def source(kind, local, key, remote):
    if not remote:
        return [local] if isinstance(local, str) else list(local)
    if kind == "webdataset":
        return [f"s3://bench/{key}/shard-{{0..{len(local) - 1}}}.tar"]
    return [f"s3://bench/{key}"]


def convert(build, kind, src, out, env=None):
    shutil.rmtree(out, ignore_errors=True)
    cmd = [f"{build}/tools/pcr-convert", kind, *src, out]
    if kind == "table":
        cmd += ["--float32"]
    start = time.perf_counter()
    run(cmd, env=env)
    return time.perf_counter() - start


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("photos")
    ap.add_argument("work")
    ap.add_argument("--shards", type=int, default=4)
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--links", default="50:100")
    ap.add_argument("--concurrency", default="64,24")
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    build, work = os.path.abspath(a.build), os.path.abspath(a.work)
    os.makedirs(work, exist_ok=True)
    inputs = prepare(build, a.photos, work, a.shards, a.rows)
    # s3rver's listing tokens need the legacy OpenSSL provider on Node 17 and later.
    os.environ["NODE_OPTIONS"] = "--openssl-legacy-provider"
    env = {"AWS_ACCESS_KEY_ID": "S3RVER", "AWS_SECRET_ACCESS_KEY": "S3RVER", "AWS_REGION": "us-east-1"}
    links = [tuple(int(x) for x in l.split(":")) for l in a.links.split(",") if l]
    concurrency = [int(c) for c in a.concurrency.split(",")]
    out = os.path.join(work, "out")
    best = {}

    def record(name, seconds):
        best[name] = min(best.get(name, float("inf")), seconds)

    for _ in range(a.rounds):
        for kind, local, key, _, _ in inputs:
            record(f"{kind} local", convert(build, kind, source(kind, local, key, False), out))
        stores = [(["loopback"], None, lambda: S3rver(os.path.join(work, "store"), "127.0.0.1", free_port()))]
        for rtt, mbps in links:
            stores.append(([f"{rtt}:{mbps}/{c}" for c in concurrency], (rtt, mbps),
                           lambda: S3rver(os.path.join(work, "store"), ADDRESS, 8000, NAMESPACE)))
        for names, link_spec, start in stores:
            link = Link(*link_spec) if link_spec else None
            try:
                store = start()
                try:
                    upload(store.endpoint, work, inputs)
                    for where in names:
                        e = dict(env, AWS_ENDPOINT_URL=store.endpoint)
                        if "/" in where:
                            e["PCR_REMOTE_CONCURRENCY"] = where.split("/")[1]
                        for kind, local, key, _, _ in inputs:
                            record(f"{kind} {where}", convert(build, kind, source(kind, local, key, True), out, e))
                finally:
                    store.close()
            finally:
                if link:
                    link.close()

    at_link = [f"{rtt}:{mbps}/{c}" for rtt, mbps in links for c in concurrency]
    wheres = ["local", "loopback"] + at_link
    print("| input | " + " | ".join(f"{w} items/s | vs local" for w in wheres) + " |")
    print("|---|" + "---|---|" * len(wheres))
    for kind, _, _, _, count in inputs:
        cells = []
        for w in wheres:
            t = best[f"{kind} {w}"]
            cells.append(f"{count / t:,.0f} | {best[f'{kind} local'] / t:.2f}")
        print(f"| {kind} ({count:,}) | " + " | ".join(cells) + " |")
    print()
    print("| link, GETs in flight | input | MB | seconds | bound (s) | vs bound |")
    print("|---|---|---|---|---|---|")
    for where in at_link:
        rtt, mbps = (int(x) for x in where.split("/")[0].split(":"))
        rate = mbps * 1e6 / 8
        for kind, _, _, size, _ in inputs:
            t = best[f"{kind} {where}"]
            local = best[f"{kind} local"]
            bound = local + size / rate if kind == "table" else max(local, size / rate)
            print(f"| {rtt} ms, {mbps} Mbit/s, {where.split('/')[1]} | {kind} | {size / 1e6:.1f} | {t:.2f} | "
                  f"{bound:.2f} | {bound / t:.2f} |")
    print()
    print(json.dumps({"seconds": best, "bytes": {k: s for k, _, _, s, _ in inputs}}, indent=1))


if __name__ == "__main__":
    main()
