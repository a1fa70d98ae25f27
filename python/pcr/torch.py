"""PyTorch datasets over pcr image datasets.

`Dataset` is map-style: `dataset[i]` gives image i at the chosen fidelity as a
uint8 tensor (C x H x W) and its label, for users who keep their own sampler,
DataLoader and transforms.
"""
from typing import Callable, Optional, Sequence, Tuple

import torch as _torch
import torch.utils.data as _data

from . import _pcr


class Dataset(_data.Dataset):
    """Images of a pcr dataset at fidelity `fidelity` (0: full).

    Each item is `(image, label)`: `image` a uint8 tensor of shape 3 x H x W
    (RGB, CMYK converted as PIL converts it; "gray" gives 1 x H x W),
    decoded with the GIL released, passed
    through `transform` when given; `label` an int (-1 when unlabelled).
    With `fields`, items are `(image, label, fields)`, `fields` a dict of the
    image's values (None where it lacks one); each item then also reads the
    streams of those fields in its record.
    Works with any sampler and with DataLoader workers: each worker opens the
    dataset on its first item, so nothing open is shared across processes.
    `path` may be http(s):// or s3://, read as `remote` (a dict of
    RemoteOptions: concurrency, hole_limit, ...) says.
    """

    def __init__(
        self,
        path: str,
        fidelity: int = 0,
        transform: Optional[Callable[[_torch.Tensor], _torch.Tensor]] = None,
        format: str = "rgb",
        engine: str = "auto",
        direct: bool = False,
        fields: Sequence[str] = (),
        remote: Optional[dict] = None,
    ) -> None:
        self.path = path
        self.remote = remote
        self.fidelity = fidelity
        self.fields = list(fields)
        self.transform = transform
        self.format = format
        self.engine, self.direct = engine, direct
        probe = _pcr.ImageDataset(path, engine, direct, remote)
        if not 0 <= fidelity <= probe.num_scan_groups:
            raise ValueError(f"fidelity {fidelity} out of range 0..{probe.num_scan_groups}")
        self._length = len(probe)
        self.classes = probe.classes
        if self.fields and len(probe):
            probe.fields(0, self.fields)  # refuses unknown names now
        self._ds = None
        self._pid = None

    def _dataset(self) -> _pcr.ImageDataset:
        import os

        if self._ds is None or self._pid != os.getpid():
            self._ds = _pcr.ImageDataset(self.path, self.engine, self.direct, self.remote)
            self._pid = os.getpid()
        return self._ds

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, index: int):
        ds = self._dataset()
        label, _ = ds.sample(index)
        pixels = _pcr.decode(ds.read(index, self.fidelity), format=self.format)
        image = _torch.from_numpy(pixels).permute(2, 0, 1)
        if self.transform is not None:
            image = self.transform(image)
        if self.fields:
            return image, label, ds.fields(index, self.fields)
        return image, label

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_ds"] = None
        state["_pid"] = None
        return state


_MASK = (1 << 64) - 1


def _mix(*values: int) -> int:
    """One 64-bit seed from several values (splitmix64 steps)."""
    z = 0
    for v in values:
        z = (z ^ (v & _MASK)) + 0x9E3779B97F4A7C15 & _MASK
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9 & _MASK
        z = (z ^ (z >> 27)) * 0x94D049BB133111EB & _MASK
        z ^= z >> 31
    return z


class ImageLoader(_data.IterableDataset):
    """Batches of images for training (or evaluation) straight from a pcr dataset.

    Each item is `(images, labels)`: a uint8 tensor N x 3 x size x size (or
    N x size x size x 3 with channels_last) and an int64 tensor of N labels;
    with `fields`, `(images, labels, fields)`, `fields` a dict mapping each
    name to a list of the batch's values (None where an image lacks one):
    captions as str, numbers, bytes, lists. Each record's field streams are
    read once, with its first image.
    Images are read at `fidelity` (0: full) and decoded on pcr's C++ threads
    with the crop chosen before decoding: torchvision's RandomResizedCrop(size,
    scale, ratio) and RandomHorizontalFlip when `train`, else Resize(resize)
    and CenterCrop(size). The next batch is read and decoded while the caller
    works on the current one.

    Shares: the rank and world size come from torch.distributed when it is
    initialised (else `rank`, `world_size`); inside a DataLoader with workers
    each worker takes its own share (rank * workers + worker of world *
    workers). Every rank gets the same number of batches: `uneven="pad"`
    repeats the epoch's first images, "drop" leaves the rest out. Use it with
    `DataLoader(loader, batch_size=None, num_workers=...)`.

    Epochs and resume: `set_epoch(e)` before each epoch reshuffles. With no
    workers, `state_dict()` after any batch and `load_state_dict()` on a new
    loader made with the same arguments continue with the next unseen batch;
    with workers pass the number of batches the DataLoader delivered,
    `state_dict(batches=n)`, and resume with the same number of workers.

    Reading: `engine` is "auto" (io_uring where the kernel allows, else
    pread), "uring" or "pread"; `direct=True` opens files with O_DIRECT, so
    reads of scan groups 1..k fetch those bytes alone, with no kernel
    read-ahead into the groups after them and no page cache. `path` may be
    http(s):// or s3://, read as `remote` (a dict of RemoteOptions) says.
    """

    def __init__(
        self,
        path: str,
        batch_size: int,
        fidelity: int = 0,
        *,
        train: bool = True,
        size: int = 224,
        scale: Tuple[float, float] = (0.08, 1.0),
        ratio: Tuple[float, float] = (3 / 4, 4 / 3),
        flip: bool = True,
        resize: int = 256,
        channels_last: bool = False,
        threads: int = 0,
        seed: int = 0,
        shuffle: Optional[bool] = None,
        shuffle_buffer: int = 4096,
        uneven: str = "pad",
        rank: Optional[int] = None,
        world_size: Optional[int] = None,
        read_ahead: int = 2048,
        engine: str = "auto",
        direct: bool = False,
        fields: Sequence[str] = (),
        remote: Optional[dict] = None,
    ) -> None:
        super().__init__()
        self.fields = list(fields)
        self.remote = remote
        self.path, self.batch_size, self.fidelity = path, batch_size, fidelity
        self.decoder_options = dict(
            size=size,
            crop="random_resized" if train else "center",
            scale=tuple(scale),
            ratio=tuple(ratio),
            resize=resize,
            flip=flip and train,
            channels_last=channels_last,
            threads=threads,
        )
        if uneven not in ("pad", "drop"):
            raise ValueError(f"uneven must be 'pad' or 'drop', not {uneven!r}")
        self.seed, self.shuffle_buffer, self.uneven = seed, shuffle_buffer, uneven
        self.shuffle = train if shuffle is None else shuffle
        self.read_ahead, self.engine, self.direct = read_ahead, engine, direct
        self._rank, self._world = rank, world_size
        self.epoch = 0
        self._start = 0  # position (images of this share) to resume from, this epoch
        self._delivered = 0  # batches delivered by the iteration in this process
        probe = _pcr.ImageDataset(path, engine, direct, remote)
        self._num_images = len(probe)
        if self.fields and len(probe):
            probe.fields(0, self.fields)  # refuses unknown names now
        _pcr.BatchDecoder(**self.decoder_options)  # refuses bad options now

    def _share(self) -> Tuple[int, int, int]:
        """(rank, world size, workers) of the calling process."""
        rank, world = self._rank, self._world
        if rank is None or world is None:
            import torch.distributed as dist

            if dist.is_available() and dist.is_initialized():
                rank, world = dist.get_rank(), dist.get_world_size()
            else:
                rank, world = rank or 0, world or 1
        info = _data.get_worker_info()
        if info is None:
            return rank, world, 1
        return rank * info.num_workers + info.id, world * info.num_workers, info.num_workers

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch
        self._start = 0

    def __len__(self) -> int:
        """Batches per epoch on this rank, iterated without DataLoader workers
        (with workers, each worker's share is rounded to whole batches)."""
        # As SampleIterator counts them, from the index alone: whole steps of
        # world_size batches, rounded up ("pad") or down ("drop").
        _, world, _ = self._share()
        step = world * self.batch_size
        if self.uneven == "pad":
            return -(-self._num_images // step)
        return self._num_images // step

    def state_dict(self, batches: Optional[int] = None) -> dict:
        """Where this epoch stands: after `batches` delivered batches (required with workers)."""
        return {"seed": self.seed, "epoch": self.epoch,
                "batches": self._delivered if batches is None else batches}

    def load_state_dict(self, state: dict) -> None:
        self.seed, self.epoch = state["seed"], state["epoch"]
        self._start = state["batches"]

    def __iter__(self):
        rank, world, workers = self._share()
        info = _data.get_worker_info()
        # The DataLoader takes batches from its workers in turn, worker 0
        # first, so after n batches share w has delivered its turns w, w +
        # workers, ... below n; on resume, worker i takes share (i + n) %
        # workers, whose turn comes next.
        role = 0 if info is None else (info.id + self._start) % workers
        rank = rank - (0 if info is None else info.id) + role
        skip = self._start // workers + (1 if role < self._start % workers else 0)
        ds = _pcr.ImageDataset(self.path, self.engine, self.direct, self.remote)
        it = _pcr.SampleIterator(ds, batch_size=self.batch_size, fidelity=self.fidelity, rank=rank,
                                 world_size=world, uneven=self.uneven, shuffle=self.shuffle,
                                 shuffle_buffer=self.shuffle_buffer, seed=self.seed, epoch=self.epoch,
                                 position=skip * self.batch_size, read_ahead=self.read_ahead,
                                 fields=self.fields)
        decoder = _pcr.BatchDecoder(**self.decoder_options)
        self._delivered = self._start
        from concurrent.futures import ThreadPoolExecutor

        def load(batch_number):
            try:
                indices, labels, jpegs, *fields = next(it)
            except StopIteration:
                return None
            images = decoder.decode(jpegs, _mix(self.seed, self.epoch, rank, batch_number))
            return (_torch.from_numpy(images), _torch.from_numpy(labels), *fields)

        with ThreadPoolExecutor(max_workers=1) as ahead:
            number = skip
            pending = ahead.submit(load, number)
            while True:
                batch = pending.result()
                if batch is None:
                    return
                number += 1
                pending = ahead.submit(load, number)
                self._delivered += 1
                yield batch


def table_batch(table: _pcr.Table, features, first_stripe: int = 0, num_stripes: Optional[int] = None) -> dict:
    """A projection of `table` as tensors for recommendation models.

    For each feature name: scalars give {"values", "mask"} (values 0 where
    missing, mask True where present); id lists give {"ids", "offsets",
    "mask"} with `offsets` the start of each row's ids, as
    torch.nn.EmbeddingBag takes them, plus "weights" for scored lists;
    strings give {"bytes", "offsets"} with one more offset than rows. The
    tensors share pcr's arrays without a copy.
    """
    out = {}
    for name, col in table.read(list(features), first_stripe, num_stripes).items():
        mask = _torch.from_numpy(col["presence"])
        values = _torch.from_numpy(col["values"])
        if "offsets" not in col:
            out[name] = {"values": values, "mask": mask}
        elif values.dtype == _torch.uint8:
            out[name] = {"bytes": values, "offsets": _torch.from_numpy(col["offsets"].view("int64"))}
        else:
            item = {"ids": values, "offsets": _torch.from_numpy(col["offsets"][:-1].view("int64")), "mask": mask}
            if "scores" in col:
                item["weights"] = _torch.from_numpy(col["scores"])
            out[name] = item
    return out
