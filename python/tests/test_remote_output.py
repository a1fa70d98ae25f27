"""Conversions into and from an S3-compatible store (s3rver on loopback)."""
import pathlib
import urllib.request

import pytest

import pcr


def object_bytes(endpoint, key):
    with urllib.request.urlopen(f"{endpoint}/pcrtest/{key}") as r:
        return r.read()


def test_convert_images_to_s3(data_dir, tmp_path, s3_endpoint, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "S3RVER")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "S3RVER")
    remote = {"s3_endpoint": s3_endpoint}
    local = tmp_path / "local"
    pcr.convert_images(str(data_dir / "sample"), str(local), images_per_record=5, progress=False)
    work = tmp_path / "work"
    summary = pcr.convert_images(str(data_dir / "sample"), "s3://pcrtest/py-images", images_per_record=5,
                                 work_dir=str(work), remote=remote, progress=False)
    assert summary["images"] == 24
    for f in sorted(local.iterdir()):
        assert object_bytes(s3_endpoint, f"py-images/{f.name}") == f.read_bytes(), f.name
    assert not (work / "out").exists()
    ds = pcr.ImageDataset("s3://pcrtest/py-images", remote=remote)
    assert len(ds) == 24
    with pytest.raises(ValueError, match="already holds a pcr dataset"):
        pcr.convert_images(str(data_dir / "sample"), "s3://pcrtest/py-images", remote=remote, progress=False)


def test_convert_table_to_s3(data_dir, tmp_path, s3_endpoint, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "S3RVER")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "S3RVER")
    remote = {"s3_endpoint": s3_endpoint}
    csv = data_dir / "tabular" / "Soybean.csv"
    local = pcr.convert_table(str(csv), str(tmp_path / "local"), rows_per_stripe=100)
    report = pcr.convert_table(str(csv), "s3://pcrtest/py-table", rows_per_stripe=100, remote=remote,
                               work_dir=str(tmp_path / "work"))
    assert report["path"] == "s3://pcrtest/py-table/Soybean.pcr"
    with open(local["path"], "rb") as f:
        assert object_bytes(s3_endpoint, "py-table/Soybean.pcr") == f.read()
    table = pcr.Table(report["path"], remote=remote)
    assert table.num_rows == pcr.Table(local["path"]).num_rows


def test_upload_options_checked(data_dir, tmp_path):
    with pytest.raises(ValueError, match="part_size_mb must be 5..5120"):
        pcr.convert_images(str(data_dir / "sample"), "s3://pcrtest/x", part_size_mb=4, progress=False)
    with pytest.raises(ValueError, match="multipart_threshold_mb must be positive"):
        pcr.convert_table(str(data_dir / "tabular" / "Soybean.csv"), "s3://pcrtest/x", multipart_threshold_mb=0)
    with pytest.raises(ValueError, match="unknown remote option"):
        pcr.convert_images(str(data_dir / "sample"), "s3://pcrtest/x", remote={"bogus": 1}, progress=False)
    with pytest.raises(ValueError, match="upload_concurrency must be 1..64"):
        pcr.convert_images(str(data_dir / "sample"), "s3://pcrtest/x", upload_concurrency=0, progress=False)
    with pytest.raises(ValueError, match="upload_memory_mb must be positive"):
        pcr.merge("s3://pcrtest/x", [str(tmp_path)], upload_memory_mb=0)
    with pytest.raises(ValueError, match="output_endpoint must be an http"):
        pcr.convert_table(str(data_dir / "tabular" / "Soybean.csv"), "s3://pcrtest/x", output_endpoint="minio:9000")


def test_two_stores(data_dir, tmp_path, s3_endpoint, s3_endpoint_b, monkeypatch):
    """input_endpoint and output_endpoint win over AWS_ENDPOINT_URL: the local conversion's bytes."""
    import sys

    sys.path.insert(0, str(pathlib.Path(__file__).parents[2] / "tests"))
    from s3_put import put

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "S3RVER")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "S3RVER")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    sample = data_dir / "sample"
    for f in sorted(f for f in sample.rglob("*") if f.is_file()):
        put(s3_endpoint, "pcrtest", "two-src/" + f.relative_to(sample).as_posix(), f.read_bytes())
    csv = data_dir / "tabular" / "Soybean.csv"
    put(s3_endpoint, "pcrtest", "two-tab/Soybean.csv", csv.read_bytes())
    ends = {"input_endpoint": s3_endpoint, "output_endpoint": s3_endpoint_b}
    local = tmp_path / "local"
    pcr.convert_images(str(sample), str(local), images_per_record=5, progress=False)
    pcr.convert_images("s3://pcrtest/two-src", "s3://pcrtest/two-img", images_per_record=5, upload_concurrency=3,
                       progress=False, **ends)
    for f in sorted(local.iterdir()):
        assert object_bytes(s3_endpoint_b, f"two-img/{f.name}") == f.read_bytes(), f.name
    table = pcr.convert_table(str(csv), str(tmp_path / "tlocal"), rows_per_stripe=100)
    pcr.convert_table("s3://pcrtest/two-tab/Soybean.csv", "s3://pcrtest/two-out", rows_per_stripe=100, **ends)
    with open(table["path"], "rb") as f:
        assert object_bytes(s3_endpoint_b, "two-out/Soybean.pcr") == f.read()
    with pytest.raises(OSError, match="127.0.0.1 port 9"):
        pcr.convert_images("s3://pcrtest/two-src", str(tmp_path / "x"), progress=False)


def test_readme_snippet(data_dir, s3_endpoint, monkeypatch):
    from conftest import python_block

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "S3RVER")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "S3RVER")
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_endpoint)
    code = python_block('pcr.convert_images("train"')
    code = (code.replace('"train"', repr(str(data_dir / "sample"))).replace("http://minio:9000", s3_endpoint)
            .replace("s3://bucket/", "s3://pcrtest/readme-"))
    scope = {"pcr": pcr}
    exec("import pcr.torch\n" + code, scope)
    images = sum(len(batch[0]) for batch in scope["loader"])
    assert images == 24


def test_convert_from_s3(data_dir, tmp_path, s3_endpoint, monkeypatch):
    import io
    import sys
    import tarfile

    sys.path.insert(0, str(pathlib.Path(__file__).parents[2] / "tests"))
    from s3_put import put

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "S3RVER")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "S3RVER")
    remote = {"s3_endpoint": s3_endpoint, "list_page_size": 5}
    sample = data_dir / "sample"
    images = sorted(f for f in sample.rglob("*") if f.is_file())
    for f in images:
        put(s3_endpoint, "pcrtest", "py-src/" + f.relative_to(sample).as_posix(), f.read_bytes())
    shard = io.BytesIO()
    with tarfile.open(fileobj=shard, mode="w") as tar:
        for i, f in enumerate(f for f in images if f.suffix in (".jpg", ".jpeg")):
            for ext, data in (("cls", str(i % 3).encode()), ("jpg", f.read_bytes())):
                info = tarfile.TarInfo(f"s{i:03d}.{ext}")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    (tmp_path / "shard-0.tar").write_bytes(shard.getvalue())
    put(s3_endpoint, "pcrtest", "py-wds/shard-0.tar", shard.getvalue())
    csv = data_dir / "tabular" / "Soybean.csv"
    put(s3_endpoint, "pcrtest", "py-tab/Soybean.csv", csv.read_bytes())

    def same(a, b):
        assert sorted(p.name for p in a.iterdir()) == sorted(p.name for p in b.iterdir())
        for f in a.iterdir():
            assert f.read_bytes() == (b / f.name).read_bytes(), f.name

    pcr.convert_images(str(sample), str(tmp_path / "l-img"), images_per_record=5, progress=False)
    summary = pcr.convert_images("s3://pcrtest/py-src", str(tmp_path / "r-img"), images_per_record=5, remote=remote,
                                 progress=False)
    assert summary["images"] == 24
    same(tmp_path / "l-img", tmp_path / "r-img")
    pcr.convert_webdataset(str(tmp_path / "shard-{0..0}.tar"), str(tmp_path / "l-wds"), progress=False)
    pcr.convert_webdataset("s3://pcrtest/py-wds/shard-{0..0}.tar", str(tmp_path / "r-wds"), remote=remote,
                           progress=False)
    same(tmp_path / "l-wds", tmp_path / "r-wds")
    pcr.convert_table(str(csv), str(tmp_path / "l-tab"), rows_per_stripe=100)
    pcr.convert_table("s3://pcrtest/py-tab/Soybean.csv", str(tmp_path / "r-tab"), rows_per_stripe=100, remote=remote)
    same(tmp_path / "l-tab", tmp_path / "r-tab")
    with pytest.raises(OSError, match="s3://nobucket/x/: cannot list: HTTP 404 NoSuchBucket"):
        pcr.convert_images("s3://nobucket/x", str(tmp_path / "x"), remote=remote, progress=False)
    missing = r"s3://pcrtest/py-wds/shard-9.tar: HTTP 404 NoSuchKey: .* \(not found\)"
    with pytest.raises(FileNotFoundError, match=missing):
        pcr.convert_webdataset("s3://pcrtest/py-wds/shard-9.tar", str(tmp_path / "x"), remote=remote, progress=False)


def test_remote_options_of_the_checks(data_dir, tmp_path, s3_endpoint, monkeypatch):
    """doc/network.md's etag_is_md5 and answer_timeout_ms: taken, typed, and the same bytes."""
    import sys

    sys.path.insert(0, str(pathlib.Path(__file__).parents[2] / "tests"))
    from s3_put import put

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "S3RVER")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "S3RVER")
    csv = data_dir / "tabular" / "Soybean.csv"
    put(s3_endpoint, "pcrtest", "py-opts/Soybean.csv", csv.read_bytes())
    pcr.convert_table(str(csv), str(tmp_path / "l"), rows_per_stripe=100)
    remote = {"s3_endpoint": s3_endpoint, "etag_is_md5": False, "answer_timeout_ms": 5000}
    pcr.convert_table("s3://pcrtest/py-opts/Soybean.csv", str(tmp_path / "r"), rows_per_stripe=100, remote=remote)
    assert (tmp_path / "l" / "Soybean.pcr").read_bytes() == (tmp_path / "r" / "Soybean.pcr").read_bytes()
    with pytest.raises(TypeError, match="remote option etag_is_md5 must be a bool"):
        pcr.convert_table("s3://pcrtest/py-opts/Soybean.csv", str(tmp_path / "x"), remote={"etag_is_md5": 1})
