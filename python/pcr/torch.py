"""PyTorch datasets over pcr image datasets.

`Dataset` is map-style: `dataset[i]` gives image i at the chosen fidelity as a
uint8 tensor (C x H x W) and its label, for users who keep their own sampler,
DataLoader and transforms.
"""
from typing import Callable, Optional, Tuple

import torch as _torch
import torch.utils.data as _data

from . import _pcr


class Dataset(_data.Dataset):
    """Images of a pcr dataset at fidelity `fidelity` (0: full).

    Each item is `(image, label)`: `image` a uint8 tensor of shape 3 x H x W
    (RGB; "gray" gives 1 x H x W; a CMYK JPEG raises ValueError unless
    format is "native"), decoded with the GIL released, passed
    through `transform` when given; `label` an int (-1 when unlabelled).
    Works with any sampler and with DataLoader workers: each worker opens the
    dataset on its first item, so nothing open is shared across processes.
    """

    def __init__(
        self,
        path: str,
        fidelity: int = 0,
        transform: Optional[Callable[[_torch.Tensor], _torch.Tensor]] = None,
        format: str = "rgb",
        engine: str = "auto",
    ) -> None:
        self.path = path
        self.fidelity = fidelity
        self.transform = transform
        self.format = format
        self.engine = engine
        probe = _pcr.ImageDataset(path, engine)
        if not 0 <= fidelity <= probe.num_scan_groups:
            raise ValueError(f"fidelity {fidelity} out of range 0..{probe.num_scan_groups}")
        self._length = len(probe)
        self.classes = probe.classes
        self._ds = None
        self._pid = None

    def _dataset(self) -> _pcr.ImageDataset:
        import os

        if self._ds is None or self._pid != os.getpid():
            self._ds = _pcr.ImageDataset(self.path, self.engine)
            self._pid = os.getpid()
        return self._ds

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, index: int) -> Tuple[_torch.Tensor, int]:
        ds = self._dataset()
        label, _ = ds.sample(index)
        pixels = _pcr.decode(ds.read(index, self.fidelity), format=self.format)
        image = _torch.from_numpy(pixels).permute(2, 0, 1)
        if self.transform is not None:
            image = self.transform(image)
        return image, label

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_ds"] = None
        state["_pid"] = None
        return state
