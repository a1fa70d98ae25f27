#!/usr/bin/env python3
"""Reading over emulated network links: pcr at each fidelity against whole
JPEGs and whole tar shards over HTTP, and table projections against Parquet.

usage: bench/remote_bench.py BUILD_DIR PHOTOS_DIR WORK_DIR [--links 5:100,50:100]
                             [--count N] [--rows N] [--jobs N] [--skip-table]

Needs root, /dev/net/tun, nginx, curl and, for the Parquet baseline, npm.
Prepares WORK_DIR/www once: the first N photos of PHOTOS_DIR (jpeg/), the pcr
dataset pcr-convert makes of them with its defaults (pcr/), WebDataset tar
shards of 1,000 images (tar/), and a table like bench/table_bench.py's with
ROWS rows in popularity order (table/table.pcr) and as Parquet through DuckDB
(table/flat.parquet). For each link RTT_MS:MBIT, bench/link_emulator.py puts
nginx in a network namespace behind a link of that round trip and bandwidth,
and this measures, each as one fresh process:

- pcr-bench read at every fidelity (records, read ahead, no decoding):
  images/s, bytes and HTTP requests per record;
- every JPEG whole, 16 GETs in flight (curl --parallel), and every tar shard
  whole, 4 in flight (WebDataset's pipe:curl with 4 loader workers);
- fidelity 1 at several PCR_REMOTE_MAX_BYTES_IN_FLIGHT values, and single
  images in random order (pcr-bench read --mode random) at several
  PCR_REMOTE_CONCURRENCY values;
- each job's table projection (pcr-bench table) at several
  PCR_REMOTE_HOLE_LIMIT values, and the Parquet file downloaded whole then
  read by DuckDB (DuckDB's httpfs extension cannot be installed without the
  internet); DuckDB's own reads of the selected column chunks, counted with
  strace on the local file, give the requests httpfs would make.

"link-bound" is the images/s the link allows: its bandwidth over the bytes
per image. Prints Markdown tables and the raw results as JSON.
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ADDRESS = "10.203.0.2"
NAMESPACE = "pcrbench"


def run(cmd, env=None, **kw):
    e = dict(os.environ, **(env or {}))
    return subprocess.run([str(c) for c in cmd], check=True, capture_output=True, text=True, env=e, **kw).stdout


def prepare(build, photos_dir, www, count, rows, jobs):
    jpeg, pcr, tar, table = (os.path.join(www, d) for d in ("jpeg", "pcr", "tar", "table"))
    if not os.path.isdir(jpeg):
        photos = sorted(glob.glob(os.path.join(photos_dir, "**", "*.jpg"), recursive=True))[:count]
        os.makedirs(os.path.join(jpeg + ".tmp", "c0"))
        for i, p in enumerate(photos):
            shutil.copyfile(p, os.path.join(jpeg + ".tmp", "c0", f"{i:06d}.jpg"))
        os.rename(jpeg + ".tmp", jpeg)
    names = ["c0/" + n for n in sorted(os.listdir(os.path.join(jpeg, "c0")))]
    if not os.path.isdir(pcr):
        run([f"{build}/tools/pcr-convert", "images", jpeg, pcr])
    if not os.path.isdir(tar):
        os.makedirs(tar + ".tmp")
        for s in range(0, len(names), 1000):
            with tarfile.open(os.path.join(tar + ".tmp", f"shard-{s // 1000:06d}.tar"), "w",
                              format=tarfile.USTAR_FORMAT) as t:
                for n in names[s:s + 1000]:
                    t.add(os.path.join(jpeg, n), arcname=os.path.basename(n))
        os.rename(tar + ".tmp", tar)
    if rows and not os.path.exists(os.path.join(table, "flat.parquet")):
        os.makedirs(table, exist_ok=True)
        run([f"{build}/bench/make_table", table, "--rows", str(rows), "--history", "0", "--jobs", "0"])
        sim = os.path.join(table, "sim")
        run([f"{build}/bench/make_table", sim, "--no-table", "--concentration", "0.5", "--jobs", str(jobs)])
        run([f"{build}/tools/pcr-convert", "table", os.path.join(table, "table.jsonl"),
             os.path.join(table, "unordered"), "--float32"])
        with open(os.path.join(table, "popularity.jsonl"), "w") as f:
            f.write(run([f"{build}/tools/pcr-dump", "popularity", os.path.join(sim, "access.log")]))
        run([f"{build}/tools/pcr-convert", "reorder", os.path.join(table, "unordered", "table.pcr"),
             os.path.join(table, "ordered"), "--popularity", os.path.join(table, "popularity.jsonl")])
        os.rename(os.path.join(table, "ordered", "table.pcr"), os.path.join(table, "table.pcr"))
        if not os.path.isdir(os.path.join(table, "node_modules", "@duckdb", "node-api")):
            run(["npm", "install", "--prefix", table, "@duckdb/node-api"])
        shutil.copy(os.path.join(HERE, "duckdb_table.mjs"), table)
        run(["node", "duckdb_table.mjs", "write", "table.jsonl", "flat.parquet", "map.parquet"], cwd=table)
        for junk in ("table.jsonl", "map.parquet", "unordered", "ordered"):
            p = os.path.join(table, junk)
            shutil.rmtree(p) if os.path.isdir(p) else os.remove(p)
    return names


class Link:
    """The emulated link with nginx serving `www` behind it."""

    def __init__(self, rtt_ms, mbps, www, work):
        self.rtt_ms, self.mbps = rtt_ms, mbps
        self.emulator = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "link_emulator.py"), NAMESPACE, "--rtt-ms", str(rtt_ms),
             "--mbps", str(mbps)], stdout=subprocess.PIPE, text=True)
        if self.emulator.stdout.readline().strip() != "ready":
            raise SystemExit("the link emulator did not start (root and /dev/net/tun are needed)")
        self.nginx = None
        try:
            self.start_nginx(www, work)
        except BaseException:
            self.close()
            raise

    def start_nginx(self, www, work):
        conf = os.path.join(work, "nginx.conf")
        with open(conf, "w") as f:
            f.write(f"""daemon off;
worker_processes 1;
pid {work}/nginx.pid;
error_log {work}/nginx.err;
events {{ worker_connections 1024; }}
http {{
  access_log {work}/access.log;
  keepalive_requests 100000;
  sendfile on;
  server {{ listen {ADDRESS}:80; root {www}; }}
}}
""")
        self.nginx = subprocess.Popen(["ip", "netns", "exec", NAMESPACE, shutil.which("nginx") or "/usr/sbin/nginx",
                                       "-c", conf, "-p", work])
        self.log = os.path.join(work, "access.log")
        for _ in range(100):
            if subprocess.run(["curl", "-s", "-o", "/dev/null", f"http://{ADDRESS}/"]).returncode == 0:
                break
            time.sleep(0.1)
        else:
            raise SystemExit("nginx did not come up behind the link")
        out = run(["curl", "-s", "-o", "/dev/null", "-w", "%{time_connect}", f"http://{ADDRESS}/"])
        self.measured_rtt_ms = float(out) * 1000

    def requests(self):
        with open(self.log) as f:
            return sum(1 for _ in f)

    def close(self):
        if self.nginx:
            self.nginx.terminate()
            self.nginx.wait()
        self.emulator.terminate()
        self.emulator.wait()


def timed(cmd, env=None, cwd=None):
    start = time.monotonic()
    out = run(cmd, env=env, cwd=cwd)
    return time.monotonic() - start, out


def curl_all(urls, parallel, work):
    cfg = os.path.join(work, "urls.cfg")
    with open(cfg, "w") as f:
        for u in urls:
            f.write(f'url = "{u}"\noutput = "/dev/null"\n')
    seconds, _ = timed(["curl", "-s", "-f", "-Z", "--parallel-max", str(parallel), "-K", cfg])
    return seconds


def image_rows(build, link, names, www, work, fidelities, scan_groups):
    n = len(names)
    jpeg_bytes = sum(os.path.getsize(os.path.join(www, "jpeg", x)) for x in names)
    tar_files = sorted(os.listdir(os.path.join(www, "tar")))
    tar_bytes = sum(os.path.getsize(os.path.join(www, "tar", x)) for x in tar_files)
    link_bytes_per_s = link.mbps * 1e6 / 8
    rows = []

    def add(name, images, seconds, bytes_, requests, per_record=None):
        bound = link_bytes_per_s / (bytes_ / images)
        rows.append({"read": name, "images": images, "seconds": seconds, "images_per_s": images / seconds,
                     "bytes_per_image": bytes_ / images, "link_bound": bound,
                     "vs_link_bound": images / seconds / bound, "requests": requests,
                     "requests_per_record": per_record})

    for k in fidelities:
        r = json.loads(run([f"{build}/tools/pcr-bench", "read", f"http://{ADDRESS}/pcr", "--fidelity", str(k)]))
        label = f"pcr, fidelity {k}" + (" (full)" if k == scan_groups else "")
        add(label, r["images"], r["seconds"], r["bytes_read"], r["http_requests"],
            r["http_requests"] / r["records"])
    before = link.requests()
    seconds = curl_all([f"http://{ADDRESS}/jpeg/{x}" for x in names], 16, work)
    add("whole JPEGs, 16 in flight", n, seconds, jpeg_bytes, link.requests() - before)
    before = link.requests()
    seconds = curl_all([f"http://{ADDRESS}/tar/{x}" for x in tar_files], 4, work)
    add("whole tar shards, 4 in flight", n, seconds, tar_bytes, link.requests() - before)
    return rows


def in_flight_rows(build):
    rows = []
    for mib in (4, 16, 64):
        r = json.loads(run([f"{build}/tools/pcr-bench", "read", f"http://{ADDRESS}/pcr", "--fidelity", "1"],
                           env={"PCR_REMOTE_MAX_BYTES_IN_FLIGHT": str(mib << 20)}))
        rows.append({"max_bytes_in_flight_mib": mib, "images_per_s": r["images_per_s"], "mb_per_s": r["mb_per_s"]})
    return rows


def concurrency_rows(build, count):
    rows = []
    for c in (16, 64, 256):
        r = json.loads(run([f"{build}/tools/pcr-bench", "read", f"http://{ADDRESS}/pcr", "--fidelity", "full",
                            "--mode", "random", "--count", str(count), "--queue-depth", "256"],
                           env={"PCR_REMOTE_CONCURRENCY": str(c)}))
        rows.append({"concurrency": c, "images_per_s": r["images_per_s"], "mb_per_s": r["mb_per_s"],
                     "requests": r["http_requests"]})
    return rows


def table_rows(build, link, www, work, holes):
    table = os.path.join(www, "table")
    jobs = sorted(glob.glob(os.path.join(table, "sim", "job-*.txt")))
    rows = []
    for hole in holes:
        results = [json.loads(run([f"{build}/tools/pcr-bench", "table", f"http://{ADDRESS}/table/table.pcr",
                                   "--features-file", j], env={"PCR_REMOTE_HOLE_LIMIT": str(hole)}))
                   for j in jobs]
        rows.append({"read": f"pcr projection, hole limit {hole >> 10} KiB",
                     "requests": mean(r["http_requests"] + r["open_http_requests"] for r in results),
                     "bytes": mean(r["bytes_read"] for r in results),
                     "selected": mean(r["bytes_selected"] for r in results),
                     "seconds": mean(r["seconds"] for r in results),
                     "rows_per_s": mean(r["rows"] / r["seconds"] for r in results)})
    parquet = os.path.join(table, "flat.parquet")
    size = os.path.getsize(parquet)
    results = []
    for j in jobs:
        download = curl_all([f"http://{ADDRESS}/table/flat.parquet"], 1, work)
        r = json.loads(run(["node", "duckdb_table.mjs", "read", "flat.parquet", j], cwd=table))
        results.append((download, r))
    rows.append({"read": "Parquet downloaded whole, then DuckDB", "requests": 1, "bytes": size,
                 "selected": mean(r["bytes_selected"] for _, r in results),
                 "seconds": mean(d + r["seconds"] for d, r in results),
                 "rows_per_s": mean(r["rows"] / (d + r["seconds"]) for d, r in results)})
    return rows


def parquet_range_reads(www, work):
    """DuckDB's reads of each job's columns from the local Parquet file (strace)."""
    table = os.path.join(www, "table")
    jobs = sorted(glob.glob(os.path.join(table, "sim", "job-*.txt")))
    counts, sizes = [], []
    for j in jobs:
        trace = os.path.join(work, "strace")
        shutil.rmtree(trace, ignore_errors=True)
        os.makedirs(trace)
        run(["strace", "-ff", "-y", "-e", "trace=pread64", "-o", f"{trace}/t", "node", "duckdb_table.mjs", "read",
             "flat.parquet", j], cwd=table)
        n = b = 0
        for t in glob.glob(f"{trace}/t.*"):
            for line in open(t):
                if "flat.parquet>" in line and "=" in line:
                    n += 1
                    b += max(0, int(line.rsplit("=", 1)[1].split()[0]))
        counts.append(n)
        sizes.append(b)
    return mean(counts), mean(sizes)


def mean(xs):
    xs = list(xs)
    return sum(xs) / len(xs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("photos")
    ap.add_argument("work")
    ap.add_argument("--links", default="5:100,50:100")
    ap.add_argument("--count", type=int, default=16384)
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--jobs", type=int, default=3)
    ap.add_argument("--random-count", type=int, default=3000)
    ap.add_argument("--skip-table", action="store_true")
    a = ap.parse_args()
    build, work = os.path.abspath(a.build), os.path.abspath(a.work)
    www = os.path.join(work, "www")
    os.makedirs(www, exist_ok=True)
    names = prepare(build, a.photos, www, a.count, 0 if a.skip_table else a.rows, a.jobs)
    subprocess.run(["chmod", "-R", "a+rX", work], check=True)
    dump = json.loads(run([f"{build}/tools/pcr-dump", os.path.join(www, "pcr"), "--json"]))
    scan_groups = dump["scan_groups"]
    results = {"images": len(names), "records": dump["records"], "scan_groups": scan_groups, "links": []}
    parquet_reads = None
    if not a.skip_table:
        parquet_reads = parquet_range_reads(www, work)
        results["parquet_local_reads"] = parquet_reads
    for spec in a.links.split(","):
        rtt, mbps = (float(x) for x in spec.split(":"))
        link = Link(rtt, mbps, www, work)
        try:
            entry = {"rtt_ms": rtt, "mbps": mbps, "measured_connect_ms": link.measured_rtt_ms,
                     "images": image_rows(build, link, names, www, work, range(1, scan_groups + 1), scan_groups),
                     "in_flight": in_flight_rows(build),
                     "concurrency": concurrency_rows(build, a.random_count)}
            if not a.skip_table:
                entry["table"] = table_rows(build, link, www, work, (64 << 10, 256 << 10, 1 << 20, 4 << 20))
        finally:
            link.close()
        results["links"].append(entry)
        print_link(entry, parquet_reads)
    print(json.dumps(results))


def print_link(e, parquet_reads):
    print(f"\n### {e['rtt_ms']:g} ms round trip, {e['mbps']:g} Mbit/s "
          f"(TCP connect measured: {e['measured_connect_ms']:.1f} ms)\n")
    print("| read | images/s | KB per image | vs link-bound | HTTP requests | per record |")
    print("|---|---|---|---|---|---|")
    for r in e["images"]:
        per = f"{r['requests_per_record']:.2f}" if r["requests_per_record"] is not None else "-"
        print(f"| {r['read']} | {r['images_per_s']:,.0f} | {r['bytes_per_image'] / 1e3:.1f} | "
              f"{r['vs_link_bound']:.2f} | {r['requests']:,} | {per} |")
    print("\n| fidelity 1, max_bytes_in_flight | images/s | MB/s |")
    print("|---|---|---|")
    for r in e["in_flight"]:
        print(f"| {r['max_bytes_in_flight_mib']} MiB | {r['images_per_s']:,.0f} | {r['mb_per_s']:.1f} |")
    print("\n| random single images, concurrency | images/s | MB/s |")
    print("|---|---|---|")
    for r in e["concurrency"]:
        print(f"| {r['concurrency']} | {r['images_per_s']:,.0f} | {r['mb_per_s']:.1f} |")
    if "table" in e:
        print("\n| table projection | HTTP requests | MB moved | MB selected | seconds | rows/s |")
        print("|---|---|---|---|---|---|")
        for r in e["table"]:
            print(f"| {r['read']} | {r['requests']:.1f} | {r['bytes'] / 1e6:.1f} | {r['selected'] / 1e6:.1f} | "
                  f"{r['seconds']:.2f} | {r['rows_per_s']:,.0f} |")
        if parquet_reads:
            print(f"| Parquet column chunks (DuckDB's local reads; httpfs not run) | {parquet_reads[0]:.1f} | "
                  f"{parquet_reads[1] / 1e6:.1f} | | | |")


if __name__ == "__main__":
    main()
