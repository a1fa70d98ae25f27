#!/usr/bin/env python3
"""Projected reads of a synthetic feature table: pcr with and without
popularity ordering, against Parquet through DuckDB.

usage: python3 bench/table_bench.py BUILD_DIR WORK_DIR [--rows N] [--concentration C] [--no-duckdb]

Generates WORK_DIR/table.jsonl with build/bench/make_table (skipped when it
exists) and converts it with pcr-convert (--float32, stripes of 1 GiB raw) in
the writer's default order. Simulates 100 past jobs and 5 new ones with feature popularity of
concentration C (see make_table.cc) in WORK_DIR/c<C>/, derives a popularity
file from the past jobs' access log with pcr-dump popularity, and rewrites the
table in that order with pcr-convert reorder. Then, for each new job (about
10% of the features):

- over-read (bytes_read / bytes_selected) and reads, from pcr-bench table with
  O_DIRECT at hole limits 0, 64 KiB and 1.25 MiB;
- rows/s on one thread, page cache warm, default hole limit (median of 3);
- DuckDB (npm @duckdb/node-api, installed into WORK_DIR) writes the same rows
  to Parquet with one column per feature and with the two maps as MAP columns,
  and reads each job's projection on one thread; strace -e pread64 counts its
  reads and bytes.

Prints a Markdown table of means over the jobs.
"""
import argparse
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

HOLES = [0, 64 << 10, 1280 << 10]


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def pcr_bench(build, path, job, hole, direct):
    cmd = [f"{build}/tools/pcr-bench", "table", path, "--features-file", job, "--hole-limit", str(hole)]
    if direct:
        cmd.append("--direct")
    return json.loads(run(cmd))


def warm(path):
    with open(path, "rb") as f:
        while f.read(16 << 20):
            pass


def duckdb_read(work, parquet, job, layout):
    """Reads the projection under strace; returns (result, reads, bytes)."""
    trace = os.path.join(work, "strace")
    shutil.rmtree(trace, ignore_errors=True)
    os.makedirs(trace)
    out = run(["strace", "-ff", "-y", "-e", "trace=pread64", "-o", f"{trace}/t",
               "node", "duckdb_table.mjs", "read", parquet, job, layout], cwd=work)
    reads = nbytes = 0
    pattern = re.compile(r"pread64\(\d+<([^>]*)>.*\)\s*=\s*(\d+)")
    for name in glob.glob(f"{trace}/t.*"):
        with open(name) as f:
            for line in f:
                m = pattern.search(line)
                if m and m.group(1).endswith(os.path.basename(parquet)):
                    reads += 1
                    nbytes += int(m.group(2))
    return json.loads(out.strip().splitlines()[-1]), reads, nbytes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("work")
    ap.add_argument("--rows", type=int, default=150000)
    ap.add_argument("--concentration", default="0.5")
    ap.add_argument("--no-duckdb", action="store_true")
    a = ap.parse_args()
    build, work = os.path.abspath(a.build), os.path.abspath(a.work)
    os.makedirs(work, exist_ok=True)
    table = os.path.join(work, "table.jsonl")
    if not os.path.exists(table):
        run([f"{build}/bench/make_table", work, "--rows", str(a.rows), "--history", "0", "--jobs", "0"])
    sim = os.path.join(work, f"c{a.concentration}")
    run([f"{build}/bench/make_table", sim, "--no-table", "--concentration", a.concentration])
    jobs = sorted(glob.glob(os.path.join(sim, "job-*.txt")))
    unordered = os.path.join(work, "unordered", "table.pcr")
    ordered = os.path.join(sim, "ordered", "table.pcr")
    popularity = os.path.join(sim, "popularity.jsonl")
    if not os.path.exists(unordered):
        print(run([f"{build}/tools/pcr-convert", "table", table, os.path.dirname(unordered), "--float32",
                   "--stripe-mb", "1024", "--rows-per-stripe", "0"]),
              end="", file=sys.stderr)
    with open(popularity, "w") as f:
        f.write(run([f"{build}/tools/pcr-dump", "popularity", os.path.join(sim, "access.log")]))
    if not os.path.exists(ordered):
        print(run([f"{build}/tools/pcr-convert", "reorder", unordered, os.path.dirname(ordered),
                   "--popularity", popularity]), end="", file=sys.stderr)

    rows = []
    for name, path in [("pcr, schema order", unordered), ("pcr, popularity order", ordered)]:
        per_hole = {h: [pcr_bench(build, path, j, h, True) for j in jobs] for h in HOLES}
        warm(path)
        rates = []
        for j in jobs:
            rates.append(statistics.median(pcr_bench(build, path, j, 64 << 10, False)["rows_per_s"]
                                           for _ in range(3)))
        r0 = per_hole[HOLES[0]]
        row = {"layout": name, "features": statistics.mean(x["features"] for x in r0),
               "stripes": r0[0]["stripes"], "rows_per_s": statistics.mean(rates),
               "bytes_selected": statistics.mean(x["bytes_selected"] for x in r0)}
        for h in HOLES:
            row[f"over_read@{h}"] = statistics.mean(x["data_over_read"] for x in per_hole[h])
            row[f"reads@{h}"] = statistics.mean(x["reads"] for x in per_hole[h])
        rows.append(row)

    if not a.no_duckdb:
        if not os.path.isdir(os.path.join(work, "node_modules", "@duckdb", "node-api")):
            run(["npm", "install", "--prefix", work, "@duckdb/node-api"])
        shutil.copy(os.path.join(os.path.dirname(os.path.abspath(__file__)), "duckdb_table.mjs"), work)
        flat, maps = os.path.join(work, "flat.parquet"), os.path.join(work, "map.parquet")
        if not os.path.exists(flat) or not os.path.exists(maps):
            run(["node", "duckdb_table.mjs", "write", table, flat, maps], cwd=work)
        flat_selected = None
        for name, path, layout in [("Parquet (DuckDB), column per feature", flat, "flat"),
                                   ("Parquet (DuckDB), MAP columns", maps, "map")]:
            warm(path)
            results = [duckdb_read(work, path, j, layout) for j in jobs]
            # A MAP layout's selected bytes are the job's columns in the flat layout.
            if flat_selected is None:
                flat_selected = [r[0]["bytes_selected"] for r in results]
            for r, selected in zip(results, flat_selected):
                r[0]["bytes_selected"] = selected
            rates = [statistics.median(duckdb_read(work, path, j, layout)[0]["rows_per_s"] for _ in range(3))
                     for j in jobs]
            row = {"layout": name, "features": rows[0]["features"], "stripes": "-",
                   "rows_per_s": statistics.mean(rates),
                   "bytes_selected": statistics.mean(r[0]["bytes_selected"] for r in results)}
            for h in HOLES:
                row[f"over_read@{h}"] = statistics.mean(r[2] / r[0]["bytes_selected"] for r in results)
                row[f"reads@{h}"] = statistics.mean(r[1] for r in results)
            rows.append(row)

    print(f"concentration {a.concentration}: {len(jobs)} jobs, {a.rows} rows; means over jobs. over-read = bytes read / bytes of the selected "
          "streams (column chunks); reads include the footer and index. Parquet rows have no hole limit.\n")
    print("| layout | features | stripes | over-read @0 | reads @0 | over-read @64K | reads @64K "
          "| over-read @1.25M | reads @1.25M | rows/s (1 thread) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        cells = [r["layout"], f"{r['features']:.0f}", str(r["stripes"])]
        for h in HOLES:
            cells += [f"{r[f'over_read@{h}']:.3f}", f"{r[f'reads@{h}']:.1f}"]
        cells.append(f"{r['rows_per_s']:,.0f}")
        print("| " + " | ".join(cells) + " |")
    print()
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
