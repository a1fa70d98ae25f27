#!/usr/bin/env python3
"""Two columns of flights-3m on one thread: Table.read and Table.to_pandas
against DuckDB's sum scan and materialisation of the same columns of the
same table as Parquet, in the same run.

usage: /usr/bin/python3 bench/projection_bench.py BUILD_DIR WORK_DIR [--csv FLIGHTS_3M_CSV] [--runs N]

The table is that of bench/table_shuffle_bench.py (flights-3m sorted by date,
or its stand-in), converted with pcr-convert table's defaults and by DuckDB
(npm @duckdb/node-api, installed into WORK_DIR) to Parquet (zstd). Page cache
warm; each figure is the median of N runs (default 7) in one process, the
first read of each process not counted:
- Table.read(["delay", "distance"]): numpy columns;
- Table.to_pandas(["delay", "distance"]): a DataFrame;
- DuckDB, threads = 1: SELECT sum(delay), sum(distance), and CREATE TEMP
  TABLE ... AS SELECT delay, distance (its own columns).
Prints a Markdown table of seconds and DuckDB's time over pcr's (at least
1.0: pcr is as fast or faster).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from table_shuffle_bench import flights_table  # noqa: E402

PY = "/usr/bin/python3"
HERE = os.path.dirname(os.path.abspath(__file__))
COLUMNS = ["delay", "distance"]

MEASURE = r"""
import json, statistics, sys, time
import pcr
path, runs, columns = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(",")
t = pcr.Table(path)
out = {}
for name, step in (("read", lambda: t.read(columns)), ("to_pandas", lambda: t.to_pandas(columns))):
    step()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    out[name] = statistics.median(times)
print(json.dumps(out))
"""


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build")
    ap.add_argument("work")
    ap.add_argument("--csv", default=None)
    ap.add_argument("--runs", type=int, default=7)
    a = ap.parse_args()
    work = os.path.abspath(a.work)
    table, what = flights_table(a.build, work, a.csv)
    csv_path = os.path.join(work, "flights.csv")
    modules = os.path.join(work, "node_modules", "@duckdb")
    if not os.path.isdir(os.path.join(modules, "node-api")):
        installed = os.path.join(run(["npm", "root", "-g"]).strip(), "@duckdb")
        if os.path.isdir(os.path.join(installed, "node-api")):  # npm install -g, as .ci/run does
            os.makedirs(os.path.dirname(modules), exist_ok=True)
            os.symlink(installed, modules)
        else:
            run(["npm", "install", "--prefix", work, "@duckdb/node-api"])
    shutil.copy(os.path.join(HERE, "duckdb_table.mjs"), work)
    parquet = os.path.join(work, "flights.parquet")
    if not os.path.exists(parquet):
        run(["node", "duckdb_table.mjs", "write-csv", csv_path, parquet], cwd=work)
    env = dict(os.environ, PYTHONPATH=os.path.join(a.build, "python"))
    ours = json.loads(run([PY, "-c", MEASURE, table, str(a.runs), ",".join(COLUMNS)], env=env))
    duck = json.loads(run(["node", "duckdb_table.mjs", "scan", parquet, ",".join(COLUMNS), str(a.runs)], cwd=work))
    print(f"Table: {what}; {duck['rows']:,} rows; columns {', '.join(COLUMNS)}.\n")
    print("| pcr | seconds | DuckDB (Parquet, 1 thread) | seconds | DuckDB's time / pcr's |")
    print("|---|---|---|---|---|")
    for ours_name, duck_name, o, d in (("Table.read", "sum scan", ours["read"], duck["sum_seconds"]),
                                       ("Table.read", "materialise", ours["read"], duck["materialise_seconds"]),
                                       ("to_pandas", "materialise", ours["to_pandas"], duck["materialise_seconds"])):
        print(f"| {ours_name} | {o:.4f} | {duck_name} | {d:.4f} | {d / o:.2f} |")


if __name__ == "__main__":
    sys.exit(main())
