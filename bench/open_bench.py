#!/usr/bin/env python3
"""Opening a dataset of a million tiny images, against another build of pcr.

usage: bench/open_bench.py BUILD_DIR BASE_BUILD_DIR WORK_DIR [--images N] [--files N]
                           [--rounds N] [--link RTT_MS:MBIT] [--steady-batches N]
                           [--only open,first,steady]

Makes WORK_DIR/tars once: N images (default 1,000,000) of 16x16 pixels (64
distinct baseline JPEGs of about 650 bytes, each image a sample with a key and
a .cls label of 10 classes) in --files WebDataset tar shards. Each build's
pcr-convert converts them with one record per file (WORK_DIR/www/new and
WORK_DIR/www/base): the same record files, each with the manifest its build
writes. Then, for each build, every figure from fresh processes, rounds
interleaved, median of --rounds:
- open: pcr.ImageDataset(path), its time (the files in the page cache), its
  storage reads and the process's RSS after it;
- first batch: 2 ranks started together, each a pcr.torch.ImageLoader
  (batch 256, shuffled, 16x16 crops) through pcr.torch.DataLoader with 2
  workers: seconds from making the loader to its first batch, the slower rank;
- steady: one rank with 2 workers, images/s over --steady-batches batches
  after the first 10 (locally only).
With --link, open and first batch again over HTTP from nginx behind
bench/link_emulator.py (needs root and /dev/net/tun), requests counted in
nginx's access log.
"""
import argparse
import glob
import io
import json
import os
import random
import statistics
import subprocess
import sys
import tarfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from remote_bench import ADDRESS, Link  # noqa: E402

BATCH = 256

CHILD = r"""
import json, os, sys, time
mode, path, rank = sys.argv[1], sys.argv[2], int(sys.argv[3])

def rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024

if mode == "open":
    import pcr
    before = rss()
    start = time.perf_counter()
    ds = pcr.ImageDataset(path)
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "rss_before": before, "rss": rss(), "reads": ds.io_counters["reads"],
                      "bytes": ds.io_counters["bytes_read"], "images": len(ds)}))
else:
    import pcr.torch
    world = 2 if mode == "first" else 1
    start = time.perf_counter()
    loader = pcr.torch.ImageLoader(path, %d, size=16, resize=16, threads=1, rank=rank, world_size=world)
    it = iter(pcr.torch.DataLoader(loader, num_workers=2))
    first = len(next(it)[1])
    first_seconds = time.perf_counter() - start
    out = {"first_seconds": first_seconds, "first_images": first}
    if mode == "steady":
        for _ in range(9):
            next(it)
        start, images = time.perf_counter(), 0
        for _ in range(int(sys.argv[4])):
            images += len(next(it)[1])
        out["images_per_s"] = images / (time.perf_counter() - start)
    print(json.dumps(out))
""" % BATCH


def run(cmd, **kw):
    return subprocess.run([str(c) for c in cmd], check=True, capture_output=True, text=True, **kw).stdout


def make_tars(tars, images, files):
    from PIL import Image

    rng = random.Random(7)
    jpegs = []
    for k in range(64):
        im = Image.new("RGB", (16, 16))
        im.putdata([(rng.randrange(256), rng.randrange(256), (k * 4) % 256) for _ in range(256)])
        out = io.BytesIO()
        im.save(out, "JPEG", quality=90)
        jpegs.append(out.getvalue())
    os.makedirs(tars + ".tmp", exist_ok=True)
    per = -(-images // files)
    for s in range(files):
        with tarfile.open(os.path.join(tars + ".tmp", f"shard-{s:05d}.tar"), "w", format=tarfile.USTAR_FORMAT) as t:
            for i in range(s * per, min(images, (s + 1) * per)):
                for ext, body in (("jpg", jpegs[i % 64]), ("cls", str(i % 10).encode())):
                    info = tarfile.TarInfo(f"{i:08d}.{ext}")
                    info.size = len(body)
                    t.addfile(info, io.BytesIO(body))
    os.rename(tars + ".tmp", tars)
    return per


def child(build, mode, path, rank=0, extra=()):
    env = dict(os.environ, PYTHONPATH=os.path.join(build, "python"))
    return subprocess.Popen(["/usr/bin/python3", "-c", CHILD, mode, path, str(rank), *map(str, extra)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def result(p):
    out, err = p.communicate()
    if p.returncode != 0:
        raise SystemExit(err)
    return json.loads(out)


def measure(builds, paths, rounds, steady_batches, only, link=None):
    """{build name: {figure: [values over rounds]}}."""
    got = {name: {} for name in builds}
    for _ in range(rounds):
        for name, build in builds.items():
            figures = got[name]
            if "open" in only:
                requests = link.requests() if link else 0
                opened = result(child(build, "open", paths[name]))
                if link:
                    opened["reads"] = link.requests() - requests
                for key in ("seconds", "rss", "rss_before", "reads", "bytes"):
                    figures.setdefault("open_" + key, []).append(opened[key])
            if "first" in only:
                requests = link.requests() if link else 0
                ranks = [child(build, "first", paths[name], r) for r in range(2)]
                firsts = [result(p) for p in ranks]
                figures.setdefault("first_batch_s", []).append(max(f["first_seconds"] for f in firsts))
                if link:
                    figures.setdefault("first_batch_requests", []).append(link.requests() - requests)
            if "steady" in only and steady_batches and not link:
                steady = result(child(build, "steady", paths[name], 0, [steady_batches]))
                figures.setdefault("images_per_s", []).append(steady["images_per_s"])
    return got


def table(title, got, names):
    print(f"\n{title}\n")
    rows = [("open: seconds", "open_seconds", "{:.3f}"), ("open: storage reads (requests)", "open_reads", "{:.0f}"),
            ("open: MB read", "open_bytes", "{:.2f}"), ("RSS after open: MiB", "open_rss", "{:.1f}"),
            ("RSS before open: MiB", "open_rss_before", "{:.1f}"),
            ("first batch, 2 ranks x 2 workers: seconds", "first_batch_s", "{:.2f}"),
            ("first batch: requests, both ranks", "first_batch_requests", "{:.0f}"),
            ("steady images/s (1 rank, 2 workers)", "images_per_s", "{:,.0f}")]
    print("| figure | " + " | ".join(names) + " | ratio |")
    print("|---" * (len(names) + 2) + "|")
    for label, key, fmt in rows:
        if key not in got[names[0]] or not got[names[0]][key]:
            continue
        values = [statistics.median(got[n][key]) for n in names]
        if key.startswith("open_rss"):
            values = [v / 2**20 for v in values]
        if key == "open_bytes":
            values = [v / 1e6 for v in values]
        ratio = values[0] / values[1] if values[1] else float("nan")
        print(f"| {label} | " + " | ".join(fmt.format(v) for v in values) + f" | {ratio:.3g} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("base_build")
    ap.add_argument("work")
    ap.add_argument("--images", type=int, default=1_000_000)
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3, help="0: only make the data")
    ap.add_argument("--link", default=None, help="RTT_MS:MBIT")
    ap.add_argument("--steady-batches", type=int, default=200)
    ap.add_argument("--only", default="open,first,steady", help="which figures, comma-separated")
    args = ap.parse_args()
    builds = {"new": os.path.abspath(args.build), "base": os.path.abspath(args.base_build)}
    work = os.path.abspath(args.work)
    tars, www = os.path.join(work, "tars"), os.path.join(work, "www")
    per = -(-args.images // args.files)
    if not os.path.isdir(tars):
        start = time.monotonic()
        make_tars(tars, args.images, args.files)
        print(f"made {args.files} tar shards in {time.monotonic() - start:.0f} s", file=sys.stderr)
    shards = sorted(glob.glob(os.path.join(tars, "shard-*.tar")))
    for name, build in builds.items():
        out = os.path.join(www, name)
        if not os.path.isdir(out):
            start = time.monotonic()
            run([f"{build}/tools/pcr-convert", "webdataset", *shards, out + ".tmp", "--images-per-record", per])
            os.rename(out + ".tmp", out)
            print(f"{name}: converted in {time.monotonic() - start:.0f} s", file=sys.stderr)
    records = sorted(os.path.basename(p) for p in glob.glob(os.path.join(www, "new", "*.pcr")))
    same = all(open(os.path.join(www, "new", r), "rb").read() == open(os.path.join(www, "base", r), "rb").read()
               for r in records[:: max(1, len(records) // 20)])
    manifest = {n: os.path.getsize(os.path.join(www, n, "dataset.pcrd")) for n in builds}
    print(f"{len(records)} files of {per} images; record files the same in both: {same}; "
          f"manifests: {manifest['new']:,} and {manifest['base']:,} bytes")
    if args.rounds == 0:
        return
    names = list(builds)
    local = measure(builds, {n: os.path.join(www, n) for n in builds}, args.rounds, args.steady_batches,
                    args.only.split(","))
    table(f"Local files, median of {args.rounds}", local, names)
    results = {"local": local}
    if args.link:
        rtt, mbps = (float(x) for x in args.link.split(":"))
        nginx = os.path.join(work, "nginx")
        os.makedirs(nginx, exist_ok=True)
        link = Link(rtt, mbps, www, nginx)
        try:
            remote = measure(builds, {n: f"http://{ADDRESS}/{n}" for n in builds}, args.rounds, 0, args.only.split(","), link)
        finally:
            link.close()
        table(f"Over the link ({rtt:g} ms, {mbps:g} Mbit/s; measured RTT {link.measured_rtt_ms:.0f} ms), "
              f"median of {args.rounds}", remote, names)
        results["link"] = remote
    print("\n" + json.dumps(results))


if __name__ == "__main__":
    main()
