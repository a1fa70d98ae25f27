import numpy as np
import pytest

torch = pytest.importorskip("torch")

import collections  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import pathlib  # noqa: E402
import shutil  # noqa: E402
import warnings  # noqa: E402

import pcr  # noqa: E402
import pcr.torch  # noqa: E402
from conftest import damaged_copy  # noqa: E402


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


def eval_loader(path, batch_size=4, **kw):
    return pcr.torch.ImageLoader(str(path), batch_size=batch_size, train=False, size=16, resize=16, threads=2, **kw)


def delivered(loader, workers):
    """The batches a training loop gets: in this process, or through DataLoader workers."""
    if workers == 0:
        return list(loader)
    return list(pcr.torch.DataLoader(loader, num_workers=workers))


def test_loader_batches_cover_the_dataset(distinct_dataset):
    ds = pcr.ImageDataset(str(distinct_dataset))
    sigs = signatures(distinct_dataset)
    assert len(sigs) == len(ds) == 23  # every image is recognisable
    loader = eval_loader(distinct_dataset)
    batches = list(loader)
    assert len(batches) == len(loader) == 6
    for n, (images, labels) in enumerate(batches):
        assert images.dtype == torch.uint8 and images.shape == (4 if n < 5 else 3, 3, 16, 16)
        assert labels.dtype == torch.int64
    seen = indices_of(batches, sigs)
    assert sorted(seen) == list(range(len(ds)))  # each image once
    labels = [int(l) for _, ls in batches for l in ls]
    assert labels == [ds.sample(i)[0] for i in seen]


def test_a_dataset_replaced_between_epochs_is_refused(data_dir, tmp_path):
    src = tmp_path / "src"
    shutil.copytree(data_dir / "sample", src)
    pcr.convert_images(str(src), str(tmp_path / "ds"), images_per_record=4)
    loader = eval_loader(tmp_path / "ds")
    assert len(list(loader)) == len(loader)
    shutil.rmtree(src / sorted(os.listdir(src))[0])
    shutil.rmtree(tmp_path / "ds")
    pcr.convert_images(str(src), str(tmp_path / "ds"), images_per_record=4)
    loader.set_epoch(1)
    with pytest.raises(OSError, match=r"the dataset changed while open: it holds \d+ images \(content id \w+\), not "
                                      r"the 24 \(content id \w+\) it held when this ImageLoader was made"):
        list(loader)
    # The same number of images, one of them another: the content id tells.
    loader = eval_loader(tmp_path / "ds")
    first = pcr.ImageDataset(str(tmp_path / "ds")).content_id
    victim = next(p for p in sorted(src.rglob("*.jp*g")) if "progressive" not in p.name)
    victim.write_bytes(next(p for p in sorted(src.rglob("*.jp*g")) if p != victim).read_bytes())
    shutil.rmtree(tmp_path / "ds")
    pcr.convert_images(str(src), str(tmp_path / "ds"), images_per_record=4)
    assert pcr.ImageDataset(str(tmp_path / "ds")).content_id != first
    with pytest.raises(OSError, match=rf"the dataset changed while open: it holds {loader._num_items} images"):
        list(loader)
    # A record file replaced under an unchanged manifest.
    loader = eval_loader(tmp_path / "ds")
    records = sorted((tmp_path / "ds").glob("*.pcr"))
    shutil.copy(records[1], records[0])
    with pytest.raises(OSError, match=r"the dataset changed while open \(.*differs from the manifest\): make a new "
                                      "ImageLoader once it is whole"):
        list(loader)


def test_a_state_is_refused_by_a_loader_that_cannot_continue_it(distinct_dataset, data_dir, tmp_path):
    loader = eval_loader(distinct_dataset, shuffle=True, seed=5, rank=0, world_size=1)
    it = iter(loader)
    next(it)
    state = loader.state_dict()
    assert state["batches"] == 1 and state["world_size"] == 1 and state["batch_size"] == 4
    assert state["uneven"] == "pad" and state["shuffle"] is True and state["shuffle_buffer"] == 4096
    assert state["dataset"] == pcr.ImageDataset(str(distinct_dataset)).content_id
    other = tmp_path / "other"
    pcr.convert_images(str(data_dir / "sample"), str(other), images_per_record=4)
    for kw, field in ((dict(batch_size=8), "batch_size=4"),
                      (dict(uneven="drop"), "uneven='pad'"), (dict(shuffle=False), "shuffle=True"),
                      (dict(shuffle_buffer=16), "shuffle_buffer=4096")):
        args = {**dict(shuffle=True, seed=5, rank=0, world_size=1), **kw}
        batch_size = args.pop("batch_size", 4)
        with pytest.raises(ValueError, match=f"the state was saved with {field}, and this loader"):
            eval_loader(distinct_dataset, batch_size=batch_size, **args).load_state_dict(state)
    with pytest.raises(ValueError, match="saved with dataset='\\w+', and this loader reads \\w+, another dataset"):
        eval_loader(other, shuffle=True, seed=5, rank=0, world_size=1).load_state_dict(state)
    # The same loader made again continues; a state of an older pcr, without these keys, still loads.
    eval_loader(distinct_dataset, shuffle=True, seed=5, rank=0, world_size=1).load_state_dict(state)
    old = {k: state[k] for k in ("seed", "epoch", "batches", "num_workers")}
    eval_loader(distinct_dataset, batch_size=8, shuffle=True, seed=5).load_state_dict(old)


def test_a_str_of_fields_is_one_field_name(distinct_dataset):
    for make in (lambda f: eval_loader(distinct_dataset, fields=f), lambda f: pcr.torch.Dataset(str(distinct_dataset),
                                                                                                  fields=f)):
        with pytest.raises(ValueError, match="'idx'") as refused:
            make("idx")
        assert "'i'" not in str(refused.value)


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("uneven", ["pad", "drop"])
def test_lengths_and_shares_for_any_world_and_workers(distinct_dataset, uneven, workers):
    sigs = signatures(distinct_dataset)
    n = len(sigs)
    for world in (1, 2, 3):
        for batch in (4, 5):
            shares = []
            for rank in range(world):
                loader = eval_loader(distinct_dataset, batch_size=batch, rank=rank, world_size=world, uneven=uneven,
                                     seed=5)
                batches = delivered(loader, workers)
                assert len(batches) == len(loader)  # exact, on every rank
                sizes = [len(labels) for _, labels in batches]
                assert all(size == batch for size in sizes[:-1]) and 0 < sizes[-1] <= batch
                share = indices_of(batches, sigs)
                if workers:  # the rank's images do not depend on its workers
                    assert sorted(share) == sorted(indices_of(list(loader), sigs))
                shares.append(share)
            assert len({len(s) for s in shares}) == 1
            everything = [i for s in shares for i in s]
            if uneven == "drop":
                assert len(everything) == len(set(everything)) == n // (world * batch) * world * batch
            else:
                assert set(everything) == set(range(n))
                assert len(everything) - n <= world - 1  # repeats, as DistributedSampler's


@pytest.mark.parametrize("workers", [0, 2, 3])
def test_resume_continues_with_the_next_unseen_batch(distinct_dataset, workers):
    sigs = signatures(distinct_dataset)

    def make():
        return eval_loader(distinct_dataset, shuffle=True, seed=8, rank=1, world_size=2, batch_size=3)

    whole = indices_of(delivered(make(), workers), sigs)
    assert len(whole) == 12
    for k in (1, 2, 3):
        loader = make()
        batches = pcr.torch.DataLoader(loader, num_workers=workers)
        head = []
        for batch in batches:
            head += indices_of([batch], sigs)
            if len(head) == 3 * k:
                break
        state = batches.state_dict()
        assert state == loader.state_dict() and state["batches"] == k
        resumed = make()
        resumed.load_state_dict(state)
        resumed.set_epoch(state["epoch"])  # as a training loop resuming at the state's epoch does
        rest = indices_of(delivered(resumed, workers), sigs)
        assert head + rest == whole  # the union is the epoch, nothing twice
        resumed.set_epoch(1)
        assert len(indices_of(delivered(resumed, workers), sigs)) == len(whole)  # a new epoch, whole
        if workers:
            wrong = make()
            wrong.load_state_dict(state)
            with pytest.raises(Exception, match=f"resume with num_workers={workers}"):
                delivered(wrong, 1)


@pytest.mark.parametrize("worlds", [((1, 2, 3), (2, 2)), ((2, 2, 2), (3, 1)), ((4, 2, 1), (2, 3)),
                                    ((2, 2, 1), (3, 2, 1), (1, 2))])
def test_resume_on_another_world_size_delivers_the_rest_of_the_epoch(distinct_dataset, worlds):
    """worlds: (world size, workers, batches each rank delivers before the
    state is saved), ..., then the last (world size, workers) to the end."""
    sigs = signatures(distinct_dataset)
    n = len(sigs)

    def make(rank, world):
        return eval_loader(distinct_dataset, batch_size=2, shuffle=True, seed=4, rank=rank, world_size=world,
                           shuffle_buffer=3)

    seen, state = [], None
    for i, (world, workers, *stop) in enumerate(worlds):
        last = i == len(worlds) - 1
        before = len(set(seen))
        states, lengths = [], set()
        for rank in range(world):
            loader = make(rank, world)
            if state is not None:
                loader.load_state_dict(state)
                loader.set_epoch(state["epoch"])
            lengths.add(len(loader))
            batches = pcr.torch.DataLoader(loader, num_workers=workers)
            # zip asks the range first: the DataLoader delivers `stop` batches, no more.
            taken = list(batches) if last else [batch for _, batch in zip(range(stop[0]), batches)]
            if last:
                assert len(taken) == len(loader)  # every rank runs its len(), exactly
            seen += indices_of(taken, sigs)
            states.append(batches.state_dict())
        assert len(lengths) == 1  # the same on every rank
        if last:  # what was left, split over these ranks
            assert lengths.pop() == math.ceil(math.ceil((n - before) / world) / 2)
        assert all(s == states[0] for s in states)  # one state resumes every rank
        state = states[0]
        assert state["world_size"] == world and len(state["resumed"]) == i
    assert set(seen) == set(range(n))  # nothing lost
    assert len(seen) - n <= worlds[-1][0] - 1  # repeats only as the last run's padding


def test_plain_dataloader_workers_need_the_count(distinct_dataset):
    sigs = signatures(distinct_dataset)
    loader = eval_loader(distinct_dataset, seed=3)
    whole = indices_of(list(torch.utils.data.DataLoader(loader, batch_size=None, num_workers=2)), sigs)
    head = []
    for n, batch in enumerate(torch.utils.data.DataLoader(loader, batch_size=None, num_workers=2)):
        if n == 2:
            break
        head += indices_of([batch], sigs)
    with pytest.raises(ValueError, match="pcr.torch.DataLoader"):
        loader.state_dict()  # the workers' batches were counted nowhere
    state = loader.state_dict(batches=2)
    assert state["num_workers"] == 2
    resumed = eval_loader(distinct_dataset, seed=3)
    resumed.load_state_dict(state)
    rest = indices_of(list(torch.utils.data.DataLoader(resumed, batch_size=None, num_workers=2)), sigs)
    assert head + rest == whole


def test_set_epoch_reaches_persistent_workers(distinct_dataset):
    sigs = signatures(distinct_dataset)
    loader = eval_loader(distinct_dataset, shuffle=True, seed=4)
    batches = pcr.torch.DataLoader(loader, num_workers=2, persistent_workers=True)
    epochs = []
    for epoch in range(2):
        loader.set_epoch(epoch)
        epochs.append(indices_of(list(batches), sigs))
    assert epochs[0] != epochs[1] and sorted(epochs[0]) == sorted(epochs[1])
    loader.set_epoch(1)
    assert indices_of(delivered(loader, 2), sigs) == epochs[1]


def test_arguments_are_checked_at_construction(distinct_dataset):
    path = str(distinct_dataset)
    groups = pcr.ImageDataset(path).num_scan_groups
    for fidelity in (0, groups + 1, -1, "all", None):
        with pytest.raises(ValueError, match=f"fidelity must be 1..{groups} or 'full', not"):
            pcr.torch.ImageLoader(path, batch_size=4, fidelity=fidelity)
        with pytest.raises(ValueError, match="fidelity must be"):
            pcr.torch.Dataset(path, fidelity=fidelity)
    for kw, message in [
        (dict(batch_size=0), "batch_size must be at least 1, not 0"),
        (dict(rank=0, world_size=0), "world_size must be at least 1, not 0"),
        (dict(rank=-1, world_size=2), "rank must be 0..1, not -1"),
        (dict(rank=2, world_size=2), "rank must be 0..1, not 2"),
        (dict(rank=1), "give rank and world_size together"),
        (dict(world_size=2), "give rank and world_size together"),
        (dict(size=0), "size must be at least 1, not 0"),
        (dict(threads=-1), "threads must be at least 0, not -1"),
        (dict(read_ahead=0), "read_ahead must be at least 1, not 0"),
        (dict(uneven="spread"), "uneven must be 'pad' or 'drop'"),
    ]:
        with pytest.raises(ValueError, match=message):
            pcr.torch.ImageLoader(path, **{"batch_size": 4, **kw})
    with pytest.raises(TypeError, match="batch_size must be an int"):
        pcr.torch.ImageLoader(path, batch_size=4.0)
    with pytest.raises(TypeError, match="train must be True or False, not 'no'"):
        pcr.torch.ImageLoader(path, batch_size=4, train="no")
    full = pcr.torch.ImageLoader(path, batch_size=4, fidelity="full")
    assert full.fidelity == groups


def class_sorted_source(root, images, classes):
    """An ImageFolder of `images` whose classes are runs of the sorted names."""
    for c in range(classes):
        (root / f"class{c}").mkdir(parents=True)
    for i, image in enumerate(images):
        shutil.copy(image, root / f"class{i * classes // len(images)}" / f"{i:04d}{image.suffix}")
    return root


def uniform_classes(counts, size):
    """Distinct classes expected in `size` images drawn at random without replacement."""
    from math import comb

    total = sum(counts)
    return sum(1 - comb(total - n, size) / comb(total, size) for n in counts)


def classes_per_batch(path, batch_size, world, workers):
    """(mean distinct labels per batch, what uniform sampling gives) over 3
    epochs of every rank, read as the README's loader reads."""
    ds = pcr.ImageDataset(str(path))
    counts = np.bincount([ds.sample(i)[0] for i in range(len(ds))])
    got = want = batches = 0
    for epoch in range(3):
        for rank in range(world):
            loader = pcr.torch.ImageLoader(str(path), batch_size=batch_size, fidelity=1, size=16, threads=2,
                                           rank=rank, world_size=world)
            loader.set_epoch(epoch)
            for _, labels in delivered(loader, workers):
                got += len(set(labels.tolist()))
                want += uniform_classes(counts, len(labels))
                batches += 1
    return got / batches, want / batches


@pytest.mark.parametrize("source", ["sample", "corpus"])
def test_batches_mix_classes_of_a_class_sorted_source(data_dir, tmp_path, source):
    if source == "sample":
        images = sorted((data_dir / "sample").rglob("*.jp*g"))
        classes, batch = 3, 4
    else:
        corpus = pathlib.Path(os.environ.get("PCR_CORPUS_DIR", "")) / "jpeg" / "neverball-textures"
        if not corpus.is_dir():
            pytest.skip(f"no corpus at {corpus}")
        images = sorted(corpus.glob("*.jpg"))
        classes, batch = 8, 16
    src = class_sorted_source(tmp_path / "src", images, classes)
    # The README's conversion: shuffled by default.
    pcr.convert_images(str(src), str(tmp_path / "ds"), images_per_record=8)
    for world in (1, 2, 3):
        for workers in (0, 2):
            got, want = classes_per_batch(tmp_path / "ds", batch, world, workers)
            assert got >= 0.9 * want, f"world {world}, {workers} workers: {got:.2f} classes per batch, uniform {want:.2f}"
    # Kept in class order, contiguous shares of three ranks hold few classes.
    pcr.convert_images(str(src), str(tmp_path / "kept"), images_per_record=8, keep_order=True)
    got, want = classes_per_batch(tmp_path / "kept", batch, 3, 0)
    assert got < 0.9 * want


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
    for decoder in ("pcr", "libjpeg"):
        assert all(torch.equal(x, y) for x, y in zip(run(seed=1, decoder=decoder), a))
    with pytest.raises(ValueError, match="decoder must be"):
        run(decoder="simd")
    ds = pcr.torch.Dataset(str(distinct_dataset), decoder="pcr")
    assert all(torch.equal(ds[i][0], pcr.torch.Dataset(str(distinct_dataset))[i][0]) for i in range(len(ds)))


def test_loader_batches_are_the_cpp_loaders_samples_decoded_with_the_batch_seed(distinct_dataset):
    """pcr.torch.ImageLoader is pcr::ImageLoader: the rank's SampleIterator
    batches, batch b decoded with the seed of (seed, epoch, rank, b), as
    image_loader_test checks on the C++ side."""

    def chained(*values):
        z, mask = 0, (1 << 64) - 1
        for v in values:
            z = (z ^ v) + 0x9E3779B97F4A7C15 & mask
            z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9 & mask
            z = (z ^ (z >> 27)) * 0x94D049BB133111EB & mask
            z ^= z >> 31
        return z

    loader = pcr.torch.ImageLoader(str(distinct_dataset), batch_size=3, fidelity=2, size=20, threads=2, seed=11,
                                   rank=1, world_size=2, shuffle_buffer=5)
    loader.set_epoch(3)
    got = list(loader)
    ds = pcr.ImageDataset(str(distinct_dataset))
    samples = pcr.SampleIterator(ds, batch_size=3, fidelity=2, rank=1, world_size=2, shuffle_buffer=5, seed=11,
                                 epoch=3)
    decoder = pcr.BatchDecoder(size=20, threads=2)
    want = [(decoder.decode(jpegs, chained(11, 3, 1, b)), labels) for b, (_, labels, jpegs) in enumerate(samples)]
    assert len(got) == len(want) == len(loader)
    for (images, labels), (want_images, want_labels) in zip(got, want):
        assert np.array_equal(images.numpy(), want_images)
        assert np.array_equal(labels.numpy(), want_labels)


def test_set_epoch_reshuffles(distinct_dataset):
    sigs = signatures(distinct_dataset)
    loader = eval_loader(distinct_dataset, shuffle=True, seed=4)
    first = indices_of(list(loader), sigs)
    loader.set_epoch(1)
    second = indices_of(list(loader), sigs)
    assert first != second and set(first) == set(second)


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
    features = ["label", "101", "9", "11", "name"]
    b = pcr.torch.table_batch(t, features)
    read = t.read(features)
    for name in features:  # the keys and arrays of Table.read
        assert set(b[name]) == set(read[name])
        for key, array in read[name].items():
            assert np.array_equal(b[name][key].numpy(), array.view("int64") if key == "offsets" else array)
    assert b["label"]["values"].tolist() == [1, 0, 2]
    assert b["101"]["presence"].tolist() == [True, False, True]
    assert b["101"]["values"][b["101"]["presence"]].tolist() == [0.25, -1.5]
    ids = b["9"]
    assert ids["values"].tolist() == [3, 5, 1, 2] and ids["offsets"].tolist() == [0, 3, 3, 4]
    assert ids["presence"].tolist() == [True, True, True]
    bag = torch.nn.EmbeddingBag(10, 4, mode="sum", include_last_offset=True)
    pooled = bag(ids["values"], ids["offsets"])
    assert pooled.shape == (3, 4)
    assert torch.allclose(pooled[0], bag.weight[[3, 5, 1]].sum(0)) and torch.all(pooled[1] == 0)
    scored = b["11"]
    assert scored["presence"].tolist() == [True, False, True]
    weighted = torch.nn.EmbeddingBag(10, 4, mode="sum", include_last_offset=True)(
        scored["values"], scored["offsets"], per_sample_weights=scored["scores"].float())
    assert weighted.shape == (3, 4)
    names = b["name"]
    data, offs = bytes(names["values"].numpy()), names["offsets"].tolist()
    assert [data[offs[i]:offs[i + 1]] for i in range(3)] == [b"", b"x", b"yz"]
    # A missing string is not an empty one.
    assert names["presence"].tolist() == [False, True, True]


def test_table_batches_of_declared_float32_scores_and_new_types(tmp_path):
    import json

    rows = [
        {"uid": 18446744073709551615, "ok": True, "at": "2021-01-01T00:00:00Z", "scored": {"11": [[3, 0.5], [8, 1.5]]}},
        {"uid": 5, "ok": False, "at": "2021-01-01T00:00:01.25Z", "scored": {"11": [[4, 2.0]]}},
    ]
    src = tmp_path / "rows.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    t = pcr.Table(pcr.convert_table(str(src), str(tmp_path / "out"), column_types={"scored": "float32"})["path"])
    b = pcr.torch.table_batch(t, ["uid", "ok", "at", "11"])
    scored = b["11"]
    assert scored["scores"].dtype == torch.float32
    # float32 scores go to EmbeddingBag as they are.
    pooled = torch.nn.EmbeddingBag(10, 4, mode="sum", include_last_offset=True)(
        scored["values"], scored["offsets"], per_sample_weights=scored["scores"])
    assert pooled.shape == (2, 4)
    assert b["ok"]["values"].dtype == torch.bool and b["ok"]["values"].tolist() == [True, False]
    assert b["uid"]["values"].tolist() == [-1, 5]  # the uint64's bits
    assert b["at"]["values"].tolist() == [1609459200000000, 1609459201250000]  # microseconds


@pytest.mark.parametrize("ranks,fork,spawn", [(1, 20, 16), (2, 50, 4)])
def test_leaving_epochs_early_never_aborts_a_process(distinct_dataset, ranks, fork, spawn):
    """Spawned workers exit through interpreter finalisation, which aborted
    one whose queue was still pickling a batch (about 1 in 8 teardowns)."""
    import socket
    import subprocess
    import sys

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    script = pathlib.Path(__file__).with_name("early_exit_ranks.py")
    out = subprocess.run([sys.executable, str(script), str(distinct_dataset), str(ranks), str(port), str(fork),
                          str(spawn)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert "terminate called" not in out.stderr and "killed by signal" not in out.stderr, out.stderr
    assert sorted(out.stdout.split("\n"))[-ranks:] == [f"rank {r} done" for r in range(ranks)]


def with_pid(batch):
    """A batch_transform that tells which process ran it."""
    return (*batch, os.getpid())


def open_record_files(batch=()):
    """A batch_transform adding its process and the files of the dataset
    being loaded (the PCR_TEST_OPEN_DIR directory) open in it."""
    names = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if os.path.dirname(target) == os.environ["PCR_TEST_OPEN_DIR"] and target.endswith(".pcr"):
            names.append(os.path.basename(target))
    return (*batch, os.getpid(), tuple(sorted(names)))


def test_each_rank_and_worker_opens_only_the_files_of_its_share(data_dir, tmp_path, monkeypatch):
    out = tmp_path / "ds"
    monkeypatch.setenv("PCR_TEST_OPEN_DIR", os.path.realpath(out))
    pcr.convert_images(str(data_dir / "sample"), str(out), images_per_record=2)
    files = sorted(p.name for p in out.glob("*.pcr"))
    ds = pcr.ImageDataset(str(out))
    assert len(files) == ds.num_records == 12
    for r in range(ds.num_records):  # image i lies in files[i // 2]
        assert ds.read_record(r, 1)["keys"] == [ds.sample(2 * r)[1], ds.sample(2 * r + 1)[1]]
    del ds
    assert open_record_files()[1] == ()  # workers inherit none
    touched = set()
    for rank in range(2):
        loader = pcr.torch.ImageLoader(str(out), 2, size=16, threads=1, rank=rank, world_size=2, return_index=True,
                                       batch_transform=open_record_files)
        opened, read = collections.defaultdict(set), collections.defaultdict(set)
        for _, _, index, pid, names in pcr.torch.DataLoader(loader, num_workers=2):
            opened[pid] |= set(names)
            read[pid] |= {files[i // 2] for i in index.tolist()}
        assert len(opened) == 2
        for pid in opened:
            # A worker's 6 images lie in 3 or 4 files: it opens those alone.
            assert opened[pid] == read[pid] and len(opened[pid]) <= 4, (rank, sorted(opened[pid]))
            touched |= opened[pid]
    assert touched == set(files)
    # The index cache's bound is checked where the dataset is opened.
    with pytest.raises(ValueError, match="index_cache_bytes must be at least 0, not -1"):
        pcr.torch.ImageLoader(str(out), 2, index_cache_bytes=-1)
    with pytest.raises(ValueError, match="index_cache_bytes"):
        pcr.ImageDataset(str(out), index_cache_bytes=-1)


@pytest.mark.parametrize("train", [False, True])
def test_loader_batches_are_torchvisions_normalized_and_indexed(sample_dataset, data_dir, train):
    T = pytest.importorskip("torchvision.transforms")
    Image = pytest.importorskip("PIL.Image")
    mean, std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
    ds = pcr.ImageDataset(str(sample_dataset))
    common = dict(train=train, size=40, resize=48, threads=2, seed=5, return_index=True)
    plain = list(pcr.torch.ImageLoader(str(sample_dataset), 5, **common))
    wide = list(pcr.torch.ImageLoader(str(sample_dataset), 5, normalize=(mean, std), **common))
    half = list(pcr.torch.ImageLoader(str(sample_dataset), 5, normalize=(mean, std), dtype=torch.float16,
                                      channels_last=True, **common))
    to_tensor = list(pcr.torch.ImageLoader(str(sample_dataset), 5, dtype=torch.float32, **common))
    normalize = T.Normalize(mean, std)
    seen = []
    for (images, labels, index), (f32, _, index32), (f16, _, _), (unit, _, _) in zip(plain, wide, half, to_tensor):
        assert images.dtype == torch.uint8 and f32.dtype == torch.float32 and f16.dtype == torch.float16
        assert f16.shape == (len(labels), 40, 40, 3) and index.dtype == torch.int64
        assert torch.equal(index, index32)
        for n, i in enumerate(index.tolist()):
            label, key = ds.sample(i)
            assert labels[n] == label
            seen.append(i)
            if not train:
                with Image.open(data_dir / "sample" / key) as im:
                    want = T.Compose([T.Resize(48), T.CenterCrop(40), T.PILToTensor()])(im.convert("RGB"))
                assert torch.equal(images[n], want), key
            # ToTensor then Normalize on the same pixels, bit for bit; .half() of that.
            expect = normalize(images[n].float().div(255))
            assert torch.equal(f32[n], expect), key
            assert torch.equal(f16[n].permute(2, 0, 1), expect.half()), key
            assert torch.equal(unit[n], images[n].float().div(255)), key
    assert sorted(seen) == list(range(len(ds)))
    with pytest.raises(ValueError, match="dtype must be torch.uint8, torch.float32 or torch.float16"):
        pcr.torch.ImageLoader(str(sample_dataset), 5, dtype=torch.float64)
    with pytest.raises(ValueError, match="normalize needs dtype float32 or float16"):
        pcr.torch.ImageLoader(str(sample_dataset), 5, normalize=(mean, std), dtype=torch.uint8)
    with pytest.raises(ValueError, match="std must have 1 or 3 values, not 2"):
        pcr.torch.ImageLoader(str(sample_dataset), 5, normalize=(mean, (1, 2)))
    with pytest.raises(ValueError, match="must not be 0"):
        pcr.torch.ImageLoader(str(sample_dataset), 5, normalize=((0.5,), (0,)))
    with pytest.raises(TypeError, match="normalize must be"):
        pcr.torch.ImageLoader(str(sample_dataset), 5, normalize=(0.5, 0.2))


def test_batch_transform_runs_where_the_batch_is_made(sample_dataset):
    loader = pcr.torch.ImageLoader(str(sample_dataset), 6, size=16, threads=1, batch_transform=with_pid)
    here = list(loader)
    assert len(here) == 4 and all(len(b) == 3 and b[2] == os.getpid() for b in here)
    there = list(pcr.torch.DataLoader(loader, num_workers=2))
    assert len(there) == 4 and all(b[2] != os.getpid() for b in there)
    assert len({b[2] for b in there}) == 2
    assert sum(len(b[1]) for b in there) == sum(len(b[1]) for b in here) == 24
    with pytest.raises(TypeError, match="batch_transform must be callable"):
        pcr.torch.ImageLoader(str(sample_dataset), 6, batch_transform=3)


@pytest.mark.parametrize("workers", [0, 2])
def test_a_dataloader_that_batches_again_is_refused(sample_dataset, workers):
    loader = pcr.torch.ImageLoader(str(sample_dataset), 6, size=16, threads=1)
    with pytest.raises(TypeError, match="makes the batches, and this DataLoader has a batch_size"):
        next(iter(torch.utils.data.DataLoader(loader, num_workers=workers)))
    images, labels = next(iter(torch.utils.data.DataLoader(loader, batch_size=None, num_workers=workers)))
    assert images.shape == (6, 3, 16, 16)


@pytest.mark.parametrize("workers,context", [(0, None), (2, "fork"), (2, "spawn")])
def test_on_error_skip_replaces_an_unreadable_image_and_keeps_len(sample_dataset, tmp_path, workers, context):
    damaged_copy(sample_dataset, tmp_path / "ds", record_file=1, mask=0x40)
    kw = {} if workers == 0 else dict(multiprocessing_context=context)

    def make(**kw):
        return pcr.torch.ImageLoader(str(tmp_path / "ds"), 5, size=16, threads=1, seed=2, return_index=True, **kw)

    with pytest.raises(pcr.CorruptionError, match="records-"):
        list(pcr.torch.DataLoader(make(), num_workers=workers, **kw))
    loader = make(on_error="skip")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        batches = list(pcr.torch.DataLoader(loader, num_workers=workers, **kw))
    assert len(batches) == len(loader) == 5
    assert [len(labels) for _, labels, _ in batches] == [5, 5, 5, 5, 4]  # the sizes of an undamaged epoch
    indices = [i for _, _, index in batches for i in index.tolist()]
    lost = set(range(24)) - set(indices)
    assert lost and len(indices) == 24
    assert len(indices) - len(set(indices)) == len(lost)  # each lost image's place taken by another once
    assert loader.skipped == len(lost)
    if workers == 0:  # a worker's warnings go to its own stderr
        said = [str(w.message) for w in caught if "skipped image" in str(w.message)]
        assert len(said) == len(lost) and all("takes its place" in m for m in said)
        assert {int(m.split("skipped image ")[1].split()[0]) for m in said} == lost
    with pytest.raises(ValueError, match="on_error must be 'raise' or 'skip'"):
        make(on_error="ignore")


def fidelity_signatures(path, fidelities):
    """{evaluation crop: fidelities (of `fidelities`) at which an image looks
    so}, to tell the fidelity of a loader's images."""
    ds = pcr.ImageDataset(str(path))
    dec = pcr.BatchDecoder(size=32, crop="center", resize=32)
    sigs = {}
    for i in range(len(ds)):
        for k in fidelities:
            sigs.setdefault(dec.decode([ds.read(i, k)])[0].tobytes(), set()).add(k)
    return sigs


def fidelities_of(batches, sigs):
    """The fidelity of each batch: the one its images all look like."""
    out = []
    for images, _ in batches:
        found = set.intersection(*(sigs[image.numpy().tobytes()] for image in images))
        assert len(found) == 1, found
        out.append(found.pop())
    return out


SET_FIDELITY_RUNS = [(0, None, False), (2, "fork", False), (2, "fork", True), (2, "spawn", False), (2, "spawn", True)]


@pytest.mark.parametrize("workers,context,persistent", SET_FIDELITY_RUNS)
def test_set_fidelity_applies_from_the_next_epoch(distinct_dataset, workers, context, persistent):
    groups = pcr.ImageDataset(str(distinct_dataset)).num_scan_groups
    sigs = fidelity_signatures(distinct_dataset, (1, 2, groups))
    loader = pcr.torch.ImageLoader(str(distinct_dataset), batch_size=4, fidelity=1, train=False, size=32, resize=32,
                                   threads=2)
    kw = {} if workers == 0 else dict(multiprocessing_context=context, persistent_workers=persistent)
    batches = pcr.torch.DataLoader(loader, num_workers=workers, **kw)
    assert fidelities_of(batches, sigs) == [1] * len(loader)
    for epoch, fidelity, want in ((1, "full", groups), (2, 2, 2)):
        loader.set_fidelity(fidelity)
        assert loader.fidelity == want
        loader.set_epoch(epoch)
        got = []
        for n, batch in enumerate(batches):
            if n == 1:
                loader.set_fidelity(1)  # for the next epoch: this one keeps its fidelity
            got += fidelities_of([batch], sigs)
        assert got == [want] * len(loader)
        assert loader.fidelity == 1
    # The state records the fidelity; a new loader continues at it, with the
    # epoch's next unseen batch.
    loader.set_fidelity(2)
    loader.set_epoch(3)
    it = iter(batches)
    first = fidelities_of([next(it)], sigs)
    state = batches.state_dict()
    del it
    assert first == [2] and state["fidelity"] == 2
    resumed = pcr.torch.ImageLoader(str(distinct_dataset), batch_size=4, train=False, size=32, resize=32, threads=2)
    assert resumed.fidelity == groups
    resumed.load_state_dict(state)
    assert resumed.fidelity == 2
    rest = fidelities_of(pcr.torch.DataLoader(resumed, num_workers=workers, **kw), sigs)
    assert rest == [2] * (len(loader) - 1)


def test_set_fidelity_checks_its_argument(distinct_dataset):
    groups = pcr.ImageDataset(str(distinct_dataset)).num_scan_groups
    loader = pcr.torch.ImageLoader(str(distinct_dataset), batch_size=4)
    images = pcr.torch.Dataset(str(distinct_dataset))
    for bad in (0, groups + 1, "all", 1.0, True):
        for target in (loader, images):
            with pytest.raises(ValueError, match=f"fidelity must be 1..{groups} or 'full', not"):
                target.set_fidelity(bad)
    state = loader.state_dict()
    with pytest.raises(ValueError, match="fidelity must be"):
        loader.load_state_dict({**state, "fidelity": groups + 1})
    assert loader.fidelity == groups


@pytest.mark.parametrize("workers,context,persistent", SET_FIDELITY_RUNS)
def test_map_style_set_fidelity_reaches_workers(distinct_dataset, workers, context, persistent):
    ds = pcr.ImageDataset(str(distinct_dataset))
    images = pcr.torch.Dataset(str(distinct_dataset), fidelity=1)
    kw = {} if workers == 0 else dict(multiprocessing_context=context, persistent_workers=persistent)
    loader = torch.utils.data.DataLoader(images, batch_size=None, num_workers=workers, **kw)
    for fidelity in (1, 3, "full", 2):
        images.set_fidelity(fidelity)
        k = ds.num_scan_groups if fidelity == "full" else fidelity
        for i, (image, label) in enumerate(loader):
            assert np.array_equal(image.permute(1, 2, 0).numpy(), pcr.decode(ds.read(i, k))), (i, k)


@pytest.mark.parametrize("workers", [0, 2])
def test_bytes_read_counts_each_fidelitys_reads(distinct_dataset, workers):
    ds = pcr.ImageDataset(str(distinct_dataset))
    opening = ds.io_counters["bytes_read"]  # manifest, headers and indexes
    at = ds.counts["bytes_at_fidelity"]
    groups = ds.num_scan_groups
    got = {}
    for k in (1, groups):
        loader = eval_loader(distinct_dataset, fidelity=k)
        assert loader.bytes_read == 0
        delivered(loader, workers)
        got[k] = loader.bytes_read
        # Every worker opens the dataset (reading the sample metadata), then
        # reads the groups of its records; a record split between two
        # workers is read by both.
        assert opening * max(1, workers) < got[k] <= opening * max(1, workers) + 2 * at[k - 1]
    if workers == 0:
        assert got[groups] - got[1] == at[groups - 1] - at[0]
    assert got[1] < got[groups]
