#!/usr/bin/env python3
"""Training batches from a table: pcr.torch.TableLoader against Table.read
with the batches sliced out in Python (what a user writes without the
loader), and DuckDB materialising the same columns from Parquet.

usage: /usr/bin/python3 bench/table_loader_bench.py BUILD_DIR WORK_DIR [--rows N] [--runs N] [--no-duckdb]

The table: bench/make_table's recommendation table of N rows (default
200,000; 100 dense and 100 sparse map features, coverage 0.3 to 0.45, id
lists of 1 to 49 ids), converted by pcr-convert table in stripes of 16,384
rows and by DuckDB (npm @duckdb/node-api, installed into WORK_DIR) to
Parquet (zstd, one column per feature). The projection: the label, 13 dense
and 26 sparse features (DLRM's Criteo shape). Batches of 4,096 rows, one
epoch in one process, page cache warm, median of N runs (default 3), each
in a fresh process:
- TableLoader, shuffled (default shuffle_stripes) and in order: batches as tensors
  (dense stacked into one float32 matrix, id lists as EmbeddingBag input
  and offsets);
- Table.read stripe by stripe, each batch sliced from the stripe's numpy
  columns into the same tensors (in order, no shuffle);
- DuckDB materialising the same columns into its own vectors (CREATE TEMP
  TABLE) on 1 thread; Debian has no DuckDB for Python, so its conversion to
  torch tensors is not in its figure.
Prints a Markdown table of rows/s and ratios against Table.read + slicing.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys

PY = "/usr/bin/python3"
HERE = os.path.dirname(os.path.abspath(__file__))
DENSE = [str(d) for d in range(1, 14)]
SPARSE = [str(100001 + s) for s in range(26)]

MEASURE = r"""
import json, sys, time
import numpy as np, torch
import pcr, pcr.torch
mode, path = sys.argv[1], sys.argv[2]
dense, sparse = json.loads(sys.argv[3]), json.loads(sys.argv[4])
B = 4096
rows = 0
start = time.perf_counter()
if mode.startswith("loader"):
    loader = pcr.torch.TableLoader(path, B, ["label"] + sparse, dense=dense, shuffle=mode == "loader")
    for batch in loader:
        x = batch["dense"]
        ids = [(batch[s]["input"], batch[s]["offsets"]) for s in sparse]
        rows += len(batch["rows"])
else:
    table = pcr.Table(path)
    for s in range(table.num_stripes):
        cols = table.read(["label"] + dense + sparse, s, 1)
        n = len(cols["label"]["values"])
        for lo in range(0, n, B):
            hi = min(n, lo + B)
            x = torch.from_numpy(np.stack([np.where(cols[d]["presence"][lo:hi], cols[d]["values"][lo:hi], 0)
                                           .astype(np.float32) for d in dense], axis=1))
            ids = []
            for f in sparse:
                off = cols[f]["offsets"].view("int64")
                ids.append((torch.from_numpy(cols[f]["values"][off[lo]:off[hi]]), torch.from_numpy(off[lo:hi] - off[lo])))
            y = torch.from_numpy(cols["label"]["values"][lo:hi])
            rows += hi - lo
print(json.dumps({"rows": rows, "seconds": time.perf_counter() - start}))
"""


def run(cmd, **kw):
    return subprocess.run([str(c) for c in cmd], check=True, capture_output=True, text=True, **kw).stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("work")
    ap.add_argument("--rows", type=int, default=200000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-duckdb", action="store_true")
    a = ap.parse_args()
    build, work = os.path.abspath(a.build), os.path.abspath(a.work)
    os.makedirs(work, exist_ok=True)
    jsonl = os.path.join(work, "table.jsonl")
    if not os.path.exists(jsonl):
        run([os.path.join(build, "bench", "make_table"), work, "--rows", a.rows, "--history", 0, "--jobs", 0])
    table = os.path.join(work, "pcr", "table.pcr")
    if not os.path.exists(table):
        run([os.path.join(build, "tools", "pcr-convert"), "table", jsonl, os.path.join(work, "pcr"),
             "--rows-per-stripe", 16384])
    env = dict(os.environ, PYTHONPATH=os.path.join(build, "python"))
    got = {}
    for mode in ("loader", "loader-ordered", "read"):
        results = [json.loads(run([PY, "-c", MEASURE, mode, table, json.dumps(DENSE), json.dumps(SPARSE)], env=env))
                   for _ in range(a.runs)]
        got[mode] = statistics.median(r["rows"] / r["seconds"] for r in results)
    if not a.no_duckdb:
        if not os.path.isdir(os.path.join(work, "node_modules", "@duckdb", "node-api")):
            run(["npm", "install", "--prefix", work, "@duckdb/node-api"])
        shutil.copy(os.path.join(HERE, "duckdb_table.mjs"), work)
        flat, mapped = os.path.join(work, "flat.parquet"), os.path.join(work, "map.parquet")
        if not os.path.exists(flat):
            run(["node", "duckdb_table.mjs", "write", jsonl, flat, mapped], cwd=work)
        job = os.path.join(work, "loader-job.txt")
        with open(job, "w") as f:
            f.write("\n".join(["label"] + DENSE + SPARSE) + "\n")
        results = [json.loads(run(["node", "duckdb_table.mjs", "read", flat, job, "flat", "1"], cwd=work))
                   for _ in range(a.runs)]
        got["duckdb"] = statistics.median(r["rows"] / r["seconds"] for r in results)
    base = got["read"]
    print(f"{a.rows} rows; label, {len(DENSE)} dense and {len(SPARSE)} sparse features; median of {a.runs}\n")
    print("| batches of 4,096 rows | rows/s | vs Table.read + slicing |")
    print("|---|---|---|")
    for label, key in [("TableLoader, shuffled", "loader"), ("TableLoader, in order", "loader-ordered"),
                       ("Table.read + slicing, in order", "read"), ("DuckDB from Parquet, 1 thread (no tensors)", "duckdb")]:
        if key in got:
            print(f"| {label} | {got[key]:,.0f} | {got[key] / base:.2f} |")


if __name__ == "__main__":
    sys.exit(main())
