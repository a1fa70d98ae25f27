"""pcr tables and image datasets as Dask collections, for offline jobs on a
cluster (statistics, filtering, embeddings), and image and table
conversions run as Dask tasks.

The path is opened on the client when the collection is made, so a missing
path, an unknown feature or field, or a bad fidelity raises there, with the
library's exception; workers open it again (once per process) and raise
the library's exceptions for damaged stripes or records, which Dask passes
to the client as they are. Paths may be local, http(s):// or s3://, with
`remote` as for pcr.Table; a worker reads s3:// credentials from its own
environment.
"""
import functools
import glob
import hashlib
import itertools
import json
import operator
import os
import shutil
import sys
import time
import uuid
import warnings

import dask.bag as db
import dask.dataframe as dd
from dask.base import tokenize
from dask.dataframe.io.utils import DataFrameIOFunction

from . import ImageDataset, Table, _frames, _pcr, _report_skipped

__all__ = ["RemoteLoader", "convert_images", "convert_table", "convert_webdataset", "read_images", "read_table"]


def __getattr__(name):
    # RemoteLoader needs torch, which the rest of pcr.dask does not.
    if name == "RemoteLoader":
        from ._remote_loader import RemoteLoader

        return RemoteLoader
    raise AttributeError(f"module 'pcr.dask' has no attribute '{name}'")


def _frozen(remote):
    return None if remote is None else tuple(sorted(remote.items()))


@functools.lru_cache(maxsize=16)
def _open(cls, path, engine, remote):
    return cls(path, engine=engine, remote=None if remote is None else dict(remote))


class _StripeReader(DataFrameIOFunction):
    """Reads one partition, (first stripe, stripes, first row, rows), of a
    table; Dask narrows `columns` to what a computation selects."""

    def __init__(self, path, engine, remote, features, row_count, backend):
        self._path, self._engine, self._remote = path, engine, remote
        self._features = features
        self._row_count = row_count
        self._backend = backend

    @property
    def columns(self):
        return [f["name"] for f in self._features]

    def project_columns(self, columns):
        if list(columns) == self.columns:
            return self
        by_name = {f["name"]: f for f in self._features}
        return _StripeReader(self._path, self._engine, self._remote, [by_name[c] for c in columns], self._row_count,
                            self._backend)

    def __dask_tokenize__(self):
        return (self._path, self._engine, self._remote, self.columns, self._row_count, self._backend)

    def __call__(self, part):
        first, count, first_row, rows = part

        def current(table):
            return table.num_rows == self._row_count and sum(table.stripe_rows[first:first + count]) == rows

        table = _open(Table, self._path, self._engine, self._remote)
        if not current(table):  # a cached open of an older file: open it again
            _open.cache_clear()
            table = _open(Table, self._path, self._engine, self._remote)
            if not current(table):
                raise ValueError(f"{self._path}: the table changed after read_table opened it; call read_table again")
        return _frames.read_frame(table, self._features, first, count, first_row, rows, self._row_count,
                                   self._backend)


def read_table(path, features=None, stripes_per_partition=1, *, dtype_backend=None, engine="auto", remote=None):
    """The table at `path` as a dask DataFrame: one partition per
    `stripes_per_partition` stripes, columns and dtypes as Table.to_pandas
    gives them (with the same `dtype_backend`), indexed by row number
    (divisions known). Only the streams of the columns a computation uses
    are read. The schema comes from the
    file's footer alone: no stripe is read on the client."""
    if isinstance(stripes_per_partition, bool) or not hasattr(stripes_per_partition, "__index__") \
            or operator.index(stripes_per_partition) < 1:
        raise ValueError(f"stripes_per_partition must be a positive int, not {stripes_per_partition!r}")
    stripes_per_partition = operator.index(stripes_per_partition)
    backend = _frames.check_backend(dtype_backend)
    path = os.fspath(path)
    table = Table(path, engine=engine, remote=remote)
    selected = _frames.select(table, features)
    meta = _frames.meta(selected, table.num_rows, backend)
    stripe_rows = table.stripe_rows
    parts, first_row = [], 0
    for first in range(0, len(stripe_rows), stripes_per_partition):
        count = min(stripes_per_partition, len(stripe_rows) - first)
        rows = sum(stripe_rows[first:first + count])
        parts.append((first, count, first_row, rows))
        first_row += rows
    if not parts:
        return dd.from_pandas(meta, npartitions=1)
    divisions = None
    if all(rows > 0 for _, _, _, rows in parts):
        divisions = [p[2] for p in parts] + [first_row - 1]
    reader = _StripeReader(path, engine, _frozen(remote), selected, table.num_rows, backend)
    return dd.from_map(reader, parts, meta=meta, divisions=divisions, label="read-pcr-table",
                       token=tokenize(reader, parts), enforce_metadata=False)


def _read_records(records, path, engine, remote, fidelity, fields):
    ds = _open(ImageDataset, path, engine, remote)
    return [s for r in records for s in ds.record_samples(r, fidelity, fields)]


def read_images(path, fidelity="full", fields=None, *, engine="auto", remote=None):
    """The image dataset at `path` as a dask Bag of one dict per image, a
    partition per record, in dataset order: {"index", "key", "label", "jpeg"
    (the image at `fidelity` as a standalone JPEG; none with fidelity 0),
    "fields": {name: value or None}} with the values ImageDataset.fields
    gives, of `fields` (None: every field of the dataset)."""
    path = os.fspath(path)
    ds = ImageDataset(path, engine=engine, remote=remote)
    if isinstance(fields, (str, bytes)):
        raise TypeError(f"fields must be a list of names, not a str: [{fields!r}]")
    names = [f["name"] for f in ds.field_schema] if fields is None else [str(f) for f in fields]
    ds.read_fields(names, first_record=0, num_records=0)  # resolves the names; reads nothing
    if not (fidelity == "full" or (isinstance(fidelity, int) and not isinstance(fidelity, bool)
                                   and 0 <= fidelity <= ds.num_scan_groups)):
        raise ValueError(f"fidelity must be 'full' or 0..{ds.num_scan_groups} (0: fields alone), not {fidelity!r}")
    records = list(range(ds.num_records))
    bag = db.from_sequence(records, npartitions=max(len(records), 1))
    return bag.map_partitions(_read_records, path, engine, _frozen(remote), fidelity, names)


# Options of a conversion that only the uploading tasks take: the merge, and
# the shard tasks when the parts are in object storage.
_UPLOAD_OPTIONS = ("work_dir", "part_size_mb", "multipart_threshold_mb", "upload_concurrency", "upload_memory_mb",
                   "output_endpoint")


# Beside a finished part: its shard's summary, so that a rerun after another
# shard failed keeps the part (its bytes do not depend on the run).
_SHARD_SUMMARY = "pcr-dask-shard.json"


def _in_store(path):
    return path.startswith("s3://")


def _store(options):
    """The output store's arguments of _pcr's object calls."""
    return {"remote": options.get("remote"), "output_endpoint": options.get("output_endpoint", "")}


def _join(parts_dir, name):
    return f"{parts_dir.rstrip('/')}/{name}" if _in_store(parts_dir) else os.path.join(parts_dir, name)


def _read_text(path, options):
    """The text of a local file or an object of the output's store; None when absent."""
    if _in_store(path):
        data = _pcr._get_object(path, **_store(options))
        return None if data is None else data.decode()
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return None


def _exists(path, options):
    return _pcr._get_object(path, **_store(options)) is not None if _in_store(path) else os.path.exists(path)


def _write_text(path, text, options):
    if _in_store(path):
        _pcr._put_object(path, text.encode(), **_store(options))
        return
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def _convert_shard(src, part, shard, num_shards, options):
    import distributed

    start = time.perf_counter()
    done = _join(part, _SHARD_SUMMARY)
    summary = None
    if num_shards > 1 and options.get("restart"):
        if _in_store(part):
            _pcr._delete_objects(part.rstrip("/") + "/", **_store(options))
        else:
            shutil.rmtree(part, ignore_errors=True)  # a part directory of pcr.dask's own
    elif num_shards > 1 and _exists(_join(part, "part.pcrd"), options):
        summary = _read_text(done, options)
    if summary is not None:
        summary = json.loads(summary)
        summary.update(resumed_files=summary["files"], seconds=time.perf_counter() - start,
                       worker=distributed.get_worker().address)
        return summary
    summary = _pcr.convert_images(src, part, shard=shard, num_shards=num_shards, **options)
    summary["shard"] = shard
    if num_shards > 1:
        _write_text(done, json.dumps(summary), options)
    summary.update(seconds=time.perf_counter() - start, worker=distributed.get_worker().address)
    return summary


def _remove_parts(parts_dir, parts, own, options):
    """Removes one conversion's parts, and parts_dir when pcr.dask chose it
    and nothing else is left in it. In object storage, a part is every
    object under its name (its files, or the part file and its report)."""
    if _in_store(parts_dir):
        if own:
            _pcr._delete_objects(parts_dir.rstrip("/") + "/", **_store(options))
        else:
            for part in parts:
                _pcr._delete_objects(part, **_store(options))
        return
    for part in parts:
        if os.path.isdir(part):
            shutil.rmtree(part, ignore_errors=True)
        elif os.path.exists(part):
            os.remove(part)
    if own:
        try:
            os.rmdir(parts_dir)
        except OSError:
            pass


def _merge(out, parts_dir, parts, own, options, shards):
    start = time.perf_counter()
    merged = _pcr.merge(out, parts, **options)
    _remove_parts(parts_dir, [p.rstrip("/") + "/" for p in parts] if _in_store(parts_dir) else parts, own, options)
    return merged, time.perf_counter() - start, shards


def _parts_dir(out, parts_dir):
    if parts_dir is not None:
        return os.fspath(parts_dir)
    if _in_store(out):  # beside the output, in its store, where every worker reaches
        return f"{out.rstrip('/')}/.pcr-dask-parts"
    key = hashlib.sha256(out.encode()).hexdigest()[:16]
    parent, name = os.path.split(os.path.abspath(out))
    return os.path.join(parent, f".{name}.parts-{key}")


def _client_and_shards(client, num_shards):
    import distributed

    if client is None:
        try:
            client = distributed.get_client()
        except ValueError:
            raise ValueError("pcr.dask conversions need a Dask cluster: make a distributed.Client first, "
                             "or pass client=") from None
    if num_shards is None:
        num_shards = max(sum(client.nthreads().values()), 1)
    if isinstance(num_shards, bool) or not hasattr(num_shards, "__index__") or operator.index(num_shards) < 1:
        raise ValueError(f"num_shards must be a positive int, not {num_shards!r}")
    return client, operator.index(num_shards)


def _convert(src, out, client, num_shards, parts_dir, progress, options):
    import distributed

    for name in ("shard", "num_shards", "progress"):
        if name in options:
            raise TypeError(f"{name}= is chosen by pcr.dask; give num_shards= for the number of tasks")
    client, num_shards = _client_and_shards(client, num_shards)
    out = os.fspath(out)
    options.setdefault("jobs", 1)  # a task holds one of its worker's threads
    # Misspelt or bad options, and an output that holds a dataset, raise here, before any task runs.
    _pcr._check_convert_images(src, out, shard=0, num_shards=num_shards, **options)
    upload = {k: options.pop(k) for k in _UPLOAD_OPTIONS if k in options}
    token = uuid.uuid4().hex  # a new key every call: a retry after a failure must run again
    start = time.perf_counter()
    if num_shards == 1:  # the whole conversion in one task, uploading itself
        tasks = [client.submit(_convert_shard, src, out, 0, 1, {**options, **upload}, key=f"pcr-convert-{token}")]
        finished = client.submit(lambda shard: (None, 0.0, [shard]), tasks[0], key=f"pcr-merge-{token}")
    else:
        own = parts_dir is None
        parts_dir = _parts_dir(out, parts_dir)
        if _in_store(parts_dir) and not _in_store(out):
            raise ValueError(f"{parts_dir}: parts in object storage merge into an s3:// output; give a local parts_dir")
        parts = [_join(parts_dir, f"part-{i:05d}") for i in range(num_shards)]
        shard_options = [options] * num_shards
        if _in_store(parts_dir):  # every shard uploads its part; each has its own work directory
            work_dir = upload.get("work_dir")
            shard_options = [{**options, **upload, **({"work_dir": os.path.join(work_dir, f"part-{i:05d}")}
                                                       if work_dir else {})} for i in range(num_shards)]
            if work_dir:
                upload["work_dir"] = os.path.join(work_dir, "merge")
        tasks = [client.submit(_convert_shard, src, parts[i], i, num_shards, shard_options[i],
                               key=(f"pcr-convert-{token}", i)) for i in range(num_shards)]
        upload.update({"remote": options["remote"]} if "remote" in options else {})
        finished = client.submit(_merge, out, parts_dir, parts, own, upload, tasks, key=f"pcr-merge-{token}")
    if progress is None:
        progress = sys.stderr.isatty()
    if progress:
        distributed.progress(tasks + [finished])
    # Every shard ends before this returns or raises: a rerun must not meet
    # a failed run's shards still writing their parts.
    distributed.wait(tasks)
    merged, merge_seconds, done = finished.result()
    summary = {k: sum(s[k] for s in done) for k in ("images", "records", "files", "input_bytes", "output_bytes",
                                            "resumed_files")}
    if merged is not None:  # pieces of one file count once
        summary.update(files=merged["files"], output_bytes=merged["output_bytes"])
    summary.update(skipped=[tuple(x) for s in done for x in s["skipped"]], seconds=time.perf_counter() - start,
                   merge_seconds=merge_seconds, num_shards=num_shards,
                   shards=[{k: s[k] for k in ("shard", "images", "seconds", "worker")} for s in done])
    _report_skipped(out, summary, "pcr.dask.convert_images")
    return summary


def convert_images(src, out, *, client=None, num_shards=None, parts_dir=None, progress=None, **options):
    """pcr.convert_images on a Dask cluster: one task per shard (num_shards,
    by default the cluster's worker threads), each converting its run of
    records with the function pcr-convert --shard runs, then pcr.merge as a
    last task, which joins the pieces of files cut between shards.
    The result equals the one-process conversion byte for byte. src and out
    may be local or s3://; an s3:// out is uploaded by the merge, the
    manifest last.

    Parts go to parts_dir: by default a hidden directory beside a local out
    (on its filesystem, since the merge hard-links), or, when out is
    s3://, the prefix out/.pcr-dask-parts/ in the output's store, where each
    shard task uploads its part and the merge has the store copy the
    record files (no shared filesystem needed). The parts are removed
    after the merge (and the directory or prefix when pcr.dask chose it). A
    task whose worker dies is run again by Dask (up to
    distributed.scheduler.allowed-failures) and resumes from the files its
    part already holds. Bad input raises the library's exception here; the
    finished parts stay, and the call again (with skip_bad=True, say) keeps
    them and converts the rest; restart=True starts every part over. With
    skip_bad=True bad images are skipped and listed in the summary. `options` are convert_images' (jobs defaults to
    1: a task holds one worker thread), checked here before any task runs. Dask's progress bar is shown when
    stderr is a terminal (progress=True: always).

    Returns {"images", "records", "files", "input_bytes", "output_bytes",
    "resumed_files", "skipped", "seconds", "merge_seconds", "num_shards", "shards": [{"shard",
    "images", "seconds", "worker"}]}."""
    return _convert(os.fspath(src), out, client, num_shards, parts_dir, progress, options)


def convert_webdataset(shards, out, *, client=None, num_shards=None, parts_dir=None, progress=None, **options):
    """pcr.convert_webdataset on a Dask cluster, as convert_images: the tar
    shards (paths, s3:// or http(s):// URLs, brace patterns) are split into
    num_shards tasks by the records they make."""
    if isinstance(shards, (str, os.PathLike)):
        shards = [shards]
    options["shards"] = [os.fspath(s) for s in shards]
    return _convert("", out, client, num_shards, parts_dir, progress, options)


def _table_step(input, out, options, step, *args):
    import distributed

    start = time.perf_counter()
    result = getattr(_pcr._table_conversion(input, out, **options), step)(*args)
    return result, time.perf_counter() - start, distributed.get_worker().address


def convert_table(input, out, *, client=None, num_shards=None, parts_dir=None, progress=None, **options):
    """pcr.convert_table on a Dask cluster. The input's bytes are cut into
    num_shards ranges of whole splits (split_mb, 64 by default); a task per
    shard reads its rows to infer the types, the client puts the schema
    together, a task per shard converts its rows into a part, and a last
    task merges the parts. The result equals pcr.convert_table's (with the
    same split_mb) byte for byte: a stripe never holds rows of two splits.
    input (.csv, .tsv, .jsonl, .ndjson) and out may be local or s3://; the
    client reads the input's first bytes (compressed data cannot be cut into
    shards), and every task reads the input itself. Parts go to parts_dir, as for convert_images; a
    part whose input bytes and options are unchanged is kept when the call
    runs again after a failure, and the parts are removed after the merge. `options` are convert_table's; they are checked here
    before any task runs. Bad input raises the library's exception here,
    naming the line and column.

    Returns {"path", "rows", "features", "stripes", "input_bytes",
    "output_bytes", "notes", "seconds", "merge_seconds", "num_shards",
    "shards": [{"shard", "rows", "seconds", "worker", "kept"}]}; a shard
    kept from an earlier call has "kept": True and no worker."""
    import distributed

    client, num_shards = _client_and_shards(client, num_shards)
    input, out = os.fspath(input), os.fspath(out)
    conversion = _pcr._table_conversion(input, out, **options)  # bad options raise here, not in the workers
    # Parts are named for the output, so that a success also removes what failed calls into it left.
    prefix = "table-" + hashlib.sha256((out if _in_store(out) else os.path.abspath(out)).encode()).hexdigest()[:12]
    conversion.check(prefix + "-part-")
    if progress is None:
        progress = sys.stderr.isatty()
    token = uuid.uuid4().hex
    start = time.perf_counter()

    def run(step, shards, args, name):
        futures = [client.submit(_table_step, input, out, options, step, *args(i), key=(f"pcr-{name}-{token}", i))
                   for i in shards]
        if progress:
            distributed.progress(futures)
        distributed.wait(futures)  # every shard ends before an error is raised, as for images
        return dict(zip(shards, client.gather(futures)))

    scanned = run("scan", range(num_shards), lambda i: (i, num_shards, None), "scan")
    seconds = {i: s for i, (_, s, _) in scanned.items()}
    scans = [scanned[i][0] for i in range(num_shards)]
    for attempt in itertools.count():
        plan = conversion.plan(scans)
        if plan["plan"] is not None:
            break
        starts = dict(plan["rescan"])
        rescanned = run("scan", list(starts), lambda i: (i, num_shards, starts[i]), f"rescan{attempt}")
        for i, (scan, s, _) in rescanned.items():
            scans[i] = scan
            seconds[i] += s
    key = hashlib.sha256(plan["plan"] + repr(sorted(options.items())).encode()).hexdigest()[:16]
    own = parts_dir is None
    parts_dir = _parts_dir(out, parts_dir)
    if _in_store(parts_dir) and not _in_store(out):
        raise ValueError(f"{parts_dir}: parts in object storage merge into an s3:// output; give a local parts_dir")
    if not _in_store(parts_dir):
        os.makedirs(parts_dir, exist_ok=True)
    parts = [_join(parts_dir, f"{prefix}-part-{i:05d}-{key}.pcr") for i in range(num_shards)]
    # A part is kept with its report beside it, written after the part; the
    # report's missing values make the notes.
    reports = {}
    for i, part in enumerate(parts):
        try:
            text = _read_text(part + ".json", options)
            if text is not None and (_in_store(part) or os.path.exists(part)):
                reports[i] = json.loads(text)
        except ValueError:
            pass
    todo = [i for i in range(num_shards) if i not in reports]
    converted = run("convert_shard", todo, lambda i: (plan["plan"], i, parts[i]), "convert")
    for i, (report, _, _) in converted.items():
        reports[i] = {"rows": report["rows"], "missing": report["missing"]}
        _write_text(parts[i] + ".json", json.dumps(reports[i]), options)
    merged, merge_seconds, _ = client.submit(_table_step, input, out, options, "merge", parts, prefix + "-part-",
                                             key=f"pcr-merge-{token}").result()
    if _in_store(parts_dir):
        _remove_parts(parts_dir, [_join(parts_dir, prefix + "-part-")], own, options)
    else:
        _remove_parts(parts_dir, glob.glob(os.path.join(glob.escape(parts_dir), prefix + "-part-*")), own, options)
    shards = []
    missing = {}  # per feature over the shards in order: the count, and the first
    for i in range(num_shards):
        _, s, worker = converted.get(i, (None, 0.0, None))
        shards.append({"shard": i, "rows": reports[i]["rows"], "seconds": seconds[i] + s, "worker": worker,
                       "kept": i not in converted})
        for m in reports[i]["missing"]:
            missing.setdefault(m["index"], dict(m, count=0))["count"] += m["count"]
    notes = plan["notes"] + [_pcr._missing_note(m["feature"], m["type"], m["count"], m["line"], m["column"], m["first"])
                             for _, m in sorted(missing.items())] + merged["notes"]
    for note in notes:
        warnings.warn(note, stacklevel=2)
    merged.update(notes=notes, input_bytes=plan["input_bytes"], seconds=time.perf_counter() - start,
                  merge_seconds=merge_seconds, num_shards=num_shards, shards=shards)
    return merged
