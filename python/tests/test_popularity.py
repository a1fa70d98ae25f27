"""The popularity loop from Python and the tools: access logs written by
pcr.Table and pcr-dump cat, counted by pcr-dump popularity per job and per
table, and applied by pcr-convert reorder."""
import json
import os
import subprocess

import pytest

import pcr


TOOLS = os.path.abspath(os.environ["PCR_TOOLS_DIR"]) if os.environ.get("PCR_TOOLS_DIR") else None


def tool(name, *args, check=True):
    tools = TOOLS
    if not tools:
        pytest.skip("PCR_TOOLS_DIR (the build's tools directory) is not set")
    done = subprocess.run([os.path.join(tools, name), *map(str, args)], capture_output=True, text=True)
    if check:
        assert done.returncode == 0, done.stderr
    return done


@pytest.fixture()
def tables(tmp_path):
    rows = [{"label": r % 2, "dense": {"1": r * 0.5, "2": 1.0}, "sparse": {"100": [r, r + 1]}, "name": f"n{r}"}
            for r in range(300)]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    a = pcr.convert_table(tmp_path / "rows.jsonl", tmp_path / "a", rows_per_stripe=100)["path"]
    (tmp_path / "other.jsonl").write_text("".join(json.dumps({"x": r}) + "\n" for r in range(10)))
    b = pcr.convert_table(tmp_path / "other.jsonl", tmp_path / "b")["path"]
    return a, b


def log_lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_tables_log_what_they_read_and_popularity_counts_jobs(tables, tmp_path):
    a, b = tables
    log = tmp_path / "access.log"
    # Job 1 reads ["label", "1"] on two ranks and ["100"] once; job 2 reads ["1", "100"].
    for job, features in [("job-1", ["label", "1"]), ("job-1", ["label", "1"]), ("job-1", ["100"]),
                          ("job-2", ["1", "100"])]:
        t = pcr.Table(a, access_log=log, job=job)
        t.read(features)
        t.read(features, 1, 1)  # the same projection: one line per table
    lines = log_lines(log)
    assert len(lines) == 4
    assert lines[0] == {"features": ["label", "1"], "table": a, "table_id": pcr.Table(a).content_id, "job": "job-1"}

    popularity = tool("pcr-dump", "popularity", log).stdout
    counts = {e["feature"]: e["count"] for e in map(json.loads, popularity.splitlines())}
    assert counts == {"1": 2, "100": 2, "label": 1}
    assert {json.loads(line)["table_id"] for line in popularity.splitlines()} == {pcr.Table(a).content_id}

    # pcr-dump cat logs too; its job comes from PCR_JOB_ID.
    cat_log = tmp_path / "cat.log"
    env_job = dict(os.environ, PCR_JOB_ID="cat-job")
    tool("pcr-dump", "--version")  # skips without the tools
    subprocess.run([os.path.join(TOOLS, "pcr-dump"), "cat", a, "--features", "name,label", "--access-log", cat_log],
                   check=True, capture_output=True, env=env_job)
    assert log_lines(cat_log) == [{"features": ["name", "label"], "table": a,
                                   "table_id": pcr.Table(a).content_id, "job": "cat-job"}]
    with pytest.raises(ValueError, match="give access_log too"):
        pcr.Table(a, job="j")
    with pytest.raises(ValueError, match="its directory does not exist"):
        pcr.Table(a, access_log=tmp_path / "no-such-dir" / "x.log")
    with pytest.raises(ValueError, match="a directory; give the log file's path"):
        pcr.Table(a, access_log=tmp_path)


def test_logs_of_two_tables_are_told_apart(tables, tmp_path):
    a, b = tables
    log = tmp_path / "mixed.log"
    pcr.Table(a, access_log=log, job="j").read(["label"])
    pcr.Table(b, access_log=log, job="j").read(["x"])
    refused = tool("pcr-dump", "popularity", log, check=False)
    assert refused.returncode != 0
    assert "tables" in refused.stderr and a in refused.stderr and b in refused.stderr and "--table" in refused.stderr
    kept = tool("pcr-dump", "popularity", log, "--table", a)
    assert [json.loads(line)["feature"] for line in kept.stdout.splitlines()] == ["label"]
    assert f"skipped 1 line(s) of another table: {b}" in kept.stderr
    with pytest.raises(ValueError, match="of 2 tables"):
        pcr.popularity(log)
    with pytest.raises(ValueError, match="at least one access log"):
        pcr.popularity([])
    with pytest.warns(UserWarning, match=f"skipped 1 access log line.* of another table: {b}"):
        assert pcr.popularity([log], table=a) == [("label", 1)]


def test_reorder_checks_the_popularity_is_of_its_table(tables, tmp_path):
    a, b = tables
    log = tmp_path / "b.log"
    pcr.Table(b, access_log=log).read(["x"])
    popularity = tmp_path / "b-popularity.jsonl"
    popularity.write_text(tool("pcr-dump", "popularity", log).stdout)
    refused = tool("pcr-convert", "reorder", a, tmp_path / "out", "--popularity", popularity, check=False)
    assert refused.returncode != 0
    assert "counted on another table" in refused.stderr and "--table" in refused.stderr
    assert not (tmp_path / "out").exists()
    with pytest.raises(ValueError, match="counted on another table"):
        pcr.reorder_table(a, tmp_path / "out", popularity=popularity)

    log_a = tmp_path / "a.log"
    pcr.Table(a, access_log=log_a).read(["100", "name"])
    (tmp_path / "a-popularity.jsonl").write_text(tool("pcr-dump", "popularity", log_a).stdout)
    tool("pcr-convert", "reorder", a, tmp_path / "out", "--popularity", tmp_path / "a-popularity.jsonl")
    reordered = pcr.Table(tmp_path / "out")
    assert reordered.content_id == pcr.Table(a).content_id
    for f in ["label", "1", "100", "name"]:
        assert reordered.read([f])[f]["presence"].tolist() == pcr.Table(a).read([f])[f]["presence"].tolist()

    # An old popularity file (no table) naming none of the table's features: a note, not a silent no-op.
    (tmp_path / "stale.jsonl").write_text('{"feature":"gone","count":3}\n')
    noted = tool("pcr-convert", "reorder", a, tmp_path / "out2", "--popularity", tmp_path / "stale.jsonl")
    assert "names no feature of" in noted.stderr


def test_readme_example(tmp_path, monkeypatch):
    from conftest import README, python_block

    rows = [{"label": r % 2, "dense": {"101": r * 0.5, "102": 1.0}} for r in range(100)]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    pcr.convert_table(tmp_path / "rows.jsonl", tmp_path / "out", rows_per_stripe=30)
    monkeypatch.chdir(tmp_path)
    scope = {}
    exec(compile(python_block("import pcr\n\ntable = pcr.Table("), str(README), "exec"), scope)
    assert scope["ranking"] == [("101", 1), ("label", 1)]
    reordered = pcr.Table(tmp_path / "out-reordered")
    assert reordered.content_id == pcr.Table(tmp_path / "out" / "rows.pcr").content_id
    # The popular features' streams come first in every stripe.
    dump = tool("pcr-dump", tmp_path / "out-reordered", "--json").stdout
    assert all(s["feature_order"][:2] == ["101", "label"] for s in json.loads(dump)["stripe_list"])
