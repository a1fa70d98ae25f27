"""The README's PyTorch example, run as written on the bundled sample
converted by the README's command: only the dataset path, the batch size and
the number of epochs are changed."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import pcr  # noqa: E402
from conftest import README, python_block  # noqa: E402



def test_the_loader_example_gives_mixed_batches(data_dir, tmp_path):
    # The set-up command: pcr-convert images tests/data/sample OUT --images-per-record 8
    pcr.convert_images(str(data_dir / "sample"), str(tmp_path / "sample-pcr"), images_per_record=8)
    code = python_block("import torch, pcr.torch\n")
    for old, new in [('"train-pcr"', repr(str(tmp_path / "sample-pcr"))), ("batch_size=256", "batch_size=4"),
                     ("range(90)", "range(3)"), ("        ...\n", "        seen.append((epoch, labels))\n")]:
        assert old in code, old
        code = code.replace(old, new)
    scope = {"seen": []}
    exec(compile(code, str(README), "exec"), scope)
    seen = scope["seen"]
    loader = scope["loader"]
    assert len(seen) == 3 * len(loader)
    ds = pcr.ImageDataset(str(tmp_path / "sample-pcr"))
    counts = np.bincount([ds.sample(i)[0] for i in range(len(ds))])
    assert len(counts) == 3
    # Every epoch is the whole dataset, and batches hold the classes uniform
    # sampling would (the sample's folders are sorted by class).
    for epoch in range(3):
        labels = np.concatenate([l.numpy() for e, l in seen if e == epoch])
        assert np.array_equal(np.bincount(labels, minlength=3), counts)
    from math import comb

    def uniform(size):
        return sum(1 - comb(len(ds) - n, size) / comb(len(ds), size) for n in counts)

    got = np.mean([len(set(l.tolist())) for _, l in seen])
    want = np.mean([uniform(len(l)) for _, l in seen])
    assert got >= 0.9 * want
    state = scope["checkpoint"]
    assert state["epoch"] == 2 and state["batches"] == len(loader)
