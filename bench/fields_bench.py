"""Bytes and reads of "caption plus fidelity k" on a CC3M-like dataset, and the
share of scan group 1 on camera photos before and after the segments stream.

A CC3M-like dataset is built from real photos: each gets a synthetic caption
of CC3M's length (about 10 words, seeded) and the scalar fields img2dataset
writes (similarity, width, height). It is stored three ways:
  - WebDataset tar shards (KEY.jpg, KEY.txt, KEY.json), which a job reads whole;
  - pcr with the fields in each record (pcr-convert webdataset, txt first);
  - pcr images plus the captions in a separate pcr table.
For each fidelity k (0: captions alone) it prints the bytes and reads each
takes, counted by pcr-bench and by the kernel-free counters of its engine, so
the figures are exact and do not depend on the machine's load.

usage: PYTHONPATH=build/python /usr/bin/python3 bench/fields_bench.py PHOTOS_DIR \
           [--count N] [--camera DIR] [--tools build/tools] [--work DIR]
"""
import argparse
import io
import json
import pathlib
import random
import shutil
import subprocess
import tarfile
import tempfile

WORDS = ("a the of in on with and at by from for to near over under two three small large old young red blue "
         "green white black man woman child dog cat bird car street house tree water sky beach city field road "
         "table chair window door light shadow sunset morning evening people crowd player team ball game "
         "mountain river lake boat bridge building wall flower garden food plate cup coffee book phone "
         "standing sitting walking running looking holding wearing playing smiling").split()


def caption(rng):
    n = max(3, min(30, int(rng.gauss(10.3, 3.5))))
    return " ".join(rng.choice(WORDS) for _ in range(n))


def run(tools, *args):
    out = subprocess.run([str(tools / args[0]), *map(str, args[1:])], check=True, capture_output=True, text=True)
    return json.loads(out.stdout) if args[0] == "pcr-bench" else out.stdout


def build(photos, work, count, tools):
    rng = random.Random(7)
    files = sorted(p for p in photos.rglob("*.jpg"))[:count]
    shards, rows = [], []
    per_shard = 1000
    for s in range(0, len(files), per_shard):
        path = work / f"cc3m-{s // per_shard:06d}.tar"
        with tarfile.open(path, "w") as tar:
            for i, f in enumerate(files[s:s + per_shard], start=s):
                key = f"{i:09d}"
                text = caption(rng)
                meta = {"similarity": round(rng.uniform(0.28, 0.42), 4), "width": 500, "height": 375}
                for ext, data in (("jpg", f.read_bytes()), ("txt", text.encode()), ("json", json.dumps(meta).encode())):
                    info = tarfile.TarInfo(f"{key}.{ext}")
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
                rows.append((f.relative_to(photos).as_posix(), key, text))
        shards.append(path)
    run(tools, "pcr-convert", "webdataset", *shards, work / "fields", "--field-order", "txt,similarity")
    (work / "list.csv").write_text("".join(f"{path},0\n" for path, _, _ in rows))
    run(tools, "pcr-convert", "images", photos, work / "images", "--list", work / "list.csv")
    with open(work / "captions.csv", "w") as out:
        out.write("key,caption\n")
        for path, _, text in rows:
            out.write(f'"{path}","{text}"\n')
    run(tools, "pcr-convert", "table", work / "captions.csv", work / "table")
    return shards, len(files)


def camera(directory, work, tools):
    files = sorted(p for p in directory.iterdir() if p.suffix.lower() in (".jpg", ".jpeg"))
    (work / "camera.csv").write_text("".join(f"{p.name},0\n" for p in files))
    run(tools, "pcr-convert", "images", directory, work / "camera", "--list", work / "camera.csv")
    s = json.loads(run(tools, "pcr-dump", work / "camera", "--json"))
    groups = [g["bytes"] for g in s["groups"]]
    seg = s["segment_bytes"]
    total = sum(groups) + seg
    print(f"\nCamera photos ({len(files)} files, {sum(p.stat().st_size for p in files) / 2**20:.1f} MiB):")
    print("| scan group 1 | bytes | share of the dataset |")
    print("|---|---|---|")
    print(f"| with every APPn/COM segment (before) | {groups[0] + seg} | {(groups[0] + seg) / total:.3f} |")
    print(f"| segments stream apart (after) | {groups[0]} | {groups[0] / total:.3f} |")
    print(f"segments stream: {seg} bytes, {seg / total:.3f} of the dataset")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("photos", type=pathlib.Path)
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--camera", type=pathlib.Path)
    ap.add_argument("--tools", type=pathlib.Path, default=pathlib.Path("build/tools"))
    ap.add_argument("--work", type=pathlib.Path)
    a = ap.parse_args()
    tools = a.tools.resolve()
    work = a.work or pathlib.Path(tempfile.mkdtemp(prefix="pcr-fields-bench-"))
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    try:
        shards, n = build(a.photos, work, a.count, tools)
        tar = run(tools, "pcr-bench", "read-files", *shards)
        print(f"CC3M-like: {n} photos with captions; WebDataset shards {tar['bytes_read']} bytes\n")
        print("| read | WebDataset tar: bytes | reads | pcr, fields in records: bytes | reads | vs tar | "
              "pcr + caption table: bytes | reads |")
        print("|---|---|---|---|---|---|---|---|")
        table = run(tools, "pcr-bench", "table", work / "table", "--features", "caption")
        for k in range(0, 6):
            f = run(tools, "pcr-bench", "read", work / "fields", "--fidelity", k, "--fields", "txt")
            t_bytes, t_reads = table["bytes_read"], table["reads"]
            if k > 0:
                img = run(tools, "pcr-bench", "read", work / "images", "--fidelity", k)
                t_bytes, t_reads = t_bytes + img["bytes_read"], t_reads + img["reads"]
            what = "caption alone" if k == 0 else f"caption + fidelity {k}"
            print(f"| {what} | {tar['bytes_read']} | {tar['reads']} | {f['bytes_read']} | {f['reads']} | "
                  f"{f['bytes_read'] / tar['bytes_read']:.3f} | {t_bytes} | {t_reads} |")
        if a.camera:
            camera(a.camera, work, tools)
    finally:
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
