"""Fidelity that changes while training: the gradient-similarity probe and the tuner."""
import math
import os
import pathlib
import socket
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

import pcr  # noqa: E402
import pcr.torch  # noqa: E402


def small_cnn(classes=3, seed=0):
    """A CNN with batch norm and dropout, for 32 x 32 RGB images."""
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(8, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(4),
        torch.nn.Flatten(), torch.nn.Dropout(0.2), torch.nn.Linear(16 * 16, classes))


def as_floats(batch):
    images, labels = batch[:2]
    return images.float() / 255, labels


PROBE = dict(size=32, images=24, batch_size=8, batch_transform=as_floats, threads=2)


def trained(path, steps=30):
    """small_cnn after `steps` steps of SGD on the dataset at full fidelity."""
    model = small_cnn()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loader = pcr.torch.ImageLoader(str(path), batch_size=8, size=32, threads=2, batch_transform=as_floats)
    step = 0
    while step < steps:
        for images, labels in loader:
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(images), labels).backward()
            opt.step()
            step += 1
    return model


def test_lower_fidelity_cuts_the_bytes_a_read_gives(sample_dataset):
    ds = pcr.ImageDataset(str(sample_dataset))
    groups = ds.num_scan_groups
    for i in (0, 7, len(ds) - 1):
        full = ds.read(i)
        for k in range(1, groups + 1):
            assert ds.lower_fidelity(i, full, k) == ds.read(i, k)
            assert ds.lower_fidelity(i, ds.read(i, k), 1, jpeg_fidelity=k) == ds.read(i, 1)
    with pytest.raises(ValueError, match="above jpeg_fidelity"):
        ds.lower_fidelity(0, ds.read(0, 2), 3, jpeg_fidelity=2)
    with pytest.raises(pcr.CorruptionError, match="not this image"):
        ds.lower_fidelity(1, ds.read(0), 1)


def test_the_probe_scores_full_fidelity_1_and_fewer_groups_lower(sample_dataset):
    groups = pcr.ImageDataset(str(sample_dataset)).num_scan_groups
    model = trained(sample_dataset)
    scores = pcr.torch.gradient_similarity(model, torch.nn.functional.cross_entropy, str(sample_dataset), **PROBE)
    assert list(scores) == list(range(1, groups + 1))
    assert scores[groups] == 1.0
    assert all(-1 <= s < 1 for k, s in scores.items() if k < groups)
    assert scores[1] < scores[2] < scores[groups - 1]
    # The same images and draws give the same scores; other images others.
    again = pcr.torch.gradient_similarity(model, torch.nn.functional.cross_entropy, str(sample_dataset), **PROBE)
    assert again == scores
    some = pcr.torch.gradient_similarity(model, torch.nn.functional.cross_entropy, str(sample_dataset),
                                         fidelities=[2, "full"], **PROBE)
    assert some == {2: scores[2], groups: 1.0}


class CountingDataset(pcr.ImageDataset):
    """An ImageDataset that records what is read through it."""
    opened = []

    def __init__(self, *args):
        super().__init__(*args)
        self.calls = []
        self.counts  # reads every file's header, footer and index: what follows reads records only
        self.opening = self.io_counters
        CountingDataset.opened.append(self)

    def record_samples(self, record, fidelity="full", fields=()):
        self.calls.append(("record_samples", record, fidelity))
        return super().record_samples(record, fidelity, fields)

    def read(self, *args, **kw):
        self.calls.append(("read",))
        return super().read(*args, **kw)

    def read_many(self, *args, **kw):
        self.calls.append(("read_many",))
        return super().read_many(*args, **kw)

    def read_record(self, *args, **kw):
        self.calls.append(("read_record",))
        return super().read_record(*args, **kw)


def test_the_probe_reads_each_record_once(sample_dataset, monkeypatch):
    monkeypatch.setattr(pcr._pcr, "ImageDataset", CountingDataset)
    CountingDataset.opened = []
    model = small_cnn()
    scores = pcr.torch.gradient_similarity(model, torch.nn.functional.cross_entropy, str(sample_dataset),
                                           **dict(PROBE, images=12))
    assert len(scores) == CountingDataset.opened[0].num_scan_groups
    (ds,) = CountingDataset.opened
    assert all(call[0] == "record_samples" and call[2] == "full" for call in ds.calls), ds.calls
    records = [call[1] for call in ds.calls]
    assert len(records) == len(set(records)) == 3  # 12 images in records of 5: each read once
    counters = ds.io_counters
    assert counters["reads"] - ds.opening["reads"] == len(records)
    want = sum(len(b"".join(ds.read(i) for i in range(5 * r, min(5 * r + 5, len(ds))))) for r in records)
    assert counters["bytes_read"] - ds.opening["bytes_read"] >= want - 2 * 5 * len(records)  # less an EOI each


def snapshot(model):
    return ([p.detach().clone() for p in model.parameters()],
            [None if p.grad is None else p.grad.clone() for p in model.parameters()],
            [b.detach().clone() for b in model.buffers()],
            [m.training for m in model.modules()],
            torch.get_rng_state())


def same(a, b):
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if a is None or b is None:
        return a is b
    if isinstance(a, torch.Tensor):
        return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
    return a == b


@pytest.mark.parametrize("mode", ["train", "eval"])
def test_the_probe_leaves_the_model_as_it_was(sample_dataset, mode):
    model = trained(sample_dataset, steps=6)
    images, labels = as_floats(next(iter(pcr.torch.ImageLoader(str(sample_dataset), batch_size=8, size=32))))
    torch.nn.functional.cross_entropy(model(images), labels).backward()  # gradients accumulated
    model.train(mode == "train")
    before = snapshot(model)
    pcr.torch.gradient_similarity(model, torch.nn.functional.cross_entropy, str(sample_dataset), **PROBE)
    after = snapshot(model)
    for name, x, y in zip(("parameters", "gradients", "buffers", "training flags", "rng"), before, after):
        assert same(x, y), name
    assert any(b.abs().sum() > 0 for b in model.buffers())  # the BN statistics the probe must not move


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_probe_gives_every_gloo_rank_the_same_scores(sample_dataset, tmp_path):
    model = trained(sample_dataset, steps=6)
    torch.save(model, tmp_path / "model.pt")
    script = pathlib.Path(__file__).with_name("probe_ranks.py")
    port = free_port()
    procs = [subprocess.Popen([sys.executable, str(script), str(sample_dataset), str(tmp_path), str(rank), "2",
                               str(port)], stderr=subprocess.PIPE, text=True) for rank in range(2)]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    results = [torch.load(tmp_path / f"rank{r}.pt") for r in range(2)]
    assert results[0]["scores"] == results[1]["scores"]
    assert results[0]["scores"][max(results[0]["scores"])] == 1.0
    # Each rank read its own records, and together the probe's images.
    assert not set(results[0]["records"]) & set(results[1]["records"])
    assert [results[r]["images"] for r in range(2)] == [8, 8]


class StubProbe:
    """Stands in for the probe: the given scores, one dict per call."""

    def __init__(self, *answers):
        self.answers, self.calls = list(answers), []

    def __call__(self, model, loss_fn, ds, fidelities, images, batch_size, seed, options, batch_transform, device):
        self.calls.append(dict(fidelities=fidelities, images=images, batch_size=batch_size, seed=seed))
        return self.answers.pop(0)


def test_the_tuner_keeps_full_fidelity_in_warmup_then_picks_the_lowest_passing(sample_dataset, monkeypatch, caplog):
    import logging

    loader = pcr.torch.ImageLoader(str(sample_dataset), batch_size=4)
    groups = loader.num_scan_groups
    stub = StubProbe({1: 0.5, 2: 0.8, 3: 0.95, 4: 0.99, 5: 1.0}, {1: 0.81, 2: 0.9, 3: 0.95, 4: 0.99, 5: 1.0},
                     {1: 0.1, 2: 0.2, 3: 0.3, 4: 0.79, 5: 1.0})
    monkeypatch.setattr(pcr.torch, "_gradient_similarity", stub)
    tuner = pcr.torch.FidelityTuner(loader, small_cnn(), torch.nn.functional.cross_entropy, threshold=0.8, every=3,
                                    warmup=2)
    caplog.set_level(logging.INFO, logger="pcr")
    chosen = [tuner.step(epoch) for epoch in range(9)]
    # Warmup 0..1 full; probes at 2 (0.8 reaches 0.8: 2), 5 (1), 8 (none below full).
    assert chosen == [groups, groups, 2, 2, 2, 1, 1, 1, groups]
    assert loader.fidelity == groups
    assert [h["epoch"] for h in tuner.history] == [2, 5, 8]
    assert [h["fidelity"] for h in tuner.history] == [2, 1, groups]
    assert len(stub.calls) == 3 and stub.calls[0]["fidelities"] == list(range(1, groups + 1))
    assert stub.calls[0]["batch_size"] == 4 and stub.calls[0]["seed"] != stub.calls[1]["seed"]
    assert "epoch 5" in caplog.text and "fidelity 1 of" in caplog.text


def test_the_tuner_resumes_its_choice(sample_dataset, monkeypatch):
    loader = pcr.torch.ImageLoader(str(sample_dataset), batch_size=4)
    stub = StubProbe({1: 0.7, 2: 0.9, 5: 1.0})
    monkeypatch.setattr(pcr.torch, "_gradient_similarity", stub)
    tuner = pcr.torch.FidelityTuner(loader, small_cnn(), torch.nn.functional.cross_entropy, every=4, warmup=1,
                                    candidates=[1, 2, "full"])
    assert [tuner.step(e) for e in range(3)] == [5, 2, 2]
    state = tuner.state_dict()
    loader2 = pcr.torch.ImageLoader(str(sample_dataset), batch_size=4)
    resumed = pcr.torch.FidelityTuner(loader2, small_cnn(), torch.nn.functional.cross_entropy, every=4, warmup=1,
                                      candidates=[1, 2, "full"])
    resumed.load_state_dict(state)
    assert loader2.fidelity == 2 and resumed.history == tuner.history
    assert resumed.step(1) == 2 and resumed.step(3) == 2  # probed at epoch 1 already; 3 is no probe epoch
    assert len(stub.calls) == 1


def test_the_tuner_with_the_real_probe(sample_dataset):
    groups = pcr.ImageDataset(str(sample_dataset)).num_scan_groups
    model = trained(sample_dataset, steps=10)
    loader = pcr.torch.ImageLoader(str(sample_dataset), batch_size=8, size=32, threads=2, batch_transform=as_floats)
    for threshold in (0.999999, 0.9, -0.99):
        tuner = pcr.torch.FidelityTuner(loader, model, torch.nn.functional.cross_entropy, threshold=threshold,
                                        every=1, warmup=0, images=24)
        k = tuner.step(0)
        (probe,) = tuner.history
        assert probe["scores"][groups] == 1.0
        assert k == min(f for f, s in probe["scores"].items() if s >= threshold)
        assert loader.fidelity == k
    assert k == 1  # every fidelity's gradient is within 0.99 of opposite


def test_bad_arguments_are_refused_naming_them(sample_dataset):
    loader = pcr.torch.ImageLoader(str(sample_dataset), batch_size=4)
    groups = loader.num_scan_groups
    model, loss = small_cnn(), torch.nn.functional.cross_entropy
    for threshold in (-1, 1.01, math.nan, 2):
        with pytest.raises(ValueError, match="threshold must be a number in"):
            pcr.torch.FidelityTuner(loader, model, loss, threshold=threshold)
    with pytest.raises(ValueError, match="every must be at least 1, not 0"):
        pcr.torch.FidelityTuner(loader, model, loss, every=0)
    for candidates in ([0], [1, groups + 1], []):
        with pytest.raises(ValueError, match="candidates must"):
            pcr.torch.FidelityTuner(loader, model, loss, candidates=candidates)
    for fidelities in ([0], [groups + 1]):
        with pytest.raises(ValueError, match="fidelities must be fidelities"):
            pcr.torch.gradient_similarity(model, loss, str(sample_dataset), fidelities, **PROBE)
    with pytest.raises(ValueError, match="images must be at least 1"):
        pcr.torch.gradient_similarity(model, loss, str(sample_dataset), **dict(PROBE, images=0))
    with pytest.raises(TypeError, match="loader must be a pcr.torch.ImageLoader"):
        pcr.torch.FidelityTuner(model, model, loss)


def test_the_docs_example_runs_and_tunes(sample_dataset, capsys):
    from conftest import DOCS, python_block

    code = python_block("import torch, torchvision, pcr.torch  # choosing a fidelity\n")
    for old, new in [('"train-pcr"', repr(str(sample_dataset))), ("batch_size=256", "batch_size=8"),
                     ("num_classes=1000", "num_classes=3"), ("range(90)", "range(3)"), ("every=20", "every=1"),
                     ("warmup=5", "warmup=1"), ("normalize=imagenet)", "normalize=imagenet, size=64)")]:
        assert old in code, old
        code = code.replace(old, new)
    scope = {}
    exec(compile(code, str(DOCS[0]), "exec"), scope)
    groups = pcr.ImageDataset(str(sample_dataset)).num_scan_groups
    printed = eval(capsys.readouterr().out)
    assert sorted(printed) == list(range(1, groups + 1)) and printed[groups] == 1.0
    tuner, loader = scope["tuner"], scope["loader"]
    assert [h["epoch"] for h in tuner.history] == [1, 2]
    for h in tuner.history:
        assert h["fidelity"] == min([k for k, s in h["scores"].items() if s >= 0.8] or [groups])
    assert loader.fidelity == tuner.fidelity == scope["checkpoint"]["loader"]["fidelity"]
    assert scope["checkpoint"]["tuner"]["fidelity"] == tuner.fidelity


def test_the_accuracy_benchmark_runs_on_any_image_folder(data_dir, tmp_path):
    """bench/fidelity_accuracy.py, shrunk to seconds on the bundled sample."""
    build = pathlib.Path(pcr.__file__).resolve().parents[2]
    script = pathlib.Path(__file__).resolve().parents[2] / "bench" / "fidelity_accuracy.py"
    out = subprocess.run([sys.executable, str(script), str(build), "--data", str(data_dir / "sample"), "--work",
                          str(tmp_path), "--seeds", "2", "--epochs", "2", "--batch-size", "4", "--warmup", "0",
                          "--every", "1", "--probe-images", "8", "--thresholds", "0.8", "--threads", "1"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    rows = [line for line in out.stdout.splitlines() if line.startswith("| ")]
    groups = pcr.ImageDataset(str(next(p for p in tmp_path.glob("train-*") if p.is_dir()))).num_scan_groups
    assert rows[0].startswith("| fidelity | test accuracy | bytes read |")
    names = [row.split(" | ")[0][2:] for row in rows[1:]]
    assert names[-1] == "tuner, threshold 0.8" and names[0] == "1" and names[-2] == str(groups)
    assert "gradient similarity" in out.stderr  # the tuner's probes, logged
    shares = [float(row.split(" | ")[3]) for row in rows[1:-1]]
    assert shares == sorted(shares) and shares[-1] == 1.0
