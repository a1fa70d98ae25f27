import os
import pathlib

import pytest

import pcr


@pytest.fixture(scope="session")
def data_dir():
    return pathlib.Path(os.environ.get("PCR_TEST_DATA_DIR", pathlib.Path(__file__).parents[2] / "tests" / "data"))


@pytest.fixture(scope="session")
def sample_dataset(data_dir, tmp_path_factory):
    """The bundled sample converted in records of 5 images."""
    out = tmp_path_factory.mktemp("sample") / "ds"
    summary = pcr.convert_images(str(data_dir / "sample"), str(out), images_per_record=5, jobs=2)
    assert summary["images"] == 24
    return out
