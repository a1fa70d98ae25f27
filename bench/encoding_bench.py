#!/usr/bin/env python3
"""Table bytes against Parquet: every CSV of a folder (default
../shared/corpus/tabular) as a pcr table and as Parquet written by DuckDB
with zstd, and 10% projections of each.

usage: bench/encoding_bench.py BUILD_DIR WORK_DIR [--tables DIR] [--draws N] [--seed S]

For each table: file bytes of pcr (pcr-convert table, defaults) and Parquet
(DuckDB, npm @duckdb/node-api installed into WORK_DIR, COMPRESSION zstd);
for N seeded draws of 10% of the columns (at least one): the bytes of pcr's
selected streams (pcr-bench table) against Parquet's selected column chunks
(parquet_metadata), and rows/s decoding the projection on one thread, page
cache warm, median of 3 (pcr-bench table; DuckDB materialising it). Prints a
Markdown table and the results as JSON.
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

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd, **kw):
    return subprocess.run([str(c) for c in cmd], check=True, capture_output=True, text=True, **kw).stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("work")
    ap.add_argument("--tables", default=os.path.join(HERE, "..", "..", "shared", "corpus", "tabular"))
    ap.add_argument("--draws", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    build, work = os.path.abspath(a.build), os.path.abspath(a.work)
    os.makedirs(work, exist_ok=True)
    if not os.path.isdir(os.path.join(work, "node_modules", "@duckdb", "node-api")):
        run(["npm", "install", "--prefix", work, "@duckdb/node-api"])
    shutil.copy(os.path.join(HERE, "duckdb_table.mjs"), work)
    rows = []
    for path in sorted(glob.glob(os.path.join(a.tables, "*.csv"))):
        name = os.path.splitext(os.path.basename(path))[0]
        out = os.path.join(work, name)
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        run([f"{build}/tools/pcr-convert", "table", path, out])
        pcr_file = glob.glob(os.path.join(out, "*.pcr"))[0]
        parquet = os.path.join(out, name + ".parquet")
        run(["node", "duckdb_table.mjs", "write-csv", path, parquet], cwd=work)
        with open(path, newline="") as f:
            columns = next(csv.reader(f))
        rng = random.Random(f"{a.seed}:{name}")
        draws = []
        for d in range(a.draws):
            pick = rng.sample(columns, max(1, round(len(columns) / 10)))
            job = os.path.join(out, f"job-{d}.txt")
            with open(job, "w") as f:
                f.write("".join(c + "\n" for c in pick))
            p = json.loads(run([f"{build}/tools/pcr-bench", "table", pcr_file, "--features-file", job]))
            p_rate = statistics.median(
                json.loads(run([f"{build}/tools/pcr-bench", "table", pcr_file, "--features-file", job]))["rows_per_s"]
                for _ in range(3))
            q = [json.loads(run(["node", "duckdb_table.mjs", "read", parquet, job], cwd=work)) for _ in range(3)]
            draws.append({"pcr_selected": p["bytes_selected"], "parquet_selected": q[0]["bytes_selected"],
                          "pcr_rows_per_s": p_rate, "duckdb_rows_per_s": statistics.median(x["rows_per_s"] for x in q)})
        rows.append({"table": name, "columns": len(columns), "rows": p["rows"],
                     "pcr_bytes": os.path.getsize(pcr_file), "parquet_bytes": os.path.getsize(parquet),
                     "pcr_selected": statistics.mean(x["pcr_selected"] for x in draws),
                     "parquet_selected": statistics.mean(x["parquet_selected"] for x in draws),
                     "pcr_rows_per_s": statistics.mean(x["pcr_rows_per_s"] for x in draws),
                     "duckdb_rows_per_s": statistics.mean(x["duckdb_rows_per_s"] for x in draws)})
    print("| table | rows x columns | pcr bytes | Parquet bytes | pcr / Parquet | 10% projection: pcr / Parquet bytes "
          "| rows/s, pcr / DuckDB |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['table']} | {r['rows']:,} x {r['columns']} | {r['pcr_bytes']:,} | {r['parquet_bytes']:,} | "
              f"{r['pcr_bytes'] / r['parquet_bytes']:.2f} | {r['pcr_selected'] / r['parquet_selected']:.2f} | "
              f"{r['pcr_rows_per_s'] / r['duckdb_rows_per_s']:.2f} |")
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
