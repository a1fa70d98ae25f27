"""Table.to_pandas, and pcr.dask's collections computed on a real two-process
distributed.LocalCluster, checked cell for cell against Table.read and
ImageDataset's own reads."""
import datetime
import json
import math
import os
import pathlib
import re
import struct
import warnings

import numpy as np
import pytest

import pcr
from conftest import README, damaged_copy, duckdb, python_block

pd = pytest.importorskip("pandas")
distributed = pytest.importorskip("distributed")
pytest.importorskip("dask.dataframe")
import pcr.dask  # noqa: E402

# dtype by backend: (every row holds the feature, some rows lack it)
SCALAR_DTYPES = {
    None: {"int64": ("int64", "float64"), "uint64": ("uint64", "float64"), "bool": ("bool", "object"),
           "float32": ("float32", "float32"), "float64": ("float64", "float64")},
    "numpy_nullable": {"int64": ("Int64", "Int64"), "uint64": ("UInt64", "UInt64"), "bool": ("boolean", "boolean"),
                       "float32": ("Float32", "Float32"), "float64": ("Float64", "Float64")},
}

EVERY_TYPE_ROWS = [
    {"i": 1, "u": 18446744073709551615, "f": 0.5, "b": True, "s": "héllo", "y": "raw", "when": 1700000000,
     "dense": {"101": 0.25}, "sparse": {"9": [3, 99, 12]}, "scored": {"11": [[3, 0.5], [8, 1.25]]}, "all": 7},
    {"i": None, "u": 5, "f": float("nan"), "b": None, "s": None, "sparse": {"9": []}, "when": None, "all": 8},
    {"i": -4, "f": -1.5, "b": False, "s": "", "y": "\u0000b", "when": 0, "dense": {"101": -1.5},
     "scored": {"11": [[-4, 2.0]]}, "all": 9},
]
EVERY_TYPE_SCHEMA = {"u": "uint64", "y": "bytes", "when": "timestamp_ms", "f": "float64"}


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, host="127.0.0.1",
                                       dashboard_address=None,
                                       local_directory=str(tmp_path_factory.mktemp("dask-workers")))
    with cluster, distributed.Client(cluster) as c:
        yield c


def corpus_tables():
    found = sorted((pathlib.Path(os.environ.get("PCR_CORPUS_DIR", "")) / "tabular").glob("*.csv"))
    return found or [pytest.param(None, marks=pytest.mark.skip(reason="no corpus (PCR_CORPUS_DIR/tabular)"))]


@pytest.fixture(scope="module")
def every_type_table(tmp_path_factory):
    out = tmp_path_factory.mktemp("every-type")
    src = out / "rows.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in EVERY_TYPE_ROWS * 50))
    return pcr.convert_table(str(src), str(out), rows_per_stripe=40, schema=EVERY_TYPE_SCHEMA)["path"]


def expected_cells(col, kind):
    """Python values of Table.read's column, None where a row lacks it."""
    presence = col["presence"]
    out = []
    for r in range(len(presence)):
        if not presence[r]:
            out.append(None)
        elif "offsets" not in col:
            v = col["values"][r]
            out.append(pd.Timestamp(v) if kind.startswith("timestamp_") else v.item())
        else:
            lo, hi = int(col["offsets"][r]), int(col["offsets"][r + 1])
            if kind == "string":
                out.append(col["values"][lo:hi].tobytes().decode("utf-8", "surrogateescape"))
            elif kind == "bytes":
                out.append(col["values"][lo:hi].tobytes())
            elif "scores" in col:
                out.append(list(zip(col["values"][lo:hi].tolist(), col["scores"][lo:hi].tolist())))
            else:
                out.append(col["values"][lo:hi].tolist())
    return out


def frame_cells(series, kind, nan_missing=False):
    """Python values of a DataFrame column, None where missing; NaN is
    missing where `nan_missing` (the default backend's nullable numbers)."""
    out = []
    for v in series.array:
        if v is None or v is pd.NA or v is pd.NaT or (nan_missing and math.isnan(v)):
            out.append(None)
        elif isinstance(v, np.ndarray):
            out.append([tuple(x) for x in v.tolist()] if v.dtype.names else v.tolist())
        elif kind.startswith("timestamp_"):
            out.append(pd.Timestamp(v))
        else:
            out.append(v.item() if isinstance(v, np.generic) else v)
    return out


def same(a, b):
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


def check_frame(df, table, rows=None, backend=None):
    """df holds every feature of `table` over `rows` (default: all), cell for
    cell, with the dtypes of `backend`."""
    schema = table.schema
    assert list(df.columns) == [f["name"] for f in schema]
    full = table.read([f["name"] for f in schema])
    rows = list(range(table.num_rows)) if rows is None else list(rows)
    assert df.index.tolist() == rows
    for f in schema:
        name, kind = f["name"], f["type"]
        lacking = f["present_count"] < table.num_rows
        nan_missing = backend is None and lacking and kind in SCALAR_DTYPES[None] and kind != "bool"
        if kind in SCALAR_DTYPES[backend]:
            assert str(df[name].dtype) == SCALAR_DTYPES[backend][kind][lacking], name
        elif kind.startswith("timestamp_"):
            assert str(df[name].dtype).startswith("datetime64["), name
        elif kind == "string" and backend:
            assert str(df[name].dtype) == "string", name
        else:
            assert df[name].dtype == object, name
        want = expected_cells(full[name], kind)
        if nan_missing:
            want = [None if w is None or math.isnan(w) else float(w) for w in want]
        got = frame_cells(df[name], kind, nan_missing)
        assert len(got) == len(rows)
        bad = [r for r, g in zip(rows, got) if not same(g, want[r])]
        assert not bad, f"{name}: rows {bad[:5]} differ, e.g. {got[rows.index(bad[0])]!r} != {want[bad[0]]!r}"


@pytest.mark.parametrize("csv", corpus_tables(), ids=lambda p: p.name if p else "none")
def test_read_table_equals_table_read_on_corpus_tables(client, csv, tmp_path):
    rows = sum(1 for _ in open(csv, "rb")) - 1
    path = pcr.convert_table(str(csv), str(tmp_path), rows_per_stripe=max(rows // 5, 1))["path"]
    table = pcr.Table(path)
    assert table.num_stripes > 1
    ddf = pcr.dask.read_table(path, stripes_per_partition=2)
    assert ddf.npartitions == (table.num_stripes + 1) // 2
    assert ddf.known_divisions
    check_frame(ddf.compute(), table)
    check_frame(table.to_pandas(), table)


def test_every_type_and_missing_values(client, every_type_table):
    table = pcr.Table(every_type_table)
    kinds = {f["name"]: f["type"] for f in table.schema}
    assert kinds["9"] == "id_list" and kinds["11"].startswith("scored_id_list") and kinds["when"] == "timestamp_ms"
    for backend in (None, "numpy_nullable"):
        ddf = pcr.dask.read_table(every_type_table, dtype_backend=backend)
        df = ddf.compute()
        check_frame(df, table, backend=backend)
        assert ddf.dtypes.to_dict() == df.dtypes.to_dict()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            local = table.to_pandas(dtype_backend=backend)
        check_frame(local, table, backend=backend)
        assert local.dtypes.to_dict() == df.dtypes.to_dict()
        assert df["9"][1].tolist() == [] and df["9"][2] is None
        assert df["11"][0]["id"].tolist() == [3, 8] and df["11"][0]["score"].tolist() == [0.5, 1.25]
        assert str(df["all"].dtype) == ("int64" if backend is None else "Int64")
        if backend is None:
            # pyarrow's to_pandas: NaN where missing, ints with gaps as float64, bools with gaps as objects
            assert str(df["i"].dtype) == "float64" and math.isnan(df["i"][1]) and df["i"][2] == -4.0
            assert df["b"].tolist()[:3] == [True, None, False]
            assert math.isnan(df["f"][1]) and math.isnan(df["f"][1 + 3])
            [warning] = [str(w.message) for w in caught]
            assert re.search(r"feature 'u': rows lack it, so its uint64 values become float64 .* beyond 2\*\*53, "
                             r"which float64 rounds; dtype_backend='numpy_nullable' keeps them exact", warning)
        else:
            assert df["i"][1] is pd.NA and df["i"][2] == -4 and df["u"][0] == 18446744073709551615
            assert df["b"][1] is pd.NA and df["s"][1] is pd.NA and str(df["s"].dtype) == "string"
            assert math.isnan(df["f"][1]) and df["f"][1] is not pd.NA and not df["f"].isna()[1]
            assert not caught
    with pytest.raises(ValueError, match="dtype_backend 'pyarrow' is invalid, only None and 'numpy_nullable'"):
        table.to_pandas(dtype_backend="pyarrow")
    with pytest.raises(ValueError, match="dtype_backend 'nullable' is invalid"):
        pcr.dask.read_table(every_type_table, dtype_backend="nullable")


def duck_double(text):
    return None if text is None else math.nan if text == "nan" else struct.unpack(">d", bytes.fromhex(text))[0]


def test_groupby_means_match_duckdb_on_nan_and_missing_cells(client, tmp_path):
    rng = np.random.default_rng(7)
    lines = ["label,x"]
    for r in range(2000):
        label = r % 5
        cell = repr(float(rng.normal()))
        if label == 0 and r == 500 or label == 2 and r % 50 == 2:
            cell = "nan"
        if label == 1 and r % 7 == 1 or label == 2 and r % 9 == 2 or label == 3:
            cell = ""
        lines.append(f"{label},{cell}")
    csv = tmp_path / "t.csv"
    csv.write_text("\n".join(lines) + "\n")
    path = pcr.convert_table(csv, tmp_path / "t", rows_per_stripe=300)["path"]
    table = pcr.Table(path)
    duck = duckdb(csv, {"label": "BIGINT", "x": "DOUBLE"},
                  "SELECT label, avg(x) AS avg, avg(x) FILTER (WHERE NOT isnan(x)) AS avg_numbers, count(x) AS n, "
                  "sum(x) AS sum FROM t GROUP BY label ORDER BY label")
    avg, avg_numbers = [duck_double(v) for v in duck["avg"]], [duck_double(v) for v in duck["avg_numbers"]]
    assert math.isnan(avg[0]) and math.isnan(avg[2]) and avg[3] is None and avg_numbers[1] == avg[1]

    def same(ours, theirs):
        return [None if math.isnan(v) else pytest.approx(v, rel=1e-12) for v in ours] == \
            [None if v is None or math.isnan(v) else v for v in theirs]

    # The default, as pyarrow's: NaN and missing are both NaN, which groupby skips.
    df = table.to_pandas()
    assert str(df["x"].dtype) == "float64"
    local = df.groupby("label")["x"].mean().tolist()
    assert same(local, avg_numbers)
    assert same(pcr.dask.read_table(path).groupby("label")["x"].mean().compute().sort_index().tolist(), avg_numbers)
    # numpy_nullable: missing is NA, which groupby skips; NaN is a value, as in DuckDB.
    df = table.to_pandas(dtype_backend="numpy_nullable")
    nullable = df.groupby("label")["x"]
    assert nullable.count().tolist() == [int(n) for n in duck["n"]]
    assert same(nullable.sum(min_count=1).astype("float64").tolist(), [duck_double(v) for v in duck["sum"]])
    assert same(nullable.agg(lambda s: s.mean()).astype("float64").tolist(), avg)
    ddf = pcr.dask.read_table(path, dtype_backend="numpy_nullable")
    assert same(ddf.groupby("label")["x"].mean().compute().sort_index().astype("float64").tolist(), avg)
    # pandas before 2 skips NaN in a nullable column's groupby mean; pandas 2 keeps it, as DuckDB.
    means = nullable.mean().astype("float64").tolist()
    assert same(means, avg if int(pd.__version__.split(".")[0]) >= 2 else avg_numbers)


def test_repeated_strings_are_one_object(tmp_path):
    few = ["red", "gréen", "blue"]
    lines = ["few,unique,raw"]
    for i in range(10000):
        lines.append(",".join(["" if i % 7 == 0 else few[i % 3], f"value {i}" if i < 6000 else "again", few[i % 2]]))
    (tmp_path / "s.csv").write_text("\n".join(lines) + "\n")
    table = pcr.Table(pcr.convert_table(str(tmp_path / "s.csv"), str(tmp_path), rows_per_stripe=3000,
                                        column_types={"raw": "bytes"})["path"])
    df = table.to_pandas()
    assert df["few"].tolist() == [None if i % 7 == 0 else few[i % 3] for i in range(10000)]
    assert df["unique"].tolist() == [f"value {i}" if i < 6000 else "again" for i in range(10000)]
    assert df["raw"].tolist() == [few[i % 2].encode() for i in range(10000)]
    assert df["few"][1] is df["few"][4] and df["raw"][0] is df["raw"][2]
    assert len({id(v) for v in df["unique"][:6000]}) == 6000


@pytest.mark.filterwarnings(r"ignore:.*beyond 2\*\*53")
def test_columns_and_stripes_select_what_is_read(client, every_type_table, monkeypatch):
    table = pcr.Table(every_type_table)
    ddf = pcr.dask.read_table(every_type_table, features=["s", "i"])
    assert list(ddf.columns) == ["s", "i"]
    assert ddf["i"].sum().compute() == pd.Series(expected_cells(table.read(["i"])["i"], "int64")).sum()
    only = pcr.dask.read_table(every_type_table)[["when"]].compute()
    assert list(only.columns) == ["when"]
    # Only the features a computation uses are read (in this process: scheduler="sync").
    read = []
    real = pcr._frames.read_frame
    monkeypatch.setattr(pcr._frames, "read_frame", lambda t, features, *a: read.append(
        sorted(f["name"] for f in features)) or real(t, features, *a))
    ddf = pcr.dask.read_table(every_type_table)
    ddf[ddf["all"] > 7].groupby("s")["f"].count().compute(scheduler="sync")
    assert read and all(names == ["all", "f", "s"] for names in read), read
    starts = np.concatenate([[0], np.cumsum(table.stripe_rows)])
    for stripes, rows in [(1, range(starts[1], starts[2])), (range(1, 3), range(starts[1], starts[3])),
                          ([0, 2], [*range(starts[0], starts[1]), *range(starts[2], starts[3])]),
                          (slice(-1, None), range(starts[-2], starts[-1]))]:
        part = table.to_pandas(stripes=stripes)
        full = table.to_pandas()
        assert part.index.tolist() == list(rows)
        for name in part.columns:
            kind = next(f["type"] for f in table.schema if f["name"] == name)
            want = frame_cells(full[name].loc[list(rows)], kind)
            assert all(same(a, b) for a, b in zip(frame_cells(part[name], kind), want)), name
    empty = table.to_pandas(stripes=[])
    assert len(empty) == 0 and list(empty.dtypes) == list(full.dtypes)
    with pytest.raises(IndexError, match="stripe 99 out of range"):
        table.to_pandas(stripes=99)


def test_read_images_equals_the_dataset_reads(client, data_dir, tmp_path):
    out = tmp_path / "ds"
    pcr.convert_images(str(data_dir / "sample"), str(out), images_per_record=5, jobs=2,
                       fields=str(data_dir / "fields" / "sample.jsonl"),
                       field_types={"weight": "float32", "blob": "bytes", "box32": "float32_list"}, progress=False)
    ds = pcr.ImageDataset(str(out))
    names = [f["name"] for f in ds.field_schema]
    for fidelity in (1, "full"):
        bag = pcr.dask.read_images(str(out), fidelity)
        assert bag.npartitions == ds.num_records
        samples = bag.compute()
        assert [s["index"] for s in samples] == list(range(len(ds)))
        for s in samples:
            label, key = ds.sample(s["index"])
            assert (s["label"], s["key"]) == (label, key)
            assert s["jpeg"] == ds.read(s["index"], fidelity)
            assert s["fields"] == ds.fields(s["index"], names)
    only = pcr.dask.read_images(str(out), 0, fields=["caption"]).compute()
    assert all("jpeg" not in s for s in only)
    assert [s["fields"]["caption"] for s in only] == [ds.fields(i, ["caption"])["caption"] for i in range(len(ds))]


def test_bad_inputs_raise_the_library_exceptions(client, every_type_table, sample_dataset, tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere.pcr"):
        pcr.dask.read_table(str(tmp_path / "nowhere.pcr"))
    with pytest.raises(ValueError, match="no feature 'nope'"):
        pcr.dask.read_table(every_type_table, features=["i", "nope"])
    with pytest.raises(ValueError, match="no feature 'nope'"):
        pcr.Table(every_type_table).to_pandas(["nope"])
    data = bytearray(open(every_type_table, "rb").read())
    data[300] ^= 0x01
    bad = tmp_path / "bad.pcr"
    bad.write_bytes(bytes(data))
    ddf = pcr.dask.read_table(str(bad))  # the footer is sound; a stripe is not
    with pytest.raises(pcr.CorruptionError, match="bad.pcr.*offset"):
        ddf.compute()

    with pytest.raises(FileNotFoundError, match="nowhere"):
        pcr.dask.read_images(str(tmp_path / "nowhere"))
    with pytest.raises(ValueError, match="no field 'nope'"):
        pcr.dask.read_images(str(sample_dataset), fields=["nope"])
    with pytest.raises(ValueError, match="fidelity must be"):
        pcr.dask.read_images(str(sample_dataset), 99)
    damaged = tmp_path / "damaged"
    record_file = damaged_copy(sample_dataset, damaged)
    with pytest.raises(pcr.CorruptionError, match=record_file.name):
        pcr.dask.read_images(str(damaged)).compute()


def test_read_table_from_s3(client, every_type_table, s3_endpoint, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "S3RVER")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "S3RVER")
    remote = {"s3_endpoint": s3_endpoint, "anonymous": True}
    src = pathlib.Path(every_type_table)
    pcr.convert_table(str(src.parent / "rows.jsonl"), "s3://pcrtest/dask-table", rows_per_stripe=40,
                      schema=EVERY_TYPE_SCHEMA, remote={"s3_endpoint": s3_endpoint})
    ddf = pcr.dask.read_table("s3://pcrtest/dask-table/rows.pcr", remote=remote, stripes_per_partition=3)
    table = pcr.Table(every_type_table)
    check_frame(ddf.compute(), table)
    with pytest.raises(FileNotFoundError, match="dask-table/missing.pcr"):
        pcr.dask.read_table("s3://pcrtest/dask-table/missing.pcr", remote=remote)


def test_readme_example(client, data_dir, tmp_path):
    rows = [{"label": r % 3, "dense": {"101": r * 0.5}} for r in range(200)] + [{"label": 1}]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    table = pcr.convert_table(str(tmp_path / "rows.jsonl"), str(tmp_path / "out"), rows_per_stripe=30)["path"]
    pcr.convert_images(str(data_dir / "sample"), str(tmp_path / "train-pcr"), images_per_record=8, progress=False)
    code = python_block("import pcr, pcr.dask\n")
    for old, new in [('"out/rows.pcr"', repr(table)), ('"train-pcr"', repr(str(tmp_path / "train-pcr"))),
                     ("Client()", f"Client({client.scheduler.address!r})")]:
        assert old in code, old
        code = code.replace(old, new)
    scope = {}
    exec(compile(code, str(README), "exec"), scope)
    scope["client"].close()
    assert str(scope["df"]["101"].dtype) == "float64" and len(scope["df"]) == 201
    want = {k: sum(r * 0.5 for r in range(200) if r % 3 == k) / len([r for r in range(200) if r % 3 == k])
            for k in range(3)}
    assert scope["means"].sort_index().tolist() == pytest.approx([want[0], want[1], want[2]])
    assert scope["bag"].count().compute() == 24


def test_paths_names_and_arguments_as_users_give_them(client, every_type_table, sample_dataset, tmp_path):
    path = pathlib.Path(every_type_table)
    table = pcr.Table(path)
    assert table.path == str(path)
    by_id = table.to_pandas([101, "i"])  # a map feature's id as an int
    assert list(by_id.columns) == ["101", "i"]
    assert table.read([101])["101"]["presence"].tolist() == table.read(["101"])["101"]["presence"].tolist()
    ddf = pcr.dask.read_table(path, features=[np.int64(9)], stripes_per_partition=np.int64(2))
    assert ddf.npartitions == (table.num_stripes + 1) // 2 and list(ddf.columns) == ["9"]
    for bad in (0, True, 1.5):
        with pytest.raises(ValueError, match="stripes_per_partition must be a positive int"):
            pcr.dask.read_table(path, stripes_per_partition=bad)
    for bad in (1.5, True, "1", [0, None]):
        with pytest.raises(TypeError, match="stripes are None, a stripe index"):
            table.to_pandas(stripes=bad)
    with pytest.raises(TypeError, match=r"features must be a list of names, not a str: \['i'\]"):
        table.to_pandas("i")
    with pytest.raises(TypeError, match=r"names must be a list of str, not a str: \['i'\]"):
        table.read("i")
    with pytest.raises(TypeError, match="names are str .* not float"):
        table.read([1.5])
    ds = pcr.ImageDataset(pathlib.Path(sample_dataset))
    assert len(pcr.dask.read_images(pathlib.Path(sample_dataset), 1).compute()) == len(ds)
    with pytest.raises(TypeError, match=r"fields must be a list of names, not a str: \['caption'\]"):
        pcr.dask.read_images(sample_dataset, fields="caption")
    with pytest.raises(TypeError, match="names must be a list of str"):
        ds.fields(0, "caption")
    out = tmp_path / "soy"
    report = pcr.convert_table(pathlib.Path(every_type_table).parent / "rows.jsonl", out, schema=EVERY_TYPE_SCHEMA)
    assert pcr.Table(report["path"]).num_rows == table.num_rows


def test_timestamps_pandas_cannot_hold_name_the_table(tmp_path):
    (tmp_path / "t.csv").write_text("when\n32503680000\n0\n")  # 3000-01-01 in seconds
    table = pcr.Table(pcr.convert_table(str(tmp_path / "t.csv"), str(tmp_path), column_types={"when": "timestamp_s"})["path"])
    if int(pd.__version__.split(".")[0]) < 2:  # datetime64[ns] alone: years 1677 to 2262
        # The table reads: that column as Python datetimes, with a warning.
        with pytest.warns(UserWarning, match=r"t\.pcr: feature 'when': times beyond what this pandas' datetime64 "
                                             r"holds .*: given as Python datetime objects"):
            frame = table.to_pandas()
        assert frame["when"].tolist() == [datetime.datetime(3000, 1, 1), datetime.datetime(1970, 1, 1)]
        # Dask's frames keep one dtype per column, known before any is read: an error there.
        with pytest.raises(ValueError, match=r"t\.pcr: feature 'when': a timestamp beyond what this pandas holds"):
            pcr.dask.read_table(table.path).compute()
    else:
        assert table.to_pandas()["when"][0] == pd.Timestamp("3000-01-01")
