"""Table types that never degrade. A generated table of NaN, infinities, -0.0,
subnormals, uint64 hashes, int64 extremes, bools, timestamps and strings is
converted from CSV and from JSON Lines; every value reads back as Python and
numpy parse its text, as DuckDB reads the same CSV where DuckDB has the type,
and as `pcr-dump cat` prints it (CSV and JSON Lines)."""
import csv
import gzip
import io
import json
import math
import os
import pathlib
import random
import re
import struct
import subprocess
import sys

import numpy as np
import pytest

import pcr
from conftest import duckdb

SPECIAL_FLOATS = ["nan", "-nan", "NaN", "inf", "-inf", "Infinity", "-Infinity", "-0.0", "0.0", "5e-324",
                  "2.4703282292062327e-324", "1e-400", "-1e-400", "1.7976931348623159e308",
                  "1.7976931348623157e308", "2.2250738585072014e-308", "1e308", "1.0"]
ROWS = 3000
COLUMNS = ["f", "h", "i", "b", "t", "s"]


def float_bits(x):
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def generated_rows(seed=33):
    """Rows of text cells; None is a missing cell."""
    rng = random.Random(seed)
    lo = int(np.datetime64("1900-01-01T00:00:00", "us").astype(np.int64))
    hi = int(np.datetime64("2200-01-01T00:00:00", "us").astype(np.int64))
    rows = []
    for r in range(ROWS):
        if r % 4 == 0:
            f = rng.choice(SPECIAL_FLOATS)
        else:
            f = repr(struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0])
        row = {
            "f": f,
            "h": str(rng.getrandbits(64) | (1 << 63) if r == 1 else rng.getrandbits(64)),
            "i": str(rng.choice([-(2 ** 63), 2 ** 63 - 1, 0, rng.randint(-(2 ** 63), 2 ** 63 - 1)])),
            "b": rng.choice(["true", "false", "TRUE", "False"]),
            "t": str(np.datetime64(rng.randint(lo, hi), "us")),
            "s": rng.choice(["a", "b,c", 'q"uote', "multi\nline", "\u00fcn\u00efcode", " pad "]) + str(r),
        }
        for name in COLUMNS:
            if rng.random() < 0.1:
                row[name] = None
        rows.append(row)
    return rows


def python_value(name, text):
    """What the cell's text denotes, by Python's and numpy's own parsers."""
    if name == "f":
        return float(text)
    if name in ("h", "i"):
        return int(text)
    if name == "b":
        return text.lower() == "true"
    if name == "t":
        return int(np.datetime64(text, "us").astype(np.int64))
    return text


def table_values(table, name):
    """Column `name` of the table as Python values, None where missing."""
    col = table.read([name])[name]
    present, values = col["presence"], col["values"]
    if name == "s":
        raw, offsets = values.tobytes(), col["offsets"]
        out = [raw[offsets[r]:offsets[r + 1]].decode() for r in range(len(present))]
    elif name == "t":
        assert values.dtype == np.dtype("datetime64[us]")
        out = values.astype(np.int64).tolist()
    else:
        out = values.tolist()
    return [v if p else None for v, p in zip(out, present)]


def same(name, got, want, nan_sign=True):
    if want is None or got is None:
        return got is None and want is None
    if name == "f":
        if math.isnan(want) and not nan_sign:
            return math.isnan(got)
        return float_bits(got) == float_bits(want)
    return got == want


def check_column(name, got, rows, nan_sign=True):
    assert len(got) == len(rows)
    for r, (g, row) in enumerate(zip(got, rows)):
        want = None if row[name] is None else python_value(name, row[name])
        assert same(name, g, want, nan_sign), f"column {name}, row {r}: {g!r}, text {row[name]!r}"


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("types")
    rows = generated_rows()
    path = tmp / "gen.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(COLUMNS)
        for row in rows:
            w.writerow(["" if row[c] is None else row[c] for c in COLUMNS])
    report = pcr.convert_table(str(path), str(tmp / "csv"), rows_per_stripe=700)
    return tmp, rows, path, pcr.Table(report["path"]), report["path"]


def test_csv_inference_keeps_every_value(generated):
    _, rows, _, table, table_path = generated
    types = {f["name"]: f["type"] for f in table.schema}
    assert types == {"f": "float64", "h": "uint64", "i": "int64", "b": "bool", "t": "timestamp_us", "s": "string"}
    for name in COLUMNS:
        check_column(name, table_values(table, name), rows)
    assert table.read(["h"])["h"]["values"].dtype == np.uint64
    assert table.read(["b"])["b"]["values"].dtype == np.bool_


def test_json_lines_read_the_same_values(generated):
    tmp, rows, _, _, _ = generated
    path = tmp / "gen.jsonl"
    with open(path, "w") as f:
        for row in rows:
            obj = {}
            for name in COLUMNS:
                text = row[name]
                if text is None:
                    obj[name] = None
                elif name in ("f", "h", "i", "b"):
                    obj[name] = python_value(name, text)  # json writes NaN, Infinity, -0.0 and big ints
                else:
                    obj[name] = text
            f.write(json.dumps(obj) + "\n")
    table = pcr.Table(pcr.convert_table(str(path), str(tmp / "jsonl"))["path"])
    types = {f["name"]: f["type"] for f in table.schema}
    assert types == {"f": "float64", "h": "uint64", "i": "int64", "b": "bool", "t": "timestamp_us", "s": "string"}
    for name in COLUMNS:
        # JSON has one NaN: the sign of -nan does not survive json.dumps.
        check_column(name, table_values(table, name), rows, nan_sign=False)


def test_values_equal_duckdbs_reading_of_the_same_csv(generated):
    tmp, rows, path, table, _ = generated
    types = {"f": "DOUBLE", "h": "UBIGINT", "i": "BIGINT", "b": "BOOLEAN", "t": "TIMESTAMP", "s": "VARCHAR"}
    duck = duckdb(path, types)
    for name in COLUMNS:
        ours = table_values(table, name)
        theirs = duck[name]
        assert len(theirs) == len(ours)
        for r, (a, d) in enumerate(zip(ours, theirs)):
            if d is None or a is None:
                assert a is None and d is None, f"{name} row {r}: {a!r} vs DuckDB {d!r}"
            elif name == "f":
                assert (math.isnan(a) and d == "nan") or format(float_bits(a), "016x") == d, f"row {r}: {a!r}, {d}"
            elif name == "b":
                assert str(a).lower() == d
            else:
                assert str(a) == d, f"{name} row {r}: {a!r} vs DuckDB {d!r}"


def test_declared_bools_take_the_spellings_duckdb_and_postgresql_cast(tmp_path):
    words = ["true", "FALSE", "t", "f", "yes", "No", "y", "N", "1", "0"]
    src = tmp_path / "b.csv"
    src.write_text("b\n" + "\n".join(words) + "\n")
    t = pcr.Table(pcr.convert_table(src, tmp_path / "b", column_types={"b": "bool"})["path"])
    ours = t.read(["b"])["b"]["values"].tolist()
    assert [d == "true" for d in duckdb(src, {"b": "BOOLEAN"})["b"]] == ours
    assert ours == [True, False] * 5
    # on and off, as PostgreSQL takes them; undeclared, the words are text.
    (tmp_path / "o.csv").write_text("b\nOn\noff\n")
    t = pcr.Table(pcr.convert_table(tmp_path / "o.csv", tmp_path / "o", column_types={"b": "bool"})["path"])
    assert t.read(["b"])["b"]["values"].tolist() == [True, False]
    t = pcr.Table(pcr.convert_table(tmp_path / "o.csv", tmp_path / "text")["path"])
    assert [f["type"] for f in t.schema] == ["string"]
    with pytest.raises(ValueError, match=r"'maybe' in column 'b' is not a bool \(true, false, t, f, yes, no, y, n, on, "
                                         r"off, 1, 0\)"):
        (tmp_path / "m.csv").write_text("b\nyes\nmaybe\n")
        pcr.convert_table(tmp_path / "m.csv", tmp_path / "m", column_types={"b": "bool"})


def test_tsv_and_other_delimiters_read_as_csv_does(tmp_path):
    rows = [["a", "b", "c"], ["1", "x,y", "2.5"], ["-2", '"q\tr"', "nan"], ["3", "", "1e3"]]
    (tmp_path / "t.csv").write_text("\n".join(",".join(r if "," not in r else f'"{r}"' for r in row)
                                             for row in rows) + "\n")
    (tmp_path / "t.tsv").write_text("\n".join("\t".join(row) for row in rows) + "\n")
    (tmp_path / "semi.csv").write_text((tmp_path / "t.tsv").read_text().replace("\t", ";").replace('"q;r"', '"q\tr"'))
    want = pcr.Table(pcr.convert_table(tmp_path / "t.csv", tmp_path / "csv")["path"]).to_pandas()
    tsv = pcr.Table(pcr.convert_table(tmp_path / "t.tsv", tmp_path / "tsv")["path"]).to_pandas()
    semi = pcr.Table(pcr.convert_table(tmp_path / "semi.csv", tmp_path / "semi", delimiter=";")["path"]).to_pandas()
    for got in (tsv, semi):
        assert got.columns.tolist() == ["a", "b", "c"] and got.dtypes.tolist() == want.dtypes.tolist()
        assert got["b"].tolist() == ["x,y", "q\tr", None]
        assert got.equals(want)
    assert pcr_convert_tool("table", tmp_path / "semi.csv", tmp_path / "semi-cli", "--delimiter", ";").returncode == 0
    with pytest.raises(ValueError, match="delimiter must be one character"):
        pcr.convert_table(tmp_path / "semi.csv", tmp_path / "x", delimiter=";;")
    with pytest.raises(ValueError, match="the delimiter cannot be a quote or a line break"):
        pcr.convert_table(tmp_path / "semi.csv", tmp_path / "x", delimiter='"')


def test_gzip_zstd_and_standard_input_give_the_same_table(generated, tmp_path):
    _, _, path, table, _ = generated
    raw = path.read_bytes()
    jsonl = "".join(json.dumps({c: r[c] for c in ("i", "s") if r[c] is not None}) + "\n" for r in generated_rows())
    inputs = {"gen.csv.gz": gzip.compress(raw), "gen.csv.zst": zstd_compress(raw),
              # gzip members one after another, as `cat a.gz b.gz` makes
              "two.csv.gz": gzip.compress(raw[:raw.index(b"\n", len(raw) // 2) + 1]) +
              gzip.compress(raw[raw.index(b"\n", len(raw) // 2) + 1:]),
              "gen.jsonl.gz": gzip.compress(jsonl.encode())}
    want_jsonl = pcr.Table(pcr.convert_table(write(tmp_path / "gen.jsonl", jsonl), tmp_path / "plain",
                                             rows_per_stripe=700)["path"])
    for name, data in inputs.items():
        (tmp_path / name).write_bytes(data)
        got = pcr.Table(pcr.convert_table(tmp_path / name, tmp_path / name.replace(".", "-"),
                                          rows_per_stripe=700)["path"])
        assert got.path.endswith(("gen.pcr", "two.pcr"))
        assert got.content_id == (want_jsonl if "jsonl" in name else table).content_id, name
        assert (tmp_path / name).read_bytes() == data  # the input is left as it was
    for data, fmt in [(raw, "csv"), (inputs["gen.csv.zst"], "csv"), (inputs["gen.jsonl.gz"], "jsonl")]:
        out = pcr_convert_tool("table", "-", tmp_path / f"stdin-{fmt}-{len(data)}", "--format", fmt,
                               "--rows-per-stripe", 700, stdin=data)
        assert out.returncode == 0, out.stderr
        got = pcr.Table(tmp_path / f"stdin-{fmt}-{len(data)}" / "stdin.pcr")
        assert got.content_id == (want_jsonl if fmt == "jsonl" else table).content_id
    # Python reads the process's standard input as the tool does.
    code = (f"import pcr; print(pcr.convert_table('-', {str(tmp_path / 'py')!r}, format='csv', "
            "rows_per_stripe=700)['path'])")
    out = subprocess.run([sys.executable, "-c", code], input=inputs["gen.csv.gz"], capture_output=True)
    assert out.returncode == 0, out.stderr
    assert pcr.Table(out.stdout.decode().strip()).content_id == table.content_id


def test_compressed_and_standard_input_errors_say_what_to_do(generated, tmp_path):
    _, _, path, _, _ = generated
    data = gzip.compress(path.read_bytes())
    cases = {
        "cut.csv.gz": (data[:len(data) // 2], r"cut.csv.gz: ends inside a gzip member at compressed byte \d+: "
                                                r"the file is cut short or damaged"),
        "cut.csv.zst": (zstd_compress(path.read_bytes())[:200], r"cut.csv.zst: ends inside a zstd frame at "
                                                                  r"compressed byte 200"),
        "tail.csv.gz": (data + b"not gzip", rf"tail.csv.gz: not valid gzip at compressed byte {len(data)}: "
                                            r"incorrect header check"),
        "text.csv.gz": (path.read_bytes(), r"text.csv.gz: named .gz but its bytes are neither gzip nor zstd data: "
                                            r"rename it"),
        "bad.csv.gz": (data[:-8] + bytes([data[-8] ^ 1]) + data[-7:], r"bad.csv.gz: not valid gzip at compressed "
                                                                      r"byte \d+: incorrect data check"),
    }
    for name, (bytes_, message) in cases.items():
        (tmp_path / name).write_bytes(bytes_)
        with pytest.raises(ValueError, match=message):
            pcr.convert_table(tmp_path / name, tmp_path / ("out-" + name))
        assert not (tmp_path / ("out-" + name) / (name.split(".")[0] + ".pcr")).exists()
    out = pcr_convert_tool("table", "-", tmp_path / "nofmt", stdin=b"a\n1\n")
    assert out.returncode != 0 and b"standard input (-) has no name to tell its format: give --format csv, tsv or " \
        b"jsonl" in out.stderr
    (tmp_path / "g.csv.gz").write_bytes(data)
    out = pcr_convert_tool("table", tmp_path / "g.csv.gz", tmp_path / "notmp", env=dict(os.environ, TMPDIR=str(
        tmp_path / "missing")))
    assert out.returncode != 0
    assert f"g.csv.gz: cannot write its bytes to a file in {tmp_path / 'missing'}: No such file or directory (set " \
        "TMPDIR to a directory with room for the input decompressed)" in out.stderr.decode()
    with pytest.raises(ValueError, match=r"unknown table format 'parquet' \(csv, tsv or jsonl\)"):
        pcr.convert_table(tmp_path / "g.csv.gz", tmp_path / "x", format="parquet")
    # Shards reach bytes apart, which compressed data and a pipe do not allow.
    with pytest.raises(ValueError, match="g.csv.gz: gzip data cannot be converted in shards, whose bytes are reached "
                                         "apart: convert it in one process, or decompress it first"):
        pcr._pcr._table_conversion(str(tmp_path / "g.csv.gz"), str(tmp_path / "s")).scan(0, 2)


def pcr_convert_tool(*args, stdin=None, env=None):
    tools = os.environ.get("PCR_TOOLS_DIR")
    if not tools:
        pytest.skip("PCR_TOOLS_DIR (the build's tools directory) is not set")
    return subprocess.run([os.path.join(tools, "pcr-convert"), *map(str, args)], input=stdin, env=env,
                          capture_output=True)


def zstd_compress(data):
    """data compressed by the zstd tool, with its frame checksum."""
    out = subprocess.run(["zstd", "-q", "-c"], input=data, capture_output=True)
    if out.returncode != 0:
        pytest.skip("the zstd tool is not installed")
    return out.stdout


def write(path, text):
    path.write_text(text)
    return path


def pcr_dump(*args):
    tools = os.environ.get("PCR_TOOLS_DIR")
    if not tools:
        pytest.skip("PCR_TOOLS_DIR (the build's tools directory) is not set")
    out = subprocess.run([os.path.join(tools, "pcr-dump"), *args], capture_output=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.decode()


def test_dump_cat_csv_reads_back_as_the_same_values(generated):
    _, rows, _, table, table_path = generated
    printed = list(csv.reader(io.StringIO(pcr_dump("cat", table_path), newline="")))
    assert printed[0] == COLUMNS
    for j, name in enumerate(COLUMNS):
        cells = [row[j] for row in printed[1:]]
        check_column(name, [None if c == "" else python_value(name, c) for c in cells], rows)


def test_dump_cat_json_lines_keeps_types(generated):
    _, rows, _, table, table_path = generated
    lines = pcr_dump("cat", table_path, "--format", "jsonl").splitlines()
    assert len(lines) == ROWS
    objects = [json.loads(line) for line in lines]
    for name in COLUMNS:
        got = [o[name] for o in objects]
        if name == "t":
            got = [None if g is None else python_value("t", g) for g in got]
        check_column(name, got, rows, nan_sign=False)
    # Floats stay floats (1.0, not 1), integers stay integers.
    assert all(isinstance(o["f"], float) for o in objects if o["f"] is not None)
    assert all(isinstance(o["h"], int) and isinstance(o["i"], int) for o in objects if o["h"] is not None
               and o["i"] is not None)


def test_dump_cat_tells_missing_from_empty_and_keeps_one_column_rows(tmp_path):
    src = tmp_path / "one.csv"
    src.write_text('s,x\n"",1.0\n,-0.0\nabc,\n,\n')
    path = pcr.convert_table(str(src), str(tmp_path / "out"))["path"]
    assert pcr_dump("cat", path) == '"s","x"\n"",1.0\n,-0.0\n"abc",\n,\n'
    # One column: a row without a value is NA (a blank line readers skip).
    assert pcr_dump("cat", path, "--features", "s") == '"s"\n""\nNA\n"abc"\nNA\n'
    assert pcr_dump("cat", path, "--format", "jsonl") == (
        '{"s":"","x":1.0}\n{"s":null,"x":-0.0}\n{"s":"abc","x":null}\n{"s":null,"x":null}\n')
    try:
        import pandas
    except ImportError:
        return
    frame = pandas.read_csv(io.StringIO(pcr_dump("cat", path, "--features", "s")))
    assert len(frame) == 4


def test_declared_types_in_python(tmp_path):
    src = tmp_path / "d.csv"
    src.write_text("a,b,c\n1,2020-01-02,x\n2,,y\n")
    schema = tmp_path / "schema.json"
    schema.write_text('{"a": "float32", "b": "timestamp_s"}')
    t = pcr.Table(pcr.convert_table(str(src), str(tmp_path / "file"), schema=str(schema))["path"])
    assert [f["type"] for f in t.schema] == ["float32", "timestamp_s", "string"]
    assert t.read(["b"])["b"]["values"][0] == np.datetime64("2020-01-02", "s")
    t = pcr.Table(pcr.convert_table(str(src), str(tmp_path / "dict"), schema={"a": "uint64"},
                                    column_types={"a": "string"}, strings=False)["path"])
    assert [f["type"] for f in t.schema] == ["string", "timestamp_us", "string"]
    t = pcr.Table(pcr.convert_table(str(src), str(tmp_path / "strings"), strings=True)["path"])
    assert [f["type"] for f in t.schema] == ["string", "string", "string"]
    with pytest.raises(ValueError, match="unknown type 'int32'"):
        pcr.convert_table(str(src), str(tmp_path / "bad"), column_types={"a": "int32"})
    with pytest.raises(ValueError, match="schema maps names \\(str\\) to type names \\(str\\), not 'a': 5"):
        pcr.convert_table(str(src), str(tmp_path / "bad"), schema={"a": 5})
    (tmp_path / "bad.json").write_text('{"a": int64}')
    with pytest.raises(ValueError, match="bad.json: at offset 6"):
        pcr.convert_table(str(src), str(tmp_path / "bad"), schema=str(tmp_path / "bad.json"))


def test_every_note_is_a_warning_and_every_proposal_keeps_the_valid_values(tmp_path):
    src = tmp_path / "n.csv"
    src.write_text("h,f,e\n18446744073709551615,1.5,\n12,word,\n18446744073709551616,2.5,\n")
    # Errors name the first bad value and propose what keeps the others.
    with pytest.raises(ValueError, match=r"18446744073709551616 in column 'h' is beyond uint64 .* declare "
                                         r"column_types=\{'h': 'uint64'\} with on_bad_value='missing'") as refused:
        pcr.convert_table(src, tmp_path / "refused", column_types={"f": "float64"})
    assert "column_types={'h': 'string'}" in str(refused.value)
    with pytest.raises(ValueError, match=r"'word' in column 'f' is not a number, unlike its 2 other values"):
        pcr.convert_table(src, tmp_path / "refused", column_types={"h": "string"})
    # Followed: every valid value is kept, and each note is a warning too.
    with pytest.warns(UserWarning) as caught:
        report = pcr.convert_table(src, tmp_path / "kept", column_types={"h": "uint64"}, on_bad_value="missing")
    assert [str(w.message) for w in caught] == report["notes"] and len(report["notes"]) == 3
    assert any("column 'e' has no values" in note for note in report["notes"])
    t = pcr.Table(report["path"])
    h = t.read(["h"])["h"]
    assert h["values"].tolist() == [18446744073709551615, 12, 0] and h["presence"].tolist() == [True, True, False]
    assert t.read(["f"])["f"]["presence"].tolist() == [True, False, True]
    with pytest.warns(UserWarning, match="column 'e' has no values"):
        pcr.convert_table(src, tmp_path / "text", column_types={"h": "string", "f": "string"})


def test_the_cli_doc_schema_example_runs_as_written(tmp_path):
    tools = os.environ.get("PCR_TOOLS_DIR")
    if not tools:
        pytest.skip("PCR_TOOLS_DIR (the build's tools directory) is not set")
    doc = (pathlib.Path(__file__).parents[2] / "doc" / "cli.md").read_text()
    block = next(b for b in re.findall(r"```\n(.*?)```", doc, re.S) if b.lstrip().startswith("echo '{"))
    # Run from a directory where build/tools and tests/data are those of this build.
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "tools").symlink_to(os.path.abspath(tools))
    (tmp_path / "tests").symlink_to(pathlib.Path(__file__).parents[2] / "tests")
    out = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    types = {line.split()[0]: line.split()[1] for line in out.stdout.splitlines()[5:] if len(line.split()) == 6}
    assert types["capitalTotal"] == "uint64" and types["make"] == "float32" and types["capitalLong"] == "float64"
    assert types["type"] == "string" and types["capitalAve"] == "float64"


def pcr_convert(*args):
    tools = os.environ.get("PCR_TOOLS_DIR")
    if not tools:
        pytest.skip("PCR_TOOLS_DIR (the build's tools directory) is not set")
    out = subprocess.run([os.path.join(tools, "pcr-convert"), *args], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


# Map features are JSON Lines input only.
@pytest.mark.parametrize("name,fmt", [("types", "csv"), ("types", "jsonl"), ("maps", "jsonl"), ("generated", "csv"),
                                      ("generated", "jsonl")])
def test_cat_with_its_schema_converts_back_to_the_same_table(name, fmt, data_dir, generated, tmp_path):
    if name == "generated":
        source = generated[4]
    else:
        source = str(data_dir / "golden" / "v0.6-tables" / f"{name}.pcr")
    # Bytes print as hex, which reads back as text: every other feature round-trips.
    want = {k: v for k, v in json.loads(pcr_dump("schema", source)).items() if v != "bytes"}
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(want))
    features = ",".join(want)
    text = pcr_dump("cat", source, "--features", features, "--format", fmt)
    (tmp_path / f"back.{fmt}").write_text(text)
    pcr_convert("table", str(tmp_path / f"back.{fmt}"), str(tmp_path / "out"), "--schema", str(schema))
    back = str(tmp_path / "out" / "back.pcr")
    assert pcr_dump("cat", back, "--features", features, "--format", fmt) == text
    assert json.loads(pcr_dump("schema", back)) == want


def test_text_that_is_no_utf8_is_refused_or_kept_as_bytes(tmp_path):
    raw = b"\xff\xfeok\xc3\xa9\xed\xa0\x80"
    src = tmp_path / "u.csv"
    src.write_bytes(b's,n\n"' + raw + b'",1\nplain,2\n')
    # DuckDB refuses such a line; pcr names it, the byte, and the ways past it.
    with pytest.raises(ValueError, match=r"line 2, column 1: '\\xff\\xfeok\u00e9\\xed\\xa0\\x80' in column 's' is "
                                         r"not UTF-8 text: byte 0 of it \(\\xff\) is no UTF-8 character .* "
                                         r"column_types=\{'s': 'bytes'\}"):
        pcr.convert_table(src, tmp_path / "refused")
    kept = pcr.Table(pcr.convert_table(src, tmp_path / "bytes", column_types={"s": "bytes"})["path"])
    assert kept.to_pandas()["s"].tolist() == [raw, b"plain"]
    with pytest.warns(UserWarning, match="column 's': 1 value not string stored as missing"):
        missing = pcr.Table(pcr.convert_table(src, tmp_path / "missing", on_bad_value="missing")["path"])
    assert missing.read(["s"])["s"]["presence"].tolist() == [False, True]
    assert missing.to_pandas()["s"].tolist()[1] == "plain"
    # JSON Lines: raw bytes, and the escape pcr-dump cat writes for them, alike.
    (tmp_path / "u.jsonl").write_bytes(b'{"s": "ok"}\n{"s": "a\\udcff"}\n')
    with pytest.raises(ValueError, match=r"line 2, column 7: .* in column 's' is not UTF-8 text"):
        pcr.convert_table(tmp_path / "u.jsonl", tmp_path / "json")
    # A name is UTF-8 or the input is refused, in CSV and JSON Lines.
    (tmp_path / "name.csv").write_bytes(b"a,b\xff\n1,2\n")
    (tmp_path / "name.jsonl").write_bytes(b'{"b\xff": 1}\n')
    for name, at in (("name.csv", "line 1, column 3"), ("name.jsonl", "line 1, column 8")):
        with pytest.raises(ValueError, match=rf"{at}: the name 'b\\xff' is not UTF-8 text: byte 1 of it \(\\xff\) "
                                             r"is no UTF-8 character"):
            pcr.convert_table(tmp_path / name, tmp_path / "names")


def test_uint64_id_lists_read_back_in_every_reader_and_every_proposal_keeps_the_ids(tmp_path):
    big = 2 ** 64 - 1
    src = write(tmp_path / "u.jsonl",
                json.dumps({"ids": [big, 0, 2 ** 63], "sparse": {"7": [big - 1]}}) + "\n" +
                json.dumps({"ids": [], "sparse": {"7": [3]}}) + "\n" + json.dumps({"ids": None}) + "\n")
    t = pcr.Table(pcr.convert_table(src, tmp_path / "u")["path"])
    assert [(f["name"], f["type"]) for f in t.schema] == [("ids", "uint64_id_list"), ("7", "uint64_id_list")]
    col = t.read(["ids"])["ids"]
    assert col["values"].dtype == np.uint64 and col["values"].tolist() == [big, 0, 2 ** 63]
    assert col["offsets"].tolist() == [0, 3, 3, 3] and col["presence"].tolist() == [True, True, False]
    frame = t.to_pandas()
    assert [None if v is None else v.tolist() for v in frame["ids"]] == [[big, 0, 2 ** 63], [], None]
    assert frame["7"][0].dtype == np.uint64 and frame["7"][0].tolist() == [big - 1]
    # pcr-dump cat prints every digit and converts back to the same table.
    text = pcr_dump("cat", str(tmp_path / "u"), "--format", "jsonl")
    assert json.loads(text.splitlines()[0]) == {"ids": [big, 0, 2 ** 63], "sparse": {"7": [big - 1]}}
    write(tmp_path / "back.jsonl", text)
    back = pcr.Table(pcr.convert_table(tmp_path / "back.jsonl", tmp_path / "back")["path"])
    assert back.read(["ids"])["ids"]["values"].tolist() == col["values"].tolist()
    # Torch has no uint64: TableLoader gives the ids' bits as int64, as for uint64 values.
    torch = pytest.importorskip("torch")
    import pcr.torch as pt
    batch = next(iter(pt.TableLoader(tmp_path / "u", batch_size=3, shuffle=False)))
    assert batch["ids"]["input"].dtype == torch.int64
    assert batch["ids"]["input"].tolist() == [-1, 0, -2 ** 63]

    # Ids above int64 beside negative ones: no id list type holds both. Each
    # proposal is followed, and keeps every value that type holds.
    mixed = write(tmp_path / "mixed.jsonl", '{"ids": [-1, 2]}\n{"ids": [18446744073709551615]}\n{"ids": [4]}\n')
    with pytest.raises(ValueError, match=r"line 2, column 9: \[18446744073709551615\] in column 'ids' holds an id "
                                         r"above int64, and \[-1, 2\] \(line 1, column 9\) a negative one") as refused:
        pcr.convert_table(mixed, tmp_path / "refused")
    message = str(refused.value)
    assert "--" not in message
    assert "column_types={'ids': 'string'}" in message
    assert "column_types={'ids': 'uint64_id_list'} or column_types={'ids': 'id_list'} with on_bad_value='missing'" in message
    text = pcr.Table(pcr.convert_table(mixed, tmp_path / "text", column_types={"ids": "string"})["path"])
    assert text.to_pandas()["ids"].tolist() == ["[-1, 2]", "[18446744073709551615]", "[4]"]
    for kind, kept in (("uint64_id_list", [None, [big], [4]]), ("id_list", [[-1, 2], None, [4]])):
        with pytest.warns(UserWarning, match=f"1 value not {kind} stored as missing"):
            report = pcr.convert_table(mixed, tmp_path / kind, column_types={"ids": kind}, on_bad_value="missing")
        got = pcr.Table(report["path"]).to_pandas()["ids"].tolist()
        assert [None if v is None else v.tolist() for v in got] == kept

    # A declared id_list that meets a uint64 id proposes uint64_id_list.
    with pytest.raises(ValueError, match=r"is not an array of int64 ids .* declare column_types=\{'ids': "
                                         r"'uint64_id_list'\} to keep every id"):
        pcr.convert_table(src, tmp_path / "declared", column_types={"ids": "id_list"})
    cli = pcr_convert_tool("table", src, tmp_path / "declared-cli", "--column-type", "sparse=id_list")
    assert cli.returncode == 1
    assert "declare --column-type 7=uint64_id_list to keep every id" in cli.stderr.decode()
    assert not (tmp_path / "declared-cli" / "u.pcr").exists()
