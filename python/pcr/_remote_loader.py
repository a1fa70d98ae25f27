"""pcr.dask.RemoteLoader: a pcr.torch loader's batches made on Dask workers."""
import collections
import concurrent.futures
import itertools
import math
import pickle
import threading
import time
import uuid
from typing import Optional

import torch as _torch

from ._epoch_loader import _START, _EpochLoader
from ._torch_tables import TableLoader


class _Tensor:
    """A CPU tensor on its way from a worker: pickled as its numpy array, so
    Dask's comms send the bytes out of band, and unpickled by torch.from_numpy,
    which wraps the received buffer without a copy."""

    __slots__ = ("array",)

    def __init__(self, array) -> None:
        self.array = array

    def __reduce__(self):
        return _torch.from_numpy, (self.array,)


def _wire(value):
    """`value` (a batch) with each plain CPU tensor as a _Tensor."""
    if isinstance(value, _torch.Tensor):
        if value.device.type == "cpu" and not value.requires_grad and value.layout == _torch.strided:
            try:
                array = value.numpy()
            except (TypeError, RuntimeError):  # a dtype numpy lacks (bfloat16): torch pickles it
                return value
            if array.flags.c_contiguous:
                return _Tensor(array)
        return value
    if type(value) in (tuple, list):
        return type(value)(_wire(v) for v in value)
    if type(value) is dict:
        return {k: _wire(v) for k, v in value.items()}
    return value


def _frames(made: dict):
    """`made` pickled for Dask's comms, its arrays' buffers as frames of
    their own, sent without compression (decoded pixels compress poorly,
    and decompressing would cost the trainer's CPU) and received writable,
    so torch wraps them without a copy."""
    from distributed.protocol.serialize import Serialized

    buffers = []
    head = pickle.dumps(made, protocol=5, buffer_callback=buffers.append)
    header = {"serializer": "pickle", "writeable": (True,) * len(buffers),
              "compression": (None,) + (False,) * len(buffers)}
    return Serialized(header, [head] + [b.raw() for b in buffers])


class _Opened:
    """The process's loaders of recent iterations (by their pickle), each
    with its dataset or table opened once: a run takes one no other run is
    using, and gives it back, so runs of an iteration on one worker (or the
    trainer's thread) open the data once, not once each."""

    _SPECS = 8  # iterations kept, the most recently used
    _IDLE = 2  # opened loaders kept for each

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.idle = collections.OrderedDict()  # spec: [(loader, source), ...]

    def take(self, spec: bytes):
        with self.lock:
            idle = self.idle.get(spec)
            if idle:
                self.idle.move_to_end(spec)
                return idle.pop()
        loader = pickle.loads(spec)
        return loader, loader._source()

    def give(self, spec: bytes, opened) -> None:
        with self.lock:
            idle = self.idle.setdefault(spec, [])
            self.idle.move_to_end(spec)
            if len(idle) < self._IDLE:
                idle.append(opened)
            while len(self.idle) > self._SPECS:
                self.idle.popitem(last=False)


_OPENED = _Opened()


class _Run:
    """Batches of the loader pickled in `spec` from the share's first batch
    on (share["batches"]), `limit` of them at most (0: to the epoch's end;
    nothing after them is read or decoded), taken a run at a time: a Dask
    task takes one run, the trainer's thread may take several in a row."""

    def __init__(self, spec: bytes, share: dict, limit: int) -> None:
        self.spec = spec
        self.opened = loader, source = _OPENED.take(spec)
        self.skipped = skipped = [[]]  # a list a batch of the run being taken, kept by the loader's report
        if hasattr(loader, "_report"):
            def report(found, reported):
                skipped[-1].extend(found[reported:])
                return len(found)

            loader._report = report  # the trainer warns of them, as it delivers each batch
        self.next, self.rank = share["batches"], share["rank"]
        # A table's runs of one shuffle window share its stripes through the process's stripe cache.
        share = dict(share, max_batches=limit, **({"stripe_cache": True} if isinstance(loader, TableLoader) else {}))
        self.batches = loader._batches(share, source)

    def take(self, count: int, wire: bool, began: float) -> dict:
        """The next `count` batches, with what they skipped and read and the
        seconds they took since `began` (a time.perf_counter())."""
        loader = self.opened[0]
        read_before = loader.bytes_read
        batches, skipped = [], self.skipped
        skipped.clear()
        for _ in range(count):
            skipped.append([])
            batch = next(self.batches, None)
            if batch is None:
                raise RuntimeError(f"{loader.path}: the epoch ended after batch {self.next + len(batches)} "
                                   f"of rank {self.rank}, before the {count} batches asked for")
            batches.append(_wire(batch) if wire else batch)
        self.next += count
        return {"batches": batches, "skipped": list(skipped), "bytes_read": loader.bytes_read - read_before,
                "seconds": time.perf_counter() - began}

    def close(self, whole: bool = True) -> None:
        """Ends the run; a `whole` one gives its opened loader back for the next."""
        self.batches.close()
        self.opened[0].__dict__.pop("_report", None)
        if whole:
            _OPENED.give(self.spec, self.opened)


def _make_run(spec: bytes, share: dict, count: int):
    """The batches share["batches"] .. + count of the loader pickled in
    `spec`, made on a Dask worker, as _Run.take gives them, as _frames."""
    began = time.perf_counter()
    run = _Run(spec, share, count)
    whole = False
    try:
        made = run.take(count, True, began)
        whole = True
    finally:
        run.close(whole)
    return _frames(made)


class _Here:
    """The trainer's thread making runs in turn. A run that goes on from
    where the last ended continues its iteration (runs all made here are
    one iteration of the loader, its reading and decoding ahead included),
    so only a run after a gap starts the loader afresh."""

    def __init__(self, spec: bytes) -> None:
        self.spec = spec
        self.thread = concurrent.futures.ThreadPoolExecutor(1)
        self.run = None  # on the thread
        self.following = False  # the last run submitted goes on past its end

    def submit(self, share: dict, count: int, follow: bool):
        """A future of the run of `count` batches from share["batches"];
        `follow`: the next run is likely made here too, so the loader goes
        on past this one."""
        self.following = follow
        return self.thread.submit(self._make, share, count, follow)

    def stop_following(self) -> None:
        """The next runs are made elsewhere: the run going on past its end
        ends after the runs queued here."""
        if self.following:
            self.following = False
            self.thread.submit(self._end)

    def _make(self, share: dict, count: int, follow: bool) -> dict:
        began = time.perf_counter()
        if self.run is not None and self.run.next != share["batches"]:
            self._end()
        if self.run is None:
            self.run = _Run(self.spec, share, 0 if follow else count)
        try:
            made = self.run.take(count, False, began)
        except BaseException:
            self._end(whole=False)
            raise
        if not follow:
            self._end()
        return made

    def _end(self, whole: bool = True) -> None:
        run, self.run = self.run, None
        if run is not None:
            run.close(whole)

    def shutdown(self) -> None:
        """Ends the run after what the thread is making (queued runs are cancelled first)."""
        try:
            self.thread.submit(self._end)
        except RuntimeError:  # the interpreter is exiting: it takes the thread's run with it
            pass
        self.thread.shutdown(wait=False)


def _check_share(value):
    if value == "auto":
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"local_share must be a number in [0, 1] or 'auto', not {value!r}")
    if not 0 <= value <= 1 or math.isnan(value):
        raise ValueError(f"local_share must be in [0, 1], not {value!r}")
    return float(value)


class _Split:
    """Where local_share="auto" makes each run. FastFlow's way: it tries, a
    window of batches each, sharing the runs ("balanced"), making them all
    here and all on the cluster, measures the batches the trainer takes per
    second in each (its steps included), and keeps the fastest for a
    while before trying again. A trial ends early once it is `slack`
    batches behind the pace of the fastest way measured, so a losing way
    costs about that many batches, not a window. All remote is not tried
    when the cluster, measured while sharing, makes batches slower than
    _REACH of the fastest way's rate: the trainer cannot take them faster
    than they are made. Sharing sends each run to the producer that would
    finish it first, from their measured seconds per batch and the runs
    each has queued (earliest finish time, as list scheduling does); until
    both are measured, runs alternate, the cluster first."""

    _WEIGHT = 0.3  # of the newest measurement in each producer's average
    _HOLD = 50  # windows the fastest way is kept before the next trial
    _REACH = 0.8  # of the fastest rate the cluster must make for all remote to be tried
    _WAYS = ("balanced", "local", "remote")

    def __init__(self, prefetch: int) -> None:
        self.seconds = {}  # producer: seconds per batch
        self.free_at = {"local": 0.0, "remote": 0.0}  # when each would finish what it has queued
        self.last_done = {"local": 0.0, "remote": 0.0}
        self.done = collections.deque()  # (producer, batches, submitted, completed), from any thread
        self.unmeasured = "remote"
        # A window: `lag` batches still made the last way, then `window`
        # timed, each from the batch before it in the same iteration, so a
        # window may span epochs.
        self.lag, self.window, self.slack = prefetch, 4 * prefetch, prefetch
        self.trials = list(self._WAYS)
        self.way, self.rates, self.held = "balanced", {}, 0
        self.taken, self.timed, self.seconds_taken, self.last = 0, 0, 0.0, None

    def restart(self) -> None:
        """A new iteration: the time to its first batch is not a step."""
        self.last = None

    def took(self) -> bool:
        """The trainer takes a batch; True when it changes to the way it
        keeps (not to a trial, whose first `lag` batches are the last way's)."""
        now, last = time.perf_counter(), self.last
        self.last = now
        self.taken += 1
        if self.taken <= self.lag or last is None:
            return False
        self.timed += 1
        self.seconds_taken += now - last
        behind = self.trials and self.rates and \
            max(self.rates.values()) * self.seconds_taken - self.timed >= self.slack
        if self.timed < self.window and not behind:
            return False
        was, rate = self.way, self.timed / max(self.seconds_taken, 1e-9)
        self.taken, self.timed, self.seconds_taken = 0, 0, 0.0
        if self.trials:
            self.rates[self.trials.pop(0)] = rate
            self._drop_hopeless()
            self.way = self.trials[0] if self.trials else max(self.rates, key=self.rates.get)
            self.held = 0
        else:
            self.rates[self.way] = rate
            self.held += 1
            if self.held >= self._HOLD:
                self.trials = [w for w in self._WAYS if w != self.way]
                self.way = self.trials[0]
        return self.way != was and not self.trials

    def _drop_hopeless(self) -> None:
        """Skips a next trial of all remote that cannot win; its rate is the cluster's."""
        self._drain()
        made = 1 / self.seconds["remote"] if "remote" in self.seconds else None
        if self.trials[:1] == ["remote"] and made is not None and made < self._REACH * max(self.rates.values()):
            self.rates[self.trials.pop(0)] = made

    def _drain(self) -> None:
        while self.done:
            self._measured(*self.done.popleft())

    def choose(self, count: int) -> str:
        self._drain()
        if self.way != "balanced":
            return self.way
        now = time.perf_counter()
        if len(self.seconds) < 2:
            kind, self.unmeasured = self.unmeasured, "local" if self.unmeasured == "remote" else "remote"
        else:
            done = {k: max(now, self.free_at[k]) + count * self.seconds[k] for k in self.free_at}
            kind = min(done, key=done.get)
        self.free_at[kind] = max(now, self.free_at[kind]) + count * self.seconds.get(kind, 0.0)
        return kind

    def watch(self, kind: str, count: int, future) -> None:
        """Measures the run `future` makes when it completes."""
        submitted = time.perf_counter()
        future.add_done_callback(
            lambda f: f.cancelled() or self.done.append((kind, count, submitted, time.perf_counter())))

    def _measured(self, kind: str, count: int, submitted: float, completed: float) -> None:
        # A producer makes its runs one after another: this one from when it
        # was submitted or the last completed, whichever was later.
        per = max(completed - max(submitted, self.last_done[kind]), 1e-6) / count
        self.last_done[kind] = max(self.last_done[kind], completed)
        old = self.seconds.get(kind)
        self.seconds[kind] = per if old is None else (1 - self._WEIGHT) * old + self._WEIGHT * per


class RemoteLoader:
    """A pcr.torch.ImageLoader's or TableLoader's batches, made on the
    workers of a Dask cluster and delivered to this process in the order the
    loader gives them, bit for bit: `for batch in RemoteLoader(loader)` is
    `for batch in loader` with the reading, decoding and batch_transform
    done elsewhere.

    `loader` is made as for local use; its share (rank and world size, or
    torch.distributed's) is this process's, so every rank of a DDP job wraps
    its own loader over the same cluster. `client` is a distributed.Client
    (None: the current one, distributed.get_client()). The rank's batches
    are cut into runs of `batches_per_task` consecutive batches (default
    prefetch // 4, at least 1), one Dask task each; a worker makes a run as
    the loader would after a resume at its first batch, reading the data
    itself (a local path must be one the workers see, such as a shared file
    system; http(s):// and s3:// as `remote` says, credentials from the
    worker's environment). At most `prefetch` batches are asked for ahead
    of the one delivered. Tensors cross as numpy buffers out of band and are
    wrapped by torch without a copy; other values (strings, fields) are
    pickled. batch_transform is pickled with the loader (by cloudpickle) and
    runs on the worker.

    `local_share` (0 to 1) of the runs are made by a thread of this process
    instead, spread evenly over the epoch; the batches are the same.
    "auto" tunes it in FastFlow's way: it tries sharing the runs (each to
    whichever of the two would finish it first, from their measured seconds
    per batch), making them all here and all on the cluster, a window of
    4 x prefetch batches each, measures the batches the trainer takes per
    second (its training steps included), keeps the fastest for 50
    windows, then tries the others again. A trial ends early once it is
    prefetch batches behind the fastest way's pace, and all remote is not
    tried when the cluster made batches (while sharing) slower than 0.8 of
    the fastest way's rate. Once it keeps all here or all there, runs
    queued the other way are made its way instead. A worker process (or
    this one's thread) opens the dataset once for the runs of an iteration
    it makes. Runs the thread makes one after another (local_share=1, or
    auto keeping all here) are one iteration of the loader, which reads
    and decodes ahead of them as it does when iterated directly.

    Faults: a run whose worker dies is run again by Dask on another worker,
    and is delivered once. When no run completes for `timeout` seconds, the
    iteration raises TimeoutError naming the cluster and how many workers it
    has (none, or ones that stopped answering).

    len(), set_epoch, set_fidelity (ImageLoader), state_dict and
    load_state_dict are the loader's: a state saved here resumes here or on
    the local loader, and the other way round. `stats` reports what a
    controller scales the cluster on. Iterate from one thread; one
    iteration at a time.
    """

    def __init__(self, loader: _EpochLoader, client=None, prefetch: int = 8, local_share=0.0, *,
                 batches_per_task: Optional[int] = None, timeout: float = 120.0) -> None:
        if not isinstance(loader, _EpochLoader):
            raise TypeError(f"RemoteLoader wraps a pcr.torch.ImageLoader or TableLoader, not "
                            f"{type(loader).__name__}")
        if isinstance(prefetch, bool) or not isinstance(prefetch, int):
            raise ValueError(f"prefetch must be an int of at least 1, not {prefetch!r}")
        if prefetch < 1:
            raise ValueError(f"prefetch must be at least 1, not {prefetch}")
        self.local_share = _check_share(local_share)
        if batches_per_task is None:
            batches_per_task = max(1, prefetch // 4)
        if isinstance(batches_per_task, bool) or not isinstance(batches_per_task, int) \
                or not 1 <= batches_per_task <= prefetch:
            raise ValueError(f"batches_per_task must be an int in 1..prefetch ({prefetch}), not {batches_per_task!r}")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, not {timeout!r}")
        if client is None and self.local_share != 1:
            import distributed

            try:
                client = distributed.get_client()
            except ValueError:
                raise ValueError("RemoteLoader: no Dask client: pass client=distributed.Client('scheduler:8786') "
                                 "(or a LocalCluster's), or make one first") from None
        self._loader, self._client = loader, client
        self.prefetch, self.batches_per_task, self.timeout = prefetch, batches_per_task, timeout
        self._wait_seconds = 0.0
        self._made = {"remote": [0, 0.0], "local": [0, 0.0]}  # batches, seconds
        self._buffered = 0
        self._split = _Split(prefetch) if self.local_share == "auto" else None

    def __len__(self) -> int:
        return len(self._loader)

    @property
    def loader(self) -> _EpochLoader:
        return self._loader

    @property
    def epoch(self) -> int:
        return self._loader.epoch

    def set_epoch(self, epoch: int) -> None:
        self._loader.set_epoch(epoch)

    def __getattr__(self, name):
        # The wrapped loader's set_fidelity, fidelity, skipped, bytes_read, ... where it has them.
        if name.startswith("_"):
            raise AttributeError(name)
        if name in ("set_fidelity", "fidelity", "num_scan_groups", "skipped", "bytes_read", "batch_size"):
            return getattr(self._loader, name)
        raise AttributeError(f"'RemoteLoader' object has no attribute '{name}'")

    def state_dict(self, batches: Optional[int] = None) -> dict:
        return self._loader.state_dict(batches)

    def load_state_dict(self, state: dict) -> None:
        self._loader.load_state_dict(state)

    @property
    def stats(self) -> dict:
        """What the trainer saw so far: "batches_buffered" (made and not yet
        delivered), "wait_seconds" (time the trainer waited for its next
        batch), "worker_seconds_per_batch" (a run's seconds on its worker,
        per batch; 0 before any) and "local_seconds_per_batch" (the same for
        runs made here), "batches_remote" and "batches_local"."""
        (remote, remote_s), (local, local_s) = self._made["remote"], self._made["local"]
        return {"batches_buffered": self._buffered, "wait_seconds": self._wait_seconds,
                "worker_seconds_per_batch": remote_s / remote if remote else 0.0,
                "local_seconds_per_batch": local_s / local if local else 0.0,
                "batches_remote": remote, "batches_local": local}

    def _cluster(self) -> str:
        try:
            return self._client.scheduler.address
        except AttributeError:
            return repr(self._client)

    def _workers(self) -> int:
        try:
            return len(self._client.scheduler_info()["workers"])
        except Exception:  # an unreachable scheduler: no workers reached
            return 0

    def __iter__(self):
        loader = self._loader
        rank, world = loader._share()
        if loader._workers_saved not in (None, 1):
            raise ValueError(f"load_state_dict: the state was saved after {loader._workers_saved} DataLoader workers' "
                             "batches, and RemoteLoader delivers the batches of one: resume it with "
                             f"pcr.torch.DataLoader(loader, num_workers={loader._workers_saved})")
        total, start = len(loader), loader._shared[_START]
        loader._count(1)
        import cloudpickle

        spec = cloudpickle.dumps(loader)
        step = self.batches_per_task
        runs = [(a, min(a + step, total)) for a in range(start, total, step)]
        tag = uuid.uuid4().hex[:12]
        auto = self.local_share == "auto"
        if auto:
            self._split.restart()
        here = _Here(spec) if auto or self.local_share > 0 else None
        pending = collections.deque()  # (first batch, batches, where, future)
        in_flight = 0

        def where(j: int, count: int) -> str:
            if auto:
                return self._split.choose(count)
            # Runs are made here at local_share of them, spread evenly.
            index = start // step + j
            mine = math.floor((index + 1) * self.local_share) > math.floor(index * self.local_share)
            return "local" if mine else "remote"

        serial = itertools.count()

        def launch(a: int, count: int, kind: str):
            share = loader._iteration_share(rank, world, 0, 1, a)
            if kind == "local":
                # Runs all made here go on one from the other.
                future = here.submit(share, count, follow=self.local_share == 1 or auto and self._split.way == "local")
            else:
                if here is not None:
                    here.stop_following()
                future = self._client.submit(_make_run, spec, share, count, pure=False, priority=-a,
                                             key=f"pcr-remote-{tag}-{rank}-{a}-{next(serial)}")
            if auto:
                self._split.watch(kind, count, future)
            return future

        def submit(j: int) -> None:
            nonlocal in_flight
            a, b = runs[j]
            in_flight += b - a
            kind = where(j, b - a)
            pending.append((a, b - a, kind, launch(a, b - a, kind)))

        def reroute() -> None:
            # auto keeps all here or all there: queued runs made the other
            # way are made this way instead (the same batches), so a
            # losing trial's runs do not hold up the way it keeps.
            way = self._split.way
            for i, (a, count, kind, future) in enumerate(pending):
                if kind != way and not future.done() and future.cancel() is not False:
                    pending[i] = (a, count, way, launch(a, count, way))

        next_run = 0

        def fill() -> None:
            # Submits the next runs while they fit in prefetch.
            nonlocal next_run
            while next_run < len(runs) and in_flight + runs[next_run][1] - runs[next_run][0] <= self.prefetch:
                submit(next_run)
                next_run += 1

        try:
            while pending or next_run < len(runs):
                fill()
                a, count, kind, future = pending.popleft()
                made = self._result(future, kind, a, rank)
                self._made[kind][0] += count
                self._made[kind][1] += made["seconds"]
                loader._bytes_read.add(made["bytes_read"])
                batches, skipped = made["batches"], made["skipped"]
                del made, future
                for i in range(count):
                    self._buffered = count - i - 1 + sum(n for _, n, _, f in pending if f.done())
                    if skipped[i]:
                        loader._report(skipped[i], 0)
                    batch, batches[i] = batches[i], None
                    loader._delivered += 1
                    in_flight -= 1
                    if auto and self._split.took() and self._split.way != "balanced":
                        reroute()
                    fill()
                    yield batch
                    del batch
        finally:
            self._buffered = 0
            for _, _, _, future in pending:
                future.cancel()
            if here is not None:
                here.shutdown()

    def _result(self, future, kind: str, first: int, rank: int) -> dict:
        """The run `future` makes, waiting at most `timeout` seconds without one."""
        began = time.perf_counter()
        try:
            if kind == "local":
                return future.result()
            import distributed

            try:
                distributed.wait(future, timeout=self.timeout)
            except Exception as e:  # distributed's TimeoutError is not always the builtin one
                if not isinstance(e, TimeoutError) and type(e).__name__ != "TimeoutError":
                    raise
            else:
                # From the worker itself, not through the scheduler.
                return self._client.gather(future, direct=True)
            workers = self._workers()
            raise TimeoutError(
                f"pcr.dask.RemoteLoader: no batch from the Dask cluster at {self._cluster()} in {self.timeout:g} s "
                f"({workers} workers{': it has none' if workers == 0 else ', none delivering'}) while rank {rank} "
                f"waited for batch {first} of epoch {self._loader.epoch}: start workers (dask worker "
                f"{self._cluster()}), or give RemoteLoader a longer timeout")
        finally:
            self._wait_seconds += time.perf_counter() - began


RemoteLoader.__module__ = "pcr.dask"
