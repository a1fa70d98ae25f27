"""PyTorch datasets over pcr image datasets and tables.

`Dataset` is map-style: `dataset[i]` gives image i at the chosen fidelity as a
uint8 tensor (C x H x W) and its label, for users who keep their own sampler,
DataLoader and transforms.
"""
from typing import Callable, Optional, Sequence, Tuple

import numpy as _np
import torch as _torch
import torch.utils.data as _data

from . import _pcr
from ._epoch_loader import _FIDELITY, DataLoader, _check_int, _decoder_options, _EpochLoader, _fidelity, _names
from ._torch_tables import TableLoader, table_batch

__all__ = ["Dataset", "ImageLoader", "TableLoader", "DataLoader", "table_batch", "gradient_similarity", "FidelityTuner"]


class Dataset(_data.Dataset):
    """Images of a pcr dataset at fidelity `fidelity` ("full", or 1..num_scan_groups).

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
    RemoteOptions: concurrency, hole_limit, ...) says. `decoder` is as in
    pcr.decode: "auto", "pcr" or "libjpeg", all giving the same pixels.
    `index_cache_bytes` bounds each process's memory for the indexes of the
    files it read and their labels and keys, as in pcr.ImageDataset.
    """

    def __init__(
        self,
        path: str,
        fidelity="full",
        transform: Optional[Callable[[_torch.Tensor], _torch.Tensor]] = None,
        format: str = "rgb",
        engine: str = "auto",
        direct: bool = False,
        fields: Sequence[str] = (),
        remote: Optional[dict] = None,
        decoder: str = "auto",
        index_cache_bytes: int = 64 << 20,
    ) -> None:
        if decoder not in ("auto", "pcr", "libjpeg"):
            raise ValueError(f"decoder must be 'auto', 'pcr' or 'libjpeg', not {decoder!r}")
        self.path = path
        self.remote = remote
        self.fields = _names("fields", fields)
        self.transform = transform
        self.format = format
        self.decoder = decoder
        self.engine, self.direct = engine, direct
        self.index_cache_bytes = _check_int("index_cache_bytes", index_cache_bytes, 0)
        import multiprocessing

        probe = self._open()
        self.num_scan_groups = probe.num_scan_groups
        # Shared with DataLoader workers, so set_fidelity reaches persistent ones.
        self._fidelity = multiprocessing.RawArray("q", [_fidelity(fidelity, probe.num_scan_groups)])
        self._length = len(probe)
        self.classes = probe.classes
        if self.fields and len(probe):
            probe.fields(0, self.fields)  # refuses unknown names now
        self._ds = None
        self._pid = None

    @property
    def fidelity(self) -> int:
        """The scan groups items are read with (1..num_scan_groups)."""
        return self._fidelity[0]

    def set_fidelity(self, fidelity) -> None:
        """Reads the items asked for after this call at `fidelity` ("full" or
        1..num_scan_groups), in this process and in its DataLoader workers,
        persistent and spawned ones too: call it between epochs, as
        set_epoch, before iterating the DataLoader again."""
        self._fidelity[0] = _fidelity(fidelity, self.num_scan_groups)

    def _dataset(self) -> _pcr.ImageDataset:
        import os

        if self._ds is None or self._pid != os.getpid():
            self._ds = self._open()
            self._pid = os.getpid()
        return self._ds

    def _open(self) -> _pcr.ImageDataset:
        return _pcr.ImageDataset(self.path, self.engine, self.direct, self.remote, self.index_cache_bytes)

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, index: int):
        ds = self._dataset()
        label, _ = ds.sample(index)
        pixels = _pcr.decode(ds.read(index, self.fidelity), format=self.format, decoder=self.decoder)
        image = _torch.from_numpy(pixels).permute(2, 0, 1)
        if self.transform is not None:
            image = self.transform(image)
        if self.fields:
            return image, label, ds.fields(index, self.fields)
        return image, label

    def __getstate__(self):
        import multiprocessing.context

        state = dict(self.__dict__)
        state["_ds"] = None
        state["_pid"] = None
        if multiprocessing.context.get_spawning_popen() is None:
            state["_fidelity"] = self._fidelity[0]  # a copy, not shared
        return state

    def __setstate__(self, state):
        import multiprocessing

        if isinstance(state["_fidelity"], int):
            state["_fidelity"] = multiprocessing.RawArray("q", [state["_fidelity"]])
        self.__dict__.update(state)


class ImageLoader(_EpochLoader):
    """Batches of images for training (or evaluation) straight from a pcr dataset.

    It makes the batches itself: iterate it directly, or through
    `pcr.torch.DataLoader(loader, num_workers=...)` or torch's DataLoader
    with `batch_size=None`. torch's DataLoader with a batch size would batch
    the batches again; it is refused with a TypeError.

    Each item is `(images, labels)`: a tensor N x 3 x size x size (or N x
    size x size x 3 with channels_last) and an int64 tensor of N labels;
    with `fields`, `(images, labels, fields)`, `fields` a dict mapping each
    name to a list of the batch's values (None where an image lacks one):
    captions as str, numbers, bytes, lists. Each record's field streams are
    read once, with its first image. `return_index=True` appends an int64
    tensor of the images' indices in the dataset (as `pcr.ImageDataset`
    numbers them). `batch_transform` is called with each item, in the
    process that makes it (the DataLoader worker), and what it returns is
    delivered instead. `on_error="skip"` skips an image that cannot be read
    or decoded (a corrupt record, a bad JPEG): a warning and the "pcr"
    logger name it, `loader.skipped` counts them, and the batch's first
    images take the skipped ones' places again, so batches keep their size
    and len() holds.
    Images are uint8, or with `normalize=(mean, std)` (1 or 3 values each)
    and `dtype` torch.float32 (the default then) or torch.float16, the
    values of torchvision's ToTensor() then Normalize(mean, std) (a float
    dtype alone: ToTensor()'s), computed in C++ (float16: those float32
    values rounded, as .half() rounds them).
    Images are read at `fidelity` ("full", or 1..num_scan_groups: scan
    groups 1..fidelity) and decoded on pcr's C++ threads with the crop chosen
    before decoding: torchvision's RandomResizedCrop(size, scale, ratio) and
    RandomHorizontalFlip when `train`, else Resize(resize) and
    CenterCrop(size), byte for byte as torchvision makes them from PIL's
    decode (the random draws too, see pcr.BatchDecoder). `fast_scale=True`
    decodes at a DCT scale (1/2, 1/4, 1/8) where the crop keeps `size`
    pixels each way: faster, but not the same pixels. The next batch is read
    and decoded while the caller works on the current one.

    Shares: the rank and world size are `rank` and `world_size`, given
    together, or else come from torch.distributed when it is initialised
    (else 0 and 1), in the process that iterates the loader or starts its
    DataLoader workers (spawned ones too). As with DistributedSampler, every
    rank gets len(loader) batches: `uneven="pad"` gives each rank
    ceil(images / world_size) images, repeating at most world_size - 1 of the
    epoch's first images, the last batch short if batch_size does not divide
    them; "drop" gives only full batches and leaves the rest out. Use it with
    `pcr.torch.DataLoader(loader, num_workers=...)` (or torch's DataLoader
    with batch_size=None): each worker reads a contiguous part of the rank's
    share and delivers every num_workers-th batch, so the rank gets the same
    images and batch count for any number of workers.

    Epochs and resume: `set_epoch(e)` before each epoch reshuffles (workers,
    persistent ones too, see it). `state_dict()` after any batch and
    `load_state_dict()` on a new loader made with the same arguments continue
    with the next unseen batch (a later set_epoch of the state's own epoch
    keeps that position). Batches are counted where they arrive: in
    this process without workers, by pcr.torch.DataLoader with them; with
    torch's own DataLoader and workers, pass the number of batches it
    delivered, `state_dict(batches=n)`. On the same world size, resume
    with the same number of workers. On another world size the resume is
    elastic, as MosaicML Streaming's: the epoch's order is fixed by seed and
    epoch, so the images the state's ranks delivered are left out and the
    rest is split over the new ranks (any workers), padded as `uneven` says;
    len() is then what is left. No image is lost, and one repeats only as
    padding repeats it. The state records the world size, batch size,
    uneven, shuffle, the dataset's content id and the parts delivered on
    earlier world sizes ("resumed"); load_state_dict refuses a loader that
    differs in batch size, uneven, shuffle or dataset, naming it.

    Reading: `engine` is "auto" (io_uring where the kernel allows, else
    pread), "uring" or "pread"; `direct=True` opens files with O_DIRECT, so
    reads of scan groups 1..k fetch those bytes alone, with no kernel
    read-ahead into the groups after them and no page cache. `path` may be
    http(s):// or s3://, read as `remote` (a dict of RemoteOptions) says.
    Each process opens the dataset by its manifest alone and reads the index
    of a file when its share first needs it, keeping at most
    `index_cache_bytes` of indexes, labels and keys (least recently used
    dropped first), so a rank's worker touches only the files of its part.
    `decoder` is as in pcr.decode: "auto", "pcr" or "libjpeg", all giving
    the same pixels. Arguments are checked here, in the calling process. The
    dataset is opened again each epoch: one whose contents changed meanwhile
    raises OSError ("the dataset changed while open"); make a new loader.
    """

    def __init__(
        self,
        path: str,
        batch_size: int,
        fidelity="full",
        *,
        train: bool = True,
        size: int = 224,
        scale: Tuple[float, float] = (0.08, 1.0),
        ratio: Tuple[float, float] = (3 / 4, 4 / 3),
        flip: bool = True,
        resize: int = 256,
        fast_scale: bool = False,
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
        decoder: str = "auto",
        normalize: Optional[Tuple[Sequence[float], Sequence[float]]] = None,
        dtype: Optional[_torch.dtype] = None,
        return_index: bool = False,
        batch_transform: Optional[Callable] = None,
        on_error: str = "raise",
        index_cache_bytes: int = 64 << 20,
    ) -> None:
        super().__init__()
        for name, value in (("train", train), ("flip", flip), ("fast_scale", fast_scale),
                            ("channels_last", channels_last), ("direct", direct), ("return_index", return_index)):
            if not isinstance(value, bool):
                raise TypeError(f"{name} must be True or False, not {value!r}")
        if shuffle is not None and not isinstance(shuffle, bool):
            raise TypeError(f"shuffle must be True, False or None, not {shuffle!r}")
        self._setup(batch_size, seed, train if shuffle is None else shuffle, ("shuffle_buffer", shuffle_buffer, 0),
                    uneven, rank, world_size)
        _check_int("read_ahead", read_ahead, 1)
        self.fields = _names("fields", fields)
        self.remote = remote
        self.path = path
        self.return_index = return_index
        if on_error not in ("raise", "skip"):
            raise ValueError(f"on_error must be 'raise' or 'skip', not {on_error!r}")
        self.on_error = on_error
        if batch_transform is not None and not callable(batch_transform):
            raise TypeError(f"batch_transform must be callable, not {type(batch_transform).__name__}")
        self.batch_transform = batch_transform
        self.decoder_options = _decoder_options(train, size, scale, ratio, resize, flip, fast_scale, channels_last,
                                                normalize, dtype, threads, decoder)
        self.read_ahead, self.engine, self.direct = read_ahead, engine, direct
        self.index_cache_bytes = _check_int("index_cache_bytes", index_cache_bytes, 0)
        probe = self._open()
        self.num_scan_groups = probe.num_scan_groups
        self._shared[_FIDELITY] = _fidelity(fidelity, probe.num_scan_groups)
        self._num_items, self._content_id = len(probe), probe.content_id
        if self.fields and len(probe):
            probe.fields(0, self.fields)  # refuses unknown names now
        _pcr.BatchDecoder(**self.decoder_options)  # refuses bad options now

    def _open(self) -> _pcr.ImageDataset:
        return _pcr.ImageDataset(self.path, self.engine, self.direct, self.remote, self.index_cache_bytes)

    _elastic = True

    @property
    def fidelity(self) -> int:
        """The scan groups (1..num_scan_groups) the next iteration reads."""
        return self._shared[_FIDELITY]

    def set_fidelity(self, fidelity) -> None:
        """Reads at `fidelity` ("full" or 1..num_scan_groups) from the next
        iteration (epoch) on: an iteration under way keeps its fidelity.
        Reaches DataLoader workers, persistent and spawned ones too, as
        set_epoch does. state_dict() records it."""
        self._shared[_FIDELITY] = _fidelity(fidelity, self.num_scan_groups)

    def state_dict(self, batches: Optional[int] = None) -> dict:
        """As for every loader (see _EpochLoader.state_dict), and "fidelity":
        the fidelity the next iteration reads, which a loader that loads
        the state continues at."""
        return {**super().state_dict(batches), "fidelity": self.fidelity}

    def load_state_dict(self, state: dict) -> None:
        fidelity = state.get("fidelity")  # states saved before pcr recorded it keep the loader's
        if fidelity is not None:
            fidelity = _fidelity(fidelity, self.num_scan_groups)
        super().load_state_dict(state)
        if fidelity is not None:
            self._shared[_FIDELITY] = fidelity

    load_state_dict.__doc__ = _EpochLoader.load_state_dict.__doc__

    @property
    def skipped(self) -> int:
        """Images skipped as unreadable (on_error="skip") since the loader was
        made, by this process and its DataLoader workers."""
        return self._skipped.value

    def _report(self, skipped: list, reported: int) -> int:
        """Warns of (and logs) each skipped image after the first `reported`."""
        import logging
        import warnings

        for index, key, why in skipped[reported:]:
            self._skipped.add(1)
            total = self._skipped.value
            message = (f"pcr.torch.ImageLoader: {self.path}: skipped image {index} ({key}), an image of its batch "
                       f"takes its place ({total} skipped so far): {why}")
            logging.getLogger("pcr").warning(message)
            warnings.warn(message, RuntimeWarning, stacklevel=2)
        return len(skipped)

    def _resumed_len(self, world: int, resumed: list) -> int:
        key = (world, self.seed, self.epoch, str(resumed))
        if getattr(self, "_resumed_len_cache", (None,))[0] != key:
            ds = self._open()
            n = _pcr._resumed_batches_per_rank(ds, world_size=world, batch_size=self.batch_size, uneven=self.uneven,
                                              shuffle=self.shuffle, **self._mixing, seed=self.seed, epoch=self.epoch,
                                              delivered=[tuple(part) for part in resumed])
            self._resumed_len_cache = (key, n)
        return self._resumed_len_cache[1]

    def _source(self) -> _pcr.ImageDataset:
        """The dataset opened for an iteration, checked to be the one this loader was made on."""
        from ._errors import CorruptionError

        try:
            ds = self._open()
        except CorruptionError as e:
            raise self._changed(e) from e
        if ds.content_id != self._content_id:
            raise OSError(f"{self.path}: the dataset changed while open: it holds {len(ds)} images (content id "
                          f"{ds.content_id}), not the {self._num_items} (content id {self._content_id}) it held "
                          "when this ImageLoader was made: make a new ImageLoader")
        return ds

    def _changed(self, e: Exception) -> OSError:
        """The error for a file of the dataset found changed (`e`) while open."""
        return OSError(f"{self.path}: the dataset changed while open ({e}): make a new ImageLoader once it is whole")

    def _batches(self, share: dict, ds: Optional[_pcr.ImageDataset] = None):
        from ._errors import CorruptionError

        ds, counted = self._opened(ds)
        it = _pcr._ImageLoader(ds, batch_size=self.batch_size, fidelity=self.fidelity, read_ahead=self.read_ahead,
                               fields=self.fields, on_error=self.on_error, **share, **self.decoder_options)
        reported = 0
        try:
            for images, labels, indices, *fields in it:
                counted = self._count_read(ds, counted)
                if self.on_error == "skip":
                    reported = self._report(it.skipped(), reported)
                batch = (_torch.from_numpy(images), _torch.from_numpy(labels), *fields)
                if self.return_index:
                    batch += (_torch.from_numpy(indices),)
                yield batch if self.batch_transform is None else self.batch_transform(batch)
        except CorruptionError as e:
            # A file is checked against the manifest when first read.
            if "differs from the manifest" not in str(e):
                raise
            raise self._changed(e) from e


def _probe_share(ds, images: int, seed: int, rank: int, world: int) -> list:
    """This rank's part of the probe's images, as record_samples gives them
    at full fidelity: whole records in an order drawn from `seed`, rank r
    taking every world-th of them, until it has its share of `images`.
    Each record is read once."""
    want = images // world + (1 if rank < images % world else 0)
    order = _np.random.default_rng(seed).permutation(ds.num_records)
    taken = []
    for record in order[rank::world]:
        if len(taken) >= want:
            break
        taken += ds.record_samples(int(record), "full")
    return taken[:want]


def _seed(*parts: int) -> int:
    """A 63-bit seed mixed from `parts`."""
    return int(_np.random.SeedSequence(list(parts)).generate_state(1, _np.uint64)[0]) >> 1


def gradient_similarity(
    model: _torch.nn.Module,
    loss_fn: Callable,
    path: str,
    fidelities: Optional[Sequence] = None,
    images: int = 2560,
    batch_size: int = 256,
    seed: int = 0,
    *,
    train: bool = True,
    size: int = 224,
    scale: Tuple[float, float] = (0.08, 1.0),
    ratio: Tuple[float, float] = (3 / 4, 4 / 3),
    flip: bool = True,
    resize: int = 256,
    fast_scale: bool = False,
    channels_last: bool = False,
    normalize: Optional[Tuple[Sequence[float], Sequence[float]]] = None,
    dtype: Optional[_torch.dtype] = None,
    threads: int = 0,
    decoder: str = "auto",
    batch_transform: Optional[Callable] = None,
    device=None,
    engine: str = "auto",
    direct: bool = False,
    remote: Optional[dict] = None,
) -> dict:
    """How training at each fidelity would move `model`, against full fidelity.

    Returns {k: cosine similarity of the loss gradient at fidelity k with the
    gradient at full fidelity} for each k of `fidelities` (default: every
    fidelity 1..num_scan_groups; "full" is num_scan_groups, whose score is
    1.0), as in Kuchnik's PCR autotuning: a fidelity whose gradient points
    where full fidelity's does trains about as well.

    The gradient is that of loss_fn(model(images), labels) summed over
    `images` images in batches of `batch_size`: whole records in an order
    drawn from `seed`, each read once at full fidelity; each lower fidelity
    is cut from those bytes (ImageDataset.lower_fidelity), never read again.
    Every fidelity sees the same images with the same crop and flip, made as
    ImageLoader makes them from the same transform arguments (and
    `batch_transform`, called with (images, labels)), and the same random
    draws inside the model (dropout). The model runs in training mode on
    `device` (default: its parameters' device); gradients are computed with
    torch.autograd.grad and never applied: parameters, their .grad, buffers
    (batch-norm running statistics), the modules' training flags and torch's
    random state are left as they were.

    Under torch.distributed (initialised), each rank probes its own part of
    the images, the ranks sum their gradients (all_reduce), and rank 0's
    scores are broadcast, so every rank gets the same scores. A score is NaN
    where a gradient is all zeros.
    """
    options = _decoder_options(train, size, scale, ratio, resize, flip, fast_scale, channels_last, normalize, dtype,
                               threads, decoder)
    if batch_transform is not None and not callable(batch_transform):
        raise TypeError(f"batch_transform must be callable, not {type(batch_transform).__name__}")
    ds = _pcr.ImageDataset(path, engine, direct, remote)
    return _gradient_similarity(model, loss_fn, ds, fidelities, images, batch_size, seed, options, batch_transform,
                                device)


def _candidates(name: str, value, groups: int) -> list:
    """Sorted distinct fidelities of `value` (None: 1..groups); ValueError naming `name`."""
    if value is None:
        return list(range(1, groups + 1))
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise TypeError(f"{name} must be a list of fidelities (1..{groups} or 'full'), not {value!r}")
    out = set()
    for k in value:
        try:
            out.add(_fidelity(k, groups))
        except ValueError:
            raise ValueError(f"{name} must be fidelities 1..{groups} or 'full', not {k!r}") from None
    if not out:
        raise ValueError(f"{name} must name at least one fidelity")
    return sorted(out)


def _gradient_similarity(model, loss_fn, ds, fidelities, images, batch_size, seed, options, batch_transform,
                         device) -> dict:
    import torch.distributed as dist

    if not isinstance(model, _torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, not {type(model).__name__}")
    if not callable(loss_fn):
        raise TypeError(f"loss_fn must be callable, not {type(loss_fn).__name__}")
    groups = ds.num_scan_groups
    candidates = _candidates("fidelities", fidelities, groups)
    _check_int("images", images, 1)
    _check_int("batch_size", batch_size, 1)
    _check_int("seed", seed, 0, (1 << 64) - 1)
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("model has no parameter that requires a gradient")
    device = _torch.device(device) if device is not None else params[0].device
    distributed = dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1
    rank, world = (dist.get_rank(), dist.get_world_size()) if distributed else (0, 1)

    samples = _probe_share(ds, images, seed, rank, world)
    batches = [samples[i:i + batch_size] for i in range(0, len(samples), batch_size)]
    decoder = _pcr.BatchDecoder(**options)

    def gradient(k: int) -> _torch.Tensor:
        total = _torch.zeros(sum(p.numel() for p in params), dtype=_torch.float64, device=device)
        for b, batch in enumerate(batches):
            jpegs = [s["jpeg"] if k == groups else ds.lower_fidelity(s["index"], s["jpeg"], k) for s in batch]
            x = _torch.from_numpy(decoder.decode(jpegs, seed=_seed(seed, rank, b)))
            y = _torch.tensor([s["label"] for s in batch], dtype=_torch.int64)
            if batch_transform is not None:
                x, y = batch_transform((x, y))[:2]
            _torch.manual_seed(_seed(seed, rank, b, 1))  # the same dropout at every fidelity
            loss = loss_fn(model(x.to(device)), y.to(device))
            grads = _torch.autograd.grad(loss, params, allow_unused=True)
            total += _torch.cat([(g if g is not None else _torch.zeros_like(p)).reshape(-1).to(_torch.float64)
                                 for g, p in zip(grads, params)])
        if distributed:
            dist.all_reduce(total)
        return total

    modes = [(m, m.training) for m in model.modules()]
    saved = [b.detach().clone() for b in model.buffers()]
    cuda = [device] if device.type == "cuda" else []
    try:
        model.train()
        with _torch.random.fork_rng(devices=cuda):
            full = gradient(groups)
            scores = []
            for k in candidates:
                if k == groups:
                    scores.append(1.0)  # the same gradient
                    continue
                g = gradient(k)
                norms = float(full.norm()) * float(g.norm())
                scores.append(min(1.0, max(-1.0, float(_torch.dot(full, g)) / norms)) if norms > 0 else float("nan"))
    finally:
        with _torch.no_grad():
            for b, value in zip(model.buffers(), saved):
                b.copy_(value)
        for m, mode in modes:
            m.training = mode
    if distributed:
        shared = _torch.tensor(scores, dtype=_torch.float64, device=full.device)
        dist.broadcast(shared, 0)
        scores = shared.tolist()
    return dict(zip(candidates, scores))


class FidelityTuner:
    """Picks an ImageLoader's fidelity while training, as Kuchnik's PCR
    autotuning does: full fidelity for `warmup` epochs, then every `every`
    epochs a gradient_similarity probe of `candidates` (default: every
    fidelity) and the lowest fidelity whose score reaches `threshold` (full
    fidelity when none does).

    Call `step(epoch)` before each epoch: it sets the loader's fidelity for
    that epoch (set_fidelity) and returns it. The probe takes the loader's
    path, transform and batch_transform, `images` images in batches of
    `batch_size` (default: the loader's), and a seed drawn from `seed` and
    the epoch; on every rank of torch.distributed it gives the same scores,
    so every rank picks the same fidelity. Each probe's scores and choice
    go to the "pcr" logger (INFO) and to `history`. `state_dict()` and
    `load_state_dict()` keep the choice and history across a resume.
    """

    def __init__(self, loader: ImageLoader, model: _torch.nn.Module, loss_fn: Callable, threshold: float = 0.8,
                 every: int = 20, warmup: int = 5, candidates: Optional[Sequence] = None, *, images: int = 2560,
                 batch_size: Optional[int] = None, seed: int = 0, device=None) -> None:
        if not isinstance(loader, ImageLoader):
            raise TypeError(f"loader must be a pcr.torch.ImageLoader, not {type(loader).__name__}")
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not -1 < threshold <= 1:
            raise ValueError(f"threshold must be a number in (-1, 1], a cosine similarity, not {threshold!r}")
        _check_int("every", every, 1)
        _check_int("warmup", warmup, 0)
        _check_int("images", images, 1)
        _check_int("seed", seed, 0, (1 << 64) - 1)
        self.loader, self.model, self.loss_fn = loader, model, loss_fn
        self.threshold, self.every, self.warmup = float(threshold), every, warmup
        self.candidates = _candidates("candidates", candidates, loader.num_scan_groups)
        self.images = images
        self.batch_size = loader.batch_size if batch_size is None else _check_int("batch_size", batch_size, 1)
        self.seed, self.device = seed, device
        self.fidelity = loader.num_scan_groups
        self.history: list = []  # {"epoch", "scores": {k: score}, "fidelity"} per probe

    def step(self, epoch: int) -> int:
        """The fidelity of epoch `epoch`, set on the loader: full during
        warmup, a new probe's choice at epochs warmup, warmup + every, ...,
        else the last choice."""
        import logging

        _check_int("epoch", epoch, 0)
        groups = self.loader.num_scan_groups
        if epoch < self.warmup:
            self.fidelity = groups
        elif (epoch - self.warmup) % self.every == 0 and not any(h["epoch"] == epoch for h in self.history):
            loader = self.loader
            ds = loader._open()
            scores = _gradient_similarity(self.model, self.loss_fn, ds, self.candidates, self.images, self.batch_size,
                                          _seed(self.seed, epoch), loader.decoder_options, loader.batch_transform,
                                          self.device)
            passing = [k for k in sorted(scores) if scores[k] >= self.threshold]
            self.fidelity = passing[0] if passing else groups
            self.history.append({"epoch": epoch, "scores": scores, "fidelity": self.fidelity})
            shown = ", ".join(f"{k}: {v:.4f}" for k, v in sorted(scores.items()))
            logging.getLogger("pcr").info(
                "pcr.torch.FidelityTuner: epoch %d: gradient similarity {%s}: fidelity %d of %d (threshold %g)",
                epoch, shown, self.fidelity, groups, self.threshold)
        self.loader.set_fidelity(self.fidelity)
        return self.fidelity

    def state_dict(self) -> dict:
        return {"fidelity": self.fidelity, "history": [dict(h, scores=dict(h["scores"])) for h in self.history]}

    def load_state_dict(self, state: dict) -> None:
        """Continues with the state's choice (set on the loader) and history."""
        fidelity = _fidelity(state["fidelity"], self.loader.num_scan_groups)
        self.history = [{"epoch": int(h["epoch"]), "fidelity": int(h["fidelity"]),
                         "scores": {int(k): float(v) for k, v in h["scores"].items()}} for h in state["history"]]
        self.fidelity = fidelity
        self.loader.set_fidelity(fidelity)
