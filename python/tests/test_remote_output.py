"""Conversions into an S3-compatible store (s3rver on loopback)."""
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


def test_readme_snippet(data_dir, s3_endpoint, monkeypatch):
    from test_readme import python_block

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
