"""pcr.dask conversions on a real two-process distributed.LocalCluster, checked
byte for byte against pcr-convert's one-process conversion of the same input:
local and s3:// (s3rver on loopback) both ways, a worker killed mid-task, and
bad input."""
import gzip
import hashlib
import io
import os
import pathlib
import random
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import threading
import time
import urllib.request

import pytest

import pcr

distributed = pytest.importorskip("distributed")
import pcr.dask  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).parents[2] / "tests"))
from s3_put import put  # noqa: E402


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    # Workers read s3:// credentials from the environment they start with.
    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
    os.environ.update(AWS_ACCESS_KEY_ID="S3RVER", AWS_SECRET_ACCESS_KEY="S3RVER")
    try:
        cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, host="127.0.0.1",
                                           dashboard_address=None,
                                           local_directory=str(tmp_path_factory.mktemp("dask-workers")))
        with cluster, distributed.Client(cluster) as c:
            yield c
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def pcr_convert(*args):
    tools = os.environ.get("PCR_TOOLS_DIR")
    if not tools:
        pytest.skip("PCR_TOOLS_DIR (the build's tools directory) is not set")
    done = subprocess.run([os.path.join(tools, "pcr-convert"), *map(str, args)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def same_dirs(a, b):
    names = sorted(p.name for p in pathlib.Path(a).iterdir())
    assert names == sorted(p.name for p in pathlib.Path(b).iterdir())
    assert "dataset.pcrd" in names
    for name in names:
        assert (pathlib.Path(a) / name).read_bytes() == (pathlib.Path(b) / name).read_bytes(), name


def same_objects(endpoint, prefix, local):
    for f in sorted(pathlib.Path(local).iterdir()):
        with urllib.request.urlopen(f"{endpoint}/pcrtest/{prefix}/{f.name}") as r:
            assert r.read() == f.read_bytes(), f.name


def keys(endpoint, prefix):
    """The keys under pcrtest/PREFIX (one listing page is enough here)."""
    with urllib.request.urlopen(f"{endpoint}/pcrtest?list-type=2&prefix={prefix}") as r:
        return re.findall(r"<Key>([^<]*)</Key>", r.read().decode())


def kill_worker_running(client, run, pick):
    """Starts the thread `run`; once pick(client.processing()) names a
    worker, kills its process by pid; then waits for `run`."""
    run.start()
    try:
        victim = None
        deadline = time.monotonic() + 60
        while victim is None and time.monotonic() < deadline and run.is_alive():
            victim = pick(client.processing())
            time.sleep(0.005)
        assert victim is not None, "no task was caught running"
        os.kill(client.run(os.getpid, workers=[victim])[victim], signal.SIGKILL)
    finally:
        run.join()


def image_folder(data_dir, to, copies=1):
    """The bundled sample's images, `copies` times over, in class folders."""
    images = sorted(p for p in (data_dir / "sample").rglob("*") if p.is_file())
    for c in range(copies):
        for i, image in enumerate(images):
            folder = to / f"class{i % 3}"
            folder.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(image, folder / f"{c:04d}-{image.name}")
    return to


def tar_shards(data_dir, to, count=3):
    images = sorted(p for p in (data_dir / "sample").rglob("*") if p.suffix in (".jpg", ".jpeg"))
    paths = []
    for s in range(count):
        paths.append(to / f"shard-{s:04d}.tar")
        with tarfile.open(paths[-1], "w") as tar:
            for i, image in enumerate(images[s::count]):
                for ext, data in (("jpg", image.read_bytes()), ("cls", str(i % 4).encode()),
                                  ("txt", f"photo {image.name}".encode())):
                    info = tarfile.TarInfo(f"{s:02d}{i:04d}.{ext}")
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
    return paths


def test_images_and_webdataset_equal_the_one_process_conversion(client, data_dir, tmp_path):
    src = image_folder(data_dir, tmp_path / "src")
    pcr_convert("images", src, tmp_path / "cli", "--images-per-record", 3)
    summary = pcr.dask.convert_images(src, tmp_path / "dask", num_shards=3, images_per_record=3, progress=False)
    same_dirs(tmp_path / "dask", tmp_path / "cli")
    assert summary["images"] == 24 and summary["num_shards"] == 3 and summary["skipped"] == []
    assert sorted(s["shard"] for s in summary["shards"]) == [0, 1, 2]
    assert sum(s["images"] for s in summary["shards"]) == 24
    assert {s["worker"] for s in summary["shards"]} <= set(client.scheduler_info()["workers"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cli", "dask", "src"], "the parts are left behind"
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "keep.txt").write_text("not pcr's")
    pcr.dask.convert_images(src, tmp_path / "dask-mine", num_shards=3, images_per_record=3, parts_dir=mine,
                            progress=False)
    same_dirs(tmp_path / "dask-mine", tmp_path / "cli")
    assert sorted(p.name for p in mine.iterdir()) == ["keep.txt"]
    shutil.rmtree(mine)
    shutil.rmtree(tmp_path / "dask-mine")
    with pytest.raises(ValueError, match="already holds a pcr dataset"):
        pcr.dask.convert_images(src, tmp_path / "dask", progress=False)
    summary = pcr.dask.convert_images(src, tmp_path / "one-task", num_shards=1, images_per_record=3, progress=False)
    same_dirs(tmp_path / "one-task", tmp_path / "cli")
    assert summary["images"] == 24 and len(summary["shards"]) == 1

    shards = tar_shards(data_dir, tmp_path)
    pcr_convert("webdataset", *shards, tmp_path / "wds-cli", "--images-per-record", 2)
    summary = pcr.dask.convert_webdataset([str(s) for s in shards], str(tmp_path / "wds-dask"), images_per_record=2,
                                          progress=False)
    same_dirs(tmp_path / "wds-dask", tmp_path / "wds-cli")
    assert summary["num_shards"] == 2  # one per worker thread
    assert len(pcr.ImageDataset(str(tmp_path / "wds-dask"))) == summary["images"]


def test_shards_cut_files_by_record_and_the_merge_joins_the_pieces(client, data_dir, tmp_path):
    # 24 images with fields, 8 records of 3 in 2 files: each of 8 shards
    # converts one record, and the merge joins each file from 4 pieces.
    fields = data_dir / "fields" / "sample.jsonl"
    pcr_convert("images", data_dir / "sample", tmp_path / "cli", "--images-per-record", 3, "--records-per-file", 4,
                "--fields", fields, "--field-type", "weight=float32", "--field-type", "blob=bytes",
                "--field-type", "box32=float32_list")
    summary = pcr.dask.convert_images(str(data_dir / "sample"), tmp_path / "dask", num_shards=8, images_per_record=3,
                                      records_per_file=4, fields=str(fields),
                                      field_types={"weight": "float32", "blob": "bytes", "box32": "float32_list"},
                                      progress=False)
    same_dirs(tmp_path / "dask", tmp_path / "cli")
    assert sorted((s["shard"], s["images"]) for s in summary["shards"]) == [(i, 3) for i in range(8)]
    assert summary["files"] == 2 and len(pcr.ImageDataset(str(tmp_path / "dask"))) == 24
    # More shards than records: the extra parts are empty, the result the same.
    summary = pcr.dask.convert_images(str(data_dir / "sample"), tmp_path / "many", num_shards=11, images_per_record=3,
                                      records_per_file=4, fields=str(fields),
                                      field_types={"weight": "float32", "blob": "bytes", "box32": "float32_list"},
                                      progress=False)
    same_dirs(tmp_path / "many", tmp_path / "cli")
    assert sorted(s["images"] for s in summary["shards"]) == [0] * 3 + [3] * 8


def test_s3_to_s3(client, data_dir, tmp_path, s3_endpoint, s3_endpoint_b):
    remote = {"s3_endpoint": s3_endpoint}
    src = image_folder(data_dir, tmp_path / "src")
    for f in sorted(p for p in src.rglob("*") if p.is_file()):
        put(s3_endpoint, "pcrtest", "dask-src/" + f.relative_to(src).as_posix(), f.read_bytes())
    shards = tar_shards(data_dir, tmp_path)
    for s in shards:
        put(s3_endpoint, "pcrtest", "dask-wds/" + s.name, s.read_bytes())

    pcr_convert("images", src, tmp_path / "cli", "--images-per-record", 4)
    summary = pcr.dask.convert_images("s3://pcrtest/dask-src", "s3://pcrtest/dask-out", num_shards=3,
                                      images_per_record=4, remote=remote, work_dir=tmp_path / "work", progress=False)
    assert summary["images"] == 24
    same_objects(s3_endpoint, "dask-out", tmp_path / "cli")
    assert len(pcr.ImageDataset("s3://pcrtest/dask-out", remote=remote)) == 24
    # From one store into another: the endpoints reach every task and the merge.
    pcr.dask.convert_images("s3://pcrtest/dask-src", "s3://pcrtest/dask-two", num_shards=3, images_per_record=4,
                            input_endpoint=s3_endpoint, output_endpoint=s3_endpoint_b, upload_concurrency=2,
                            progress=False)
    same_objects(s3_endpoint_b, "dask-two", tmp_path / "cli")

    pcr_convert("webdataset", *shards, tmp_path / "wds-cli")
    pcr.dask.convert_webdataset("s3://pcrtest/dask-wds/shard-{0000..0002}.tar", "s3://pcrtest/dask-wds-out",
                                num_shards=2, remote=remote, progress=False)
    same_objects(s3_endpoint, "dask-wds-out", tmp_path / "wds-cli")


def test_s3_parts_stay_in_the_store(client, data_dir, tmp_path, s3_endpoint):
    # No directory is shared: each shard uploads its part beside the output,
    # the merge copies the record files inside the store, and a failed
    # call's finished parts wait there for the next call.
    remote = {"s3_endpoint": s3_endpoint}
    src = image_folder(data_dir, tmp_path / "src")
    bad = data_dir / "bad" / "video-001.progressive.truncated.jpeg"
    shutil.copyfile(bad, src / "class1" / bad.name)
    for f in sorted(p for p in src.rglob("*") if p.is_file()):
        put(s3_endpoint, "pcrtest", "parts-src/" + f.relative_to(src).as_posix(), f.read_bytes())
    with pytest.raises(pcr.CorruptionError, match=bad.name):
        pcr.dask.convert_images("s3://pcrtest/parts-src", "s3://pcrtest/parts-out", num_shards=3, images_per_record=3,
                                remote=remote, progress=False)
    left = keys(s3_endpoint, "parts-out/")
    assert "parts-out/dataset.pcrd" not in left
    finished = [k for k in left if k.endswith("/part.pcrd")]
    assert finished and all(k.startswith("parts-out/.pcr-dask-parts/part-") for k in finished), left
    pcr_convert("images", src, tmp_path / "cli", "--images-per-record", 3, "--skip-bad")
    summary = pcr.dask.convert_images("s3://pcrtest/parts-src", "s3://pcrtest/parts-out", num_shards=3,
                                      images_per_record=3, skip_bad=True, remote=remote, progress=False)
    assert summary["resumed_files"] >= 1
    assert [path for path, _ in summary["skipped"]] == [f"class1/{bad.name}"]
    same_objects(s3_endpoint, "parts-out", tmp_path / "cli")
    assert sorted(k.split("/", 1)[1] for k in keys(s3_endpoint, "parts-out/")) == \
        sorted(p.name for p in (tmp_path / "cli").iterdir()), "parts or strays are left in the store"
    # restart=True starts every part over, in the store too.
    again = pcr.dask.convert_images("s3://pcrtest/parts-src", "s3://pcrtest/parts-again", num_shards=3,
                                    images_per_record=3, skip_bad=True, restart=True, remote=remote, progress=False)
    assert again["resumed_files"] == 0
    same_objects(s3_endpoint, "parts-again", tmp_path / "cli")
    # A parts_dir in the store, given: only this conversion's parts go.
    put(s3_endpoint, "pcrtest", "mine/keep.txt", b"not a part")
    pcr.dask.convert_images("s3://pcrtest/parts-src", "s3://pcrtest/parts-given", num_shards=2, images_per_record=3,
                            skip_bad=True, parts_dir="s3://pcrtest/mine", remote=remote, progress=False)
    same_objects(s3_endpoint, "parts-given", tmp_path / "cli")
    assert keys(s3_endpoint, "mine/") == ["mine/keep.txt"]
    # Parts cut inside files (3 records of 3 files of 4): the merge reads and
    # joins the pieces, and copies the whole files in the store.
    pcr_convert("images", src, tmp_path / "cli-pieces", "--images-per-record", 3, "--records-per-file", 4,
                "--skip-bad")
    pcr.dask.convert_images("s3://pcrtest/parts-src", "s3://pcrtest/parts-pieces", num_shards=3, images_per_record=3,
                            records_per_file=4, skip_bad=True, remote=remote, progress=False)
    same_objects(s3_endpoint, "parts-pieces", tmp_path / "cli-pieces")
    with pytest.raises(ValueError, match="give a local parts_dir"):
        pcr.dask.convert_images(src, tmp_path / "local-out", num_shards=2, parts_dir="s3://pcrtest/mine",
                                remote=remote, progress=False)


def test_a_killed_worker_changes_nothing(client, data_dir, tmp_path):
    src = image_folder(data_dir, tmp_path / "src", copies=60)  # 1,440 images
    pcr_convert("images", src, tmp_path / "cli", "--images-per-record", 16, "--jobs", 2)
    parts = tmp_path / "parts"
    result = {}
    run = threading.Thread(target=lambda: result.update(pcr.dask.convert_images(
        src, tmp_path / "dask", num_shards=2, parts_dir=parts, images_per_record=16, progress=False)))

    def converting_a_finished_file(processing):
        # Once a part holds a finished record file, the worker converting it.
        for i in range(2):
            part = parts / f"part-{i:05d}"
            if any(part.glob("records-*.pcr")) and not (part / "part.pcrd").exists():
                for worker, keys in processing.items():
                    if any(str(k).endswith(f", {i})") for k in keys):
                        return worker
        return None

    kill_worker_running(client, run, converting_a_finished_file)
    assert result, "the conversion failed"
    same_dirs(tmp_path / "dask", tmp_path / "cli")
    assert result["images"] == 1440
    assert result["resumed_files"] >= 1, "the task run again kept the files its first run finished"
    assert list(parts.iterdir()) == [], "the parts are left behind"


def test_a_killed_worker_changes_nothing_with_parts_in_the_store(client, data_dir, tmp_path, s3_endpoint):
    remote = {"s3_endpoint": s3_endpoint}
    src = image_folder(data_dir, tmp_path / "src", copies=40)  # 960 images
    for f in sorted(p for p in src.rglob("*") if p.is_file()):
        put(s3_endpoint, "pcrtest", "kill-src/" + f.relative_to(src).as_posix(), f.read_bytes())
    pcr_convert("images", src, tmp_path / "cli", "--images-per-record", 16, "--jobs", 2)
    result = {}
    run = threading.Thread(target=lambda: result.update(pcr.dask.convert_images(
        "s3://pcrtest/kill-src", "s3://pcrtest/kill-out", num_shards=2, images_per_record=16, remote=remote,
        progress=False)))

    def uploading(processing):
        # Once a part has a record file in the store and no part.pcrd, the worker converting it.
        for i in range(2):
            part = keys(s3_endpoint, f"kill-out/.pcr-dask-parts/part-{i:05d}/")
            if any("/records-" in k for k in part) and not any(k.endswith("/part.pcrd") for k in part):
                for worker, running in processing.items():
                    if any(str(k).endswith(f", {i})") for k in running):
                        return worker
        return None

    kill_worker_running(client, run, uploading)
    assert result, "the conversion failed"
    assert result["images"] == 960
    same_objects(s3_endpoint, "kill-out", tmp_path / "cli")
    assert sorted(k.split("/", 1)[1] for k in keys(s3_endpoint, "kill-out/")) == \
        sorted(p.name for p in (tmp_path / "cli").iterdir()), "parts or strays are left in the store"


def test_bad_input_raises_the_library_exception_or_is_skipped(client, data_dir, tmp_path):
    src = image_folder(data_dir, tmp_path / "src")
    bad = data_dir / "bad" / "video-001.progressive.truncated.jpeg"
    shutil.copyfile(bad, src / "class1" / bad.name)
    with pytest.raises(pcr.CorruptionError, match=bad.name):
        pcr.dask.convert_images(src, tmp_path / "dask", num_shards=3, images_per_record=3, progress=False)
    assert not (tmp_path / "dask" / "dataset.pcrd").exists()
    pcr_convert("images", src, tmp_path / "cli", "--images-per-record", 3, "--skip-bad")
    # Again with skip_bad: the parts that finished are kept.
    summary = pcr.dask.convert_images(src, tmp_path / "dask", num_shards=3, images_per_record=3, skip_bad=True,
                                      progress=False)
    same_dirs(tmp_path / "dask", tmp_path / "cli")
    assert [path for path, _ in summary["skipped"]] == [f"class1/{bad.name}"]
    assert summary["resumed_files"] >= 1
    again = pcr.dask.convert_images(src, tmp_path / "again", num_shards=3, images_per_record=3, skip_bad=True,
                                    restart=True, progress=False)
    same_dirs(tmp_path / "again", tmp_path / "cli")
    assert again["resumed_files"] == 0

    shards = tar_shards(data_dir, tmp_path)
    cut = tmp_path / "cut.tar"
    cut.write_bytes(shards[1].read_bytes()[:3000])
    shards[1] = cut
    with pytest.raises(pcr.CorruptionError, match=r"cut\.tar: .*at offset"):
        pcr.dask.convert_webdataset(shards, tmp_path / "wds-failed", progress=False)
    pcr_convert("webdataset", *shards, tmp_path / "wds-cli", "--skip-bad")
    summary = pcr.dask.convert_webdataset(shards, tmp_path / "wds-dask", skip_bad=True, progress=False)
    same_dirs(tmp_path / "wds-dask", tmp_path / "wds-cli")
    assert any("cut.tar" in path for path, _ in summary["skipped"])


def test_arguments(client, data_dir, tmp_path):
    with pytest.raises(TypeError, match="num_shards="):
        pcr.dask.convert_images(data_dir / "sample", tmp_path / "x", shard=1)
    with pytest.raises(ValueError, match="num_shards must be a positive int"):
        pcr.dask.convert_images(data_dir / "sample", tmp_path / "x", num_shards=0)
    # Options are checked on the client, before any task runs, as one process checks them.
    for bad in ({"images_per_record": 0}, {"scan_script": "no-such-script"}, {"list": "l.txt", "shards": ["a.tar"]}):
        with pytest.raises(Exception) as one_process:
            pcr.convert_images(data_dir / "sample", tmp_path / "x", progress=False, **bad)
        with pytest.raises(type(one_process.value), match=re.escape(str(one_process.value))):
            pcr.dask.convert_images(data_dir / "sample", tmp_path / "x", progress=False, **bad)
        assert not (tmp_path / "x").exists()
    with pytest.raises(TypeError, match=r"(?s)^convert_images\(\): incompatible function arguments.*images_per_recrod"):
        pcr.dask.convert_images(data_dir / "sample", tmp_path / "x", progress=False, images_per_recrod=3)
    with pytest.raises(Exception) as one_process:
        pcr.convert_images(tmp_path / "no-such-dir", tmp_path / "x", progress=False)
    with pytest.raises(type(one_process.value), match=str(one_process.value)):
        pcr.dask.convert_images(tmp_path / "no-such-dir", tmp_path / "x", progress=False)


def test_readme_example(client, data_dir, tmp_path):
    from conftest import README, python_block

    code = python_block("import pcr.dask\n")
    for old, new in [('"tests/data/sample"', repr(str(data_dir / "sample"))),
                     ('"sample-pcr"', repr(str(tmp_path / "sample-pcr"))),
                     ("Client()", f"Client({client.scheduler.address!r})")]:
        assert old in code, old
        code = code.replace(old, new)
    scope = {}
    exec(compile(code, str(README), "exec"), scope)
    scope["client"].close()
    pcr_convert("images", data_dir / "sample", tmp_path / "cli", "--images-per-record", 8)
    same_dirs(tmp_path / "sample-pcr", tmp_path / "cli")
    assert scope["summary"]["images"] == 24


def table_inputs(to, rows=75000, big_cell_row=None):
    """A CSV (quoted cells with line breaks and quotes among them) and JSON
    Lines of map features, each over three 1 MiB splits; big_cell_row's note
    is 3 MiB."""
    rng = random.Random(7)
    csv = ["id,score,tag,note,when"]
    jsonl = []
    for i in range(rows):
        note = rng.choice(['"two\nlines"', '"a ""quoted"" word"', "plain", ""])
        if i == big_cell_row:
            note = '"' + "x\n" * (3 << 19) + '"'
        csv.append(f"{i},{rng.random():.6f},{rng.choice('abc')},{note},2026-01-{1 + i % 28:02d}T00:00:00Z")
        late = f', "late": {rng.randrange(9)}' if i > rows // 2 else ""
        jsonl.append(f'{{"label": {i % 2}{late}, "dense": {{"{rng.randrange(4)}": 0.5}}, '
                     f'"sparse": {{"{100 + i % 3}": [{rng.randrange(10**6)}, 2]}}}}')
    (to / "rows.csv").write_text("\n".join(csv) + "\n")
    (to / "rows.jsonl").write_text("\n".join(jsonl) + "\n")
    return to / "rows.csv", to / "rows.jsonl"


def test_tables_equal_the_one_process_conversion(client, tmp_path):
    for path in table_inputs(tmp_path):
        assert path.stat().st_size > 3 << 20
        cli, dask = tmp_path / f"cli{path.suffix}", tmp_path / f"dask{path.suffix}"
        pcr_convert("table", path, cli, "--split-mb", 1)
        summary = pcr.dask.convert_table(path, dask, num_shards=3, split_mb=1, progress=False)
        assert (dask / "rows.pcr").read_bytes() == (cli / "rows.pcr").read_bytes()
        table = pcr.Table(str(dask / "rows.pcr"))
        assert summary["rows"] == table.num_rows == 75000 and summary["stripes"] == table.num_stripes >= 4
        assert summary["input_bytes"] == path.stat().st_size and summary["num_shards"] == 3
        assert sum(s["rows"] for s in summary["shards"]) == 75000
        assert {s["worker"] for s in summary["shards"]} <= set(client.scheduler_info()["workers"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cli.csv", "cli.jsonl", "dask.csv", "dask.jsonl", "rows.csv",
                                                          "rows.jsonl"], "the parts are left behind"
    # The default split (64 MiB) is one here: one shard holds every row, as one process writes it.
    pcr.dask.convert_table(tmp_path / "rows.csv", tmp_path / "default", progress=False)
    pcr_convert("table", tmp_path / "rows.csv", tmp_path / "cli-default")
    assert (tmp_path / "default" / "rows.pcr").read_bytes() == (tmp_path / "cli-default" / "rows.pcr").read_bytes()
    with pytest.raises(ValueError, match="rows.pcr: already exists"):
        pcr.dask.convert_table(tmp_path / "rows.csv", tmp_path / "default", progress=False)
    shutil.copy(tmp_path / "rows.csv", tmp_path / "other.csv")
    with pytest.raises(ValueError, match=r"other.pcr: would be a second table in .*default \(beside rows.pcr\)"):
        pcr.dask.convert_table(tmp_path / "other.csv", tmp_path / "default", progress=False)


def test_table_parts_are_kept_only_for_the_same_input_and_nothing_else_is_removed(client, tmp_path):
    csv, _ = table_inputs(tmp_path)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "keep.txt").write_text("not pcr's")
    with pytest.raises(ValueError, match="out: not a directory"):
        (tmp_path / "out").write_text("a file where the output directory goes")
        pcr.dask.convert_table(csv, tmp_path / "out", num_shards=3, split_mb=1, parts_dir=mine, progress=False)
    (tmp_path / "out").unlink()
    # A merge that fails (its directory cannot be made) leaves the finished parts.
    (tmp_path / "blocker").write_text("a file where a directory goes")
    with pytest.raises(Exception, match="blocker"):
        pcr.dask.convert_table(csv, tmp_path / "blocker" / "out", num_shards=3, split_mb=1, parts_dir=mine,
                               progress=False)
    assert len(list(mine.glob("*.pcr"))) == 3
    # A new call into another output keeps none of them; a success into blocker/out removes them.
    # The same size of input, other bytes: no part of the first call is kept.
    text = csv.read_text()
    csv.write_text(text.replace(",a,", ",z,", 1))
    (tmp_path / "blocker").unlink()
    summary = pcr.dask.convert_table(csv, tmp_path / "blocker" / "out", num_shards=3, split_mb=1, parts_dir=mine,
                                     progress=False)
    assert not any(s["kept"] for s in summary["shards"])
    pcr_convert("table", csv, tmp_path / "cli", "--split-mb", 1)
    assert (tmp_path / "blocker" / "out" / "rows.pcr").read_bytes() == (tmp_path / "cli" / "rows.pcr").read_bytes()
    assert sorted(p.name for p in mine.iterdir()) == ["keep.txt"]
    # Unchanged input and options after a failure: the parts are kept.
    (tmp_path / "blocker2").write_text("in the way")
    with pytest.raises(Exception, match="blocker2"):
        pcr.dask.convert_table(csv, tmp_path / "blocker2" / "out", num_shards=3, split_mb=1, parts_dir=mine,
                               progress=False)
    (tmp_path / "blocker2").unlink()
    summary = pcr.dask.convert_table(csv, tmp_path / "blocker2" / "out", num_shards=3, split_mb=1, parts_dir=mine,
                                     progress=False)
    assert [s["kept"] for s in summary["shards"]] == [True, True, True]
    assert (tmp_path / "blocker2" / "out" / "rows.pcr").read_bytes() == (tmp_path / "cli" / "rows.pcr").read_bytes()
    assert sorted(p.name for p in mine.iterdir()) == ["keep.txt"]
    # Parts in the output directory, one left by a call of other options, are not tables beside the output.
    here = tmp_path / "here"
    here.mkdir()
    prefix = "table-" + hashlib.sha256(os.path.abspath(here).encode()).hexdigest()[:12] + "-part-"
    shutil.copy(tmp_path / "cli" / "rows.pcr", here / f"{prefix}00000-{'0' * 16}.pcr")
    pcr.dask.convert_table(csv, here, num_shards=3, split_mb=1, parts_dir=here, progress=False)
    assert (here / "rows.pcr").read_bytes() == (tmp_path / "cli" / "rows.pcr").read_bytes()
    assert sorted(p.name for p in here.iterdir()) == ["rows.pcr"]


def test_table_s3_to_s3(client, tmp_path, s3_endpoint, s3_endpoint_b):
    remote = {"s3_endpoint": s3_endpoint}
    # A 3 MiB cell across the first split's end: a shard reads on past the
    # bytes it fetched first, and fetches more.
    csv, _ = table_inputs(tmp_path, rows=40000, big_cell_row=20000)
    put(s3_endpoint, "pcrtest", "dask-table/rows.csv", csv.read_bytes())
    pcr_convert("table", csv, tmp_path / "cli", "--split-mb", 1)
    summary = pcr.dask.convert_table("s3://pcrtest/dask-table/rows.csv", "s3://pcrtest/dask-table-out", num_shards=3,
                                     split_mb=1, remote=remote, work_dir=tmp_path / "work", progress=False)
    assert summary["rows"] == 40000
    same_objects(s3_endpoint, "dask-table-out", tmp_path / "cli")
    pcr.dask.convert_table("s3://pcrtest/dask-table/rows.csv", "s3://pcrtest/dask-table-two", num_shards=3,
                           split_mb=1, input_endpoint=s3_endpoint, output_endpoint=s3_endpoint_b, progress=False)
    same_objects(s3_endpoint_b, "dask-table-two", tmp_path / "cli")
    assert keys(s3_endpoint_b, "dask-table-two/") == ["dask-table-two/rows.pcr"], "parts are left in the store"
    # Bad input in object storage: the one-process error, lines counted from the object's start.
    bad = tmp_path / "bad.csv"
    bad.write_text(csv.read_text() + "1,2\n")
    put(s3_endpoint, "pcrtest", "dask-table/bad.csv", bad.read_bytes())
    with pytest.raises(Exception) as one_process:
        pcr.convert_table(bad, tmp_path / "one", split_mb=1)
    with pytest.raises(type(one_process.value)) as sharded:
        pcr.dask.convert_table("s3://pcrtest/dask-table/bad.csv", tmp_path / "bad-out", num_shards=3, split_mb=1,
                               remote=remote, progress=False)
    assert str(sharded.value) == str(one_process.value).replace(str(bad), "s3://pcrtest/dask-table/bad.csv")


def test_a_killed_table_worker_changes_nothing(client, tmp_path):
    csv, _ = table_inputs(tmp_path, rows=200000)
    pcr_convert("table", csv, tmp_path / "cli", "--split-mb", 1)
    result = {}
    run = threading.Thread(target=lambda: result.update(pcr.dask.convert_table(
        csv, tmp_path / "dask", num_shards=4, split_mb=1, progress=False)))
    kill_worker_running(client, run, lambda processing: next(
        (worker for worker, keys in processing.items() if any("pcr-convert-" in str(k) for k in keys)), None))
    assert result, "the conversion failed"
    assert (tmp_path / "dask" / "rows.pcr").read_bytes() == (tmp_path / "cli" / "rows.pcr").read_bytes()


def test_bad_table_input_raises_the_one_process_error(client, tmp_path):
    csv, _ = table_inputs(tmp_path)
    text = csv.read_text()
    csv.write_text(text[:-1] + ",1\n")  # a last row of one cell too many
    with pytest.raises(Exception) as one_process:
        pcr.convert_table(csv, tmp_path / "one", split_mb=1)
    assert re.search(r"rows\.csv: line \d+, column \d+: row has 6 cells", str(one_process.value))
    with pytest.raises(type(one_process.value)) as sharded:
        pcr.dask.convert_table(csv, tmp_path / "dask", num_shards=3, split_mb=1, progress=False)
    assert str(sharded.value) == str(one_process.value)
    assert not (tmp_path / "dask" / "rows.pcr").exists()
    # Options are checked on the client, before any task runs.
    with pytest.raises(TypeError, match=r"(?s)^convert_table\(\): incompatible function arguments.*split_md"):
        pcr.dask.convert_table(csv, tmp_path / "x", split_md=1)
    with pytest.raises(ValueError, match="split_mb must be positive"):
        pcr.dask.convert_table(csv, tmp_path / "x", split_mb=0)
    with pytest.raises(ValueError, match="on_bad_value must be"):
        pcr.dask.convert_table(csv, tmp_path / "x", on_bad_value="skip")
    # Shards reach bytes apart: compressed data (known by its bytes, whatever its name) is refused before any task.
    (tmp_path / "rows.csv.gz").write_bytes(gzip.compress(text.encode()))
    with pytest.raises(ValueError, match=r"rows\.csv\.gz: gzip data cannot be converted in shards, whose bytes are "
                                         r"reached apart: convert it in one process"):
        pcr.dask.convert_table(tmp_path / "rows.csv.gz", tmp_path / "x")
    (tmp_path / "packed.csv").write_bytes(gzip.compress(text.encode()))
    with pytest.raises(ValueError, match=r"packed\.csv: gzip data cannot be converted in shards"):
        pcr.dask.convert_table(tmp_path / "packed.csv", tmp_path / "x", num_shards=2, progress=False)


def test_table_notes_equal_the_one_process_notes(client, tmp_path):
    csv, _ = table_inputs(tmp_path)
    lines = csv.read_text().split("\n")
    for at in (100, 70000):  # a word in the score column, in the first shard and in the last
        lines[at] = lines[at].replace(",", ",oops", 1).replace("oops0.", "oops", 1)
    csv.write_text("\n".join(lines))
    one = pcr.convert_table(csv, tmp_path / "one", split_mb=1, on_bad_value="missing")
    assert any("2 values not float64 stored as missing" in n for n in one["notes"]), one["notes"]
    (tmp_path / "blocker").write_text("in the way")
    with pytest.raises(Exception, match="blocker"):
        pcr.dask.convert_table(csv, tmp_path / "blocker" / "out", num_shards=3, split_mb=1, on_bad_value="missing",
                               parts_dir=tmp_path / "parts", progress=False)
    (tmp_path / "blocker").unlink()
    summary = pcr.dask.convert_table(csv, tmp_path / "blocker" / "out", num_shards=3, split_mb=1,
                                     on_bad_value="missing", parts_dir=tmp_path / "parts", progress=False)
    assert [s["kept"] for s in summary["shards"]] == [True] * 3  # the notes come from the kept parts' reports
    assert summary["notes"] == one["notes"]
    assert (tmp_path / "blocker" / "out" / "rows.pcr").read_bytes() == (tmp_path / "one" / "rows.pcr").read_bytes()
    summary = pcr.dask.convert_table(csv, tmp_path / "again", num_shards=3, split_mb=1, on_bad_value="missing",
                                     progress=False)
    assert summary["notes"] == one["notes"]
