#!/usr/bin/python3
"""End-to-end input pipeline: torchvision's ImageFolder with PIL against
pcr.torch.ImageLoader at every fidelity, in one run, same output (batches of
uint8 224 x 224 tensors after RandomResizedCrop and a random flip).

usage: /usr/bin/python3 bench/torch_bench.py PHOTOS_DIR PCR_DIR [--images N] [--batch B]
           [--workers W] [--threads T] [--normalize] [--cold-mbps MB [--direct]]

--normalize makes both give float16 batches of ImageNet-normalised values:
torchvision's ToTensor(), Normalize(mean, std) and ConvertImageDtype(float16)
after the crop and flip, against ImageLoader(normalize=(mean, std),
dtype=torch.float16), the same values (python/tests/test_torch.py).

PHOTOS_DIR is the ImageFolder of original JPEGs and PCR_DIR the dataset
pcr-convert made of it (build/python must be on PYTHONPATH). Each
configuration runs in a process of its own over N images (default: one
epoch), and reports images/s from the loader's creation to its last batch,
the bytes it read and its peak RSS (children included).

Page cache warm (default): every file is read once before the runs; bytes
are what the processes read (/proc/self/io), cached or not.

Cold with a bandwidth cap (--cold-mbps, root): both directories are copied
to a file system of their own on a loop device (O_DIRECT to its backing
file), so the cap and the byte counts cover the data alone, not Python's and
torch's libraries. Before each run the data's files are dropped from the
page cache, and the run's process joins a cgroup whose reads from the loop
device are capped at MB megabytes/s (cgroup v1
blkio.throttle.read_bps_device or v2 io.max). Bytes are what that cgroup
read from the device. The table adds the rate the ratio of bytes per image
predicts for each fidelity (torchvision's rate times original bytes per
image over the fidelity's bytes per image). --direct reads pcr with O_DIRECT.

Prints a markdown table with ratios to torchvision in the same run.
"""
import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import time

CGROUP_NAME = "pcr-torch-bench"


def proc_io(field):
    with open("/proc/self/io") as f:
        return int(dict(line.split(": ") for line in f.read().splitlines())[field])


IMAGENET = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))


def run_one(kind, args):
    import torch

    torch.set_num_threads(1)
    start_bytes = proc_io("rchar")
    start = time.perf_counter()
    if kind == "torchvision":
        import torchvision.transforms as T
        from torchvision.datasets import ImageFolder

        steps = [T.RandomResizedCrop(224), T.RandomHorizontalFlip()]
        if args.normalize:
            steps += [T.ToTensor(), T.Normalize(*IMAGENET), T.ConvertImageDtype(torch.float16)]
        else:
            steps.append(T.PILToTensor())
        ds = ImageFolder(args.photos, transform=T.Compose(steps))
        loader = torch.utils.data.DataLoader(ds, batch_size=args.batch, shuffle=True, num_workers=args.workers)
    else:
        import pcr.torch

        # Warm runs read with pread, so that /proc/self/io counts pcr's reads as it counts PIL's.
        engine = "auto" if args.cold_mbps else "pread"
        normalize = dict(normalize=IMAGENET, dtype=torch.float16) if args.normalize else {}
        loader = pcr.torch.ImageLoader(args.pcr, batch_size=args.batch, fidelity=int(kind), threads=args.threads,
                                       seed=1, engine=engine, direct=args.direct, **normalize)
    images = 0
    while images < args.images:  # epoch after epoch
        for batch, labels in loader:
            assert batch.dtype == (torch.float16 if args.normalize else torch.uint8)
            assert batch.shape[1:] == (3, 224, 224)
            images += len(labels)
            if images >= args.images:
                break
    seconds = time.perf_counter() - start
    del loader
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    rss = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, children)
    return {"images": images, "seconds": seconds, "images_per_s": images / seconds,
            "bytes_read": proc_io("rchar") - start_bytes, "peak_rss_mib": rss / 1024}


class Cgroup:
    """A cgroup capping read bandwidth on one device (v1 blkio or v2 io)."""

    def __init__(self, device, bytes_per_s):
        self.device = device
        v1 = "/sys/fs/cgroup/blkio"
        if os.path.isdir(v1):
            self.path, self.v2 = os.path.join(v1, CGROUP_NAME), False
        else:
            self.path, self.v2 = os.path.join("/sys/fs/cgroup", CGROUP_NAME), True
            with open("/sys/fs/cgroup/cgroup.subtree_control", "w") as f:
                f.write("+io")
        os.makedirs(self.path, exist_ok=True)
        try:
            if self.v2:
                self._write("io.max", f"{device} rbps={bytes_per_s}")
            else:
                self._write("blkio.throttle.read_bps_device", f"{device} {bytes_per_s}")
        except OSError:
            os.rmdir(self.path)
            raise

    def _write(self, name, value):
        with open(os.path.join(self.path, name), "w") as f:
            f.write(value)

    def join(self):
        self._write("cgroup.procs", str(os.getpid()))

    def bytes_read(self):
        if self.v2:
            with open(os.path.join(self.path, "io.stat")) as f:
                for line in f:
                    fields = line.split()
                    if fields and fields[0] == self.device:
                        return int(dict(kv.split("=") for kv in fields[1:])["rbytes"])
            return 0
        total = 0
        with open(os.path.join(self.path, "blkio.throttle.io_service_bytes")) as f:
            for line in f:
                fields = line.split()
                if len(fields) == 3 and fields[0] == self.device and fields[1] == "Read":
                    total += int(fields[2])
        return total

    def remove(self):
        """Removes the cgroup, first killing what a failed run left in it."""
        for _ in range(50):
            try:
                os.rmdir(self.path)
                return
            except OSError:
                with open(os.path.join(self.path, "cgroup.procs")) as f:
                    for pid in f.read().split():
                        try:
                            os.kill(int(pid), signal.SIGKILL)
                        except ProcessLookupError:
                            pass
                time.sleep(0.1)
        print(f"could not remove the cgroup {self.path}", file=sys.stderr)


def evict(path):
    """Drops the files under `path` from the page cache (and nothing else, so
    Python and torch load from memory)."""
    for d, _, files in os.walk(path):
        for name in files:
            fd = os.open(os.path.join(d, name), os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


class LoopCopy:
    """PHOTOS_DIR and PCR_DIR copied to an ext4 file system on a loop device."""

    def __init__(self, dirs, image):
        self.image, self.mount, self.device, self.mounted = image, image + ".mnt", None, False
        try:
            size = sum(tree_bytes(d) for d in dirs) * 1.2 + (256 << 20)
            subprocess.run(["truncate", "-s", str(int(size)), image], check=True)
            subprocess.run(["mkfs.ext4", "-q", "-F", image], check=True)
            self.device = subprocess.run(["losetup", "--direct-io=on", "-f", "--show", image], check=True,
                                         capture_output=True, text=True).stdout.strip()
            os.makedirs(self.mount, exist_ok=True)
            subprocess.run(["mount", self.device, self.mount], check=True)
            self.mounted = True
            self.dirs = []
            for i, d in enumerate(dirs):
                dst = os.path.join(self.mount, f"{i}-{os.path.basename(os.path.normpath(d))}")
                subprocess.run(["cp", "-r", d, dst], check=True)
                self.dirs.append(dst)
            os.sync()
        except BaseException:
            self.close()
            raise

    def major_minor(self):
        """The loop device as cgroups name it, MAJOR:MINOR."""
        dev = os.stat(self.device).st_rdev
        return f"{os.major(dev)}:{os.minor(dev)}"

    def close(self):
        if self.mounted and subprocess.run(["umount", self.mount]).returncode != 0:
            subprocess.run(["umount", "-l", self.mount])
        if self.device:
            subprocess.run(["losetup", "-d", self.device])
        for remove, path in ((os.rmdir, self.mount), (os.remove, self.image)):
            try:
                remove(path)
            except OSError as e:
                print(f"could not remove {path}: {e}", file=sys.stderr)


def tree_bytes(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files)


def warm(path):
    for d, _, files in os.walk(path):
        for name in files:
            with open(os.path.join(d, name), "rb") as f:
                while f.read(1 << 22):
                    pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("photos")
    ap.add_argument("pcr")
    ap.add_argument("--images", type=int, default=0, help="images per run (default: one epoch)")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--workers", type=int, default=os.cpu_count())
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--cold-mbps", type=float, default=0)
    ap.add_argument("--direct", action="store_true")
    ap.add_argument("--normalize", action="store_true")
    ap.add_argument("--loop-image", default="/var/tmp/pcr-torch-bench.img",
                    help="where --cold-mbps makes the loop device's backing file")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one, args)))
        return
    import pcr

    counts = pcr.ImageDataset(args.pcr).counts
    n = counts["images"]
    args.images = args.images or n
    per_image = {"torchvision": tree_bytes(args.photos) / n}
    for k, b in enumerate(counts["bytes_at_fidelity"], 1):
        per_image[str(k)] = b / n
    cgroup = loop = None
    rows = []
    try:
        if args.cold_mbps:
            loop = LoopCopy([args.photos, args.pcr], args.loop_image)
            args.photos, args.pcr = loop.dirs
            cgroup = Cgroup(loop.major_minor(), int(args.cold_mbps * 1e6))
        else:
            warm(args.photos)
            warm(args.pcr)
        for kind in ["torchvision"] + [str(k) for k in range(1, len(counts["bytes_at_fidelity"]) + 1)]:
            cmd = [sys.executable, __file__, args.photos, args.pcr, "--images", str(args.images), "--batch",
                   str(args.batch), "--workers", str(args.workers), "--threads", str(args.threads), "--one", kind]
            if args.direct:
                cmd.append("--direct")
            if args.normalize:
                cmd.append("--normalize")
            if cgroup:
                cmd += ["--cold-mbps", str(args.cold_mbps)]
                evict(args.photos)
                evict(args.pcr)
                before = cgroup.bytes_read()
            out = subprocess.run(cmd, capture_output=True, text=True, preexec_fn=cgroup.join if cgroup else None)
            if out.returncode != 0:
                sys.exit(f"{kind} run failed (exit {out.returncode}):\n{out.stderr}")
            r = json.loads(out.stdout.strip().splitlines()[-1])
            if cgroup:
                r["bytes_read"] = cgroup.bytes_read() - before
            rows.append((kind, r))
    finally:
        try:
            if cgroup:
                cgroup.remove()
        finally:
            if loop:
                loop.close()
    base = rows[0][1]["images_per_s"]
    cache = f"cold, reads capped at {args.cold_mbps:g} MB/s" if cgroup else "page cache warm"
    print(f"{args.images} images per run, {cache}, batches of {args.batch}, {args.workers} DataLoader workers, "
          f"{args.threads} pcr threads{', O_DIRECT' if args.direct else ''}"
          f"{', normalised float16' if args.normalize else ', uint8'}\n")
    head = "| loader | images/s | vs torchvision |"
    if cgroup:
        head += " predicted by bytes | vs predicted |"
    print(head + " bytes/image | MB read | peak RSS MiB |")
    print("|---" * (head.count("|") + 2) + "|")
    for kind, r in rows:
        name = "torchvision ImageFolder + PIL" if kind == "torchvision" else f"pcr, fidelity {kind}"
        line = f"| {name} | {r['images_per_s']:.0f} | {r['images_per_s'] / base:.2f} |"
        if cgroup:
            predicted = base * per_image["torchvision"] / per_image[kind]
            line += f" {predicted:.0f} | {r['images_per_s'] / predicted:.2f} |"
        print(line + f" {per_image[kind]:.0f} | {r['bytes_read'] / 1e6:.0f} | {r['peak_rss_mib']:.0f} |")


if __name__ == "__main__":
    main()
