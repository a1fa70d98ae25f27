"""pcr.dask.RemoteLoader on a LocalCluster of two worker processes on
loopback: the batches are the wrapped loader's own, bit for bit."""
import json
import os
import signal
import subprocess
import sys
import time
import warnings

import pytest

distributed = pytest.importorskip("distributed")
torch = pytest.importorskip("torch")

import pcr  # noqa: E402
import pcr.dask  # noqa: E402
import pcr.torch  # noqa: E402
from conftest import README, python_block  # noqa: E402


def local_cluster(tmp_path_factory, workers=2):
    return distributed.LocalCluster(n_workers=workers, processes=True, threads_per_worker=1, host="127.0.0.1",
                                    dashboard_address=None,
                                    local_directory=str(tmp_path_factory.mktemp("dask-workers")))


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    with local_cluster(tmp_path_factory) as cluster, distributed.Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def images(data_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("remote-images") / "ds"
    pcr.convert_images(str(data_dir / "sample"), str(out), images_per_record=4,
                       fields=str(data_dir / "fields" / "sample.jsonl"))
    return str(out)


ROWS = 700


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    out = tmp_path_factory.mktemp("remote-table")
    rows = []
    for r in range(ROWS):
        row = {"label": r % 3, "dense": {"1": r * 0.5}, "sparse": {"100": list(range(r % 4))},
               "scored": {"200": [[r, r / 8]]}, "name": f"n{r}"}
        if r % 5:
            row["dense"]["2"] = float(r)
        if r % 7 == 0:
            del row["name"]
        rows.append(row)
    (out / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return pcr.convert_table(out / "rows.jsonl", out, rows_per_stripe=64)["path"]


def same(a, b, where="batch"):
    """Asserts `a` and `b` are equal, tensors in dtype, shape and every bit."""
    assert type(a) is type(b), where
    if isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape, where
        assert torch.equal(a.view(torch.uint8) if a.dtype != torch.bool else a,
                           b.view(torch.uint8) if b.dtype != torch.bool else b), where
    elif isinstance(a, dict):
        assert list(a) == list(b), where
        for k in a:
            same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{where}[{i}]")
    else:
        assert a == b, where


def same_batches(got, want):
    assert len(got) == len(want)
    for i, (a, b) in enumerate(zip(got, want)):
        same(a, b, f"batch {i}")


def image_loader(path, batch_size, **kw):
    return pcr.torch.ImageLoader(path, batch_size, size=32, resize=36, threads=1, seed=7, shuffle_buffer=5, **kw)


@pytest.mark.parametrize("batch_size,fidelity,train,rank", [(3, "full", True, None), (4, 1, True, 1),
                                                             (5, 2, False, 0), (24, "full", True, None)])
def test_image_batches_are_the_local_loaders_bit_for_bit(client, images, batch_size, fidelity, train, rank):
    share = {} if rank is None else {"rank": rank, "world_size": 2}
    local = image_loader(images, batch_size, fidelity=fidelity, train=train, **share)
    remote = pcr.dask.RemoteLoader(image_loader(images, batch_size, fidelity=fidelity, train=train, **share),
                                   client, prefetch=4, batches_per_task=2)
    for epoch in (0, 1, 3):
        local.set_epoch(epoch)
        remote.set_epoch(epoch)
        want = list(local)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # torch would warn of a buffer it cannot write
            got = list(remote)
        assert len(got) == len(remote) == len(local)
        same_batches(got, want)
        assert all(b[0].numpy().flags.writeable for b in got)
    stats = remote.stats
    assert stats["batches_remote"] == 3 * len(local) and stats["batches_local"] == 0
    assert stats["worker_seconds_per_batch"] > 0 and stats["wait_seconds"] >= 0
    assert stats["batches_buffered"] == 0


def test_fields_indices_transforms_and_float16_cross_too(client, images):
    def kw():
        return dict(fields=["caption"], return_index=True, normalize=([0.5], [0.25]), dtype=torch.float16,
                    batch_transform=lambda b: (b[0] * 2, *b[1:]))

    want = list(image_loader(images, 3, **kw()))
    got = list(pcr.dask.RemoteLoader(image_loader(images, 3, **kw()), client))
    same_batches(got, want)
    assert got[0][0].dtype == torch.float16 and isinstance(got[0][2], dict)


@pytest.mark.parametrize("batch_size,shuffle,rank", [(32, True, None), (50, False, 1), (700, True, 0)])
def test_table_batches_are_the_local_loaders_bit_for_bit(client, table, batch_size, shuffle, rank):
    share = {} if rank is None else {"rank": rank, "world_size": 2}

    def make():
        return pcr.torch.TableLoader(table, batch_size, shuffle=shuffle, shuffle_stripes=3, dense=["1"], seed=5,
                                     **share)

    local, remote = make(), pcr.dask.RemoteLoader(make(), client, prefetch=3)
    for epoch in (0, 2):
        local.set_epoch(epoch)
        remote.set_epoch(epoch)
        want = list(local)
        got = list(remote)
        assert len(got) == len(remote) == len(local)
        same_batches(got, want)
    assert not hasattr(remote, "set_fidelity")


def test_resume_mid_epoch_from_either_loader(client, images, table):
    want = list(image_loader(images, 3))
    remote = pcr.dask.RemoteLoader(image_loader(images, 3), client, prefetch=2)
    taken = []
    for batch in remote:
        taken.append(batch)
        if len(taken) == 3:
            break
    state = remote.state_dict()
    assert state["batches"] == 3 and state["num_workers"] == 1
    resumed = pcr.dask.RemoteLoader(image_loader(images, 3), client)
    resumed.load_state_dict(state)
    same_batches(taken + list(resumed), want)
    local = image_loader(images, 3)
    local.load_state_dict(state)  # a remote state resumes locally
    same_batches(taken + list(local), want)

    tables = [pcr.torch.TableLoader(table, 40, seed=1) for _ in range(2)]
    want = list(tables[0])
    it = iter(tables[1])
    head = [next(it), next(it)]
    it.close()
    again = pcr.dask.RemoteLoader(pcr.torch.TableLoader(table, 40, seed=1), client)
    again.load_state_dict(tables[1].state_dict())  # a local state resumes remotely
    same_batches(head + list(again), want)


def test_a_local_share_makes_the_same_batches(client, images):
    want = list(image_loader(images, 2, fidelity=1))
    for share in (0.5, 0.25, 1.0, 1):
        remote = pcr.dask.RemoteLoader(image_loader(images, 2, fidelity=1), client, prefetch=4,
                                       batches_per_task=1, local_share=share)
        same_batches(list(remote), want)
        stats = remote.stats
        assert stats["batches_local"] == round(len(want) * share) and stats["local_seconds_per_batch"] > 0
        assert stats["batches_local"] + stats["batches_remote"] == len(want)
    alone = pcr.dask.RemoteLoader(image_loader(images, 2, fidelity=1), None, local_share=1.0)
    same_batches(list(alone), want)
    auto = pcr.dask.RemoteLoader(image_loader(images, 2, fidelity=1), client, batches_per_task=1, local_share="auto")
    for epoch in range(2):
        same_batches(list(auto), want)  # the first run is made there, the second here
        stats = auto.stats
        assert stats["batches_local"] > 0 and stats["batches_remote"] > 0


def test_runs_all_made_here_are_one_iteration_of_the_loader(client, images, table, monkeypatch):
    started = []
    for kind in (pcr.torch.ImageLoader, pcr.torch.TableLoader):
        monkeypatch.setattr(kind, "_batches", lambda self, share, source=None, batches=kind._batches:
                            started.append(share["batches"]) or batches(self, share, source))
    for loader in (image_loader(images, 2, fidelity=1), pcr.torch.TableLoader(table, 40, seed=1)):
        want = list(loader)
        here = pcr.dask.RemoteLoader(loader, None, prefetch=4, batches_per_task=1, local_share=1)
        started.clear()
        same_batches(list(here), want)
        assert started == [0]  # not one loader a run
        # Every other run is made here (1, 3, ...): each starts afresh and reads nothing past its end.
        shared = pcr.dask.RemoteLoader(loader, client, prefetch=4, batches_per_task=1, local_share=0.5)
        started.clear()
        same_batches(list(shared), want)
        assert started == list(range(1, len(want), 2))
        here.load_state_dict(loader.state_dict(3))
        started.clear()
        same_batches(list(here), want[3:])
        assert started == [3]


def test_auto_makes_queued_runs_the_new_way_when_it_changes_way(client, images, monkeypatch):
    from pcr import _remote_loader

    launched = []

    class Flip(_remote_loader._Split):
        """Changes between all here and all there at every batch."""

        def took(self):
            self.way = "local" if self.way != "local" else "remote"
            return True

        def watch(self, kind, count, future):
            launched.append(kind)
            super().watch(kind, count, future)

    monkeypatch.setattr(_remote_loader, "_Split", Flip)
    want = list(image_loader(images, 2, fidelity=1))
    auto = pcr.dask.RemoteLoader(image_loader(images, 2, fidelity=1), client, prefetch=4, batches_per_task=1,
                                 local_share="auto")
    same_batches(list(auto), want)
    stats = auto.stats
    assert stats["batches_local"] > 0 and stats["batches_remote"] > 0
    assert stats["batches_local"] + stats["batches_remote"] == len(want)
    assert len(launched) > len(want)  # some runs were made again the new way, each delivered once


def test_a_process_opens_the_data_once_for_an_iterations_runs(images, monkeypatch):
    import cloudpickle
    from pcr import _remote_loader

    loader = image_loader(images, 2, fidelity=1)
    want = list(loader)
    opened = []
    source = pcr.torch.ImageLoader._source
    monkeypatch.setattr(pcr.torch.ImageLoader, "_source", lambda self: opened.append(self.epoch) or source(self))
    monkeypatch.setattr(_remote_loader, "_OPENED", _remote_loader._Opened())
    shares, specs = [], []
    for epoch in range(_remote_loader._Opened._SPECS + 1):
        loader.set_epoch(epoch)
        shares.append([loader._iteration_share(0, 1, 0, 1, a) for a in range(len(want))])
        specs.append(cloudpickle.dumps(loader))

    def run(spec, share):  # as a worker makes it, without the wire
        made = _remote_loader._Run(spec, share, 1)
        try:
            return made.take(1, False, time.perf_counter())["batches"]
        finally:
            made.close()

    got = []
    for share in shares[0]:
        got += run(specs[0], share)
    same_batches(got, want)
    assert opened == [0]
    for spec, share in zip(specs[1:], shares[1:]):  # 8 more iterations: the first is no longer kept
        run(spec, share[0])
    run(specs[0], shares[0][0])
    assert opened == list(range(len(specs))) + [0]


def test_set_fidelity_and_skipped_reach_the_workers(client, images, tmp_path):
    from conftest import damaged_copy

    remote = pcr.dask.RemoteLoader(image_loader(images, 4), client)
    remote.set_fidelity(1)
    want = image_loader(images, 4, fidelity=1)
    same_batches(list(remote), list(want))
    assert remote.fidelity == 1 and remote.state_dict()["fidelity"] == 1

    damaged_copy(images, tmp_path / "bad")
    bad = tmp_path / "bad"
    remote = pcr.dask.RemoteLoader(image_loader(str(bad), 4, on_error="skip"), client)
    with pytest.warns(RuntimeWarning, match="skipped image"):
        got = list(remote)
    local = image_loader(str(bad), 4, on_error="skip")
    with pytest.warns(RuntimeWarning, match="skipped image"):
        same_batches(got, list(local))
    assert remote.skipped == local.skipped > 0


def test_bad_arguments_are_refused(client, images):
    loader = image_loader(images, 4)
    for kw in ({"prefetch": 0}, {"prefetch": -2}, {"prefetch": 2.5}, {"local_share": 1.5}, {"local_share": -0.1},
               {"local_share": float("nan")}, {"local_share": "fast"}, {"batches_per_task": 9},
               {"batches_per_task": 0}, {"timeout": 0}):
        with pytest.raises(ValueError, match=next(iter(kw))):
            pcr.dask.RemoteLoader(loader, client, **kw)
    with pytest.raises(TypeError, match="ImageLoader or TableLoader"):
        pcr.dask.RemoteLoader(pcr.torch.Dataset(images), client)
    alone = subprocess.run([sys.executable, "-c", "import pcr.dask, pcr.torch, sys; "
                            "pcr.dask.RemoteLoader(pcr.torch.ImageLoader(sys.argv[1], 4))", images],
                           capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert "ValueError: RemoteLoader: no Dask client: pass client=distributed.Client('scheduler:8786')" in alone.stderr
    state = loader.state_dict()
    state["num_workers"] = 2
    remote = pcr.dask.RemoteLoader(loader, client)
    remote.load_state_dict(state)
    with pytest.raises(ValueError, match="num_workers=2"):
        next(iter(remote))


def test_a_cluster_without_workers_raises_naming_it(tmp_path_factory, images):
    with local_cluster(tmp_path_factory, workers=0) as cluster, distributed.Client(cluster) as c:
        remote = pcr.dask.RemoteLoader(image_loader(images, 4), c, timeout=2)
        began = time.monotonic()
        with pytest.raises(TimeoutError, match=r"Dask cluster at tcp://127\.0\.0\.1:\d+ in 2 s \(0 workers: it has "
                                               r"none\) while rank 0 waited for batch 0"):
            next(iter(remote))
        assert time.monotonic() - began < 30


def test_an_adaptive_cluster_starts_workers_for_the_runs(tmp_path_factory, images):
    with local_cluster(tmp_path_factory, workers=0) as cluster, distributed.Client(cluster) as c:
        cluster.adapt(minimum=0, maximum=2, interval="200ms")
        want = list(image_loader(images, 4))
        same_batches(list(pcr.dask.RemoteLoader(image_loader(images, 4), c, timeout=60)), want)
        assert len(c.scheduler_info()["workers"]) >= 1


def test_a_worker_killed_mid_epoch_loses_and_repeats_nothing(tmp_path_factory, images, table):
    with local_cluster(tmp_path_factory) as cluster, distributed.Client(cluster) as c:
        for make in (lambda: image_loader(images, 2, fidelity=2), lambda: pcr.torch.TableLoader(table, 20, seed=2)):
            want = list(make())
            remote = pcr.dask.RemoteLoader(make(), c, prefetch=6, batches_per_task=1)
            got = []
            for batch in remote:
                got.append(batch)
                if len(got) == 2:
                    pids = c.run(os.getpid)
                    os.kill(pids[sorted(pids)[0]], signal.SIGKILL)
            same_batches(got, want)
            c.wait_for_workers(2, timeout=60)


RANKS = """
import sys
import distributed
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import pcr.dask
import pcr.torch


def run(rank, path, table, scheduler, init, out):
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=2)
    with distributed.Client(scheduler) as client:
        got = {}
        for name, loader in (("images", pcr.torch.ImageLoader(path, 3, size=32, resize=36, threads=1, seed=4)),
                             ("table", pcr.torch.TableLoader(table, 30, ["label", "100"], seed=4))):
            remote = pcr.dask.RemoteLoader(loader, prefetch=4)
            got[name] = {"len": len(remote), "epochs": []}
            for epoch in range(2):
                remote.set_epoch(epoch)
                got[name]["epochs"].append(list(remote))
    torch.save(got, f"{out}.{rank}")
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(run, args=tuple(sys.argv[1:]), nprocs=2)
"""


def test_ddp_ranks_share_the_cluster_each_with_its_share(client, images, table, tmp_path):
    script = tmp_path / "ranks.py"
    script.write_text(RANKS)
    out = tmp_path / "got"
    subprocess.run([sys.executable, str(script), images, str(table), client.scheduler.address,
                    f"file://{tmp_path / 'init'}", str(out)], check=True, timeout=600,
                   env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    rows = []
    for rank in range(2):
        got = torch.load(f"{out}.{rank}")
        for name, make in (("images", lambda: pcr.torch.ImageLoader(images, 3, size=32, resize=36, threads=1, seed=4,
                                                                    rank=rank, world_size=2)),
                           ("table", lambda: pcr.torch.TableLoader(table, 30, ["label", "100"], seed=4, rank=rank,
                                                                   world_size=2))):
            local = make()
            assert got[name]["len"] == len(local)
            for epoch in range(2):
                local.set_epoch(epoch)
                same_batches(got[name]["epochs"][epoch], list(local))
        rows += [r for b in got["table"]["epochs"][0] for r in b["rows"].tolist()]
    assert sorted(rows) == list(range(ROWS))


def test_the_readme_and_doc_examples_run_as_written(client, images):
    for start, edits in [
        ("import distributed, pcr.dask, pcr.torch\n",
         [("distributed.Client()", f"distributed.Client({client.scheduler.address!r})"),
          ('"train-pcr"', repr(images)), ("batch_size=256", "batch_size=4"),
          ("    ...\n", "    seen.append((0, images, labels))\n")]),
        ("import distributed\nimport pcr.dask\n",
         [('distributed.Client("scheduler:8786")', f"distributed.Client({client.scheduler.address!r})"),
          ('"/shared/imagenet-pcr"', repr(images)), ("batch_size=256", "batch_size=4"), ("range(90)", "range(2)"),
          ("        ...\n", "        seen.append((epoch, images, labels))\n")])]:
        code = python_block(start)
        for old, new in edits:
            assert old in code, old
            code = code.replace(old, new)
        scope = {"seen": []}
        exec(compile(code, str(README), "exec"), scope)
        scope["client"].close()
        local = pcr.torch.ImageLoader(images, 4, fidelity=scope["loader"].fidelity)
        want = []
        for epoch in sorted({e for e, _, _ in scope["seen"]}):
            local.set_epoch(epoch)
            want += [(epoch, *b) for b in local]
        same_batches(scope["seen"], want)


TRAINER = """
import os, signal, sys
import distributed, torch
import pcr.dask, pcr.torch

path, scheduler, out, kill_after = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
with distributed.Client(scheduler) as client:
    loader = pcr.dask.RemoteLoader(pcr.torch.ImageLoader(path, 2, size=32, resize=36, threads=1, seed=7,
                                                         shuffle_buffer=5), client, prefetch=4)
    loader.set_epoch(1)
    if os.path.exists(out + ".state"):
        loader.load_state_dict(torch.load(out + ".state"))
    for i, batch in enumerate(loader):
        state = loader.state_dict()
        torch.save(batch, f"{out}.{state['batches']}")
        torch.save(state, out + ".tmp")
        os.replace(out + ".tmp", out + ".state")  # the checkpoint after each batch
        if i + 1 == kill_after:
            os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_trainer_killed_mid_epoch_resumes_from_its_state(client, images, tmp_path):
    script = tmp_path / "trainer.py"
    script.write_text(TRAINER)
    out = str(tmp_path / "batch")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    killed = subprocess.run([sys.executable, str(script), images, client.scheduler.address, out, "3"], env=env,
                            timeout=300)
    assert killed.returncode == -signal.SIGKILL
    assert torch.load(out + ".state")["batches"] == 3
    subprocess.run([sys.executable, str(script), images, client.scheduler.address, out, "0"], env=env, timeout=300,
                   check=True)
    local = image_loader(images, 2)
    local.set_epoch(1)
    want = list(local)
    same_batches([torch.load(f"{out}.{b}") for b in range(1, len(want) + 1)], want)


def test_auto_keeps_the_fastest_way_it_tried_and_tries_again_later(monkeypatch):
    from pcr import _remote_loader

    clock = [0.0]
    monkeypatch.setattr(_remote_loader.time, "perf_counter", lambda: clock[0])
    split = _remote_loader._Split(prefetch=1)  # windows: 1 batch of lag, then 4 timed; slack 1 batch
    split.restart()

    def take(seconds_per_batch, count):
        """The ways of `count` batches taken at that pace."""
        ways = []
        for _ in range(count):
            ways.append(split.way)
            clock[0] += seconds_per_batch
            split.took()
        return ways

    def window(seconds_per_batch):
        ways = take(seconds_per_batch, 3)  # the lag, 2 timed
        split.restart()
        clock[0] += 100  # the wait for a new epoch's first batch is not a step
        return ways + take(seconds_per_batch, 3)  # its first (not timed), 2 timed

    assert window(1.0) == ["balanced"] * 6
    assert window(0.5) == ["local"] * 6
    # All remote is slower: its trial ends one batch behind the local pace, after its lag and 1 timed batch,
    # and the change to local, the way kept, is the one took() reports (queued runs are made again here).
    assert take(2.0, 1) == ["remote"]
    clock[0] += 2.0
    assert split.took() is True
    assert split.rates == {"balanced": 1.0, "local": 2.0, "remote": 0.5}
    assert split.way == "local"
    assert split.choose(1) == "local"
    for _ in range(50):
        assert window(0.5) == ["local"] * 6
    assert split.way == "balanced"  # the others are tried again
    assert split.trials == ["balanced", "remote"]
    assert window(0.25) == ["balanced"] * 6  # faster: a whole window
    # Slower than sharing, but by less than a batch over the window: a whole window too.
    assert window(0.26) == ["remote"] * 6
    assert split.rates["remote"] == pytest.approx(4 / 1.04)
    assert split.way == "balanced"


@pytest.mark.parametrize("cluster_seconds, tried", [(2.0, False), (0.3, True)])
def test_auto_tries_all_remote_only_when_the_cluster_could_win(monkeypatch, cluster_seconds, tried):
    from pcr import _remote_loader

    clock = [0.0]
    monkeypatch.setattr(_remote_loader.time, "perf_counter", lambda: clock[0])
    split = _remote_loader._Split(prefetch=1)
    split.restart()
    # While sharing, the cluster makes a run of 2 batches in 2 x cluster_seconds.
    split.done.append(("remote", 2, 0.0, 2 * cluster_seconds))
    for seconds in (1.0, 0.5):  # the sharing trial, then all local: 1 batch of lag, 4 timed each
        for _ in range(5):
            clock[0] += seconds
            split.took()
    assert split.rates["local"] == 2.0
    if tried:
        assert split.way == "remote" and split.trials == ["remote"]
    else:
        # The cluster makes 0.5 batches a second, under 0.8 of local's 2: all remote is not tried.
        assert split.way == "local" and split.trials == []
        assert split.rates["remote"] == 0.5
