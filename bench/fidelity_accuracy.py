"""What a fidelity does to training: a small CNN trained from scratch at each
fixed fidelity and with pcr.torch.FidelityTuner, every model tested on
full-fidelity held-out images.

    /usr/bin/python3 bench/fidelity_accuracy.py build [--data DIR] [--seeds 3]

DIR is an ImageFolder (class folders of JPEGs) with train/ and test/ (or
val/) in it, or a plain one, whose every 7th image (in path order) is held
out. Without --data, Debian's dataset-fashion-mnist (70,000 28 x 28 photos of
clothing, 10 classes) is encoded to JPEG (quality 90, by PIL) in --work.
Both parts are converted with the `spectral` scan script, whose luma bands
give grayscale images 5 fidelities of their own (a scan group that adds no
bytes to every image, chroma here, is skipped as a fidelity).

Reported per run, as the mean and standard deviation over the seeds: test
accuracy after the last epoch, bytes the training loader read, training
images per second (reading, decoding and the model's steps; the tuner's
probes included, the tests excluded) and the training seconds until the
test accuracy first reached --target. A tuner run is made for each of
--thresholds; its probes' scores go to the log.
"""
import argparse
import gzip
import hashlib
import logging
import pathlib
import statistics
import sys
import time

FASHION = pathlib.Path("/usr/share/datasets/fashion-mnist")
CLASSES = ["t-shirt", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker", "bag", "boot"]


def fashion_mnist(work: pathlib.Path) -> pathlib.Path:
    """Fashion-MNIST as JPEG ImageFolders work/fashion/{train,test}/NN-class/."""
    import numpy as np
    from PIL import Image

    root = work / "fashion"
    if (root / "done").exists():
        return root
    if not FASHION.is_dir():
        sys.exit(f"{FASHION} is missing: apt-get install dataset-fashion-mnist, or give --data")
    for part, prefix in (("train", "train"), ("test", "t10k")):
        with gzip.open(FASHION / f"{prefix}-images-idx3-ubyte.gz") as f:
            images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)
        with gzip.open(FASHION / f"{prefix}-labels-idx1-ubyte.gz") as f:
            labels = np.frombuffer(f.read(), np.uint8, offset=8)
        for c, name in enumerate(CLASSES):
            (root / part / f"{c:02d}-{name}").mkdir(parents=True, exist_ok=True)
        for i, (image, label) in enumerate(zip(images, labels)):
            path = root / part / f"{label:02d}-{CLASSES[label]}" / f"{i:05d}.jpg"
            Image.fromarray(image, "L").save(path, quality=90)
    (root / "done").touch()
    return root


def split(data: pathlib.Path, work: pathlib.Path):
    """(train, test) ImageFolders of `data`."""
    for test in ("test", "val"):
        if (data / "train").is_dir() and (data / test).is_dir():
            return data / "train", data / test
    out = work / "split"
    if not (out / "done").exists():
        files = sorted(p for p in data.rglob("*") if p.is_file())
        for n, p in enumerate(files):
            to = out / ("test" if n % 7 == 6 else "train") / p.relative_to(data)
            to.parent.mkdir(parents=True, exist_ok=True)
            if not to.exists():
                to.write_bytes(p.read_bytes())
        (out / "done").touch()
    return out / "train", out / "test"


def model_for(classes: int, size: int, seed: int):
    import torch

    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.BatchNorm2d(32), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(32 * (size // 4) ** 2, classes))


def accuracy(model, test) -> float:
    import torch

    model.eval()
    right = total = 0
    with torch.no_grad():
        for images, labels in test:
            right += int((model(images).argmax(1) == labels).sum())
            total += len(labels)
    model.train()
    return right / total


def run(args, train_ds, test_ds, classes, fidelity, seed):
    """One training run: {accuracy, bytes, images_per_s, to_target}."""
    import torch

    import pcr.torch

    norm = ((0.5,), (0.5,))
    loader = pcr.torch.ImageLoader(str(train_ds), batch_size=args.batch_size, size=args.size, scale=(0.6, 1.0),
                                   seed=seed, normalize=norm, threads=args.threads)
    test = pcr.torch.ImageLoader(str(test_ds), batch_size=500, train=False, size=args.size, resize=args.size,
                                 normalize=norm, threads=args.threads)
    model = model_for(classes, args.size, seed)
    loss_fn = torch.nn.functional.cross_entropy
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, args.lr, epochs=args.epochs, steps_per_epoch=len(loader))
    tuner = None
    if isinstance(fidelity, float):
        tuner = pcr.torch.FidelityTuner(loader, model, loss_fn, threshold=fidelity, every=args.every,
                                        warmup=args.warmup, candidates=args.fidelities, images=args.probe_images,
                                        seed=seed)
    else:
        loader.set_fidelity(fidelity)
    seconds, images, to_target, chosen = 0.0, 0, None, []
    for epoch in range(args.epochs):
        start = time.perf_counter()
        if tuner is not None:
            chosen.append(tuner.step(epoch))
        loader.set_epoch(epoch)
        for x, y in loader:
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            opt.step()
            sched.step()
            images += len(y)
        seconds += time.perf_counter() - start
        acc = accuracy(model, test)
        if to_target is None and acc >= args.target:
            to_target = seconds
    return dict(accuracy=acc, bytes=loader.bytes_read, images_per_s=images / seconds, to_target=to_target,
                chosen=chosen)


def mean_sd(values, fmt):
    if len(values) == 1:
        return fmt.format(values[0])
    return f"{fmt.format(statistics.mean(values))} ± {fmt.format(statistics.stdev(values))}"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("build", help="the meson build directory (its python/ holds pcr)")
    p.add_argument("--data", type=pathlib.Path, help="an ImageFolder; default: Fashion-MNIST")
    p.add_argument("--work", type=pathlib.Path, default=pathlib.Path("/tmp/pcr-fidelity-bench"))
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--train-images", type=int, default=15000, help="train on the first N of a shuffled train part")
    p.add_argument("--size", type=int, default=28)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--target", type=float, default=0.85, help="the test accuracy timed")
    p.add_argument("--thresholds", default="0.8,0.95", help="a tuner run for each")
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--every", type=int, default=2)
    p.add_argument("--probe-images", type=int, default=1280)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    sys.path.insert(0, str(pathlib.Path(args.build).resolve() / "python"))
    import torch

    import pcr

    torch.set_num_threads(args.threads)
    logging.basicConfig(level=logging.INFO, format="%(message)s")  # the tuner's scores
    args.work.mkdir(parents=True, exist_ok=True)
    data = args.data or fashion_mnist(args.work)
    train_src, test_src = split(data, args.work)
    tag = hashlib.sha1(str(data.resolve()).encode()).hexdigest()[:12] + f"-{args.train_images}"
    train_ds, test_ds = args.work / f"train-{tag}", args.work / f"test-{tag}"
    if not train_ds.exists():
        listing = args.work / f"train-{tag}.csv"
        classes = sorted(d.name for d in train_src.iterdir() if d.is_dir())
        rows = [f"{f.relative_to(train_src)},{c}" for c, name in enumerate(classes)
                for f in sorted((train_src / name).rglob("*")) if f.is_file()]
        import random

        random.Random(0).shuffle(rows)
        listing.write_text("\n".join(rows[:args.train_images]) + "\n")
        pcr.convert_images(str(train_src), str(train_ds), list=str(listing), scan_script="spectral",
                           images_per_record=512, skip_bad=True)
    if not test_ds.exists():
        pcr.convert_images(str(test_src), str(test_ds), scan_script="spectral", images_per_record=512, skip_bad=True)
    ds = pcr.ImageDataset(str(train_ds))
    classes = len(pcr.ImageDataset(str(test_ds)).classes)
    at = ds.counts["bytes_at_fidelity"]
    args.fidelities = [k for k in range(1, len(at) + 1) if k == 1 or at[k - 1] > at[k - 2]]
    print(f"train: {len(ds)} images of {classes} classes ({train_ds}), test: "
          f"{len(pcr.ImageDataset(str(test_ds)))} images; fidelities {args.fidelities}", flush=True)
    rows = []
    began = time.perf_counter()
    thresholds = [float(t) for t in args.thresholds.split(",") if t]
    for fidelity in [*args.fidelities, *thresholds]:
        runs = [run(args, train_ds, test_ds, classes, fidelity, seed) for seed in range(args.seeds)]
        rows.append((fidelity, runs))
        print(f"{fidelity}: accuracy {[round(r['accuracy'], 4) for r in runs]} "
              f"{'fidelity per epoch ' + str([r['chosen'] for r in runs]) if isinstance(fidelity, float) else ''} "
              f"({time.perf_counter() - began:.0f} s)", flush=True)
    full = statistics.mean(r["bytes"] for r in rows[len(args.fidelities) - 1][1])
    print(f"\n| fidelity | test accuracy | bytes read | vs full | images/s | s to {args.target:.0%} |")
    print("|---|---|---|---|---|---|")
    for fidelity, runs in rows:
        reached = [r["to_target"] for r in runs if r["to_target"] is not None]
        to_target = (mean_sd(reached, "{:.1f}") + ("" if len(reached) == len(runs) else
                                                   f" ({len(reached)} of {len(runs)} runs)")) if reached else "never"
        name = f"tuner, threshold {fidelity}" if isinstance(fidelity, float) else str(fidelity)
        mb = statistics.mean(r["bytes"] for r in runs)
        print(f"| {name} | {mean_sd([100 * r['accuracy'] for r in runs], '{:.2f}')} % | "
              f"{mb / 1e6:.1f} MB | {mb / full:.2f} | {mean_sd([r['images_per_s'] for r in runs], '{:.0f}')} | "
              f"{to_target} |")
    print(f"\n{time.perf_counter() - began:.0f} s for {len(rows) * args.seeds} runs of {args.epochs} epochs")


if __name__ == "__main__":
    main()
