#!/usr/bin/python3
"""pcr.torch.ImageLoader (pcr::ImageLoader) against the same batches put
together in Python from pcr.SampleIterator and pcr.BatchDecoder, one batch
decoded ahead on a Python thread: what doing it in C++ is worth.

usage: /usr/bin/python3 bench/image_loader_bench.py PCR_DIR [--batch B] [--size S] [--threads T]
           [--epochs E] [--rounds R]

build/python must be on PYTHONPATH. Each round times E epochs of each way
in turn (the best epoch counts), R rounds, and the table gives the median
images/s and the ratio of the loader to Python in the same round. Both give
the same batches (python/tests/test_torch.py checks it).
"""
import argparse
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

import pcr
import pcr.torch


def chained(*values):
    """The seed of (seed, epoch, rank, batch), as pcr::ImageLoader makes it."""
    z, mask = 0, (1 << 64) - 1
    for v in values:
        z = (z ^ v) + 0x9E3779B97F4A7C15 & mask
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9 & mask
        z = (z ^ (z >> 27)) * 0x94D049BB133111EB & mask
        z ^= z >> 31
    return z


def python_batches(args, epoch):
    ds = pcr.ImageDataset(args.pcr_dir)
    it = iter(pcr.SampleIterator(ds, batch_size=args.batch, seed=1, epoch=epoch))
    decoder = pcr.BatchDecoder(size=args.size, threads=args.threads)

    def load(b):
        try:
            _, labels, jpegs = next(it)
        except StopIteration:
            return None
        return decoder.decode(jpegs, chained(1, epoch, 0, b)), labels

    with ThreadPoolExecutor(max_workers=1) as ahead:
        b = 0
        pending = ahead.submit(load, b)
        while True:
            batch = pending.result()
            if batch is None:
                return
            b += 1
            pending = ahead.submit(load, b)
            yield batch


def loader_batches(args, epoch):
    loader = pcr.torch.ImageLoader(args.pcr_dir, batch_size=args.batch, size=args.size, threads=args.threads, seed=1)
    loader.set_epoch(epoch)
    yield from loader


def best_rate(make, args):
    best = 0.0
    for epoch in range(args.epochs):
        start = time.perf_counter()
        images = sum(len(labels) for _, labels in make(args, epoch))
        best = max(best, images / (time.perf_counter() - start))
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pcr_dir")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    python, loader, ratio = [], [], []
    for _ in range(args.rounds):
        python.append(best_rate(python_batches, args))
        loader.append(best_rate(loader_batches, args))
        ratio.append(loader[-1] / python[-1])
    print(f"{len(pcr.ImageDataset(args.pcr_dir))} images, batches of {args.batch}, {args.size} x {args.size}, "
          f"{args.threads} decoding threads, median of {args.rounds} rounds\n")
    print("| way | images/s | loader / Python |")
    print("|---|---|---|")
    print(f"| Python: SampleIterator + BatchDecoder | {statistics.median(python):.0f} | |")
    print(f"| pcr.torch.ImageLoader | {statistics.median(loader):.0f} | {statistics.median(ratio):.2f} |")


if __name__ == "__main__":
    main()
