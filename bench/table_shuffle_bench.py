#!/usr/bin/env python3
"""Batches of a table sorted by date: how far apart their rows are.

usage: /usr/bin/python3 bench/table_shuffle_bench.py BUILD_DIR WORK_DIR [--csv FLIGHTS_3M_CSV] [--epochs N]

The table is flights-3m (vega-datasets: date, delay, distance, origin,
destination) sorted by date, from --csv or $PCR_CORPUS_DIR/tabular/flights-3m.csv.
Without it, a stand-in of the same size: flights-200k (../shared/corpus)
fifteen times over, 3,000,000 rows, with a date column spread over the
first half of 2001 (as flights-3m's) and sorted by it. It is converted with
pcr-convert table's defaults and read with the README's loader: TableLoader
(batch_size=1024) through pcr.torch.DataLoader(num_workers=2), one rank.

For each shuffle_stripes, the mean over batches of the standard deviation of
a batch's dates, against batches of 1024 rows drawn uniformly at random
(ratio 1.0 is as mixed as uniform sampling), and rows/s in the same run.
"""
import argparse
import csv
import json
import os
import subprocess
import sys

import numpy as np

PY = "/usr/bin/python3"
HERE = os.path.dirname(os.path.abspath(__file__))


def standin(path, corpus):
    src = os.path.join(corpus, "tabular", "flights-200k.csv")
    with open(src) as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    n = 15 * len(body)
    start, end = np.datetime64("2001-01-01T00:00"), np.datetime64("2001-07-01T00:00")
    minutes = np.sort(np.random.default_rng(0).integers(0, int((end - start).astype(int)), n))
    dates = (start + minutes.astype("timedelta64[m]")).astype(str)
    with open(path, "w") as f:
        f.write(",".join(["date"] + header) + "\n")
        for i in range(n):
            f.write(dates[i] + "," + ",".join(body[i % len(body)]) + "\n")
    return f"a stand-in: flights-200k x 15 ({n:,} rows) with a sorted date"


def sorted_copy(src, path):
    with open(src) as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    j = header.index("date")
    body.sort(key=lambda r: r[j])
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(body)
    return f"flights-3m ({len(body):,} rows) sorted by date"


def flights_csv(work, given=None):
    """WORK/flights.csv, flights-3m sorted by date (from `given` or the
    corpus) or the stand-in, and what it is."""
    corpus = os.environ.get("PCR_CORPUS_DIR", os.path.join(HERE, "..", "..", "shared", "corpus"))
    given = given or os.path.join(corpus, "tabular", "flights-3m.csv")
    path, said = os.path.join(work, "flights.csv"), os.path.join(work, "flights.what")
    if not os.path.exists(said):
        what = sorted_copy(given, path) if os.path.exists(given) else standin(path, corpus)
        with open(said, "w") as f:
            f.write(what)
    with open(said) as f:
        return path, f.read().strip()


def flights_table(build, work, given=None):
    """flights_csv converted with pcr-convert table's defaults (once), and what it is."""
    os.makedirs(work, exist_ok=True)
    csv_path, what = flights_csv(work, given)
    table = os.path.join(work, "table", "flights.pcr")
    if not os.path.exists(table):
        subprocess.run([os.path.join(build, "tools", "pcr-convert"), "table", csv_path, os.path.dirname(table)],
                       check=True, stdout=subprocess.DEVNULL)
    return table, what


MEASURE = r"""
import json, sys, time
import numpy as np
import pcr, pcr.torch
path, stripes, epochs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
days = pcr.Table(path).read(["date"])["date"]["values"].astype("datetime64[m]").astype(np.int64) / 1440.0
rng = np.random.default_rng(0)
uniform = np.mean([rng.choice(days, 1024, replace=False).std() for _ in range(2000)])
spreads, rows, seconds = [], 0, 0.0
for epoch in range(epochs):
    loader = pcr.torch.TableLoader(path, batch_size=1024, features=["date", "delay", "distance"],
                                   shuffle=stripes > 0, shuffle_stripes=max(stripes, 1), seed=epoch)
    start = time.perf_counter()
    for b in pcr.torch.DataLoader(loader, num_workers=2):
        spreads.append(days[b["rows"].numpy()].std())
        rows += len(b["rows"])
    seconds += time.perf_counter() - start
print(json.dumps({"spread": float(np.mean(spreads) / uniform), "rows_per_s": rows / seconds,
                  "stripes": pcr.Table(path).num_stripes}))
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build")
    ap.add_argument("work")
    ap.add_argument("--csv", default=None)
    ap.add_argument("--epochs", type=int, default=2)
    a = ap.parse_args()
    table, what = flights_table(a.build, a.work, a.csv)
    env = dict(os.environ, PYTHONPATH=os.path.join(a.build, "python"))
    print(f"Table: {what}; pcr-convert table defaults.\n")
    print("| loader | stripes | date spread per batch vs uniform | rows/s | rows/s vs in order |")
    print("|---|---|---|---|---|")
    results = {}
    for stripes in (0, 1, 2, 4, 8, 16):
        got = subprocess.run([PY, "-c", MEASURE, table, str(stripes), str(a.epochs)], env=env, check=True,
                             capture_output=True, text=True).stdout
        results[stripes] = json.loads(got)
    base = results[0]["rows_per_s"]
    for stripes, r in results.items():
        name = "in order (shuffle=False)" if stripes == 0 else f"shuffle_stripes={stripes}" + \
            (" (default)" if stripes == 8 else "")
        print(f"| {name} | {r['stripes']} | {r['spread']:.2f} | {r['rows_per_s']:,.0f} | "
              f"{r['rows_per_s'] / base:.2f} |")


if __name__ == "__main__":
    sys.exit(main())
