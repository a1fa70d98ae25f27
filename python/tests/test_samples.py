import pathlib

import numpy as np
import pytest

import pcr


def run(ds, **kw):
    it = pcr.SampleIterator(ds, **kw)
    batches = list(it)
    # len() counts the epoch's batches; a resumed iteration gives the rest.
    assert len(batches) == len(it) - -(-kw.get("position", 0) // kw["batch_size"])
    return batches


@pytest.mark.parametrize("world", [1, 2, 3, 5])
@pytest.mark.parametrize("uneven", ["pad", "drop"])
def test_shares_are_equal_disjoint_and_complete(sample_dataset, world, uneven):
    ds = pcr.ImageDataset(str(sample_dataset))
    batch = 2
    shares = [[i for idx, _, _ in run(ds, batch_size=batch, rank=r, world_size=world, uneven=uneven, seed=3)
               for i in idx.tolist()] for r in range(world)]
    sizes = {len(s) for s in shares}
    assert len(sizes) == 1
    seen = [i for s in shares for i in s]
    if uneven == "drop":
        assert sizes.pop() % batch == 0
        assert len(seen) == len(set(seen)) and len(seen) > len(ds) - world * batch
    else:
        assert sizes.pop() == -(-len(ds) // world)
        assert set(seen) == set(range(len(ds)))
        assert len(seen) - len(set(seen)) <= world - 1  # as DistributedSampler's padding


def test_batches_carry_the_images_they_name(sample_dataset):
    ds = pcr.ImageDataset(str(sample_dataset))
    for idx, labels, jpegs in run(ds, batch_size=4, fidelity=2, seed=1):
        assert idx.dtype == np.uint64 and labels.dtype == np.int64
        for i, label, jpeg in zip(idx.tolist(), labels.tolist(), jpegs):
            assert ds.sample(i)[0] == label
            assert jpeg == ds.read(i, 2)


def test_seed_and_epoch_decide_the_order(sample_dataset):
    ds = pcr.ImageDataset(str(sample_dataset))

    def order(**kw):
        return [i for idx, _, _ in run(ds, batch_size=3, **kw) for i in idx.tolist()]

    assert order(seed=5, epoch=1) == order(seed=5, epoch=1)
    assert order(seed=5, epoch=1) != order(seed=5, epoch=2)
    assert order(seed=5, epoch=1) != order(seed=6, epoch=1)
    assert order(shuffle=False) == list(range(24))


def test_state_resumes_with_the_next_unseen_batch(sample_dataset):
    ds = pcr.ImageDataset(str(sample_dataset))
    kw = dict(batch_size=2, rank=1, world_size=2, seed=9, epoch=4)
    whole = [idx.tolist() for idx, _, _ in run(ds, **kw)]
    it = pcr.SampleIterator(ds, **kw)
    first = [next(it)[0].tolist() for _ in range(3)]
    state = it.state()
    assert state == {"seed": 9, "epoch": 4, "position": 6}
    del it
    rest = [idx.tolist() for idx, _, _ in run(ds, **{**kw, "position": state["position"]})]
    assert first + rest == whole
    with pytest.raises(ValueError):
        pcr.SampleIterator(ds, **{**kw, "position": 3})
    with pytest.raises(ValueError):
        pcr.SampleIterator(ds, batch_size=2, rank=2, world_size=2)
    with pytest.raises(ValueError):
        pcr.SampleIterator(ds, batch_size=2, uneven="spread")
    with pytest.raises(ValueError, match="rank must be at least 0, not -1"):
        pcr.SampleIterator(ds, batch_size=2, rank=-1)
    for fidelity in (0, ds.num_scan_groups + 1, "all"):
        with pytest.raises(ValueError, match=f"fidelity must be 1..{ds.num_scan_groups} or 'full', not"):
            pcr.SampleIterator(ds, batch_size=2, fidelity=fidelity)


def test_every_binding_has_the_stubs_docstring():
    import ast
    import inspect

    stub = ast.parse((pathlib.Path(pcr.__file__).parent / "_pcr.pyi").read_text())
    documented = {}
    for node in stub.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            documented[node.name] = ast.get_docstring(node)
            for member in getattr(node, "body", []) if isinstance(node, ast.ClassDef) else []:
                if isinstance(member, ast.FunctionDef):
                    documented[f"{node.name}.{member.name}"] = ast.get_docstring(member)
    public = []
    for name, value in vars(pcr._pcr).items():
        if name.startswith("_") or not (inspect.isclass(value) or callable(value)):
            continue
        public.append((name, value))
        if inspect.isclass(value):
            public += [(f"{name}.{m}", getattr(value, m)) for m in vars(value)
                       if not m.startswith("_") or m in ("__init__", "__len__")]
    assert len(public) > 30
    for name, value in public:
        doc = documented.get(name)
        assert doc, f"{name} has no docstring in _pcr.pyi"
        runtime = inspect.getdoc(value) or ""
        assert inspect.cleandoc(doc) in runtime, f"help({name}) does not show the stub's docstring"
