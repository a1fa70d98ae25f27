#!/usr/bin/env python3
"""Whole tables into pandas: Table.to_pandas and pcr.dask.read_table on a
distributed.LocalCluster of 1 and 2 worker processes, against Table.read
(numpy columns, the baseline) and DuckDB materialising the same table from
Parquet.

usage: /usr/bin/python3 bench/pandas_bench.py BUILD_DIR WORK_DIR [--rows N] [--corpus DIR] [--no-duckdb]

Tables: every CSV of DIR/tabular (default ../shared/corpus) and a synthetic
CSV of N rows (default 3,000,000; WORK_DIR/synthetic.csv, made once) with
int64, float64 and bool columns with and without missing cells and two string
columns. Each is converted with pcr-convert table into stripes of an eighth
of its rows (at most 262,144), and by DuckDB (npm @duckdb/node-api, installed
into WORK_DIR) to Parquet with zstd.

Each measurement runs in a fresh process, page cache warm: rows/s (median of
3) and the peak resident set's growth over the read (the peak, reset before
the read, less the resident set then; for Dask the client's plus every
worker's). read_table is measured into one DataFrame on the client
(compute()) and with the partitions left on the workers (the sum of their
lengths). DuckDB materialises into its own columns (CREATE TEMP
TABLE) with 1 and 2 threads; Debian has no DuckDB for Python, so its
conversion into pandas is not included. Prints a Markdown table.
"""
import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys

PY = "/usr/bin/python3"
HERE = os.path.dirname(os.path.abspath(__file__))

# Runs one measurement in this fresh process; prints {"seconds", "rows", "rss_kib"}.
MEASURE = r"""
import json, sys, time
mode, path = sys.argv[1], sys.argv[2]
import pandas, pcr
table = pcr.Table(path)
names = [f["name"] for f in table.schema]
def status(field):  # KiB
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))
def now():  # the resident set, and its peak reset to it
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return status("VmRSS")
def peak():
    return status("VmHWM")
if mode.startswith("dask"):
    import distributed, pcr.dask
    cluster = distributed.LocalCluster(n_workers=int(mode[4]), threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address=None, local_directory=sys.argv[3])
    client = distributed.Client(cluster)
    client.run(lambda: __import__("pcr").Table(path).schema)
    before = now() + sum(client.run(now).values())
    start = time.perf_counter()
    if mode.endswith("len"):
        rows = int(pcr.dask.read_table(path).map_partitions(len).compute().sum())
    else:
        rows = len(pcr.dask.read_table(path).compute())
    seconds = time.perf_counter() - start
    rss = peak() + sum(client.run(peak).values()) - before
    client.close()
    cluster.close()
else:
    before = now()
    start = time.perf_counter()
    if mode == "read":
        cols = table.read(names)
        rows = len(cols[names[0]]["presence"])
    else:
        rows = len(table.to_pandas())
    seconds = time.perf_counter() - start
    rss = peak() - before
print(json.dumps({"seconds": seconds, "rows": rows, "rss_kib": rss}))
"""


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def synthetic(path, rows):
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(7)
    words = np.array([f"w{i:04d}" for i in range(5000)])
    df = pd.DataFrame({
        "id": np.arange(rows, dtype=np.int64),
        "user": rng.integers(0, 1 << 40, rows),
        "clicks": pd.array(rng.integers(0, 100, rows)).astype("Int64"),
        "score": rng.normal(size=rows),
        "weight": rng.random(rows),
        "flag": rng.random(rows) < 0.3,
        "country": rng.choice(words[:200], rows),
        "query": pd.Series(rng.choice(words, rows)).str.cat(rng.choice(words, rows), sep=" "),
    })
    df.loc[rng.random(rows) < 0.2, "clicks"] = pd.NA
    df.loc[rng.random(rows) < 0.1, "weight"] = np.nan
    df.to_csv(path, index=False, na_rep="")


def measure(mode, path, work):
    results = [json.loads(run([PY, "-c", MEASURE, mode, path, os.path.join(work, "dask-workers")]))
               for _ in range(3)]
    seconds = statistics.median(r["seconds"] for r in results)
    return {"rows_per_s": results[0]["rows"] / seconds, "rss_mib": max(r["rss_kib"] for r in results) / 1024}


def duckdb(work, parquet, names, threads):
    job = os.path.join(work, "job.txt")
    with open(job, "w") as f:
        f.write("".join(n + "\n" for n in names))
    results = [json.loads(run(["node", "duckdb_table.mjs", "read", parquet, job, "flat", str(threads)], cwd=work))
               for _ in range(3)]
    seconds = statistics.median(r["seconds"] for r in results)
    rss = max(r["peak_rss_kib"] - r["rss_before_kib"] for r in results)
    return {"rows_per_s": results[0]["rows"] / seconds, "rss_mib": rss / 1024}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("work")
    ap.add_argument("--rows", type=int, default=3_000_000)
    ap.add_argument("--corpus", default=os.path.join(HERE, "..", "..", "shared", "corpus"))
    ap.add_argument("--no-duckdb", action="store_true")
    a = ap.parse_args()
    work = os.path.abspath(a.work)
    os.makedirs(work, exist_ok=True)
    csvs = sorted(glob.glob(os.path.join(a.corpus, "tabular", "*.csv")))
    synth = os.path.join(work, "synthetic.csv")
    if not os.path.exists(synth):
        synthetic(synth, a.rows)
    csvs.append(synth)
    if not a.no_duckdb:
        if not os.path.isdir(os.path.join(work, "node_modules", "@duckdb", "node-api")):
            run(["npm", "install", "--prefix", work, "@duckdb/node-api"])
        shutil.copy(os.path.join(HERE, "duckdb_table.mjs"), work)

    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.abspath(a.build), "python"))
    os.environ.update(env)
    header = ["table", "rows x features", "Table.read rows/s", "to_pandas", "read_table, 1 worker",
              "read_table, 2 workers", "partitions alone, 1 worker", "partitions alone, 2 workers"]
    header += [] if a.no_duckdb else ["DuckDB, 1 thread", "DuckDB, 2 threads"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    memory = []
    for csv in csvs:
        stem = os.path.splitext(os.path.basename(csv))[0]
        rows = sum(1 for _ in open(csv, "rb")) - 1
        out = os.path.join(work, stem)
        shutil.rmtree(out, ignore_errors=True)
        run([os.path.join(a.build, "tools", "pcr-convert"), "table", csv, out,
             "--rows-per-stripe", str(max(1, min(262144, rows // 8)))])
        path = os.path.join(out, stem + ".pcr")
        names = [f["name"] for f in json.loads(run([PY, "-c", "import json, sys, pcr; "
                                                    "print(json.dumps(pcr.Table(sys.argv[1]).schema))", path]))]
        base = measure("read", path, work)
        got = {m: measure(m, path, work) for m in ("pandas", "dask1", "dask2", "dask1len", "dask2len")}
        if not a.no_duckdb:
            parquet = os.path.join(work, stem + ".parquet")
            if not os.path.exists(parquet):
                run(["node", "duckdb_table.mjs", "write-csv", csv, parquet], cwd=work)
            got["duck1"] = duckdb(work, parquet, names, 1)
            got["duck2"] = duckdb(work, parquet, names, 2)
        cells = [stem, f"{rows:,} x {len(names)}", f"{base['rows_per_s'] / 1e6:.2f} M"]
        cells += [f"{got[m]['rows_per_s'] / base['rows_per_s']:.2f}" for m in got]
        print("| " + " | ".join(cells) + " |", flush=True)
        memory.append([stem, base] + list(got.values()))
    print()
    print("Peak resident set growth, MiB:")
    print()
    print("| " + " | ".join(["table", "Table.read"] + header[3:]) + " |")
    print("|" + "---|" * (len(header) - 1))
    for stem, *results in memory:
        print("| " + " | ".join([stem] + [f"{r['rss_mib']:.0f}" for r in results]) + " |")


if __name__ == "__main__":
    sys.exit(main())
