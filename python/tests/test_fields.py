import json
import pathlib

import numpy as np
import pytest

import pcr

TYPES = {"weight": "float32", "blob": "bytes", "box32": "float32_list"}


@pytest.fixture(scope="module")
def fields_dataset(data_dir, tmp_path_factory):
    """The bundled sample with the fields of tests/data/fields/sample.jsonl."""
    out = tmp_path_factory.mktemp("fields") / "ds"
    pcr.convert_images(str(data_dir / "sample"), str(out), images_per_record=10, jobs=2,
                       fields=str(data_dir / "fields" / "sample.jsonl"), field_types=TYPES,
                       field_order=["caption"])
    return out


def rows(data_dir):
    with open(data_dir / "fields" / "sample.jsonl", encoding="utf-8") as f:
        return {r["path"]: r for r in map(json.loads, f)}


def expected(row, name):
    v = row.get(name)
    if v is not None and name == "blob":
        return v.encode()
    if v is not None and name in ("weight",):
        return float(np.float32(v))
    if v is not None and name == "box32":
        return [float(np.float32(x)) for x in v]
    return v


NAMES = ["caption", "score", "count", "tags", "boxes", "weight", "blob", "box32"]


def test_field_schema_gives_names_types_and_counts(fields_dataset, data_dir):
    ds = pcr.ImageDataset(str(fields_dataset))
    schema = {f["name"]: f for f in ds.field_schema}
    assert [f["name"] for f in ds.field_schema] == ["caption", "score", "count", "tags", "boxes", "weight", "box32",
                                                    "blob"]
    assert {n: f["type"] for n, f in schema.items()} == {
        "caption": "string", "score": "float64", "count": "int64", "tags": "id_list", "boxes": "float64_list",
        "weight": "float32", "blob": "bytes", "box32": "float32_list"}
    r = rows(data_dir)
    for name in NAMES:
        assert schema[name]["present_count"] == sum(row.get(name) is not None for row in r.values()), name


def test_every_sample_reads_back_its_fields(fields_dataset, data_dir):
    ds = pcr.ImageDataset(str(fields_dataset))
    r = rows(data_dir)
    for i in range(len(ds)):
        _, key = ds.sample(i)
        got = ds.fields(i, NAMES)
        assert got == {n: expected(r[key], n) for n in NAMES}, key


def test_read_fields_gives_numpy_columns_in_dataset_order(fields_dataset, data_dir):
    ds = pcr.ImageDataset(str(fields_dataset))
    r = rows(data_dir)
    keys = [ds.sample(i)[1] for i in range(len(ds))]
    cols = ds.read_fields(["score", "tags", "caption", "blob"])
    score = cols["score"]
    assert score["values"].dtype == np.float64 and score["presence"].dtype == np.bool_
    for i, key in enumerate(keys):
        assert score["presence"][i] == (r[key].get("score") is not None)
        if score["presence"][i]:
            assert score["values"][i] == r[key]["score"]
        tags = cols["tags"]
        got = tags["values"][tags["offsets"][i]:tags["offsets"][i + 1]].tolist()
        assert got == (r[key].get("tags") or [])
        cap = cols["caption"]
        assert bytes(cap["values"][cap["offsets"][i]:cap["offsets"][i + 1]]).decode() == r[key]["caption"]
    part = ds.read_fields(["count"], first_record=1, num_records=1)
    assert len(part["count"]["presence"]) == 10
    with pytest.raises(ValueError, match="no field 'nope'"):
        ds.read_fields(["nope"])
    with pytest.raises(IndexError):
        ds.read_fields(["count"], first_record=2, num_records=5)


def test_read_record_gives_fields_with_or_without_jpegs(fields_dataset, data_dir):
    ds = pcr.ImageDataset(str(fields_dataset))
    r = rows(data_dir)
    assert ds.num_records == 3
    assert ds.counts["segment_bytes"] == 0  # the sample has no segments to keep apart
    only = ds.read_record(0, fidelity=0, fields=["caption"])
    assert "jpegs" not in only and len(only["keys"]) == 10
    full = ds.read_record(0, fields=["caption", "weight"])
    assert len(full["jpegs"]) == 10
    for j, key in enumerate(full["keys"]):
        assert full["jpegs"][j] == ds.read(j)
        assert full["fields"]["weight"]["values"][j] == np.float32(r[key]["weight"])
    assert list(full["labels"]) == [ds.sample(j)[0] for j in range(10)]


def test_a_fields_file_row_without_an_image_is_an_error(data_dir, tmp_path):
    bad = tmp_path / "f.jsonl"
    bad.write_text((data_dir / "fields" / "sample.jsonl").read_text() + '{"path": "no/such.jpg"}\n')
    with pytest.raises(ValueError, match=r"f\.jsonl: line 25: image 'no/such\.jpg' is not among the source images"):
        pcr.convert_images(str(data_dir / "sample"), str(tmp_path / "ds"), fields=str(bad))
    with pytest.raises(ValueError, match="unknown type"):
        pcr.convert_images(str(data_dir / "sample"), str(tmp_path / "ds"), fields=str(bad),
                           field_types={"caption": "text"})


def test_webdataset_shards_convert_with_their_fields(data_dir, tmp_path):
    import io
    import tarfile

    images = sorted(p for p in (data_dir / "sample").rglob("*") if p.is_file())
    expected = {}
    for s in range(2):
        with tarfile.open(tmp_path / f"shard-{s:06d}.tar", "w") as tar:
            for i, image in enumerate(images[s * 4:(s + 1) * 4]):
                key = f"{s:04d}{i:05d}"
                meta = {"caption": f"photo {image.name}", "similarity": 0.25 + i / 8, "width": 100 + i,
                        "original": {"w": i}}
                members = {"jpg": image.read_bytes(), "txt": f"photo {image.name}".encode(),
                           "cls": str(i).encode(), "json": json.dumps(meta).encode()}
                for ext, data in members.items():
                    info = tarfile.TarInfo(f"{key}.{ext}")
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
                expected[key] = (i, meta)
    summary = pcr.convert_webdataset(str(tmp_path / "shard-{000000..000001}.tar"), str(tmp_path / "ds"),
                                     images_per_record=3, jobs=2, field_types={"width": "float32"})
    assert summary["images"] == 8
    ds = pcr.ImageDataset(str(tmp_path / "ds"))
    assert {f["name"]: f["type"] for f in ds.field_schema} == {
        "txt": "string", "cls": "int64", "caption": "string", "similarity": "float64", "width": "float32",
        "original": "string"}
    for i in range(len(ds)):
        label, key = ds.sample(i)
        cls, meta = expected[key]
        assert label == cls
        got = ds.fields(i, ["txt", "caption", "similarity", "width", "original"])
        assert got == {"txt": meta["caption"], "caption": meta["caption"], "similarity": meta["similarity"],
                       "width": float(meta["width"]), "original": json.dumps(meta["original"])}
    bad = tmp_path / "cut.tar"
    bad.write_bytes((tmp_path / "shard-000000.tar").read_bytes()[:3000])
    with pytest.raises(pcr.CorruptionError, match=r"cut\.tar: .*at offset"):
        pcr.convert_webdataset([str(bad)], str(tmp_path / "bad"))


def test_sample_iterator_and_torch_loaders_carry_fields(fields_dataset, data_dir):
    torch = pytest.importorskip("torch")
    import pcr.torch

    r = rows(data_dir)
    ds = pcr.ImageDataset(str(fields_dataset))
    keys = [ds.sample(i)[1] for i in range(len(ds))]
    it = pcr.SampleIterator(ds, batch_size=5, fidelity=1, seed=3, fields=["caption", "tags", "score"])
    seen = 0
    for indices, labels, jpegs, fields in it:
        assert len(fields["caption"]) == len(jpegs) == (5 if seen < 20 else 4)
        for j, i in enumerate(indices):
            row = r[keys[i]]
            assert fields["caption"][j] == row["caption"]
            assert fields["tags"][j] == row.get("tags")
            assert fields["score"][j] == row.get("score")
        seen += len(indices)
    assert seen == 24  # the last batch short

    loader = pcr.torch.ImageLoader(str(fields_dataset), batch_size=4, fidelity=2, size=32, seed=1,
                                   fields=["caption", "blob"])
    batches = list(loader)
    assert len(batches) == len(loader) == 6
    captions = set()
    for images, labels, fields in batches:
        assert images.shape == (4, 3, 32, 32) and labels.shape == (4,)
        assert len(fields["caption"]) == 4 and all(b is None or isinstance(b, bytes) for b in fields["blob"])
        captions.update(fields["caption"])
    assert captions == {row["caption"] for row in r.values()}

    mapped = pcr.torch.Dataset(str(fields_dataset), fidelity=1, fields=["weight"])
    image, label, fields = mapped[3]
    assert fields == {"weight": float(np.float32(r[keys[3]]["weight"]))}
    with pytest.raises(ValueError, match="no field 'nope'"):
        pcr.torch.ImageLoader(str(fields_dataset), batch_size=4, fields=["nope"])


def test_coco_example_stores_boxes_and_categories(data_dir, tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "coco_to_pcr", pathlib.Path(__file__).parents[2] / "examples" / "coco_to_pcr.py")
    coco = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(coco)
    names = ["textures/ring.jpg", "textures/hard.jpg", "video/video-001.jpeg", "misc/testimggray.jpg"]
    images, annotations = [], []
    for i, name in enumerate(names):
        h, w, _ = pcr.decode((data_dir / "sample" / name).read_bytes()).shape
        images.append({"id": 100 + i, "file_name": name, "width": w, "height": h})
        for j in range(i):  # image i has i objects; the first has none
            box = [round(w * 0.1 * (j + 1), 2), round(h * 0.05, 2), round(w * 0.3, 2), round(h * 0.25 + j, 2)]
            annotations.append({"id": 10 * i + j, "image_id": 100 + i, "category_id": 1 + (i + j) % 3,
                                "bbox": box, "area": box[2] * box[3], "iscrowd": int(j == 2)})
    instances = {"images": images, "annotations": annotations,
                 "categories": [{"id": c, "name": n} for c, n in ((1, "cat"), (2, "dog"), (3, "car"))]}
    (tmp_path / "instances.json").write_text(json.dumps(instances))
    summary = coco.convert(data_dir / "sample", tmp_path / "instances.json", tmp_path / "ds", images_per_record=3)
    assert summary["images"] == 4
    ds = pcr.ImageDataset(str(tmp_path / "ds"))
    by_image = {img["file_name"]: img for img in images}
    for i in range(len(ds)):
        label, key = ds.sample(i)
        assert label == -1
        got = ds.fields(i, ["image_id", "boxes", "category_ids", "iscrowd"])
        image = by_image[key]
        mine = [a for a in annotations if a["image_id"] == image["id"]]
        assert got["image_id"] == image["id"]
        assert np.array_equal(np.array(got["boxes"], dtype=np.float32).reshape(-1, 4),
                              np.array([a["bbox"] for a in mine], dtype=np.float32).reshape(-1, 4))
        assert got["category_ids"] == [a["category_id"] for a in mine]
        assert got["iscrowd"] == [a["iscrowd"] for a in mine]


def test_segments_kept_apart_come_back_with_metadata(data_dir, tmp_path):
    src = tmp_path / "src" / "a"
    src.mkdir(parents=True)
    original = (data_dir / "segments" / "jpg-cmyk-2.jpg").read_bytes()
    (src / "c.jpg").write_bytes(original)
    pcr.convert_images(str(tmp_path / "src"), str(tmp_path / "ds"))
    ds = pcr.ImageDataset(str(tmp_path / "ds"))
    assert ds.counts["segment_bytes"] > 0
    comment = b"\xff\xfe"
    assert comment in original[:200]
    assert comment not in ds.read(0)[:200]
    full = ds.read(0, metadata=True)
    assert comment in full[:200]
    assert np.array_equal(pcr.decode(full), pcr.decode(original))
    rec = ds.read_record(0, metadata=True)
    assert rec["jpegs"][0] == full
