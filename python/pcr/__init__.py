"""pcr: Progressive Compressed Records and feature-flattened tables for training data.

Read an image dataset at a chosen fidelity, decode JPEGs to numpy arrays, read
projections of tables, and convert datasets. Reads, decodes and conversions
release the GIL. Errors: CorruptionError for damaged files, NotSupportedError
for input pcr does not handle, ValueError for bad arguments, FileNotFoundError
and OSError for I/O failures.
"""
import os as _os
import sys as _sys
import time as _time
import warnings as _warnings

from . import _pcr
from ._errors import CorruptionError, NotSupportedError
from ._pcr import BatchDecoder, ImageDataset, SampleIterator, __version__, convert_table, decode, merge, reorder_table


class _ProgressBar:
    """One line on stderr: images done, bytes read, rate and time left."""

    def __init__(self):
        self._start = _time.monotonic()
        self._shown = False

    def __call__(self, p):
        seconds = max(_time.monotonic() - self._start, 1e-3)
        rate = (p["images_done"] - p["images_resumed"]) / seconds
        left = (p["images_total"] - p["images_done"]) / rate if rate > 0 else float("nan")
        left = f"{int(left) // 60}:{int(left) % 60:02d} left" if left == left else "? left"
        _sys.stderr.write(f"\r{p['images_done']}/{p['images_total']} images, {p['bytes_read'] / 2**20:.1f} MiB read, "
                          f"{rate:.0f} images/s, {left}  ")
        _sys.stderr.flush()
        self._shown = True

    def close(self):
        if self._shown:
            _sys.stderr.write("\n")


class Table(_pcr.Table):
    __doc__ = _pcr.Table.__doc__

    def __init__(self, path, engine="auto", direct=False, remote=None, access_log=None, job=None):
        super().__init__(path, engine=engine, direct=direct, remote=remote, access_log=access_log, job=job)
        self.path = _os.fspath(path)

    def to_pandas(self, features=None, stripes=None, dtype_backend=None):
        """The features (None: all of them, in schema order) over the stripes
        (None: all; or a stripe index, a range, a slice or indices) as a
        pandas DataFrame, one column per feature named as read names it,
        indexed by row number. Dtypes are pyarrow's to_pandas ones: where
        every row of the table holds a feature, numpy's (int64, uint64,
        bool, float32, float64, datetime64); where some rows lack it,
        floats keep their dtype with NaN, integers become float64 with NaN
        (with a warning if a value is beyond 2**53) and bools objects with
        None. So NaN values and missing cells are alike, as in pyarrow.
        With dtype_backend="numpy_nullable", as pandas' readers, numbers
        and bools are pandas' nullable dtypes (Int64, UInt64, boolean,
        Float32, Float64: NA where missing, NaN a value) and strings
        "string". Timestamps are datetime64 (NaT where missing); times
        beyond what this pandas' datetime64 holds (years 1677 to 2262
        before pandas 2) are Python datetime objects (None where missing),
        with a warning. Strings are str and bytes bytes, lists numpy arrays
        viewing the read column, scored lists structured arrays of
        (id, score); None where a row lacks the feature. Needs pandas."""
        from . import _frames

        return _frames.to_pandas(self, features, stripes, dtype_backend)


def _warn(message):
    """warnings.warn at the first caller outside this package."""
    here, level, frame = _os.path.dirname(__file__), 2, _sys._getframe(1)
    while frame is not None and _os.path.dirname(frame.f_code.co_filename) == here:
        frame, level = frame.f_back, level + 1
    _warnings.warn(message, stacklevel=level)


def _report_skipped(out, summary, call):
    """A conversion's skipped and ignored sources: one warning summing them
    up, and each skipped source on the "pcr" logger."""
    import logging

    skipped, ignored = summary.get("skipped", []), summary.get("ignored_files", 0)
    log = logging.getLogger("pcr")
    for key, reason in skipped:
        log.info("%s: skipped %s: %s", out, key, reason)
    said = []
    if skipped:
        key, reason = skipped[0]
        said.append(f"skipped {len(skipped)} source{'s' * (len(skipped) != 1)} that could not be converted (first "
                    f"{key}: {reason}; every one in the summary's 'skipped' and on the 'pcr' logger)")
    if ignored:
        said.append(f"ignored {ignored} file{'s' * (ignored != 1)} that {'is' if ignored == 1 else 'are'} not a JPEG "
                    "image by name")
    if said:
        _warn(f"{call}: {_os.fspath(out)}: " + "; ".join(said))


def convert_images(src, out, *, progress=None, **options):
    """pcr-convert images: the ImageFolder (or list) at src into the dataset directory out.

    src may be a local directory or an s3://BUCKET/PREFIX, out a local
    directory or s3://BUCKET/PREFIX; `remote` (a dict, as for reading) sets
    the endpoint, retries and timeouts.

    Takes the options of the command, as keywords (images_per_record, jobs,
    skip_bad, shuffle, keep_order, list, fields, ...). `progress` is called
    on this thread with {"images_done", "images_total", "images_resumed",
    "bytes_read"} as images are converted; by default a progress line is
    shown on stderr when it is a terminal (progress=False: never). Ctrl-C
    stops the conversion within about a second with KeyboardInterrupt; the
    files finished so far stay, and the same call again resumes from them.
    Returns the summary: images, records, files, bytes in and out, skipped.
    Skipped sources (skip_bad=True) and files ignored as not JPEG images are
    summed up in one warning, and each skipped one is logged on the "pcr"
    logger.
    """
    bar = None
    if progress is None and _sys.stderr.isatty():
        progress = bar = _ProgressBar()
    try:
        summary = _pcr.convert_images(src, out, progress=progress or None, **options)
    finally:
        if bar is not None:
            bar.close()
    _report_skipped(out, summary, "pcr.convert_images" if not options.get("shards") else "pcr.convert_webdataset")
    return summary


def convert_webdataset(shards, out, **options):
    """pcr-convert webdataset: WebDataset tar shards (paths, s3:// or http(s):// URLs, or
    brace patterns such as "shard-{000000..000099}.tar") into the dataset directory out. Takes the options of
    convert_images but list, by_content and fields; each member extension becomes a field."""
    if isinstance(shards, (str, _os.PathLike)):
        shards = [shards]
    return convert_images("", out, shards=[_os.fspath(s) for s in shards], **options)


def popularity(logs, table=None, out=None):
    """Access logs (of pcr.Table(access_log=...) and pcr-dump cat --access-log)
    counted into a popularity: [(feature, jobs that read it)], most read
    first. `table` (a table path) picks its lines by the table's content id;
    without it the logs must be of one table. Lines of other tables are
    skipped with a warning naming them. `out`, when given, receives the
    popularity file, for convert_table(popularity=) and reorder_table."""
    if isinstance(logs, (str, _os.PathLike)):
        logs = [logs]
    if not logs:
        raise ValueError("popularity needs at least one access log")
    counted = _pcr._count_access_logs([_os.fspath(log) for log in logs], table)
    for other, lines in counted["skipped"].items():
        _warnings.warn(f"skipped {lines} access log line(s) of another table: {other}", stacklevel=2)
    if out is not None:
        with open(out, "w", encoding="utf-8") as f:
            f.write(counted["text"])
    import json

    return [(e["feature"], e["count"]) for e in map(json.loads, counted["text"].splitlines())]


__all__ = [
    "BatchDecoder",
    "CorruptionError",
    "ImageDataset",
    "NotSupportedError",
    "SampleIterator",
    "Table",
    "__version__",
    "convert_images",
    "convert_table",
    "convert_webdataset",
    "decode",
    "merge",
    "popularity",
    "reorder_table",
]
