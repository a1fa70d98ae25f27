"""What pcr.torch's loaders share: argument checks, the shares, epochs,
resumes and DataLoader workers of _EpochLoader, and pcr.torch.DataLoader."""
from typing import Optional, Tuple

import torch as _torch
import torch.utils.data as _data

from . import _pcr


def _check_int(name: str, value, low: int, high: Optional[int] = None) -> int:
    """`value` if an int in low..high, else ValueError (TypeError) naming `name`."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < low or (high is not None and value > high):
        accepted = f"at least {low}" if high is None else f"{low}..{high}"
        raise ValueError(f"{name} must be {accepted}, not {value}")
    return value


def _names(name: str, value) -> list:
    """A list of field names; a str is one name."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, bytes):
        raise TypeError(f"{name} must be a str or a list of str, not bytes {value!r}")
    return list(value)


def _normalize(value):
    """ImageLoader's normalize as (mean, std) lists of floats, or None."""
    if value is None:
        return None
    try:
        mean, std = value
        return [float(v) for v in mean], [float(v) for v in std]
    except (TypeError, ValueError):
        raise TypeError(f"normalize must be (mean, std), each 1 or 3 numbers, not {value!r}") from None


def _dtype(value, normalize) -> str:
    """ImageLoader's dtype as pcr names it: uint8 unless normalizing."""
    names = {_torch.uint8: "uint8", _torch.float32: "float32", _torch.float16: "float16"}
    if value is None:
        return "uint8" if normalize is None else "float32"
    if value not in names:
        raise ValueError(f"dtype must be torch.uint8, torch.float32 or torch.float16, not {value!r}")
    return names[value]


def _decoder_options(train, size, scale, ratio, resize, flip, fast_scale, channels_last, normalize, dtype, threads,
                     decoder) -> dict:
    """pcr.BatchDecoder's arguments for ImageLoader's transform arguments."""
    _check_int("size", size, 1)
    _check_int("resize", resize, 1)
    _check_int("threads", threads, 0)
    return dict(size=size, crop="random_resized" if train else "center", scale=tuple(scale), ratio=tuple(ratio),
                resize=resize, flip=flip and train, fast_scale=fast_scale, channels_last=channels_last,
                normalize=_normalize(normalize), dtype=_dtype(dtype, normalize), threads=threads, decoder=decoder)


def _fidelity(value, groups: int) -> int:
    """A loader's fidelity: "full" or 1..groups, as the scan groups to read."""
    return _pcr._fidelity_groups(value, groups)


# Slots of ImageLoader's shared state, seen by its DataLoader workers: then
# the number of parts of the epoch delivered before resumes on other world
# sizes, and (world_size, num_workers, batches) of each.
_EPOCH, _START, _WORKERS_EPOCH, _WORKERS, _FIDELITY, _RESUMES = range(6)
_MAX_RESUMES = 16

_worker_exit_registered = False


def _finish_feeders_at_exit() -> None:
    """In a DataLoader worker: lets the queue's feeder threads finish the
    batch they are sending before the interpreter finalises. A spawned
    worker exits through finalisation, where Python ends a daemon thread
    that takes the GIL back by unwinding its stack; a feeder inside torch's
    C++ (pickling a tensor into shared memory) then aborts the process. One
    still busy after a few seconds (its reader gone) is left by exiting at
    once."""
    global _worker_exit_registered
    if _worker_exit_registered:
        return
    _worker_exit_registered = True
    import atexit

    def finish() -> None:
        import os
        import sys
        import threading
        import time

        deadline = time.monotonic() + 5
        feeders = [t for t in threading.enumerate() if t.name == "QueueFeederThread"]
        for t in feeders:
            t.join(max(0.0, deadline - time.monotonic()))
        if any(t.is_alive() for t in feeders):
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
            os._exit(0)

    atexit.register(finish)


def _refuse_rebatching(loader) -> None:
    """Raises TypeError where torch's DataLoader batches the loader's batches
    again: the caller of the loader's first next() is then a fetcher that
    collates several items. Call from the loader's __iter__ generator."""
    import sys

    try:
        fetcher = sys._getframe(2).f_locals.get("self")
    except ValueError:  # advanced from outside any Python frame
        return
    if type(fetcher).__name__ == "_IterableDatasetFetcher" and getattr(fetcher, "auto_collation", False):
        name = type(loader).__name__
        raise TypeError(f"pcr.torch.{name} makes the batches, and this DataLoader has a batch_size, so it would "
                        f"stack them into batches of batches: give the DataLoader batch_size=None, or use "
                        f"pcr.torch.DataLoader(loader, num_workers=...)")


class _Tally:
    """A count over this process and its DataLoader workers. Each process
    adds to its own slot of shared memory: no lock, as one made for forked
    workers crashes spawned ones."""

    _SLOTS = 257  # this process, then DataLoader worker w at 1 + w % 256

    def __init__(self) -> None:
        import multiprocessing

        self._slots = multiprocessing.RawArray("q", self._SLOTS)

    def add(self, n: int) -> None:
        info = _data.get_worker_info()
        self._slots[0 if info is None else 1 + info.id % (self._SLOTS - 1)] += n

    @property
    def value(self) -> int:
        return sum(self._slots)

    def __getstate__(self):
        import multiprocessing.context

        if multiprocessing.context.get_spawning_popen() is None:
            return list(self._slots)  # a copy, not shared
        return self._slots

    def __setstate__(self, state) -> None:
        import multiprocessing

        self._slots = multiprocessing.RawArray("q", state) if isinstance(state, list) else state


class _EpochLoader(_data.IterableDataset):
    """Shares, epochs, resume and DataLoader workers, for ImageLoader and
    TableLoader: subclasses give `_num_items` and `_batches`, and where they
    resume on another world size (`_elastic`), `_resumed_len`."""

    _elastic = False

    def _setup(self, batch_size, seed, shuffle, mixing, uneven, rank, world_size) -> None:
        """`mixing`: (name, value, least) of the shuffle's size argument."""
        import multiprocessing

        _check_int("batch_size", batch_size, 1)
        _check_int("seed", seed, 0, (1 << 64) - 1)
        _check_int(*mixing)
        if (rank is None) != (world_size is None):
            raise ValueError("give rank and world_size together, or neither to take them from torch.distributed "
                             f"(rank={rank}, world_size={world_size})")
        if world_size is not None:
            _check_int("world_size", world_size, 1)
            _check_int("rank", rank, 0, world_size - 1)
        if not isinstance(shuffle, bool):
            raise TypeError(f"shuffle must be True or False, not {shuffle!r}")
        if uneven not in ("pad", "drop"):
            raise ValueError(f"uneven must be 'pad' or 'drop', not {uneven!r}")
        self.batch_size, self.seed, self.shuffle = batch_size, seed, shuffle
        self._mixing, self.uneven = {mixing[0]: mixing[1]}, uneven
        self._rank, self._world = rank, world_size
        self._spawned_share = None  # the share of the process that spawned this one
        # Epoch, batches to resume after, and the epoch (+1) and worker count
        # of the last iteration by DataLoader workers: shared with the
        # workers, so set_epoch and load_state_dict reach persistent ones.
        self._shared = multiprocessing.RawArray("q", _RESUMES + 1 + 3 * _MAX_RESUMES)
        self._skipped = _Tally()  # images skipped, by this process and its workers
        self._bytes_read = _Tally()
        self._workers_saved = None  # workers of the loaded state
        self._counted = None  # (epoch, workers) of the batches counted in this process
        self._delivered = 0

    @property
    def epoch(self) -> int:
        return self._shared[_EPOCH]

    @property
    def bytes_read(self) -> int:
        """Bytes storage read for this loader's iterations since it was made
        (opening the data included), by this process and its DataLoader
        workers, counted as each batch is made."""
        return self._bytes_read.value

    def _opened(self, source=None) -> tuple:
        """(`source`, or the data opened afresh by `_source()`, bytes it had read
        before this iteration): an open source may have read for others."""
        if source is None:
            return self._source(), 0
        return source, source.io_counters["bytes_read"]

    def _count_read(self, source, counted: int) -> int:
        """Adds what `source` (a pcr dataset or table) read since `counted` bytes; returns its total."""
        now = source.io_counters["bytes_read"]
        self._bytes_read.add(now - counted)
        return now

    def _share(self) -> Tuple[int, int]:
        """(rank, world size) of the calling process."""
        if self._rank is not None:
            return self._rank, self._world
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
        return self._spawned_share or (0, 1)

    def set_epoch(self, epoch: int) -> None:
        """The epoch to iterate next. Another epoch than the current one starts
        at its beginning; the epoch of a loaded state keeps its position."""
        if _check_int("epoch", epoch, 0) != self.epoch:
            self._shared[_EPOCH] = epoch
            self._shared[_START] = 0
            self._shared[_RESUMES] = 0
            self._workers_saved = None

    def _resumed(self) -> list:
        """[world_size, num_workers, batches] of each part of this epoch
        delivered before a resume on another world size."""
        n = self._shared[_RESUMES]
        return [list(self._shared[_RESUMES + 1 + 3 * i:_RESUMES + 4 + 3 * i]) for i in range(n)]

    def _set_resumed(self, parts: list) -> None:
        if len(parts) > _MAX_RESUMES:
            raise ValueError(f"load_state_dict: the state has resumed on other world sizes {len(parts)} times "
                             f"in its epoch, more than the {_MAX_RESUMES} a loader keeps: start the next epoch")
        for i, part in enumerate(parts):
            self._shared[_RESUMES + 1 + 3 * i:_RESUMES + 4 + 3 * i] = part
        self._shared[_RESUMES] = len(parts)

    def __len__(self) -> int:
        """Batches per epoch on this rank, with or without DataLoader workers
        (after a resume on another world size: of what is left of it)."""
        _, world = self._share()
        resumed = self._resumed()
        if resumed:
            return self._resumed_len(world, resumed)
        return _pcr._batches_per_rank(self._num_items, world, self.batch_size, self.uneven)

    def state_dict(self, batches: Optional[int] = None) -> dict:
        """Where this epoch stands: after the batches delivered so far, or
        after `batches` (the count a DataLoader with workers delivered)."""
        epoch = self.epoch
        workers_ran = self._shared[_WORKERS_EPOCH] == epoch + 1
        if batches is not None:
            _check_int("batches", batches, 0, len(self))
            workers = self._shared[_WORKERS] if workers_ran else None  # unknown: not checked on resume
        elif self._counted is not None and self._counted[0] == epoch:
            batches, workers = self._delivered, self._counted[1]
        elif workers_ran:
            raise ValueError(
                "DataLoader workers iterated this loader, and only the DataLoader knows how many of their "
                "batches it delivered: iterate with pcr.torch.DataLoader(loader, num_workers=...), whose "
                "state_dict() counts them, or pass state_dict(batches=n) with the batches delivered this epoch")
        else:
            batches, workers = self._shared[_START], self._workers_saved
        state = {"seed": self.seed, "epoch": epoch, "batches": batches, "num_workers": workers, **self._identity()}
        if self._elastic:
            state["resumed"] = self._resumed()
        return state

    def _identity(self) -> dict:
        """What a state can only be continued with: the shares, batches,
        order and dataset it was saved with."""
        return {"world_size": self._share()[1], "batch_size": self.batch_size, "uneven": self.uneven,
                "shuffle": self.shuffle, **self._mixing, "dataset": self._content_id}

    def load_state_dict(self, state: dict) -> None:
        """Continues `state` (from state_dict) with the next unseen batch.
        Refuses, naming it, a batch size, uneven, shuffle or dataset other
        than the state's, and a world size other than the state's where the
        loader cannot resume elastically (states saved before pcr recorded
        them are not checked)."""
        resumed = [list(part) for part in state.get("resumed", [])] if self._elastic else []
        batches = state["batches"]
        workers = state.get("num_workers")
        for key, mine in self._identity().items():
            if key not in state or state[key] == mine:
                continue
            saved = state[key]
            if key == "world_size" and self._elastic:
                # Elastic: the epoch goes on with the images the state's ranks did not deliver.
                if workers is None and batches > 0:
                    raise ValueError(
                        "load_state_dict: the state was saved on another world size without its number of "
                        "workers, which tells which images were delivered: save states through "
                        "pcr.torch.DataLoader, or with state_dict(batches=n) after iterating with workers")
                resumed.append([_check_int("world_size", saved, 1), max(1, workers or 1),
                                _check_int("batches", batches, 0)])
                batches, workers = 0, None
                continue
            if key == "world_size":
                remedy = f"runs on {mine}: resume on {saved} ranks"
            elif key == "dataset":
                remedy = (f"reads {mine}, another dataset or this one changed: resume over the dataset the state "
                          "was saved over")
            else:
                remedy = f"has {key}={mine!r}: make the loader with {key}={saved!r} to continue"
            raise ValueError(f"load_state_dict: the state was saved with {key}={saved!r}, and this loader {remedy}")
        self.seed = _check_int("seed", state["seed"], 0, (1 << 64) - 1)
        self._shared[_EPOCH] = _check_int("epoch", state["epoch"], 0)
        self._set_resumed(resumed)
        self._shared[_START] = _check_int("batches", batches, 0, len(self))
        self._workers_saved = None if workers is None else max(1, workers)
        self._counted = None

    def _count(self, workers: int) -> None:
        """Starts counting delivered batches in this process (pcr.torch.DataLoader)."""
        self._counted = (self.epoch, workers)
        self._delivered = self._shared[_START]

    def __iter__(self):
        _refuse_rebatching(self)
        rank, world = self._share()
        info = _data.get_worker_info()
        workers = 1 if info is None else info.num_workers
        epoch, start = self._shared[_EPOCH], self._shared[_START]
        if info is None:
            if self._counted is None or self._counted[0] != epoch or self._counted[1] != 1:
                self._count(1)
            self._delivered = start
        else:
            self._shared[_WORKERS_EPOCH] = epoch + 1
            _finish_feeders_at_exit()
            self._shared[_WORKERS] = workers
        share = self._iteration_share(rank, world, 0 if info is None else info.id, workers, start)
        for batch in self._batches(share):
            if info is None:
                self._delivered += 1
            yield batch

    def _iteration_share(self, rank: int, world: int, worker: int, workers: int, start: int) -> dict:
        """The C++ loader's share arguments for worker `worker` of `workers`,
        this epoch, resumed after the rank's first `start` batches. The
        DataLoader takes batches from its workers in turn, worker 0 first:
        the C++ loader's worker w delivers the rank's batches start + w,
        start + w + workers, ..."""
        share = dict(rank=rank, world_size=world, worker=worker, num_workers=workers, uneven=self.uneven,
                     shuffle=self.shuffle, **self._mixing, seed=self.seed, epoch=self.epoch, batches=start,
                     saved_workers=self._workers_saved or 0)
        if self._elastic:
            share["delivered"] = [tuple(part) for part in self._resumed()]
        return share

    def __getstate__(self):
        import multiprocessing.context

        state = dict(self.__dict__)
        if multiprocessing.context.get_spawning_popen() is None:
            state["_shared"] = list(self._shared)  # a copy, not shared
        elif self._rank is None:
            # For a spawned DataLoader worker, which has no process group of its own.
            state["_spawned_share"] = self._share()
        return state

    def __setstate__(self, state):
        import multiprocessing

        if isinstance(state["_shared"], list):
            state["_shared"] = multiprocessing.RawArray("q", state["_shared"])
        self.__dict__.update(state)


class DataLoader(_data.DataLoader):
    """torch.utils.data.DataLoader over an ImageLoader or TableLoader (batch_size=None: the
    loader makes the batches) that counts the batches it delivers, so that
    `state_dict()` (its own or the loader's) is exact with workers too.

    Takes DataLoader's arguments; `load_state_dict(state)` resumes the loader
    with the next unseen batch.
    """

    def __init__(self, dataset: _EpochLoader, batch_size: Optional[int] = None, **kwargs) -> None:
        if not isinstance(dataset, _EpochLoader):
            raise TypeError("pcr.torch.DataLoader iterates a pcr.torch.ImageLoader or TableLoader; "
                            "use torch's DataLoader for others")
        if batch_size is not None:
            raise ValueError(f"{type(dataset).__name__} makes the batches: give batch_size to it, not to the DataLoader")
        super().__init__(dataset, batch_size=None, **kwargs)

    def __iter__(self):
        if self.num_workers == 0:
            yield from super().__iter__()  # the loader counts in this process
            return
        loader = self.dataset
        loader._count(self.num_workers)
        for batch in super().__iter__():
            loader._delivered += 1
            yield batch

    def state_dict(self) -> dict:
        return self.dataset.state_dict()

    def load_state_dict(self, state: dict) -> None:
        self.dataset.load_state_dict(state)


DataLoader.__module__ = "pcr.torch"
