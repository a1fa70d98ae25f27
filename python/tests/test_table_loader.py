"""pcr.torch.TableLoader: every row once per epoch across ranks and workers,
values equal to Table.read's, shuffling, resume, the access log, and the
tensors EmbeddingBag takes."""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import pcr

torch = pytest.importorskip("torch")
import pcr.torch  # noqa: E402

ROWS = 1000


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    out = tmp_path_factory.mktemp("table-loader")
    rows = []
    for r in range(ROWS):
        row = {"label": r % 3, "dense": {"1": r * 0.5}, "sparse": {"100": list(range(r % 4))},
               "scored": {"200": [[r, r / 8], [r + 1, 0.25]]}, "name": f"n{r}", "when": 1700000000 + r}
        if r % 5:
            row["dense"]["2"] = float(r)  # missing in every fifth row
        if r % 7 == 0:
            del row["name"]
        rows.append(row)
    (out / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return pcr.convert_table(out / "rows.jsonl", out, rows_per_stripe=96, schema={"when": "timestamp_s"})["path"]


def expected(table_path):
    """Python values of every feature of every row, from Table.read."""
    t = pcr.Table(table_path)
    cols = t.read([f["name"] for f in t.schema])
    out = {}
    for name, col in cols.items():
        vals = []
        for r in range(ROWS):
            if not col["presence"][r]:
                vals.append(None)
            elif "offsets" not in col:
                v = col["values"][r]
                vals.append(int(v.astype("int64")) if v.dtype.kind == "M" else v.item())
            else:
                lo, hi = int(col["offsets"][r]), int(col["offsets"][r + 1])
                if name == "name":
                    vals.append(col["values"][lo:hi].tobytes().decode())
                elif "scores" in col:
                    vals.append(list(zip(col["values"][lo:hi].tolist(), col["scores"][lo:hi].tolist())))
                else:
                    vals.append(col["values"][lo:hi].tolist())
        out[name] = vals
    return out


def batch_values(batch, name, i):
    """Row i of a batch's feature, as expected() gives it."""
    col = batch[name]
    if not col["presence"][i]:
        return None
    if "input" in col:
        lo = int(col["offsets"][i])
        hi = int(col["offsets"][i + 1]) if i + 1 < len(col["offsets"]) else len(col["input"])
        ids = col["input"][lo:hi].tolist()
        if "per_sample_weights" in col:
            return list(zip(ids, col["per_sample_weights"][lo:hi].tolist()))
        return ids
    v = col["values"][i]
    return v.item() if hasattr(v, "item") else v


def test_every_row_once_with_table_values_on_every_rank_and_worker(table):
    want = expected(table)
    seen = []
    lengths = set()
    for rank in range(3):
        loader = pcr.torch.TableLoader(table, 50, rank=rank, world_size=3, seed=4, dense=["1", "2"])
        lengths.add(len(loader))
        rank_rows = []
        for batch in pcr.torch.DataLoader(loader, num_workers=2):
            n = len(batch["rows"])
            assert batch["dense"].shape == (n, 2) and batch["dense"].dtype == torch.float32
            for i, row in enumerate(batch["rows"].tolist()):
                for j, name in enumerate(["1", "2"]):
                    present = want[name][row] is not None
                    assert bool(batch["dense_presence"][i, j]) == present
                    assert float(batch["dense"][i, j]) == (np.float32(want[name][row]) if present else 0.0)
                for name in ("label", "100", "when", "name"):
                    assert batch_values(batch, name, i) == want[name][row], (name, row)
                got = batch_values(batch, "200", i)
                assert [(a, np.float32(b)) for a, b in got] == [(a, np.float32(b)) for a, b in want["200"][row]]
            rank_rows += batch["rows"].tolist()
        assert len(rank_rows) == 334  # ceil(1000 / 3): padded with the epoch's first rows
        seen += rank_rows
        # A rank's rows do not depend on the number of workers (their order does).
        again = pcr.torch.TableLoader(table, 50, rank=rank, world_size=3, seed=4, dense=["1", "2"])
        assert sorted(r for b in again for r in b["rows"].tolist()) == sorted(rank_rows)
    assert lengths == {7}
    assert set(seen) == set(range(ROWS)) and len(seen) == 1002


def test_shuffling_epochs_and_order(table):
    def rows(loader):
        return [r for b in loader for r in b["rows"].tolist()]

    loader = pcr.torch.TableLoader(table, 64, ["label"], seed=1)
    first = rows(loader)
    assert sorted(first) == list(range(ROWS)) and first != list(range(ROWS))
    assert rows(loader) == first  # the same epoch again
    loader.set_epoch(1)
    assert rows(loader) != first
    assert rows(pcr.torch.TableLoader(table, 64, ["label"], shuffle=False)) == list(range(ROWS))
    drop = pcr.torch.TableLoader(table, 64, ["label"], uneven="drop", rank=1, world_size=2)
    assert len(drop) == 7 and all(len(b["rows"]) == 64 for b in drop)


def test_batches_of_a_sorted_table_spread_as_uniform_samples_do(tmp_path):
    # 40,000 rows sorted by day, in 20 stripes: each batch's days should
    # spread (standard deviation) about as far as a uniform sample's.
    days = np.sort(np.random.default_rng(3).integers(0, 365, 40000))
    (tmp_path / "t.csv").write_text("day\n" + "\n".join(map(str, days)) + "\n")
    path = pcr.convert_table(tmp_path / "t.csv", tmp_path, rows_per_stripe=2000)["path"]
    uniform = np.mean([np.random.default_rng(s).choice(days, 500, replace=False).std() for s in range(40)])

    def spread(loader, workers):
        batches = pcr.torch.DataLoader(loader, num_workers=workers) if workers else loader
        return np.mean([days[b["rows"].numpy()].std() for b in batches]) / uniform

    for workers in (0, 2):
        assert spread(pcr.torch.TableLoader(path, 500, ["day"], seed=1), workers) >= 0.9
        # A window of one stripe: days of a stripe alone.
        assert spread(pcr.torch.TableLoader(path, 500, ["day"], seed=1, shuffle_stripes=1), workers) < 0.1
    two_ranks = [pcr.torch.TableLoader(path, 500, ["day"], seed=1, rank=r, world_size=2) for r in range(2)]
    assert min(spread(loader, 2) for loader in two_ranks) >= 0.85  # each rank's 10 stripes in windows of 8 and 2
    with pytest.raises(ValueError, match="shuffle_stripes must be at least 1, not 0"):
        pcr.torch.TableLoader(path, 500, shuffle_stripes=0)


def test_resume_gives_the_remaining_batches(table):
    def run(loader, batches=None):
        out = []
        for b in pcr.torch.DataLoader(loader, num_workers=2):
            out.append(b["rows"].tolist())
            if batches is not None and len(out) == batches:
                return out, loader.state_dict()
        return out, None

    make = lambda: pcr.torch.TableLoader(table, 32, ["label", "100"], seed=9)  # noqa: E731
    whole, _ = run(make())
    head, state = run(make(), 5)
    assert state == {"seed": 9, "epoch": 0, "batches": 5, "num_workers": 2, "world_size": 1, "batch_size": 32,
                     "uneven": "pad", "shuffle": True, "shuffle_stripes": 8, "dataset": pcr.Table(table).content_id}
    for other in (pcr.torch.TableLoader(table, 64, ["label", "100"], seed=9),
                  pcr.torch.TableLoader(table, 32, ["label", "100"], seed=9, shuffle_stripes=2)):
        with pytest.raises(ValueError, match="the state was saved with (batch_size=32|shuffle_stripes=8), and"):
            other.load_state_dict(state)
    resumed = make()
    resumed.load_state_dict(state)
    tail, _ = run(resumed)
    assert head + tail == whole


def test_access_log_and_embedding_bag(table, tmp_path):
    log = tmp_path / "access.log"
    loader = pcr.torch.TableLoader(table, 100, ["label", "200"], access_log=log, job="ctr-1")
    bag = torch.nn.EmbeddingBag(ROWS + 2, 8, mode="sum")
    for batch in pcr.torch.DataLoader(loader, num_workers=2):
        s = batch["200"]
        pooled = bag(s["input"], s["offsets"], per_sample_weights=s["per_sample_weights"])
        assert pooled.shape == (len(batch["rows"]), 8)
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert {tuple(l["features"]) for l in lines} == {("label", "200")} and {l["job"] for l in lines} == {"ctr-1"}
    assert pcr.popularity(log) == [("200", 1), ("label", 1)]
    # Without job=, every worker and epoch of one loader is one job.
    log2 = tmp_path / "default-job.log"
    loader = pcr.torch.TableLoader(table, 100, ["label"], access_log=log2)
    for epoch in range(2):
        loader.set_epoch(epoch)
        list(pcr.torch.DataLoader(loader, num_workers=2))
    assert len({json.loads(line)["job"] for line in log2.read_text().splitlines()}) == 1
    assert pcr.popularity(log2) == [("label", 1)]


def test_arguments_are_checked(table):
    with pytest.raises(ValueError, match="nope"):
        pcr.torch.TableLoader(table, 8, ["label", "nope"])
    with pytest.raises(ValueError, match="dense features must be numbers .*'name' is string"):
        pcr.torch.TableLoader(table, 8, dense=["name"])
    with pytest.raises(ValueError, match="'when' is timestamp_s: give it in features"):
        pcr.torch.TableLoader(table, 8, dense=["when"])
    with pytest.raises(ValueError, match="dense names '1' twice"):
        pcr.torch.TableLoader(table, 8, dense=["1", 1])
    with pytest.raises(TypeError, match="job must be a non-empty str"):
        pcr.torch.TableLoader(table, 8, access_log="x.log", job=123)
    with pytest.raises(ValueError, match="its directory does not exist"):
        pcr.torch.TableLoader(table, 8, access_log="/no/such/dir/x.log")
    with pytest.raises(ValueError, match="a directory; give the log file's path"):
        pcr.torch.TableLoader(table, 8, access_log=os.path.dirname(table))
    with pytest.raises(TypeError, match="list of names"):
        pcr.torch.TableLoader(table, 8, "label")
    with pytest.raises(ValueError, match="batch_size"):
        pcr.torch.TableLoader(table, 0)
    loader = pcr.torch.TableLoader(table, 8, [100, "label"])  # a map feature by its int id
    assert set(next(iter(loader))) == {"rows", "100", "label"}


SPAWNED_RANKS = """
import json, sys
import torch.distributed as dist
import torch.multiprocessing as mp
import pcr.torch

def run(rank, passed, table, init, out):
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=2)
    got = {}
    for name, loader in (("made", pcr.torch.TableLoader(table, 64, ["label"], seed=3)), ("passed", passed)):
        workers = pcr.torch.DataLoader(loader, num_workers=2, multiprocessing_context="spawn")
        got[name] = {"len": len(loader), "batches": [b["rows"].tolist() for b in workers]}
    with open(f"{out}.{rank}", "w") as f:
        json.dump(got, f)
    dist.destroy_process_group()

if __name__ == "__main__":
    table, init, out = sys.argv[1:]
    mp.spawn(run, args=(pcr.torch.TableLoader(table, 64, ["label"], seed=3), table, init, out), nprocs=2)
"""


def test_spawned_processes_take_their_ranks_share(table, tmp_path):
    # Spawned DataLoader workers have no process group of their own, and a
    # loader made before the ranks are spawned knows none yet: each must
    # still read its rank's share, not the whole table.
    script = tmp_path / "ranks.py"
    script.write_text(SPAWNED_RANKS)
    out = tmp_path / "rows"
    subprocess.run([sys.executable, str(script), str(table), f"file://{tmp_path / 'init'}", str(out)], check=True,
                   timeout=300, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    for name in ("made", "passed"):
        seen = []
        for rank in range(2):
            got = json.loads((tmp_path / f"rows.{rank}").read_text())[name]
            assert len(got["batches"]) == got["len"] == -(-(ROWS // 2) // 64), name
            seen += [r for b in got["batches"] for r in b]
        assert sorted(seen) == list(range(ROWS)), name


def test_a_table_replaced_between_epochs_is_refused(table, tmp_path):
    path = tmp_path / "t.pcr"
    shutil.copy(table, path)
    loader = pcr.torch.TableLoader(path, 100, ["label"])
    assert len(list(loader)) == len(loader)
    rows = [{"label": r} for r in range(ROWS + 1)]
    (tmp_path / "other.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    other = pcr.convert_table(tmp_path / "other.jsonl", tmp_path / "other")["path"]
    os.replace(other, path)
    loader.set_epoch(1)
    with pytest.raises(OSError, match=r"another table \(1001 rows.*than when this TableLoader was made \(1000 rows"):
        list(loader)


def test_a_table_of_the_same_shape_and_other_values_is_another_table(table, tmp_path):
    # The content id names the values: a replacement of one shape is caught too.
    path = tmp_path / "t.pcr"
    shutil.copy(table, path)
    loader = pcr.torch.TableLoader(path, 100, ["label"])
    assert len(list(loader)) == len(loader)
    labels = pcr.Table(path).read(["label"])["label"]["values"]
    rows = [{"label": int(v) + 1} for v in labels]
    for name, data in (("same", [{"label": int(v)} for v in labels]), ("other", rows)):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in data))
    same = pcr.convert_table(tmp_path / "same.jsonl", tmp_path / "same")["path"]
    other = pcr.convert_table(tmp_path / "other.jsonl", tmp_path / "other")["path"]
    assert pcr.Table(same).schema == pcr.Table(other).schema
    assert pcr.Table(same).content_id != pcr.Table(other).content_id
    assert pcr.Table(same).content_id == pcr.Table(pcr.convert_table(tmp_path / "same.jsonl",
                                                                     tmp_path / "again")["path"]).content_id
    os.replace(other, path)
    loader.set_epoch(1)
    with pytest.raises(OSError, match=r"another table \(1000 rows, content id [0-9a-f]{16}\) than when"):
        list(loader)


def test_a_feature_named_like_a_batch_key_is_refused(tmp_path):
    (tmp_path / "keys.csv").write_text("rows,dense,x\n" + "".join(f"{r},{r * 0.5},{r}.0\n" for r in range(10)))
    path = pcr.convert_table(tmp_path / "keys.csv", tmp_path / "keys")["path"]
    with pytest.raises(ValueError, match="feature 'rows' would be the batch key 'rows'"):
        pcr.torch.TableLoader(path, 4)
    with pytest.raises(ValueError, match="feature 'dense' would be the batch key 'dense'"):
        pcr.torch.TableLoader(path, 4, ["dense"], dense=["x"])
    # Left out, or with no dense= to clash with, they are delivered.
    batch = next(iter(pcr.torch.TableLoader(path, 4, ["dense"], shuffle=False)))
    assert batch["dense"]["values"].tolist() == [0.0, 0.5, 1.0, 1.5]
    assert batch["rows"].tolist() == [0, 1, 2, 3]


def test_readme_example(tmp_path, monkeypatch):
    from conftest import README, python_block

    rows = [{"label": r % 2, "dense": {"101": r * 0.5}, "sparse": {"9": [r, r * 7]}} for r in range(3000)]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    pcr.convert_table(tmp_path / "rows.jsonl", tmp_path / "out", rows_per_stripe=500)
    monkeypatch.chdir(tmp_path)
    scope = {}
    exec(compile(python_block("import torch, pcr.torch\n\nloader = pcr.torch.TableLoader("), str(README), "exec"),
         scope)
    assert scope["x"].shape == (len(scope["batch"]["rows"]), 17)
    assert scope["y"].tolist() == [r % 2 for r in scope["batch"]["rows"].tolist()]
    assert scope["x"][:, 0].tolist() == [r * 0.5 for r in scope["batch"]["rows"].tolist()]


@pytest.mark.parametrize("workers", [0, 2])
def test_bytes_read_counts_the_projection(table, workers):
    """A projection of one small feature reads less than the whole table; the
    count includes the workers' reads (a stripe split between two workers is
    read by both)."""
    t = pcr.Table(table)
    opening = t.io_counters["bytes_read"]
    whole = t.read([f["name"] for f in t.schema])  # every stream once
    every = t.io_counters["bytes_read"] - opening
    got = {}
    for features in (["label"], None):
        loader = pcr.torch.TableLoader(table, batch_size=64, features=features, shuffle=False)
        assert loader.bytes_read == 0
        batches = loader if workers == 0 else pcr.torch.DataLoader(loader, num_workers=workers)
        assert sum(len(b["rows"]) for b in batches) == ROWS
        got[str(features)] = loader.bytes_read - opening * max(1, workers)
    assert whole and 0 < got["['label']"] < got["None"]
    assert every <= got["None"] <= every * max(1, workers)
