#!/usr/bin/env python3
"""pcr.dask.RemoteLoader against the local loader on a trainer pinned to one
core, in the same run: images (or rows) per second delivered to the
trainer, and the trainer's CPU seconds per batch.

usage: /usr/bin/python3 bench/remote_loader_bench.py BUILD_DIR WORK_DIR [--runs N] [--epochs E]
           [--long-epochs L] [--shares S,S,...] [--rows N] [--no-table] [--no-faults]

The trainer is a process of its own under `taskset -c 0`; the Dask cluster
(a LocalCluster of 1 or 2 worker processes, one thread each, and its
scheduler) runs under `taskset -c 1`, on the other core. Decoding uses one
thread everywhere.
- Images: the 154 neverball textures of the JPEG corpus copied into 16
  classes (2,464 images, 39 batches an epoch), converted by pcr-convert (64 images a record); ImageLoader
  batches of 64 at 224 x 224, uint8, training crops, full fidelity.
- Table: bench/make_table's recommendation table of N rows (default
  200,000) in stripes of 16,384; TableLoader batches of 4,096 rows of the
  label, 13 dense and 26 sparse features, shuffled.
A run is one warm-up epoch, then E timed epochs (default 4), or L (default
12) for the rows that show what auto's trials cost over a longer run; the
median of N runs (default 3), the modes taking turns. Image rows use
prefetch 8 and runs of 2 batches, at each local_share of --shares (default
0, 0.6 and auto); table rows also local shares of 0.3 and 1 and runs of 16
batches (prefetch 32).
The fault run kills one of 2 workers (by pid, SIGKILL) a third of the way
into an epoch and checks that every batch arrives once, equal to the local
loader's. Prints Markdown tables.
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

CLUSTER = r"""
import sys, distributed
cluster = distributed.LocalCluster(n_workers=int(sys.argv[1]), threads_per_worker=1, processes=True,
                                   host="127.0.0.1", dashboard_address=None, local_directory=sys.argv[2])
print(cluster.scheduler_address, flush=True)
sys.stdin.read()
cluster.close()
"""

TRAINER = r"""
import json, os, signal, sys, time, zlib
import pcr.dask, pcr.torch
kind, path, mode, scheduler, share, epochs, prefetch, run = sys.argv[1:9]
share, epochs = (share if share == "auto" else float(share)), int(epochs)
if kind == "images":
    loader = pcr.torch.ImageLoader(path, 64, size=224, threads=1, seed=1)
    def items(batch): return len(batch[1])
else:
    dense, sparse = json.loads(sys.argv[9]), json.loads(sys.argv[10])
    loader = pcr.torch.TableLoader(path, 4096, ["label"] + sparse, dense=dense, seed=1)
    def items(batch): return len(batch["rows"])
client = None
if scheduler:
    import distributed
    client = distributed.Client(scheduler)
    client.wait_for_workers(1, timeout=120)
    loader = pcr.dask.RemoteLoader(loader, client, prefetch=int(prefetch), local_share=share,
                                   batches_per_task=int(run))
def crc(batch):
    if kind == "images":
        return zlib.crc32(batch[0].numpy().tobytes())
    return zlib.crc32(batch["dense"].numpy().tobytes() + batch["rows"].numpy().tobytes())
if mode == "fault":
    loader.set_epoch(1)
    sums, killed = [], False
    pids = client.run(os.getpid)
    began = time.perf_counter()
    for batch in loader:
        sums.append(crc(batch))
        if not killed and len(sums) >= len(loader) // 3:
            os.kill(pids[sorted(pids)[0]], signal.SIGKILL)
            killed = True
    seconds = time.perf_counter() - began
    print(json.dumps({"sums": sums, "seconds": seconds}))
    sys.exit()
if mode == "sums":
    loader.set_epoch(1)
    print(json.dumps({"sums": [crc(b) for b in loader]}))
    sys.exit()
n = batches = 0
for epoch in range(epochs + 1):
    if epoch == 1:
        began, cpu = time.perf_counter(), time.process_time()
    loader.set_epoch(epoch)
    for batch in loader:
        if epoch:
            n += items(batch)
            batches += 1
out = {"items": n, "batches": batches, "seconds": time.perf_counter() - began, "cpu": time.process_time() - cpu}
if scheduler:
    out["stats"] = loader.stats
print(json.dumps(out))
"""


def run_(cmd, **kw):
    return subprocess.run([str(c) for c in cmd], check=True, capture_output=True, text=True, **kw).stdout


class Cluster:
    """A LocalCluster of `workers` processes on core 1, in a process of its own."""

    def __init__(self, workers, work, env):
        os.makedirs(os.path.join(work, "dask"), exist_ok=True)
        self.proc = subprocess.Popen(["taskset", "-c", "1", PY, "-c", CLUSTER, str(workers),
                                      os.path.join(work, "dask")], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, env=env)
        self.address = self.proc.stdout.readline().strip()
        if not self.address:
            raise RuntimeError("the LocalCluster did not start")

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=120)


def prepare(build, work, rows, table):
    src, images = os.path.join(work, "src"), os.path.join(work, "images")
    if not os.path.isdir(images):
        textures = os.path.join(HERE, "..", "..", "shared", "corpus", "jpeg", "neverball-textures")
        for c in "abcdefghijklmnop":
            os.makedirs(os.path.join(src, c), exist_ok=True)
            for f in sorted(os.listdir(textures)):
                if f.endswith(".jpg"):
                    shutil.copyfile(os.path.join(textures, f), os.path.join(src, c, f))
        run_([os.path.join(build, "tools", "pcr-convert"), "images", src, images, "--images-per-record", 64])
    path = os.path.join(work, "table", "table.pcr")
    if table and not os.path.exists(path):
        run_([os.path.join(build, "bench", "make_table"), work, "--rows", rows, "--history", 0, "--jobs", 0])
        run_([os.path.join(build, "tools", "pcr-convert"), "table", os.path.join(work, "table.jsonl"),
             os.path.join(work, "table"), "--rows-per-stripe", 16384])
    return images, path


def trainer(env, kind, path, mode, address="", share=0.0, epochs=4, prefetch=8, run=2):
    args = ["taskset", "-c", "0", PY, "-c", TRAINER, kind, path, mode, address, share, epochs, prefetch, run]
    if kind == "table":
        args += [json.dumps(DENSE), json.dumps(SPARSE)]
    return json.loads(run_(args, env=env, timeout=1800))


def measure(env, work, kind, path, modes, runs):
    """modes: (workers, local_share, prefetch, batches_per_task, epochs); workers 0: the local loader."""
    clusters = {w: Cluster(w, work, env) for w in sorted({m[0] for m in modes if m[0]})}
    try:
        got = {m: [] for m in modes}
        for _ in range(runs):
            for m in modes:
                address = clusters[m[0]].address if m[0] else ""
                got[m].append(trainer(env, kind, path, "time", address, m[1], m[4], m[2], m[3]))
    finally:
        for c in clusters.values():
            c.close()
    rows = []
    for m in modes:
        rate = statistics.median(r["items"] / r["seconds"] for r in got[m])
        cpu = statistics.median(r["cpu"] / r["batches"] for r in got[m])
        rows.append((m, rate, cpu))
    base = {m[4]: (rate, cpu) for m, rate, cpu in rows if not m[0]}  # the local loader's, by epochs
    unit = "images/s" if kind == "images" else "rows/s"
    print(f"| loader | epochs | workers (core 1) | local_share | prefetch / batches a task | {unit} | vs local | "
          "trainer CPU s/batch | vs local |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (workers, share, prefetch, per_task, epochs), rate, cpu in rows:
        base_rate, base_cpu = base[epochs]
        if workers:
            print(f"| RemoteLoader | {epochs} | {workers} | {share} | {prefetch} / {per_task} | {rate:,.0f} | "
                  f"{rate / base_rate:.2f} | {cpu:.4f} | {cpu / base_cpu:.2f} |")
        else:
            print(f"| local, pinned to core 0 | {epochs} | - | - | - | {rate:,.0f} | 1.00 | {cpu:.4f} | 1.00 |")
    print()


def faults(env, work, kind, path):
    want = trainer(env, kind, path, "sums")["sums"]
    cluster = Cluster(2, work, env)
    try:
        clean = trainer(env, kind, path, "sums", cluster.address)["sums"]
        got = trainer(env, kind, path, "fault", cluster.address)
    finally:
        cluster.close()
    print(f"- {kind}: {len(want)} batches locally; remote, 2 workers: {'equal' if clean == want else 'DIFFERENT'}; "
          f"with a worker killed a third of the way: {len(got['sums'])} delivered, "
          f"{'each equal to the local batch' if got['sums'] == want else 'NOT EQUAL'}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("work")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--long-epochs", type=int, default=12)
    ap.add_argument("--shares", default="0,0.6,auto")
    ap.add_argument("--rows", type=int, default=200000)
    ap.add_argument("--no-table", action="store_true")
    ap.add_argument("--no-faults", action="store_true")
    a = ap.parse_args()
    build, work = os.path.abspath(a.build), os.path.abspath(a.work)
    os.makedirs(work, exist_ok=True)
    images, table = prepare(build, work, a.rows, not a.no_table)
    env = dict(os.environ, PYTHONPATH=os.path.join(build, "python"))
    shares = [s if s == "auto" else float(s) for s in a.shares.split(",")]
    e, long = a.epochs, a.long_epochs
    kinds = [("images", images, [(0, 0.0, 8, 2, e)] + [(w, s, 8, 2, e) for w in (1, 2) for s in shares] +
              [(0, 0.0, 8, 2, long), (1, 0.6, 8, 2, long), (1, "auto", 8, 2, long)])]
    if not a.no_table:
        kinds.append(("table", table, [(0, 0.0, 8, 2, e), (1, 0.0, 8, 2, e), (2, 0.0, 8, 2, e), (1, 0.0, 32, 16, e),
                                       (1, 0.3, 8, 2, e), (1, 1.0, 8, 2, e), (1, "auto", 8, 2, e),
                                       (2, "auto", 8, 2, e), (0, 0.0, 8, 2, long), (1, "auto", 8, 2, long)]))
    for kind, path, modes in kinds:
        print(f"### {kind}: median of {a.runs} runs\n")
        measure(env, work, kind, path, modes, a.runs)
    if not a.no_faults:
        for kind, path, _ in kinds:
            faults(env, work, kind, path)


if __name__ == "__main__":
    sys.exit(main())
