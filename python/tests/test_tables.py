import csv
import gc
import json
import os
import pathlib

import numpy as np
import pytest

import pcr


@pytest.fixture(scope="module")
def soybean(data_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("tables")
    report = pcr.convert_table(str(data_dir / "tabular" / "Soybean.csv"), str(out), rows_per_stripe=100)
    with open(data_dir / "tabular" / "Soybean.csv", newline="") as f:
        rows = list(csv.reader(f))
    return report["path"], rows


def test_schema_and_columns_match_the_csv(soybean):
    path, rows = soybean
    t = pcr.Table(path)
    header, body = rows[0], rows[1:]
    assert [f["name"] for f in t.schema] == header
    assert t.num_rows == len(body)
    assert t.num_stripes == (len(body) + 99) // 100
    for j, f in enumerate(t.schema):
        col = t.read([f["name"]])[f["name"]]
        cells = [r[j] for r in body]
        present = np.array([c not in ("", "NA") for c in cells])
        assert np.array_equal(col["presence"], present), f["name"]
        if f["type"] == "int64":
            want = np.array([int(c) if p else 0 for c, p in zip(cells, present)], dtype=np.int64)
            assert np.array_equal(col["values"], want)
        elif f["type"] == "string":
            values, offsets = col["values"].tobytes(), col["offsets"]
            got = [values[offsets[r]:offsets[r + 1]].decode() for r in range(len(cells))]
            assert [g for g, p in zip(got, present) if p] == [c for c, p in zip(cells, present) if p]


def test_stripe_ranges_and_unknown_features(soybean):
    path, rows = soybean
    t = pcr.Table(path)
    name = t.schema[1]["name"]
    whole = t.read([name])[name]
    second = t.read([name], first_stripe=1, num_stripes=2)[name]
    assert np.array_equal(second["values"], whole["values"][100:300])
    with pytest.raises(ValueError) as refused:
        t.read(["no such feature"])
    # The message names the feature and lists the table's, in schema order.
    listed = ", ".join(f["name"] for f in t.schema[:20])
    assert f"no feature 'no such feature' (features: {listed}, ... ({len(t.schema)} in all))" in str(refused.value)
    last = t.schema[-1]["name"]
    with pytest.raises(ValueError, match=f"no feature '{last.upper()}'; did you mean '{last}'"):
        t.read([last.upper()])
    with pytest.raises(ValueError):
        t.read([name], first_stripe=99)


def test_a_table_and_an_image_dataset_point_at_each_other(soybean, sample_dataset):
    path, _ = soybean
    import os

    for where in (path, os.path.dirname(path)):
        with pytest.raises(ValueError, match="not an image dataset: open it as a table .*pcr.Table"):
            pcr.ImageDataset(where)
    with pytest.raises(ValueError, match="an image dataset, not a table: open it as .*pcr.ImageDataset"):
        pcr.Table(str(sample_dataset))
    with pytest.raises(ValueError, match="image records, not a table"):
        pcr.Table(str(next(sample_dataset.glob("*.pcr"))))


def test_map_features(tmp_path):
    rows = [
        {"label": 1, "dense": {"101": 0.25}, "sparse": {"9": [3, 99, 12]}, "scored": {"11": [[3, 0.5], [8, 1.25]]}},
        {"label": 0, "sparse": {"9": []}},
        {"label": 2, "dense": {"101": -1.5}, "scored": {"11": [[-4, 2.0]]}},
    ]
    src = tmp_path / "maps.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    t = pcr.Table(pcr.convert_table(str(src), str(tmp_path / "out"))["path"])
    got = t.read(["label", "101", "9", "11"])
    assert got["label"]["values"].tolist() == [1, 0, 2]
    assert got["101"]["presence"].tolist() == [True, False, True]
    assert got["101"]["values"][[0, 2]].tolist() == [0.25, -1.5]
    ids = got["9"]
    assert ids["offsets"].tolist() == [0, 3, 3, 3]
    assert ids["values"].tolist() == [3, 99, 12]
    assert ids["presence"].tolist() == [True, True, False]
    scored = got["11"]
    assert scored["values"].tolist() == [3, 8, -4]
    assert scored["scores"].tolist() == [0.5, 1.25, 2.0]


def test_arrays_outlive_the_table(soybean):
    path, _ = soybean
    t = pcr.Table(path)
    name = t.schema[2]["name"]
    col = t.read([name])[name]
    expected = col["values"].copy()
    del t
    gc.collect()
    assert col["values"].base is not None
    assert np.array_equal(col["values"], expected)


def test_a_damaged_table_raises_corruption(soybean, tmp_path):
    path, _ = soybean
    data = bytearray(open(path, "rb").read())
    data[200] ^= 0x01
    bad = tmp_path / "bad.pcr"
    bad.write_bytes(bytes(data))
    t = pcr.Table(str(bad))
    with pytest.raises(pcr.CorruptionError, match="bad.pcr"):
        t.read([f["name"] for f in t.schema])


def test_encodings_read_the_same_columns_and_bad_names_are_refused(data_dir, tmp_path):
    src = str(data_dir / "tabular" / "Soybean.csv")
    plain = pcr.convert_table(src, str(tmp_path / "plain"), encoding="plain")
    encoded = pcr.convert_table(src, str(tmp_path / "auto"))
    forced = pcr.convert_table(src, str(tmp_path / "dict"), encoding="dictionary")
    assert encoded["output_bytes"] < plain["output_bytes"]
    with open(plain["path"], "rb") as f:
        assert f.read(10)[9] == 2  # plain streams: stamped as before 0.5
    a, b, c = pcr.Table(plain["path"]), pcr.Table(encoded["path"]), pcr.Table(forced["path"])
    names = [f["name"] for f in a.schema]
    for name in names:
        want = a.read([name])[name]
        for t in (b, c):
            got = t.read([name])[name]
            assert want.keys() == got.keys()
            for k in want:
                assert np.array_equal(want[k], got[k]), (name, k)
    with pytest.raises(Exception, match="unknown stream encoding 'zip'"):
        pcr.convert_table(src, str(tmp_path / "bad"), encoding="zip")


def test_column_types_bad_values_and_every_float(tmp_path):
    import struct

    rows = "".join(f"{i},{'abc' if i == 150 else i},{['nan', '-inf', '-0.0', '1e-400'][i % 4]}\n" for i in range(200))
    src = tmp_path / "w.csv"
    src.write_text("a,b,x\n" + rows)
    # Python's message names convert_table's arguments, not pcr-convert's options.
    with pytest.raises(ValueError, match=r"line 152, column 5: 'abc' in column 'b' is not a number.*"
                                         r"column_types=\{'b': 'string'\}.*on_bad_value='missing'"):
        pcr.convert_table(str(src), str(tmp_path / "refused"))
    report = pcr.convert_table(str(src), str(tmp_path / "missing"), on_bad_value="missing")
    assert report["notes"] == ["column 'b': 1 value not int64 stored as missing (first 'abc' at line 152, column 5)"]
    t = pcr.Table(report["path"])
    b = t.read(["b"])["b"]
    assert b["values"].dtype == np.int64 and not b["presence"][150] and b["presence"].sum() == 199
    bits = [struct.unpack("<Q", struct.pack("<d", v))[0] for v in t.read(["x"])["x"]["values"][:4]]
    assert bits == [0x7FF8000000000000, 0xFFF0000000000000, 0x8000000000000000, 0]
    t = pcr.Table(pcr.convert_table(str(src), str(tmp_path / "declared"), column_types={"b": "string", "a": "float32"})["path"])
    assert [f["type"] for f in t.schema] == ["float32", "string", "float64"]
    with pytest.raises(ValueError, match="column_types\\['a'\\]: unknown type 'int'"):
        pcr.convert_table(str(src), str(tmp_path / "bad"), column_types={"a": "int"})
    with pytest.raises(ValueError, match="on_bad_value must be 'error' or 'missing'"):
        pcr.convert_table(str(src), str(tmp_path / "bad"), on_bad_value="skip")


def test_a_table_rewritten_while_open_is_reported_as_changed_not_corrupt(tmp_path):
    import json
    import shutil

    def table(name, label):
        src = tmp_path / f"{name}.jsonl"
        src.write_text("".join(json.dumps({"label": label, "x": r * 0.5}) + "\n" for r in range(2000)))
        return pathlib.Path(pcr.convert_table(src, tmp_path / name, rows_per_stripe=500)["path"])

    a, b, c = table("a", 0), table("b", 5), table("c", 0)
    # Rewritten in place (cp): another size or time.
    t = pcr.Table(a)
    shutil.copyfile(b, a)
    with pytest.raises(OSError, match="changed while open .*open it again") as e:
        t.read(["label"])
    assert not isinstance(e.value, pcr.CorruptionError)
    assert pcr.Table(a).read(["label"])["label"]["values"][0] == 5
    # The same size and modification time (cp -p of a same-sized table): the footer tells.
    same = table("d", 1)
    t = pcr.Table(c)
    before = os.stat(c)
    assert os.path.getsize(same) == before.st_size
    shutil.copyfile(same, c)
    os.utime(c, ns=(before.st_atime_ns, before.st_mtime_ns))
    with pytest.raises(OSError, match="changed while open"):
        t.read(["label"])
    # Replaced by a rename, the open table still reads what it opened.
    t = pcr.Table(c)
    assert t.read(["label"])["label"]["values"][0] == 1
    os.replace(a, c)
    assert t.read(["label"])["label"]["values"][0] == 1
    assert pcr.Table(c).read(["label"])["label"]["values"][0] == 5
