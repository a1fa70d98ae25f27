#!/usr/bin/python3
"""How far pcr's crops are from torchvision's where they are not equal.

usage: /usr/bin/python3 bench/crop_draws.py PHOTOS_DIR [--draws N] [--images N]

1. RandomResizedCrop draws: torch takes the float exp of the drawn log
   aspect ratio with SLEEF where the CPU has AVX2, pcr with the C library.
   Over N draws of torch's (scale, log-ratio) pairs, prints how often the two
   exps differ and how often that moves a crop side by a pixel, for three
   image sizes.
2. fast_scale: over the first N JPEGs under PHOTOS_DIR, the mean absolute
   difference per byte between BatchDecoder(fast_scale=True) and the exact
   decoder, for training and evaluation crops at 112 and 224, and the share of
   images left unchanged; with the decoding rate of each (one thread).

build/python must be on PYTHONPATH.
"""
import argparse
import pathlib
import time

import numpy as np
import torch

import pcr


def draws(n):
    rng = np.random.default_rng(1)
    lo, hi = np.log(np.float32(0.75)), np.log(np.float32(4 / 3))
    unit = rng.integers(0, 1 << 24, n) * 2.0**-24
    log_ratio = (unit * np.float64(hi - lo) + np.float64(lo)).astype(np.float32)
    scale = (rng.integers(0, 1 << 24, n) * 2.0**-24 * np.float64(np.float32(1.0) - np.float32(0.08)) +
             np.float64(np.float32(0.08))).astype(np.float32).astype(np.float64)
    by_torch = torch.exp(torch.from_numpy(log_ratio)).numpy().astype(np.float64)
    by_libc = np.exp(log_ratio.astype(np.float64)).astype(np.float32).astype(np.float64)
    print(f"| exp differs in the last bit | {np.mean(by_torch != by_libc):.4f} of {n} draws |")
    for w, h in ((500, 375), (1024, 768), (256, 256)):
        area = w * h * scale
        moved = sum(int(np.sum(np.rint(np.sqrt(f(area, a))) != np.rint(np.sqrt(f(area, b)))))
                    for f in (np.multiply, np.divide) for a, b in ((by_torch, by_libc),))
        print(f"| {w} x {h}: a crop side one pixel off | {moved} of {n} draws |")


def fast_scale(photos, count):
    paths = sorted(p for p in pathlib.Path(photos).rglob("*") if p.suffix.lower() in (".jpg", ".jpeg"))[:count]
    jpegs = [p.read_bytes() for p in paths]
    print(f"\n{len(jpegs)} images\n")
    print("| size | crop | mean abs difference | images unchanged | exact images/s | fast_scale images/s | ratio |")
    print("|---|---|---|---|---|---|---|")
    for size, crop in ((112, "random_resized"), (112, "center"), (224, "random_resized"), (224, "center")):
        out, rate = {}, {}
        for fast in (False, True):
            dec = pcr.BatchDecoder(size=size, crop=crop, resize=size * 8 // 7, fast_scale=fast, threads=1)
            start = time.perf_counter()
            out[fast] = np.concatenate([dec.decode(jpegs[i:i + 32], seed=i) for i in range(0, len(jpegs), 32)])
            rate[fast] = len(jpegs) / (time.perf_counter() - start)
        diff = np.abs(out[True].astype(np.int16) - out[False])
        same = np.mean([np.array_equal(a, b) for a, b in zip(out[True], out[False])])
        print(f"| {size} | {crop} | {diff.mean():.2f} | {same:.2f} | {rate[False]:.0f} | {rate[True]:.0f} | "
              f"{rate[True] / rate[False]:.2f} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("photos")
    ap.add_argument("--draws", type=int, default=20_000_000)
    ap.add_argument("--images", type=int, default=1000)
    args = ap.parse_args()
    print("| RandomResizedCrop draws | |\n|---|---|")
    draws(args.draws)
    fast_scale(args.photos, args.images)


if __name__ == "__main__":
    main()
