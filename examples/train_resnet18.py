#!/usr/bin/env python3
"""A few training steps of torchvision's resnet18 on a pcr dataset, on the CPU.

usage: /usr/bin/python3 examples/train_resnet18.py [SRC_DIR] [--steps N] [--fidelity K]

Converts SRC_DIR (an ImageFolder; default: the bundled sample) into a pcr
dataset in a temporary directory, then trains on batches that pcr reads at
fidelity K and decodes with RandomResizedCrop and flips on its own threads.
"""
import argparse
import math
import pathlib
import tempfile
import time

import torch
import torchvision

import pcr
import pcr.torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src", nargs="?", default=str(pathlib.Path(__file__).parents[1] / "tests" / "data" / "sample"))
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--fidelity", type=int, default=3)
    ap.add_argument("--size", type=int, default=64)
    args = ap.parse_args()
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        summary = pcr.convert_images(args.src, f"{tmp}/ds", images_per_record=64)
        print(f"converted {summary['images']} images into {summary['files']} file(s)")
        loader = pcr.torch.ImageLoader(f"{tmp}/ds", batch_size=8, fidelity=args.fidelity, size=args.size,
                                       threads=2, seed=0)
        classes = len(pcr.ImageDataset(f"{tmp}/ds").classes)
        model = torchvision.models.resnet18(num_classes=classes)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1) * 255
        std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1) * 255
        step, start = 0, time.perf_counter()
        epoch = 0
        while step < args.steps:
            loader.set_epoch(epoch)
            for images, labels in loader:
                x = (images.float() - mean) / std
                loss = torch.nn.functional.cross_entropy(model(x), labels)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                step += 1
                print(f"epoch {epoch} step {step}: loss {loss.item():.3f}")
                if not math.isfinite(loss.item()):
                    raise SystemExit("the loss is not finite")
                if step == args.steps:
                    break
            epoch += 1
        print(f"{args.steps} steps in {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
