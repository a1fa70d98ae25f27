import io
import os
import pathlib
import shutil
import threading

import numpy as np
import pytest

import pcr
from conftest import damaged_copy


def originals(data_dir):
    root = data_dir / "sample"
    return sorted(p for p in root.rglob("*") if p.is_file())


def test_dataset_describes_the_sample(sample_dataset, data_dir):
    ds = pcr.ImageDataset(str(sample_dataset))
    assert len(ds) == 24
    assert ds.classes == sorted(p.name for p in (data_dir / "sample").iterdir() if p.is_dir())
    assert ds.num_scan_groups == 5
    counts = ds.counts
    assert counts["images"] == 24 and counts["records"] == 5
    at = counts["bytes_at_fidelity"]
    assert len(at) == 5 and all(a < b for a, b in zip(at, at[1:]))
    keys = sorted(ds.sample(i)[1] for i in range(len(ds)))
    assert keys == sorted(str(p.relative_to(data_dir / "sample")) for p in originals(data_dir))
    for i in range(len(ds)):
        label, key = ds.sample(i)
        assert ds.classes[label] == key.split("/")[0]
    assert ds.sample(-1) == ds.sample(len(ds) - 1)
    with pytest.raises(IndexError):
        ds.sample(len(ds))


def test_full_fidelity_gives_the_original_pixels(sample_dataset, data_dir):
    ds = pcr.ImageDataset(str(sample_dataset))
    for i in range(len(ds)):
        _, key = ds.sample(i)
        original = (data_dir / "sample" / key).read_bytes()
        full = ds.read(i)
        assert full == ds.read(i, ds.num_scan_groups)
        # The original may hold data libjpeg warns about; the stored file may not.
        want = pcr.decode(original, format="native", strict=False)
        assert np.array_equal(pcr.decode(full, format="native"), want), key


def test_lower_fidelity_is_a_smaller_prefix_that_decodes(sample_dataset):
    ds = pcr.ImageDataset(str(sample_dataset))
    for i in range(len(ds)):
        sizes = [len(ds.read(i, k)) for k in range(1, ds.num_scan_groups + 1)]
        assert sizes == sorted(sizes)
        shape = pcr.decode(ds.read(i, 1), format="native").shape
        assert shape == pcr.decode(ds.read(i), format="native").shape


def test_read_many_equals_single_reads(sample_dataset):
    ds = pcr.ImageDataset(str(sample_dataset))
    order = [23, 0, 7, 7, -2, 12]
    for k in (1, 3, "full"):
        assert ds.read_many(order, k) == [ds.read(i, k) for i in order]


def test_reads_from_many_threads_agree(sample_dataset):
    ds = pcr.ImageDataset(str(sample_dataset))
    expected = [ds.read(i, 2) for i in range(len(ds))]
    results = [None] * 8

    def work(t):
        results[t] = [ds.read(i, 2) for i in range(len(ds))]

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r == expected for r in results)


def test_decode_matches_pil(data_dir):
    Image = pytest.importorskip("PIL.Image")
    compared = 0
    for path in originals(data_dir):
        with Image.open(path) as im:
            if im.mode not in ("RGB", "L", "CMYK"):
                continue
            want = np.asarray(im.convert("RGB"))
        got = pcr.decode(path.read_bytes(), format="rgb", strict=False)
        assert got.dtype == np.uint8 and got.flags.c_contiguous
        assert np.array_equal(got, want), path
        compared += 1
    assert compared >= 17


def test_decode_scales_and_crops(data_dir):
    jpeg = (data_dir / "sample" / "textures" / "ring.jpg").read_bytes()
    full = pcr.decode(jpeg)
    h, w, c = full.shape
    assert c == 3
    half = pcr.decode(jpeg, scale=2)
    assert half.shape == ((h + 1) // 2, (w + 1) // 2, 3)
    crop = pcr.decode(jpeg, crop=(10, 20, 64, 48))
    assert np.array_equal(crop, full[20:68, 10:74])
    gray = pcr.decode(jpeg, format="gray")
    assert gray.shape == (h, w, 1)
    with pytest.raises(ValueError):
        pcr.decode(jpeg, crop=(w - 5, 0, 64, 48))
    with pytest.raises(ValueError):
        pcr.decode(jpeg, format="yuv")
    with pytest.raises(ValueError):
        pcr.decode(jpeg, scale=3)
    with pytest.raises(pcr.CorruptionError):
        pcr.decode(jpeg[: len(jpeg) // 2])
    assert np.array_equal(pcr.decode(bytearray(jpeg)), full)
    assert np.array_equal(pcr.decode(memoryview(jpeg)), full)


def test_decoded_arrays_own_their_memory(data_dir):
    jpeg = (data_dir / "sample" / "textures" / "ring.jpg").read_bytes()
    a = pcr.decode(jpeg)
    copy = a.copy()
    for _ in range(20):
        pcr.decode(jpeg)
    assert np.array_equal(a, copy)


def test_bad_input_raises_the_fitting_exception(sample_dataset, data_dir, tmp_path):
    with pytest.raises(FileNotFoundError):
        pcr.ImageDataset(str(tmp_path / "missing"))
    ds = pcr.ImageDataset(str(sample_dataset))
    with pytest.raises(ValueError):
        ds.read(0, ds.num_scan_groups + 1)
    with pytest.raises(ValueError):
        pcr.ImageDataset(str(sample_dataset), engine="mmap")
    with pytest.raises(ValueError, match="unknown remote option 'concurency'"):
        pcr.ImageDataset(str(sample_dataset), remote={"concurency": 4})
    with pytest.raises(ValueError, match="hole_limit must be 0.."):
        pcr.Table(str(data_dir / "tabular"), remote={"hole_limit": -1})
    with pytest.raises(ValueError, match="timeout_ms must be 0..4294967295"):
        pcr.ImageDataset(str(sample_dataset), remote={"timeout_ms": 2**32})
    with pytest.raises(TypeError):
        pcr.ImageDataset(str(sample_dataset), remote={"concurrency": 1.5})
    with pytest.raises(TypeError):
        pcr.ImageDataset(str(sample_dataset), remote={"anonymous": "yes"})
    with pytest.raises(TypeError):
        pcr.ImageDataset(str(sample_dataset), remote=4)
    assert len(pcr.ImageDataset(str(sample_dataset), remote={"concurrency": 4, "anonymous": True})) > 0
    with pytest.raises(ValueError):
        pcr.convert_images(str(tmp_path / "no-such-dir"), str(tmp_path / "out"))
    # A flipped byte inside a scan group: named by file and offset.
    broken = tmp_path / "broken"
    record = damaged_copy(sample_dataset, broken, record_file=1, mask=0x40)
    damaged = pcr.ImageDataset(str(broken))
    with pytest.raises(pcr.CorruptionError, match=str(record)):
        damaged.verify()
    with pytest.raises(pcr.CorruptionError, match=str(record)):
        for i in range(len(damaged)):
            damaged.read(i)
    assert ds.verify()["files"] == 5


def test_conversion_options(data_dir, tmp_path):
    def keys(out, **options):
        pcr.convert_images(str(data_dir / "sample"), str(tmp_path / out), images_per_record=8, **options)
        ds = pcr.ImageDataset(str(tmp_path / out))
        return [ds.sample(i)[1] for i in range(len(ds))]

    plain = keys("a", keep_order=True)
    assert plain == sorted(plain)
    default, again, seven = keys("b"), keys("c", jobs=1), keys("d", shuffle=7)
    # Shuffled by default, by a fixed seed: the same for any jobs.
    assert sorted(default) == plain and default != plain and default == again
    assert sorted(seven) == plain and seven not in (plain, default)
    bad = tmp_path / "bad" / "c"
    shutil.copytree(data_dir / "bad", bad)
    shutil.copy(data_dir / "sample" / "textures" / "ring.jpg", bad)
    with pytest.raises(pcr.CorruptionError, match="not-a-jpeg.jpg"):
        pcr.convert_images(str(tmp_path / "bad"), str(tmp_path / "e"), keep_order=True)
    summary = pcr.convert_images(str(tmp_path / "bad"), str(tmp_path / "f"), skip_bad=True)
    assert summary["images"] == 1
    assert sorted(key for key, _ in summary["skipped"]) == sorted("c/" + p.name for p in (data_dir / "bad").iterdir())


def decodable(paths):
    """(path, bytes, PIL's RGB pixels) of the JPEGs both PIL and pcr decode,
    checking that they decode them alike."""
    Image = pytest.importorskip("PIL.Image")
    out = []
    for path in paths:
        jpeg = path.read_bytes()
        try:
            with Image.open(io.BytesIO(jpeg)) as im:
                pil = im.convert("RGB")
            ours = pcr.decode(jpeg)
        except (OSError, pcr.NotSupportedError):
            continue
        assert np.array_equal(ours, np.asarray(pil)), path
        out.append((path, jpeg, pil))
    return out


@pytest.mark.parametrize("source", ["sample", "corpus"])
def test_batch_decoder_is_torchvision_byte_for_byte(data_dir, source):
    T = pytest.importorskip("torchvision.transforms")
    torch = pytest.importorskip("torch")
    if source == "sample":
        paths = originals(data_dir)
    else:
        corpus = pathlib.Path(os.environ.get("PCR_CORPUS_DIR", "/nonexistent")) / "jpeg"
        if not corpus.is_dir():
            pytest.skip(f"no corpus at {corpus}")
        paths = sorted(p for p in corpus.rglob("*") if p.suffix.lower() in (".jpg", ".jpeg") and
                       "malformed" not in p.parts)
    images = decodable(paths)
    assert len(images) >= (20 if source == "sample" else 200)
    jpegs = [jpeg for _, jpeg, _ in images]
    for size in (112, 160, 224, 288):
        resize = int(size / 0.875)
        center = pcr.BatchDecoder(size=size, crop="center", resize=resize, threads=2).decode(jpegs)
        train = pcr.BatchDecoder(size=size, threads=2).decode(jpegs, seed=size)
        fast = pcr.BatchDecoder(size=size, crop="center", resize=resize, fast_scale=True).decode(jpegs)
        mean, std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
        half = pcr.BatchDecoder(size=size, crop="center", resize=resize, normalize=(mean, std),
                                dtype="float16").decode(jpegs)
        assert half.dtype == np.float16 and half.shape == center.shape
        evaluation = T.Compose([T.Resize(resize), T.CenterCrop(size)])
        training = T.Compose([T.RandomResizedCrop(size), T.RandomHorizontalFlip()])
        flips = 0
        for i, (path, _, pil) in enumerate(images):
            want = np.asarray(evaluation(pil)).transpose(2, 0, 1)
            assert np.array_equal(center[i], want), f"{path} at {size}"
            want_half = T.Normalize(mean, std)(T.ToTensor()(evaluation(pil))).half().numpy()
            assert np.array_equal(half[i], want_half), f"{path} at {size}"
            torch.manual_seed(pcr.BatchDecoder.image_seed(size, i))
            crop = T.RandomResizedCrop.get_params(pil, (0.08, 1.0), (3 / 4, 4 / 3))
            flips += bool(torch.rand(1) < 0.5)
            torch.manual_seed(pcr.BatchDecoder.image_seed(size, i))
            assert np.array_equal(train[i], np.asarray(training(pil)).transpose(2, 0, 1)), f"{path} {crop}"
            # fast_scale scales only images of twice the resize or more, and
            # stays close.
            if min(pil.size) < 2 * resize:
                assert np.array_equal(fast[i], want), f"{path} at {size}"
            assert np.abs(fast[i].astype(int) - want).mean() < 8, f"{path} at {size}"
        assert 0 < flips < len(images)
        assert np.array_equal(fast, center) == all(min(pil.size) < 2 * resize for _, _, pil in images)


def test_batch_decoder_random_crops(data_dir):
    jpegs = [p.read_bytes() for p in originals(data_dir) if "cmyk" not in p.name]
    dec = pcr.BatchDecoder(size=32, threads=2)
    a = dec.decode(jpegs, seed=3)
    assert a.shape == (len(jpegs), 3, 32, 32)
    assert np.array_equal(a, pcr.BatchDecoder(size=32, threads=1).decode(jpegs, seed=3))
    assert not np.array_equal(a, dec.decode(jpegs, seed=4))
    # Batch memory is reused only once no array holds it.
    kept = a.copy()
    for seed in range(8):
        dec.decode(jpegs, seed=seed)
    assert np.array_equal(a, kept)
    last = pcr.BatchDecoder(size=32, channels_last=True).decode(jpegs, seed=3)
    assert np.array_equal(last, a.transpose(0, 2, 3, 1))
    with pytest.raises(ValueError):
        pcr.BatchDecoder(crop="middle")
    with pytest.raises(pcr.CorruptionError, match="image 1 of the batch"):
        dec.decode([jpegs[0], jpegs[0][:100]])


def test_pcr_decoder_gives_libjpegs_pixels(sample_dataset):
    ds = pcr.ImageDataset(str(sample_dataset))
    full = [ds.read(i) for i in range(len(ds))]
    for jpeg in full:
        for kw in ({}, {"scale": 2, "format": "gray"}, {"scale": 4, "crop": (0, 0, 1, 1), "format": "native"}):
            want = pcr.decode(jpeg, decoder="libjpeg", **kw)
            assert np.array_equal(pcr.decode(jpeg, decoder="pcr", **kw), want)
            assert np.array_equal(pcr.decode(jpeg, **kw), want)
    for crop in ("random_resized", "center"):
        want = pcr.BatchDecoder(size=32, crop=crop, decoder="libjpeg").decode(full, seed=5)
        assert np.array_equal(pcr.BatchDecoder(size=32, crop=crop, decoder="pcr").decode(full, seed=5), want)
    with pytest.raises(ValueError, match="decoder must be 'auto', 'pcr' or 'libjpeg'"):
        pcr.decode(full[0], decoder="turbo")
    with pytest.raises(ValueError, match="decoder must be"):
        pcr.BatchDecoder(decoder="fast")
    with pytest.raises(pcr.CorruptionError, match="SOS at byte"):
        pcr.decode(max(full, key=len)[:-50] + b"\xff\xd9", decoder="pcr")


def test_batch_decoder_refuses_a_resize_longer_than_it_can_hold():
    Image = pytest.importorskip("PIL.Image")
    out = io.BytesIO()
    Image.new("RGB", (20000, 1), (9, 9, 9)).save(out, "JPEG")
    with pytest.raises(ValueError, match="image 0 of the batch: a 20000 x 1 image resized to 65535 on its shorter "
                                         "side would be 1310700000 long"):
        pcr.BatchDecoder(size=16, crop="center", resize=65535).decode([out.getvalue()])
    assert pcr.BatchDecoder(size=16, crop="center", resize=20).decode([out.getvalue()]).shape == (1, 3, 16, 16)
