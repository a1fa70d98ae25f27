#!/usr/bin/python3
"""End-to-end input pipeline: torchvision's ImageFolder with PIL against
pcr.torch.ImageLoader at every fidelity, in one run, same output (batches of
uint8 224 x 224 tensors after RandomResizedCrop and a random flip).

usage: /usr/bin/python3 bench/torch_bench.py PHOTOS_DIR PCR_DIR [--images N] [--batch B]
                                            [--workers W] [--threads T]

PHOTOS_DIR is the ImageFolder of original JPEGs and PCR_DIR the dataset
pcr-convert made of it (build/python must be on PYTHONPATH). Each
configuration runs in a process of its own, which reports images/s, the
bytes it read (/proc/self/io, children included) and its peak RSS. The page
cache is as the previous runs left it (warm after a first pass). Prints a
markdown table with ratios to torchvision in the same run.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time


def read_bytes():
    with open("/proc/self/io") as f:
        return int(dict(line.split(": ") for line in f.read().splitlines())["rchar"])


def run_one(kind, args):
    import torch

    torch.set_num_threads(1)
    start_bytes = read_bytes()
    if kind == "torchvision":
        import torchvision.transforms as T
        from torchvision.datasets import ImageFolder

        ds = ImageFolder(args.photos, transform=T.Compose(
            [T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.PILToTensor()]))
        loader = torch.utils.data.DataLoader(ds, batch_size=args.batch, shuffle=True, num_workers=args.workers,
                                             persistent_workers=False)
    else:
        import pcr.torch

        # pread, so that /proc/self/io counts pcr's reads as it counts PIL's.
        loader = pcr.torch.ImageLoader(args.pcr, batch_size=args.batch, fidelity=int(kind), threads=args.threads,
                                       seed=1, engine="pread")
    images, start = 0, time.perf_counter()
    for batch, labels in loader:
        assert batch.dtype == torch.uint8 and batch.shape[1:] == (3, 224, 224)
        images += len(labels)
        if images >= args.images:
            break
    seconds = time.perf_counter() - start
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    rss = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, children)
    return {"images": images, "seconds": seconds, "images_per_s": images / seconds,
            "bytes_read": read_bytes() - start_bytes, "peak_rss_mib": rss / 1024}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("photos")
    ap.add_argument("pcr")
    ap.add_argument("--images", type=int, default=4096)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--workers", type=int, default=os.cpu_count())
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one, args)))
        return
    import pcr

    groups = pcr.ImageDataset(args.pcr).num_scan_groups
    rows = []
    for kind in ["torchvision"] + [str(k) for k in range(1, groups + 1)]:
        out = subprocess.run([sys.executable, __file__, args.photos, args.pcr, "--images", str(args.images),
                              "--batch", str(args.batch), "--workers", str(args.workers), "--threads",
                              str(args.threads), "--one", kind], check=True, capture_output=True, text=True)
        rows.append((kind, json.loads(out.stdout.strip().splitlines()[-1])))
    base = rows[0][1]["images_per_s"]
    print(f"{args.images} images per run, batches of {args.batch}, {args.workers} DataLoader workers, "
          f"{args.threads} pcr threads\n")
    print("| loader | images/s | vs torchvision | MB read | peak RSS MiB |")
    print("|---|---|---|---|---|")
    for kind, r in rows:
        name = "torchvision ImageFolder + PIL" if kind == "torchvision" else f"pcr, fidelity {kind}"
        print(f"| {name} | {r['images_per_s']:.0f} | {r['images_per_s'] / base:.2f} | "
              f"{r['bytes_read'] / 1e6:.0f} | {r['peak_rss_mib']:.0f} |")


if __name__ == "__main__":
    main()
