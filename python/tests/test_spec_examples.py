"""The examples of spec section 12, made again with the commands the spec
gives and compared byte for byte with its dumps (and its sizes where it
gives no dump), so that the spec stays true of the tools."""
import os
import pathlib
import re
import shutil
import subprocess

import pytest

SPEC = pathlib.Path(__file__).parents[2] / "spec" / "pcr-format.md"
DATA = pathlib.Path(__file__).parents[2] / "tests" / "data"
ONE_PIXEL = DATA / "sample" / "misc" / "jpg-size-1x1.jpg"


@pytest.fixture
def tools():
    found = os.environ.get("PCR_TOOLS_DIR")
    if not found:
        pytest.skip("PCR_TOOLS_DIR (the build's tools directory) is not set")
    return pathlib.Path(found)


def section(number):
    """The text of spec section 12.`number`."""
    text = SPEC.read_text()
    start = text.index(f"### 12.{number} ")
    end = min(i for i in (text.find("\n### ", start + 1), text.find("\n## ", start + 1)) if i > 0)
    return text[start:end]


def dumps(text):
    """The hex dumps (xxd's format) of a section, in order."""
    return [b for b in re.findall(r"```\n(.*?)```", text, re.S) if re.match(r"[0-9a-f]{8}: ", b)]


def xxd(data):
    lines = []
    for at in range(0, len(data), 16):
        row = data[at:at + 16]
        groups = " ".join(row[i:i + 2].hex() for i in range(0, len(row), 2))
        text = "".join(chr(c) if 32 <= c < 127 else "." for c in row)
        lines.append(f"{at:08x}: {groups:<39}  {text}\n")
    return "".join(lines)


def stated_size(text, what):
    """The size in bytes the section's first paragraph gives `what`."""
    m = re.search(re.escape(what) + r"[^.]*?: ([0-9,]+) bytes|" + re.escape(what) + r",\s*([0-9,]+) bytes", text)
    assert m, f"the section gives no size of {what}"
    return int((m.group(1) or m.group(2)).replace(",", ""))


def run(tools, *args, cwd):
    subprocess.run([str(tools / args[0]), *args[1:]], cwd=cwd, check=True, capture_output=True)


def test_an_image_file(tools, tmp_path):
    text = section(1)
    (tmp_path / "src" / "c").mkdir(parents=True)
    shutil.copy(ONE_PIXEL, tmp_path / "src" / "c" / "a.jpg")
    run(tools, "pcr-convert", "images", "src", "out", "--strip-metadata", "--scan-script", "spectral", cwd=tmp_path)
    data = (tmp_path / "out" / "records-00000.pcr").read_bytes()
    assert len(data) == stated_size(text, "`tests/data/sample/misc/jpg-size-1x1.jpg`)")
    assert dumps(text) == [xxd(data)]


def test_a_table_file(tools, tmp_path):
    text = section(2)
    csv = re.search(r"```\n(id,score,name\n.*?)```", text, re.S).group(1)
    (tmp_path / "t.csv").write_text(csv)
    command = re.search(r"`pcr-convert table t\.csv OUT([^`]*)`", text).group(1).split()
    run(tools, "pcr-convert", "table", "t.csv", "OUT", *command, cwd=tmp_path)
    data = (tmp_path / "OUT" / "t.pcr").read_bytes()
    assert f"`OUT/t.pcr`: {len(data)} bytes" in text
    assert dumps(text) == [xxd(data)]


def test_a_dataset_manifest(tools, tmp_path):
    text = section(3)
    for c in ("a", "b"):
        (tmp_path / "SRC" / c).mkdir(parents=True)
        shutil.copy(ONE_PIXEL, tmp_path / "SRC" / c)
    run(tools, "pcr-convert", "images", "SRC", "OUT", "--images-per-record", "1", "--strip-metadata", cwd=tmp_path)
    manifest = (tmp_path / "OUT" / "dataset.pcrd").read_bytes()
    first = (tmp_path / "OUT" / "records-00000.pcr").read_bytes()
    assert b"a/jpg-size-1x1.jpg" in first
    assert f"each\n{len(first)} bytes" in text or f"each {len(first)} bytes" in text
    assert f"{len(manifest)} bytes:" in text
    assert dumps(text) == [xxd(manifest), xxd(first[-32:])]


def test_an_image_file_with_a_field_and_a_segment(tools, tmp_path):
    text = section(4)
    jpeg = ONE_PIXEL.read_bytes()
    jfif_end = 4 + (jpeg[4] << 8 | jpeg[5])
    (tmp_path / "src" / "c").mkdir(parents=True)
    (tmp_path / "src" / "c" / "a.jpg").write_bytes(jpeg[:jfif_end] + b"\xff\xfe\x00\x04hi" + jpeg[jfif_end:])
    (tmp_path / "f.jsonl").write_text('{"path": "c/a.jpg", "caption": "a dot"}\n')
    run(tools, "pcr-convert", "images", "src", "ds", "--scan-script", "spectral", "--fields", "f.jsonl", cwd=tmp_path)
    data = (tmp_path / "ds" / "records-00000.pcr").read_bytes()
    m = re.search(r": ([0-9,]+) bytes, stamped 0\.(\d)", text)
    assert (len(data), data[9]) == (int(m.group(1)), int(m.group(2)))
    # The parts the table gives: offsets and lengths, which add up to the file.
    rows = re.findall(r"^\| (\d+)(?: \.\. \d+)? \| ([\d, ]+) \| ", text, re.M)
    assert rows and int(rows[-1][0]) + int(rows[-1][1]) == len(data)
    part = {m.group(1): int(m.group(0).split("|")[1]) for m in re.finditer(r"^\| \d+[^|]*\|[^|]*\| (stream \d+)", text, re.M)}
    lengths = re.search(r"lengths of `caption`, encoded: `([0-9a-f ]+)`", text).group(1)
    assert data[part["stream 2"]:part["stream 3"]] == bytes.fromhex(lengths)
    assert data[part["stream 3"]:part["stream 4"]] == b"a dot"
    assert data[part["stream 10"]:int(rows[-2][0])] == b"\x01" + bytes.fromhex("ff fe 00 04 68 69")
