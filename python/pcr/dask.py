"""pcr tables and image datasets as Dask collections, for offline jobs on a
cluster: statistics, filtering, embeddings.

The path is opened on the client when the collection is made, so a missing
path, an unknown feature or field, or a bad fidelity raises there, with the
library's exception; workers open it again (once per process) and raise
the library's exceptions for damaged stripes or records, which Dask passes
to the client as they are. Paths may be local, http(s):// or s3://, with
`remote` as for pcr.Table; a worker reads s3:// credentials from its own
environment.
"""
import functools
import operator
import os

import dask.bag as db
import dask.dataframe as dd
from dask.base import tokenize
from dask.dataframe.io.utils import DataFrameIOFunction

from . import ImageDataset, Table, _frames

__all__ = ["read_images", "read_table"]


def _frozen(remote):
    return None if remote is None else tuple(sorted(remote.items()))


@functools.lru_cache(maxsize=16)
def _open(cls, path, engine, remote):
    return cls(path, engine=engine, remote=None if remote is None else dict(remote))


class _StripeReader(DataFrameIOFunction):
    """Reads one partition, (first stripe, stripes, first row, rows), of a
    table; Dask narrows `columns` to what a computation selects."""

    def __init__(self, path, engine, remote, features, row_count):
        self._path, self._engine, self._remote = path, engine, remote
        self._features = features
        self._row_count = row_count

    @property
    def columns(self):
        return [f["name"] for f in self._features]

    def project_columns(self, columns):
        if list(columns) == self.columns:
            return self
        by_name = {f["name"]: f for f in self._features}
        return _StripeReader(self._path, self._engine, self._remote, [by_name[c] for c in columns], self._row_count)

    def __dask_tokenize__(self):
        return (self._path, self._engine, self._remote, self.columns, self._row_count)

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
        return _frames.read_frame(table, self._features, first, count, first_row, rows, self._row_count)


def read_table(path, features=None, stripes_per_partition=1, *, engine="auto", remote=None):
    """The table at `path` as a dask DataFrame: one partition per
    `stripes_per_partition` stripes, columns and dtypes as Table.to_pandas
    gives them, indexed by row number (divisions known). Only the streams of
    the columns a computation uses are read. The schema comes from the
    file's footer alone: no stripe is read on the client."""
    if isinstance(stripes_per_partition, bool) or not hasattr(stripes_per_partition, "__index__") \
            or operator.index(stripes_per_partition) < 1:
        raise ValueError(f"stripes_per_partition must be a positive int, not {stripes_per_partition!r}")
    stripes_per_partition = operator.index(stripes_per_partition)
    path = os.fspath(path)
    table = Table(path, engine=engine, remote=remote)
    selected = _frames.select(table, features)
    meta = _frames.meta(selected, table.num_rows)
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
    reader = _StripeReader(path, engine, _frozen(remote), selected, table.num_rows)
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
