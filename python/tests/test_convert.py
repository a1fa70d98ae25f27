import os
import pathlib
import shutil
import signal
import subprocess
import sys

import pytest

import pcr

CHILD = """
import sys, pcr
def progress(p):
    print("progress", p["images_done"], p["images_total"], flush=True)
try:
    pcr.convert_images(sys.argv[1], sys.argv[2], images_per_record=8, jobs=1, progress=progress)
    print("finished", flush=True)
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


def many_images(data_dir, root, copies):
    """The sample, `copies` times over in each class folder."""
    for image in sorted((data_dir / "sample").rglob("*.jp*g")):
        (root / image.parent.name).mkdir(parents=True, exist_ok=True)
        for c in range(copies):
            shutil.copy(image, root / image.parent.name / f"{c:03d}-{image.name}")
    return root


def test_ctrl_c_stops_a_conversion_that_then_resumes(data_dir, tmp_path):
    src = many_images(data_dir, tmp_path / "src", 40)
    out = tmp_path / "out"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(src), str(out)], stdout=subprocess.PIPE, text=True,
                             env=os.environ)
    lines = []
    for line in child.stdout:
        lines.append(line.split())
        if line.startswith("progress") and int(lines[-1][1]) >= 32:
            child.send_signal(signal.SIGINT)  # as Ctrl-C on a terminal
            break
    rest = child.communicate(timeout=60)[0].split("\n")
    assert child.returncode == 0
    assert "interrupted" in rest, rest
    done, total = int(lines[-1][1]), int(lines[-1][2])
    assert total == 960
    # Stopped long before the end, nothing that looks complete, and resumable.
    progressed = [int(l.split()[1]) for l in rest if l.startswith("progress")]
    assert max(progressed, default=done) < total / 2
    assert not (out / "dataset.pcrd").exists() and (out / ".pcr-convert-incomplete").exists()
    # Other options are refused, naming the option, and leave the files alone.
    files = sorted(out.iterdir())
    with pytest.raises(ValueError, match=r"with images_per_record '8' \(now '16'\): run it again with the same "
                                         r"options and inputs to keep its [0-9]+ finished files, "
                                         r"or start over with restart=True$"):
        pcr.convert_images(str(src), str(out), images_per_record=16, jobs=1, progress=False)
    assert sorted(out.iterdir()) == files
    summary = pcr.convert_images(str(src), str(out), images_per_record=8, jobs=1, progress=False)
    assert summary["images"] == total and summary["resumed_files"] >= 4
    assert len(pcr.ImageDataset(str(out))) == total


def test_restart_starts_over(data_dir, tmp_path):
    src = many_images(data_dir, tmp_path / "src", 40)
    out = tmp_path / "out"

    def stop(p):
        if p["images_done"] >= 32:
            raise RuntimeError("stop")

    with pytest.raises(RuntimeError):
        pcr.convert_images(str(src), str(out), images_per_record=8, jobs=1, progress=stop)
    summary = pcr.convert_images(str(src), str(out), images_per_record=16, restart=True, progress=False)
    assert summary["resumed_files"] == 0 and summary["records"] == 960 // 16


def test_progress_reaches_the_callback_and_a_terminal(data_dir, tmp_path):
    seen = []
    pcr.convert_images(str(data_dir / "sample"), str(tmp_path / "a"), images_per_record=4, progress=seen.append)
    assert seen and seen[-1]["images_done"] == seen[-1]["images_total"] == 24
    assert [p["images_done"] for p in seen] == sorted(p["images_done"] for p in seen)

    def stop(p):
        raise RuntimeError("enough")

    try:
        pcr.convert_images(str(many_images(data_dir, tmp_path / "many", 40)), str(tmp_path / "b"),
                           images_per_record=4, jobs=1, progress=stop)
    except RuntimeError as e:
        assert str(e) == "enough"
    else:
        raise AssertionError("the callback's exception was lost")
    assert not (tmp_path / "b" / "dataset.pcrd").exists()

    # On a terminal, a progress line on stderr by default.
    import pty

    leader, follower = pty.openpty()
    code = f"import pcr; pcr.convert_images({str(data_dir / 'sample')!r}, {str(tmp_path / 'c')!r}, images_per_record=4)"
    child = subprocess.run([sys.executable, "-c", code], stderr=follower, env=os.environ, timeout=120)
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    assert child.returncode == 0
    assert b"24/24 images" in shown and b"images/s" in shown


def test_version_matches_the_library(tmp_path):
    root = pathlib.Path(__file__).parents[2]
    header = (root / "include" / "pcr" / "version.h").read_text()
    assert f'#define PCR_VERSION_STRING "{pcr.__version__}"' in header


def test_conversion_errors_name_keywords_and_skipped_sources_are_warned_and_logged(data_dir, tmp_path, caplog):
    import logging

    src = tmp_path / "src"
    shutil.copytree(data_dir / "sample", src)
    bad = data_dir / "bad" / "video-001.progressive.truncated.jpeg"
    shutil.copyfile(bad, src / "misc" / bad.name)
    (src / "misc" / "notes.txt").write_text("not an image")
    with pytest.raises(pcr.CorruptionError, match=r"\(skip_bad=True skips it\)") as refused:
        pcr.convert_images(src, tmp_path / "refused", progress=False)
    assert "--" not in str(refused.value)
    with pytest.raises(ValueError, match="^images_per_record must be positive, not 0$"):
        pcr.convert_images(src, tmp_path / "zero", images_per_record=0, progress=False)
    with pytest.raises(ValueError, match="^exif_orientation=True needs the metadata strip_metadata=True drops$"):
        pcr.convert_images(src, tmp_path / "exif", exif_orientation=True, strip_metadata=True, progress=False)
    with pytest.raises(ValueError, match="^field_order names 'captoin', which is not a field$"):
        pcr.convert_images(src, tmp_path / "order", field_order=["captoin"], skip_bad=True, progress=False)
    text = "n,e\n" + "".join(f"{i},\n" for i in range(4)) + "abc,\n"
    (tmp_path / "t.csv").write_text(text)
    with pytest.raises(ValueError) as table_refused:
        pcr.convert_table(tmp_path / "t.csv", tmp_path / "table")
    assert ("declare column_types={'n': 'string'} (or pass strings=True for every column) to keep the column as text, "
            "or pass on_bad_value='missing' to store such cells as missing") in str(table_refused.value)
    with pytest.warns(UserWarning, match=r"\(column_types=\{'e': 'TYPE'\} declares another type\)"):
        pcr.convert_table(tmp_path / "t.csv", tmp_path / "table", on_bad_value="missing")
    with caplog.at_level(logging.INFO, logger="pcr"), pytest.warns(UserWarning) as caught:
        summary = pcr.convert_images(src, tmp_path / "out", skip_bad=True, progress=False)
    assert [path for path, _ in summary["skipped"]] == [f"misc/{bad.name}"] and summary["ignored_files"] == 1
    assert len(caught) == 1 and caught[0].filename == __file__
    assert str(caught[0].message).startswith(f"pcr.convert_images: {tmp_path / 'out'}: skipped 1 source that could "
                                             f"not be converted (first misc/{bad.name}: ")
    assert str(caught[0].message).endswith("; ignored 1 file that is not a JPEG image by name")
    assert [r.getMessage() for r in caplog.records if r.name == "pcr"] == \
        [f"{tmp_path / 'out'}: skipped misc/{bad.name}: {summary['skipped'][0][1]}"]
