#!/usr/bin/env python3
"""Conversions into object storage against the same conversion to local disk.

usage: bench/upload_bench.py BUILD_DIR PHOTOS_DIR WORK_DIR [--copies N] [--rows N]
                             [--links 50:100] [--rounds N] [--small-per-record N]

Needs s3rver (npm install -g s3rver@3); the link runs need root and
/dev/net/tun. Prepares WORK_DIR once: the JPEGs of PHOTOS_DIR, each linked
COPIES times into one class folder (photos/), and a table like
bench/table_bench.py's with ROWS rows (table/table.jsonl). Then, in ROUNDS
rounds that interleave the configurations, times as fresh processes:

- pcr-convert images and pcr-convert table into a local directory;
- the same into s3rver on 127.0.0.1 (s3://bench/...);
- the same into s3rver inside bench/link_emulator.py's namespace, behind a
  link of each RTT_MS:MBIT;
- the images in records of SMALL_PER_RECORD images (many small files),
  locally and into each store, uploaded one file at a time
  (--upload-concurrency 1) and with the defaults;
- there, uploads alone: pcr-convert merge of the images converted locally
  in two parts (every record file and the manifest sent, nothing
  converted), against curl -T sending each record file in turn.

The best round of each counts. "bound" is what the slower of converting and
sending allows: images are uploaded as each file is finished, so their bound
is max(local seconds, bytes / link bandwidth); a table is one file, sent
once written, so its bound is local seconds + bytes / link bandwidth.
Prints a Markdown table and the raw results as JSON.
"""
import argparse
import glob
import json
import os
import shutil
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
NAMESPACE = "pcrupload"
ADDRESS = "10.203.0.2"


def run(cmd, env=None):
    e = dict(os.environ, **(env or {}))
    return subprocess.run([str(c) for c in cmd], check=True, capture_output=True, text=True, env=e).stdout


def prepare(build, photos_dir, work, copies, rows):
    photos = os.path.join(work, "photos")
    if not os.path.isdir(photos):
        files = sorted(glob.glob(os.path.join(photos_dir, "**", "*.jpg"), recursive=True))
        os.makedirs(os.path.join(photos + ".tmp", "c0"))
        for c in range(copies):
            for i, p in enumerate(files):
                os.link(p, os.path.join(photos + ".tmp", "c0", f"{c:02d}-{i:06d}.jpg"))
        os.rename(photos + ".tmp", photos)
    table = os.path.join(work, "table")
    if not os.path.exists(os.path.join(table, "table.jsonl")):
        run([f"{build}/bench/make_table", table, "--rows", rows, "--history", "0", "--jobs", "0"])
    parts = [os.path.join(work, f"part{i}") for i in range(2)]
    for i, part in enumerate(parts):
        if not os.path.exists(os.path.join(part, "part.pcrd")):
            shutil.rmtree(part, ignore_errors=True)
            run([f"{build}/tools/pcr-convert", "images", photos, part, "--shard", i, "--num-shards", 2])
    return photos, os.path.join(table, "table.jsonl"), parts


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class S3rver:
    """s3rver with the bucket "bench", in the namespace when `namespace`."""

    def __init__(self, store, address, port, namespace=None):
        shutil.rmtree(store, ignore_errors=True)
        os.makedirs(store)
        cmd = [shutil.which("s3rver"), "-d", store, "-a", address, "-p", str(port), "-s", "--configure-bucket", "bench"]
        if namespace:
            cmd = ["ip", "netns", "exec", namespace] + cmd
        self.process = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.endpoint = f"http://{address}:{port}"
        for _ in range(200):
            if subprocess.run(["curl", "-s", "-o", "/dev/null", self.endpoint + "/bench"]).returncode == 0:
                return
            time.sleep(0.05)
        raise SystemExit(f"s3rver did not come up at {self.endpoint}")

    def close(self):
        self.process.terminate()
        self.process.wait()


class Link:
    def __init__(self, rtt_ms, mbps):
        self.emulator = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "link_emulator.py"), NAMESPACE, "--rtt-ms", str(rtt_ms),
             "--mbps", str(mbps)], stdout=subprocess.PIPE, text=True)
        if self.emulator.stdout.readline().strip() != "ready":
            raise SystemExit("the link emulator did not start (root and /dev/net/tun are needed)")

    def close(self):
        self.emulator.terminate()
        self.emulator.wait()


def convert(build, kind, src, out, work, env=None, extra=()):
    """Seconds of one pcr-convert run into `out`, and the bytes it wrote."""
    shutil.rmtree(work, ignore_errors=True)
    if not out.startswith("s3://"):
        shutil.rmtree(out, ignore_errors=True)
    cmd = [f"{build}/tools/pcr-convert", kind, src, out, *extra]
    if out.startswith("s3://"):
        cmd += ["--work-dir", work]
    if kind == "table":
        cmd += ["--float32"]
    start = time.perf_counter()
    text = run(cmd, env=env)
    seconds = time.perf_counter() - start
    return seconds, int(text.split(" bytes from")[0].rsplit(" ", 1)[1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("photos")
    ap.add_argument("work")
    ap.add_argument("--copies", type=int, default=4)
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--links", default="50:100")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--small-per-record", type=int, default=8)
    a = ap.parse_args()
    build, work = os.path.abspath(a.build), os.path.abspath(a.work)
    os.makedirs(work, exist_ok=True)
    photos, table, parts = prepare(build, a.photos, work, a.copies, a.rows)
    records = sorted(glob.glob(os.path.join(work, "part*", "records-*.pcr")))
    record_bytes = sum(os.path.getsize(f) for f in records)
    images = len(os.listdir(os.path.join(photos, "c0")))
    rows = a.rows
    env = {"AWS_ACCESS_KEY_ID": "S3RVER", "AWS_SECRET_ACCESS_KEY": "S3RVER", "AWS_REGION": "us-east-1"}
    links = [tuple(int(x) for x in l.split(":")) for l in a.links.split(",") if l]
    best = {}
    sizes = {}

    def record(name, seconds, size):
        best[name] = min(best.get(name, float("inf")), seconds)
        sizes[name] = size

    # Many small files: one file at a time (as pcr-convert uploaded before
    # --upload-concurrency) against the default.
    small = ["--images-per-record", a.small_per_record]
    ways = {"one at a time": ["--upload-concurrency", 1], "default": []}

    def small_runs(where, out, e):
        for way, extra in ways.items():
            record(f"small {where} {way}", *convert(build, "images", photos, f"{out}-{len(extra)}",
                                                    os.path.join(work, "w"), e, small + extra))

    for r in range(a.rounds):
        for kind, src in (("images", photos), ("table", table)):
            record(f"{kind} local", *convert(build, kind, src, os.path.join(work, "out"), os.path.join(work, "w")))
        record("small local", *convert(build, "images", photos, os.path.join(work, "out"), os.path.join(work, "w"),
                                       extra=small))
        store = S3rver(os.path.join(work, "store"), "127.0.0.1", free_port())
        try:
            for kind, src in (("images", photos), ("table", table)):
                record(f"{kind} loopback", *convert(build, kind, src, f"s3://bench/{kind}-{r}", os.path.join(work, "w"),
                                                    dict(env, AWS_ENDPOINT_URL=store.endpoint)))
            small_runs("loopback", f"s3://bench/small-{r}", dict(env, AWS_ENDPOINT_URL=store.endpoint))
        finally:
            store.close()
        for rtt, mbps in links:
            link = Link(rtt, mbps)
            try:
                store = S3rver(os.path.join(work, "store"), ADDRESS, 8000, NAMESPACE)
                try:
                    e = dict(env, AWS_ENDPOINT_URL=store.endpoint)
                    for kind, src in (("images", photos), ("table", table)):
                        record(f"{kind} {rtt}:{mbps}",
                               *convert(build, kind, src, f"s3://bench/{kind}-{r}", os.path.join(work, "w"), e))
                    small_runs(f"{rtt}:{mbps}", f"s3://bench/small-{r}", e)
                    shutil.rmtree(os.path.join(work, "w"), ignore_errors=True)
                    start = time.perf_counter()
                    run([f"{build}/tools/pcr-convert", "merge", f"s3://bench/merged-{r}", *parts, "--work-dir",
                         os.path.join(work, "w")], env=e)
                    record(f"merge {rtt}:{mbps}", time.perf_counter() - start, record_bytes)
                    start = time.perf_counter()
                    for i, f in enumerate(records):
                        run(["curl", "-sf", "-T", f, f"{store.endpoint}/bench/curl-{r}-{i}"])
                    record(f"curl {rtt}:{mbps}", time.perf_counter() - start, record_bytes)
                finally:
                    store.close()
            finally:
                link.close()

    print(f"| {images:,} images, {rows:,} rows | images/s | vs local | rows/s | vs local |")
    print("|---|---|---|---|---|")
    for where in ["local", "loopback"] + [f"{rtt}:{mbps}" for rtt, mbps in links]:
        i, t = best[f"images {where}"], best[f"table {where}"]
        print(f"| {where} | {images / i:,.0f} | {best['images local'] / i:.2f} | {rows / t:,.0f} | "
              f"{best['table local'] / t:.2f} |")
    print()
    print("| link | file | MB | seconds | bound (s) | vs bound |")
    print("|---|---|---|---|---|---|")
    for rtt, mbps in links:
        rate = mbps * 1e6 / 8
        for kind in ("images", "table"):
            name = f"{kind} {rtt}:{mbps}"
            send = sizes[name] / rate
            local = best[f"{kind} local"]
            bound = max(local, send) if kind == "images" else local + send
            print(f"| {rtt} ms, {mbps} Mbit/s | {kind} | {sizes[name] / 1e6:.1f} | {best[name]:.2f} | {bound:.2f} | "
                  f"{bound / best[name]:.2f} |")
    print()
    print("| link | uploads alone | MB | seconds | MB/s | vs link | vs curl |")
    print("|---|---|---|---|---|---|---|")
    for rtt, mbps in links:
        for who in ("merge", "curl"):
            t = best[f"{who} {rtt}:{mbps}"]
            print(f"| {rtt} ms, {mbps} Mbit/s | {who} | {record_bytes / 1e6:.1f} | {t:.2f} | {record_bytes / t / 1e6:.2f} | "
                  f"{record_bytes / t / (mbps * 1e6 / 8):.2f} | {best[f'curl {rtt}:{mbps}'] / t:.2f} |")
    print()
    files = images // a.small_per_record
    print(f"| {files} files of {a.small_per_record} images | seconds | vs local | vs one at a time |")
    print("|---|---|---|---|")
    print(f"| local disk | {best['small local']:.2f} | 1.00 | |")
    for where in ["loopback"] + [f"{rtt}:{mbps}" for rtt, mbps in links]:
        for way in ways:
            t = best[f"small {where} {way}"]
            print(f"| {where}, {way} | {t:.2f} | {best['small local'] / t:.2f} | "
                  f"{best[f'small {where} one at a time'] / t:.2f} |")
    print()
    print(json.dumps({"images": images, "rows": rows, "seconds": best, "bytes": sizes}, indent=1))


if __name__ == "__main__":
    main()
