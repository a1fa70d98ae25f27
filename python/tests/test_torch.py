import numpy as np
import pytest

torch = pytest.importorskip("torch")

import shutil  # noqa: E402

import pcr  # noqa: E402
import pcr.torch  # noqa: E402


@pytest.fixture(scope="module")
def distinct_dataset(data_dir, tmp_path_factory):
    """The sample without the progressive copy of video-001.jpeg, so that
    every image has pixels of its own."""
    src = tmp_path_factory.mktemp("distinct") / "src"
    shutil.copytree(data_dir / "sample", src, ignore=shutil.ignore_patterns("*progressive*"))
    out = src.parent / "ds"
    pcr.convert_images(str(src), str(out), images_per_record=4)
    return out


def test_map_style_dataset_gives_tensors_and_labels(distinct_dataset):
    ds = pcr.ImageDataset(str(distinct_dataset))
    images = pcr.torch.Dataset(str(distinct_dataset), fidelity=2)
    assert len(images) == len(ds)
    assert images.classes == ds.classes
    for i in (0, 7, len(ds) - 1):
        image, label = images[i]
        assert image.dtype == torch.uint8 and image.shape[0] == 3
        assert label == ds.sample(i)[0]
        want = pcr.decode(ds.read(i, 2))
        assert np.array_equal(image.permute(1, 2, 0).numpy(), want)
    with pytest.raises(ValueError):
        pcr.torch.Dataset(str(distinct_dataset), fidelity=ds.num_scan_groups + 1)


def resize_to_floats(t):
    return torch.nn.functional.interpolate(t[None].float(), size=(8, 8))[0] / 255


def test_dataloader_with_workers_and_a_transform(distinct_dataset):
    crop = pcr.torch.Dataset(str(distinct_dataset), transform=resize_to_floats)
    loader = torch.utils.data.DataLoader(crop, batch_size=5, num_workers=2, shuffle=True,
                                         generator=torch.Generator().manual_seed(0))
    seen = 0
    for images, labels in loader:
        assert images.shape[1:] == (3, 8, 8) and images.dtype == torch.float32
        assert labels.dtype == torch.int64
        seen += len(labels)
    assert seen == len(crop)


def signatures(path):
    """Each image's evaluation crop, to recognise images in loader batches."""
    ds = pcr.ImageDataset(str(path))
    dec = pcr.BatchDecoder(size=16, crop="center", resize=16)
    return {dec.decode([ds.read(i)])[0].tobytes(): i for i in range(len(ds))}


def indices_of(batches, sigs):
    return [sigs[image.numpy().tobytes()] for images, _ in batches for image in images]


def eval_loader(path, **kw):
    return pcr.torch.ImageLoader(str(path), batch_size=4, train=False, size=16, resize=16, threads=2, **kw)


def test_loader_batches_cover_the_dataset(distinct_dataset):
    ds = pcr.ImageDataset(str(distinct_dataset))
    sigs = signatures(distinct_dataset)
    assert len(sigs) == len(ds)  # every image is recognisable
    loader = eval_loader(distinct_dataset)
    batches = list(loader)
    assert len(batches) == len(loader) == (len(ds) + 3) // 4
    for images, labels in batches:
        assert images.dtype == torch.uint8 and images.shape == (4, 3, 16, 16)
        assert labels.dtype == torch.int64
    seen = indices_of(batches, sigs)
    assert set(seen) == set(range(len(ds)))
    labels = [int(l) for _, ls in batches for l in ls]
    assert labels == [ds.sample(i)[0] for i in seen]


@pytest.mark.parametrize("uneven", ["pad", "drop"])
def test_ranks_get_equal_disjoint_shares(distinct_dataset, uneven):
    sigs = signatures(distinct_dataset)
    loaders = [eval_loader(distinct_dataset, rank=r, world_size=3, uneven=uneven, seed=5) for r in range(3)]
    batches = [list(loader) for loader in loaders]
    assert all(len(b) == len(loader) for b, loader in zip(batches, loaders))
    shares = [indices_of(b, sigs) for b in batches]
    assert len({len(s) for s in shares}) == 1
    everything = [i for s in shares for i in s]
    if uneven == "drop":
        assert len(everything) == len(set(everything))
    else:
        assert set(everything) == set(sigs.values())


def test_dataloader_workers_take_their_own_shares(distinct_dataset):
    sigs = signatures(distinct_dataset)
    loader = eval_loader(distinct_dataset, seed=2)
    got = list(torch.utils.data.DataLoader(loader, batch_size=None, num_workers=2))
    seen = indices_of(got, sigs)
    assert set(seen) == set(sigs.values())
    assert len(seen) - len(set(seen)) < 2 * 4


def test_training_batches_are_random_but_reproducible(distinct_dataset):
    def run(**kw):
        return [images for images, _ in pcr.torch.ImageLoader(str(distinct_dataset), batch_size=4, size=24, threads=2,
                                                              **kw)]

    a, b, c = run(seed=1), run(seed=1), run(seed=2)
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert not all(torch.equal(x, y) for x, y in zip(a, c))
    assert a[0].shape == (4, 3, 24, 24)
    last = run(seed=1, channels_last=True)
    assert all(torch.equal(x.permute(0, 3, 1, 2), y) for x, y in zip(last, a))
    for engine in ("pread", "auto"):
        direct = run(seed=1, engine=engine, direct=True)
        assert len(direct) == len(a) and all(torch.equal(x, y) for x, y in zip(direct, a))


def test_set_epoch_reshuffles(distinct_dataset):
    sigs = signatures(distinct_dataset)
    loader = eval_loader(distinct_dataset, shuffle=True, seed=4)
    first = indices_of(list(loader), sigs)
    loader.set_epoch(1)
    second = indices_of(list(loader), sigs)
    assert first != second and set(first) == set(second)


def test_resume_continues_with_the_next_unseen_batch(distinct_dataset):
    sigs = signatures(distinct_dataset)
    whole = indices_of(list(eval_loader(distinct_dataset, shuffle=True, seed=8)), sigs)
    loader = eval_loader(distinct_dataset, shuffle=True, seed=8)
    it = iter(loader)
    head = indices_of([next(it), next(it)], sigs)
    state = loader.state_dict()
    assert state["batches"] == 2
    resumed = eval_loader(distinct_dataset, shuffle=True, seed=8)
    resumed.load_state_dict(state)
    assert head + indices_of(list(resumed), sigs) == whole


def test_resume_with_workers(distinct_dataset):
    sigs = signatures(distinct_dataset)
    make = lambda: eval_loader(distinct_dataset, shuffle=True, seed=9)  # noqa: E731
    whole = indices_of(list(torch.utils.data.DataLoader(make(), batch_size=None, num_workers=2)), sigs)
    head = []
    for n, batch in enumerate(torch.utils.data.DataLoader(make(), batch_size=None, num_workers=2)):
        if n == 3:
            break
        head += indices_of([batch], sigs)
    loader = make()
    state = loader.state_dict(batches=3)
    resumed = make()
    resumed.load_state_dict(state)
    rest = indices_of(list(torch.utils.data.DataLoader(resumed, batch_size=None, num_workers=2)), sigs)
    assert head + rest == whole


def test_table_batches_feed_embedding_bags(tmp_path):
    import json

    rows = [
        {"label": 1, "dense": {"101": 0.25}, "sparse": {"9": [3, 5, 1]}, "scored": {"11": [[3, 0.5], [8, 1.5]]}},
        {"label": 0, "sparse": {"9": []}, "name": "x"},
        {"label": 2, "dense": {"101": -1.5}, "sparse": {"9": [2]}, "scored": {"11": [[4, 2.0]]}, "name": "yz"},
    ]
    src = tmp_path / "rows.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    t = pcr.Table(pcr.convert_table(str(src), str(tmp_path / "out"))["path"])
    b = pcr.torch.table_batch(t, ["label", "101", "9", "11", "name"])
    assert b["label"]["values"].tolist() == [1, 0, 2]
    assert b["101"]["mask"].tolist() == [True, False, True]
    assert b["101"]["values"][b["101"]["mask"]].tolist() == [0.25, -1.5]
    ids = b["9"]
    assert ids["ids"].tolist() == [3, 5, 1, 2] and ids["offsets"].tolist() == [0, 3, 3]
    bag = torch.nn.EmbeddingBag(10, 4, mode="sum")
    pooled = bag(ids["ids"], ids["offsets"])
    assert pooled.shape == (3, 4)
    assert torch.allclose(pooled[0], bag.weight[[3, 5, 1]].sum(0)) and torch.all(pooled[1] == 0)
    scored = b["11"]
    weighted = torch.nn.EmbeddingBag(10, 4, mode="sum")(scored["ids"], scored["offsets"],
                                                        per_sample_weights=scored["weights"].float())
    assert weighted.shape == (3, 4)
    names = b["name"]
    data, offs = bytes(names["bytes"].numpy()), names["offsets"].tolist()
    assert [data[offs[i]:offs[i + 1]] for i in range(3)] == [b"", b"x", b"yz"]
