"""Table columns as pandas objects, for Table.to_pandas and pcr.dask.read_table.

A column's dtype follows from the schema alone, so every stripe of a table
gives the same dtypes. By default they are pyarrow's to_pandas ones: numpy's
where every row holds the feature; where some rows lack it, floats keep
their dtype with NaN, integers become float64 with NaN and bools objects
with None. With dtype_backend="numpy_nullable", as pandas' readers,
numbers and bools are pandas' nullable dtypes (Int64, UInt64, boolean,
Float32, Float64: NA where missing, NaN a value) and strings "string".
Timestamps are datetime64 (NaT where missing; in Table.to_pandas, Python
datetime objects with a warning where pandas' datetime64 cannot hold them),
strings str and bytes bytes (None where missing), lists numpy arrays
viewing the column (None where missing), scored lists structured arrays of
(id, score).
"""
import datetime
import operator

import numpy as np
import pandas as pd

from . import _pcr, _warn

_NUMPY = {"int64": "int64", "uint64": "uint64", "bool": "bool", "float32": "float32", "float64": "float64"}
_BACKENDS = (None, "numpy_nullable")
# Integers float64 holds exactly.
_EXACT = 2 ** 53
_LISTS = {"id_list": "int64", "uint64_id_list": "uint64", "float32_list": "float32", "float64_list": "float64"}
_SCORED = {"scored_id_list32": "float32", "scored_id_list64": "float64"}


def _empty_column(kind):
    """The column Table.read gives for a feature of type `kind` over no rows."""
    col = {"presence": np.zeros(0, dtype=bool)}
    if kind in _NUMPY:
        col["values"] = np.zeros(0, dtype=_NUMPY[kind])
    elif kind.startswith("timestamp_"):
        col["values"] = np.zeros(0, dtype=f"datetime64[{kind[len('timestamp_'):]}]")
    else:
        col["offsets"] = np.zeros(1, dtype=np.uint64)
        col["values"] = np.zeros(0, dtype=np.uint8 if kind in ("string", "bytes") else _LISTS.get(kind, "int64"))
        if kind in _SCORED:
            col["scores"] = np.zeros(0, dtype=_SCORED[kind])
    return col


def check_backend(dtype_backend):
    if dtype_backend not in _BACKENDS:
        raise ValueError(f"dtype_backend {dtype_backend!r} is invalid, only None and 'numpy_nullable' are allowed")
    return dtype_backend


def _numbers(path, name, kind, values, presence, nullable, backend):
    if backend == "numpy_nullable":
        cls = {"bool": pd.arrays.BooleanArray, "float32": pd.arrays.FloatingArray,
               "float64": pd.arrays.FloatingArray}.get(kind, pd.arrays.IntegerArray)
        return cls(values, ~presence)
    if not nullable:
        return values
    if kind == "bool":
        out = values.astype(object)
        out[~presence] = None
        return out
    if kind in ("int64", "uint64"):
        if ((values[presence] > _EXACT) | ((values[presence] < -_EXACT) if kind == "int64" else False)).any():
            _warn(f"{path}: feature '{name}': rows lack it, so its {kind} values become float64 with NaN, "
                          f"and some are beyond 2**53, which float64 rounds; dtype_backend='numpy_nullable' "
                          "keeps them exact")
        values = values.astype(np.float64)
    else:
        values = values.copy()
    values[~presence] = np.nan
    return values


def _series_data(path, name, kind, col, nullable, backend, objects_beyond=False):
    presence = col["presence"]
    values = col["values"]
    if kind in _NUMPY:
        return _numbers(path, name, kind, values, presence, nullable, backend)
    if kind.startswith("timestamp_"):
        if nullable and not presence.all():
            values = values.copy()
            values[~presence] = np.datetime64("NaT")
        try:
            return pd.Series(values, copy=False).array
        except pd.errors.OutOfBoundsDatetime as e:
            beyond = e
        # Python's datetime holds years 1 to 9999, at microseconds.
        times = values.astype("datetime64[us]").astype(object)
        if objects_beyond and all(isinstance(x, datetime.datetime) for x in times[presence]):
            _warn(f"{path}: feature '{name}': times beyond what this pandas' datetime64 holds ({beyond}): "
                          "given as Python datetime objects")
            times[~presence] = None
            return times
        raise ValueError(f"{path}: feature '{name}': a timestamp beyond what this pandas holds ({beyond}); "
                         "Table.read gives it as numpy datetime64") from None
    if kind in ("string", "bytes"):
        objects = _pcr._row_objects(values, col["offsets"], presence, "str" if kind == "string" else "bytes")
        return pd.array(objects, dtype="string") if kind == "string" and backend == "numpy_nullable" else objects
    if kind in _SCORED:
        pairs = np.empty(len(values), dtype=[("id", "int64"), ("score", _SCORED[kind])])
        pairs["id"] = values
        pairs["score"] = col["scores"]
        values = pairs
    return _pcr._row_objects(values, col["offsets"], presence, "view")


def frame(path, columns, features, row_count, index, backend, objects_beyond=False):
    """A DataFrame of Table.read's `columns` of `features` (schema entries, in
    column order) over the rows `index`; `row_count` is the table's, which
    with each feature's present_count decides whether rows lack it, and
    `backend` the dtype_backend. With `objects_beyond`, times beyond pandas'
    datetime64 are Python datetime objects, with a warning; else an error."""
    data = {}
    for f in features:
        name, kind = f["name"], f["type"]
        col = columns[name] if columns is not None else _empty_column(kind)
        data[name] = _series_data(path, name, kind, col, f["present_count"] < row_count, backend, objects_beyond)
    return pd.DataFrame(data, index=index, copy=False)


def meta(features, row_count, backend):
    """The empty DataFrame with the dtypes every stripe of the table gives."""
    return frame("", None, features, row_count, pd.RangeIndex(0, 0), backend)


def select(table, features):
    """Schema entries of the names `features` (None: every feature), in that
    order; the library's error for a name the table lacks."""
    schema = table.schema
    if features is None:
        return schema
    if isinstance(features, (str, bytes)):
        raise TypeError(f"features must be a list of names, not a str: [{features!r}]")
    features = [str(operator.index(f)) if not isinstance(f, (str, bool)) and hasattr(f, "__index__") else f
                for f in features]
    seen = set()
    for name in features:
        if name in seen:
            raise ValueError(f"features lists '{name}' twice")
        seen.add(name)
    table.read(features, first_stripe=0, num_stripes=0)  # resolves the names; reads nothing
    by_name = {f["name"]: f for f in schema}
    return [by_name[name] for name in features]


def stripe_runs(stripes, count):
    """Runs (first, count) of consecutive stripes of `stripes`: None (all of
    them), a stripe index, a range or slice, or indices."""
    if stripes is None:
        return [(0, count)] if count else []

    def index(s):
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)):
            raise TypeError(f"stripes are None, a stripe index, a range, a slice or indices, not {s!r}")
        return int(s)

    if isinstance(stripes, slice):
        stripes = range(count)[stripes]
    elif not hasattr(stripes, "__iter__") or isinstance(stripes, (str, bytes)):
        stripes = [index(stripes)]
    runs = []
    for s in stripes:
        s = index(s)
        if not 0 <= s < count:
            raise IndexError(f"stripe {s} out of range ({count} stripes)")
        if runs and runs[-1][0] + runs[-1][1] == s:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((s, 1))
    return runs


def read_frame(table, features, first, count, first_row, rows, row_count, backend, objects_beyond=False):
    """Stripes [first, first + count), rows [first_row, first_row + rows), of
    `table` as a DataFrame indexed by row number."""
    columns = table.read([f["name"] for f in features], first_stripe=first, num_stripes=count)
    return frame(table.path, columns, features, row_count, pd.RangeIndex(first_row, first_row + rows), backend,
                 objects_beyond)


def to_pandas(table, features=None, stripes=None, dtype_backend=None):
    backend = check_backend(dtype_backend)
    selected = select(table, features)
    stripe_rows = table.stripe_rows
    starts = np.concatenate([[0], np.cumsum(stripe_rows, dtype=np.int64)])
    runs = stripe_runs(stripes, len(stripe_rows))
    if not runs:
        return meta(selected, table.num_rows, backend)
    parts = [read_frame(table, selected, first, count, int(starts[first]), int(starts[first + count] - starts[first]),
                        table.num_rows, backend, True) for first, count in runs]
    return parts[0] if len(parts) == 1 else pd.concat(parts, copy=False)
