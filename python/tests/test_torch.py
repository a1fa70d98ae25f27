import numpy as np
import pytest

torch = pytest.importorskip("torch")

import shutil  # noqa: E402

import pcr  # noqa: E402
import pcr.torch  # noqa: E402


@pytest.fixture(scope="module")
def rgb_dataset(data_dir, tmp_path_factory):
    """The sample without its CMYK images, which decode only to their own 4 channels."""
    src = tmp_path_factory.mktemp("rgb") / "src"
    shutil.copytree(data_dir / "sample", src, ignore=shutil.ignore_patterns("*cmyk*"))
    out = src.parent / "ds"
    pcr.convert_images(str(src), str(out), images_per_record=4)
    return out


def test_map_style_dataset_gives_tensors_and_labels(rgb_dataset):
    ds = pcr.ImageDataset(str(rgb_dataset))
    images = pcr.torch.Dataset(str(rgb_dataset), fidelity=2)
    assert len(images) == len(ds)
    assert images.classes == ds.classes
    for i in (0, 7, len(ds) - 1):
        image, label = images[i]
        assert image.dtype == torch.uint8 and image.shape[0] == 3
        assert label == ds.sample(i)[0]
        want = pcr.decode(ds.read(i, 2))
        assert np.array_equal(image.permute(1, 2, 0).numpy(), want)
    with pytest.raises(ValueError):
        pcr.torch.Dataset(str(rgb_dataset), fidelity=ds.num_scan_groups + 1)


def resize_to_floats(t):
    return torch.nn.functional.interpolate(t[None].float(), size=(8, 8))[0] / 255


def test_dataloader_with_workers_and_a_transform(rgb_dataset):
    crop = pcr.torch.Dataset(str(rgb_dataset), transform=resize_to_floats)
    loader = torch.utils.data.DataLoader(crop, batch_size=5, num_workers=2, shuffle=True,
                                         generator=torch.Generator().manual_seed(0))
    seen = 0
    for images, labels in loader:
        assert images.shape[1:] == (3, 8, 8) and images.dtype == torch.float32
        assert labels.dtype == torch.int64
        seen += len(labels)
    assert seen == len(crop)
