#!/usr/bin/env python3
"""Read benchmarks of issue 3: one run of each configuration, figures as ratios.

usage: bench/read_bench.py BUILD_DIR PHOTOS_DIR PCR_DIR [--caps 100,400] [--skip-fio]

PHOTOS_DIR holds the original JPEGs (ImageFolder) and PCR_DIR the dataset
pcr-convert made of them. Page caches are dropped before every run when
/proc/sys/vm/drop_caches is writable (root), so buffered runs read the device.
Prints markdown tables.
"""
import argparse
import json
import pathlib
import subprocess
import sys


def drop_caches():
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def run_json(cmd):
    drop_caches()
    out = subprocess.run([str(c) for c in cmd], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def fio_seq(files, direct):
    drop_caches()
    cmd = ["fio", "--name=seq", "--rw=read", "--bs=1M", "--ioengine=io_uring", "--iodepth=8",
           f"--direct={1 if direct else 0}", "--filename=" + ":".join(str(f) for f in files),
           "--output-format=json"]
    out = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    job = out["jobs"][0]["read"]
    return job["io_bytes"] / (job["runtime"] / 1000.0) / 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build_dir")
    ap.add_argument("photos_dir")
    ap.add_argument("pcr_dir")
    ap.add_argument("--caps", default="100,400")
    ap.add_argument("--skip-fio", action="store_true")
    args = ap.parse_args()
    bench = pathlib.Path(args.build_dir) / "tools/pcr-bench"
    dump = json.loads(subprocess.run([pathlib.Path(args.build_dir) / "tools/pcr-dump", args.pcr_dir, "--json"],
                                     check=True, capture_output=True, text=True).stdout)
    L, n = dump["scan_groups"], dump["images"]
    pcr_files = sorted(pathlib.Path(args.pcr_dir).glob("*.pcr"))
    photos = sorted(p for p in pathlib.Path(args.photos_dir).rglob("*.jpg"))
    photo_bytes = sum(p.stat().st_size for p in photos)
    print(f"Dataset: {n} images in {dump['records']} records, {dump['file_bytes'] / 2**30:.2f} GiB "
          f"(originals {photo_bytes / 2**30:.2f} GiB); caches dropped: {drop_caches()}\n")

    read = lambda *extra: run_json([bench, "read", args.pcr_dir, *extra])

    print("### 1. Record reads at each fidelity (io_uring, O_DIRECT)\n")
    print("| k | size vs full | bytes read / requested | reads per record | MB/s | images/s |")
    print("|---|---|---|---|---|---|")
    per_k = {}
    for k in range(1, L + 1):
        r = read("--fidelity", str(k), "--engine", "uring", "--direct")
        per_k[k] = r
        print(f"| {k} | {dump['groups'][k - 1]['cumulative_fraction']:.3f} | {r['read_amplification']:.4f} | "
              f"{r['reads_per_record']:.2f} | {r['mb_per_s']:.0f} | {r['images_per_s']:.0f} |")

    print("\n### 2. Engines, full fidelity, against whole-file reads and fio\n")
    rows = []
    fio_direct = None if args.skip_fio else fio_seq(pcr_files, True)
    for direct in (True, False):
        flag = ["--direct"] if direct else []
        for engine in ("uring", "pread"):
            r = read("--fidelity", "full", "--engine", engine, *flag)
            rows.append((engine, direct, r["mb_per_s"], r["images_per_s"]))
        w = run_json([bench, "read-files", args.pcr_dir, *(["--direct"] if direct else [])])
        rows.append(("read() whole files", direct, w["mb_per_s"], n / w["seconds"]))
        if not args.skip_fio:
            rows.append(("fio 1 MiB QD8", direct, fio_direct if direct else fio_seq(pcr_files, False), None))
    print("| reader | O_DIRECT | MB/s | images/s | vs fio |")
    print("|---|---|---|---|---|")
    for name, direct, mbps, ips in rows:
        fio_ref = [m for nm, d, m, _ in rows if nm.startswith("fio") and d == direct]
        ratio = f"{mbps / fio_ref[0]:.2f}" if fio_ref else ""
        print(f"| {name} | {'yes' if direct else 'no'} | {mbps:.0f} | {'' if ips is None else f'{ips:.0f}'} | {ratio} |")
    whole = [r for r in rows if r[0] == "read() whole files" and r[1]][0]
    print("\nImages/s at fidelity k against reading the .pcr files whole (O_DIRECT), and the ratio "
          "of sizes Theorem 4.4.1 predicts:\n")
    print("| k | images/s | speedup | predicted (size ratio) | achieved / predicted |")
    print("|---|---|---|---|---|")
    for k, r in per_k.items():
        speedup = r["images_per_s"] / whole[3]
        predicted = dump["file_bytes"] / r["bytes_requested"]
        print(f"| {k} | {r['images_per_s']:.0f} | {speedup:.2f} | {predicted:.2f} | {speedup / predicted:.2f} |")

    print("\n### 3. Random single-image reads (O_DIRECT)\n")
    print("| k | engine | queue depth | reads per image | images/s |")
    print("|---|---|---|---|---|")
    for k in sorted({1, min(3, L), L}):
        for engine in ("pread", "uring"):
            for qd in (1, 8, 64):
                if engine == "pread" and qd != 1:
                    continue
                r = read("--fidelity", str(k), "--engine", engine, "--direct", "--mode", "random",
                         "--count", "4000", "--queue-depth", str(qd))
                print(f"| {k} | {engine} | {qd} | {r['reads_per_image']:.2f} | {r['images_per_s']:.0f} |")

    for cap in [int(c) for c in args.caps.split(",") if c]:
        print(f"\n### 4. Bandwidth cap {cap} MB/s: images/s against the original JPEGs read whole\n")
        base = run_json([bench, "read-files", args.photos_dir, "--max-mbps", str(cap)])
        base_ips = base["files"] / base["seconds"]
        print(f"Originals read whole: {base_ips:.0f} images/s ({base['mb_per_s']:.0f} MB/s).\n")
        print("| k | images/s | speedup | predicted (mean size ratio) | achieved / predicted |")
        print("|---|---|---|---|---|")
        for k in range(1, L + 1):
            r = read("--fidelity", str(k), "--engine", "uring", "--max-mbps", str(cap))
            speedup = r["images_per_s"] / base_ips
            predicted = photo_bytes / r["bytes_requested"]
            print(f"| {k} | {r['images_per_s']:.0f} | {speedup:.2f} | {predicted:.2f} | {speedup / predicted:.2f} |")


if __name__ == "__main__":
    sys.exit(main())
