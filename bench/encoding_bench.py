#!/usr/bin/env python3
"""Table bytes against Parquet: every CSV of a folder (default
../shared/corpus/tabular) and a synthetic recommendation table as pcr tables
(stream encodings chosen per stream, and plain as before 0.5) and as Parquet
written by DuckDB with zstd, whole and in 10% projections.

usage: bench/encoding_bench.py BUILD_DIR WORK_DIR [--tables DIR] [--rec-rows N] [--draws N] [--seed S]

For each table: file bytes of pcr (pcr-convert table, defaults), pcr with
--encoding plain (the files before 0.5) and Parquet (DuckDB, npm
@duckdb/node-api installed into WORK_DIR, COMPRESSION zstd); conversion rows/s
of both pcr writers (median of 3 runs); for N seeded draws of 10% of the
columns (at least one): the bytes of pcr's selected streams (pcr-bench table)
against Parquet's selected column chunks (parquet_metadata), and rows/s
decoding the projection on one thread, page cache warm (pcr-bench table
for both pcr files, median of 15 interleaved runs; DuckDB materialising
it, median of 3). The recommendation table is build/bench/make_table's (N
rows, 1000 dense and 100 sparse features), converted with --float32 as
DuckDB stores its dense values as FLOAT. Prints a Markdown table and the
results as JSON.
"""
import argparse
import csv
import glob
import json
import os
import random
import shutil
import statistics
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd, **kw):
    return subprocess.run([str(c) for c in cmd], check=True, capture_output=True, text=True, **kw).stdout


def timed(cmd):
    start = time.perf_counter()
    run(cmd)
    return time.perf_counter() - start


def convert(build, src, out, extra):
    """Converts src into out (three times, for the median time); returns the file and seconds."""
    times = []
    for _ in range(3):
        shutil.rmtree(out, ignore_errors=True)
        times.append(timed([f"{build}/tools/pcr-convert", "table", src, out] + extra))
    return glob.glob(os.path.join(out, "*.pcr"))[0], statistics.median(times)


def pcr_projections(build, paths, job, runs=15):
    """Bytes selected and median rows/s of each file's projection, runs
    interleaved so that drift in the machine's speed hits every file alike.
    A first, untimed run of each warms the page cache and gives the bytes."""
    out = [json.loads(run([f"{build}/tools/pcr-bench", "table", p, "--features-file", job])) for p in paths]
    rates = [[] for _ in paths]
    for _ in range(runs):
        for i, p in enumerate(paths):
            rates[i].append(json.loads(run([f"{build}/tools/pcr-bench", "table", p, "--features-file", job]))["rows_per_s"])
    return [(o["bytes_selected"], statistics.median(r)) for o, r in zip(out, rates)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("work")
    ap.add_argument("--tables", default=os.path.join(HERE, "..", "..", "shared", "corpus", "tabular"))
    ap.add_argument("--rec-rows", type=int, default=20000)
    ap.add_argument("--draws", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    build, work = os.path.abspath(a.build), os.path.abspath(a.work)
    os.makedirs(work, exist_ok=True)
    if not os.path.isdir(os.path.join(work, "node_modules", "@duckdb", "node-api")):
        run(["npm", "install", "--prefix", work, "@duckdb/node-api"])
    shutil.copy(os.path.join(HERE, "duckdb_table.mjs"), work)
    inputs = [(os.path.splitext(os.path.basename(p))[0], p) for p in sorted(glob.glob(os.path.join(a.tables, "*.csv")))]
    if a.rec_rows > 0:
        rec = os.path.join(work, "rec")
        if not os.path.exists(os.path.join(rec, "table.jsonl")):
            run([f"{build}/bench/make_table", rec, "--rows", a.rec_rows, "--history", "0", "--jobs", "0"])
        inputs.append(("recommendation", os.path.join(rec, "table.jsonl")))
    rows = []
    for name, path in inputs:
        out = os.path.join(work, name)
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        jsonl = path.endswith(".jsonl")
        extra = ["--float32"] if jsonl else []
        pcr_file, pcr_s = convert(build, path, os.path.join(out, "pcr"), extra)
        plain_file, plain_s = convert(build, path, os.path.join(out, "plain"), extra + ["--encoding", "plain"])
        parquet = os.path.join(out, name + ".parquet")
        if jsonl:
            run(["node", "duckdb_table.mjs", "write", path, parquet, os.path.join(out, "map.parquet")], cwd=work)
        else:
            run(["node", "duckdb_table.mjs", "write-csv", path, parquet], cwd=work)
        summary = json.loads(run([f"{build}/tools/pcr-dump", pcr_file, "--json"]))
        columns = [f["name"] for f in summary["features"]]
        table_rows = summary["rows"]
        rng = random.Random(f"{a.seed}:{name}")
        draws = []
        for d in range(a.draws):
            pick = rng.sample(columns, max(1, round(len(columns) / 10)))
            job = os.path.join(out, f"job-{d}.txt")
            with open(job, "w") as f:
                f.write("".join(c + "\n" for c in pick))
            (selected, rate), (plain_selected, plain_rate) = pcr_projections(build, [pcr_file, plain_file], job)
            q = [json.loads(run(["node", "duckdb_table.mjs", "read", parquet, job], cwd=work)) for _ in range(3)]
            draws.append({"pcr_selected": selected, "plain_selected": plain_selected,
                          "parquet_selected": q[0]["bytes_selected"], "pcr_rows_per_s": rate,
                          "plain_rows_per_s": plain_rate,
                          "duckdb_rows_per_s": statistics.median(x["rows_per_s"] for x in q)})
        mean = lambda k: statistics.mean(x[k] for x in draws)
        rows.append({"table": name, "columns": len(columns), "rows": table_rows,
                     "pcr_bytes": os.path.getsize(pcr_file), "plain_bytes": os.path.getsize(plain_file),
                     "parquet_bytes": os.path.getsize(parquet),
                     "convert_rows_per_s": table_rows / pcr_s, "plain_convert_rows_per_s": table_rows / plain_s,
                     **{k: mean(k) for k in draws[0]}})
    print("| table | rows x columns | pcr bytes | Parquet bytes | pcr / Parquet | pcr / pcr plain | "
          "10% projection bytes: pcr / Parquet | projection rows/s: pcr / DuckDB | pcr / pcr plain | "
          "conversion rows/s (pcr / pcr plain) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['table']} | {r['rows']:,} x {r['columns']} | {r['pcr_bytes']:,} | {r['parquet_bytes']:,} | "
              f"{r['pcr_bytes'] / r['parquet_bytes']:.2f} | {r['pcr_bytes'] / r['plain_bytes']:.2f} | "
              f"{r['pcr_selected'] / r['parquet_selected']:.2f} | "
              f"{r['pcr_rows_per_s'] / r['duckdb_rows_per_s']:.2f} | {r['pcr_rows_per_s'] / r['plain_rows_per_s']:.2f} | "
              f"{r['convert_rows_per_s']:,.0f} ({r['convert_rows_per_s'] / r['plain_convert_rows_per_s']:.2f}) |")
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
