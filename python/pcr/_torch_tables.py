"""pcr.torch.TableLoader and pcr.torch.table_batch: table rows as tensors."""
from typing import Optional, Sequence

import numpy as _np
import torch as _torch

from . import _pcr
from ._epoch_loader import _EpochLoader, _check_int


class TableLoader(_EpochLoader):
    """Batches of table rows for training recommendation models (DLRM-style),
    straight from a pcr table.

    It makes the batches itself: iterate it directly, or through
    `pcr.torch.DataLoader(loader, num_workers=...)` or torch's DataLoader
    with `batch_size=None`. torch's DataLoader with a batch size would batch
    the batches again; it is refused with a TypeError.

    Each item is a dict: "rows" (int64, the table's row numbers) and, for
    each feature of the projection `features` (None: every feature), a dict
    of tensors over the batch's rows:
    - numbers (int64, uint64, bool, float32, float64, timestamps):
      "values" (0 where missing; uint64 as int64 of the same bits,
      timestamps int64 ticks) and "presence" (bool);
    - id lists: "input" (int64 ids; uint64 ids as int64 of the same bits)
      and "offsets" (int64, where each row's
      ids start), torch.nn.EmbeddingBag's (input, offsets), and "presence";
      scored lists also "per_sample_weights" (float32);
    - float lists: "values", "offsets" (as for ids) and "presence";
    - strings and bytes: "values", a list of str or bytes (None where
      missing), and "presence".
    `dense` names numeric features to deliver together instead, as "dense",
    a float32 tensor N x len(dense) (0 where missing), and
    "dense_presence" (bool, the same shape). A feature named like a batch
    key ("rows"; with dense, "dense" and "dense_presence") is refused.

    Shuffling: each epoch permutes the stripes, and each worker cuts its
    run of them into windows of `shuffle_stripes` stripes and delivers each
    window's rows in a uniformly random order, so a table written sorted
    (by date, say) still gives batches of rows from far apart; a stripe is
    read once and dropped after its last row, and memory holds about
    `shuffle_stripes` stripes of the projection per worker (tables are
    written in stripes of at most 131,072 rows by default). shuffle=False
    reads the rank's rows in table
    order; with DataLoader workers, each worker reads a contiguous part of
    them, so batches arrive in order within a worker, interleaved across
    workers ("rows" tells which).
    Shares, epochs, resume and workers are as for ImageLoader (rows for
    images): len(loader) batches on every rank (uneven="pad" or "drop"),
    set_epoch, state_dict and load_state_dict, and pcr.torch.DataLoader for
    workers. `access_log` and `job` are pcr.Table's: every worker logs the
    projection it reads, under one job for the whole loader (default
    $PCR_JOB_ID, else this process's host:pid; give every rank the same
    job). Arguments are checked here. The table is opened again each epoch:
    one replaced by another (other rows or content id) raises OSError, as
    len(loader) would no longer hold; make a new loader for it.
    """

    def __init__(
        self,
        path: str,
        batch_size: int,
        features: Optional[Sequence] = None,
        *,
        dense: Sequence = (),
        seed: int = 0,
        shuffle: bool = True,
        shuffle_stripes: int = 8,
        uneven: str = "pad",
        rank: Optional[int] = None,
        world_size: Optional[int] = None,
        engine: str = "auto",
        direct: bool = False,
        remote: Optional[dict] = None,
        access_log=None,
        job: Optional[str] = None,
    ) -> None:
        super().__init__()
        import os

        self._setup(batch_size, seed, shuffle, ("shuffle_stripes", shuffle_stripes, 1), uneven, rank, world_size)
        for name, value in (("features", features), ("dense", dense)):
            if isinstance(value, (str, bytes)):
                raise TypeError(f"{name} must be a list of names, not the str {value!r}")
        if not isinstance(direct, bool):
            raise TypeError(f"direct must be True or False, not {direct!r}")
        if job is not None and (not isinstance(job, str) or not job):
            raise TypeError(f"job must be a non-empty str, not {job!r}")
        if access_log is not None:
            access_log = os.fspath(access_log)
            if not os.path.isdir(os.path.dirname(os.path.abspath(access_log))):
                raise ValueError(f"access_log {access_log}: its directory does not exist")
            if os.path.isdir(access_log):
                raise ValueError(f"access_log {access_log}: a directory; give the log file's path")
            # One job for every DataLoader worker and epoch of this loader.
            job = job or _pcr._default_job_id()
        self.path, self.engine, self.direct, self.remote = path, engine, direct, remote
        self.access_log, self.job = access_log, job
        probe = _pcr.Table(path, engine, direct, remote)
        self._num_items, self._content_id = probe.num_rows, probe.content_id
        types = {f["name"]: f["type"] for f in probe.schema}
        by_id = {str(f["id"]): f["name"] for f in probe.schema if f.get("id") is not None}
        self.dense = [by_id.get(str(d), str(d)) for d in dense]
        for name in self.dense:
            if name not in types:
                raise ValueError(f"{path}: dense names '{name}', which the table does not have")
            if types[name] not in _NUMBER_TYPES:
                raise ValueError(f"dense features must be numbers (not timestamps, whose ticks float32 "
                                 f"cannot hold); '{name}' is {types[name]}: give it in features")
            if self.dense.count(name) > 1:
                raise ValueError(f"dense names '{name}' twice")
        if features is None:
            features = [f["name"] for f in probe.schema]
        self.features = [by_id.get(str(f), str(f)) for f in features]
        probe.read(self.features + self.dense, 0, 0)  # refuses unknown names now
        self.features = [f for f in self.features if f not in self.dense]
        keys = {"rows": "the batch's row numbers"}
        if self.dense:
            keys.update(dense="the dense= tensor", dense_presence="the dense= presence")
        for name in self.features:
            if name in keys:
                raise ValueError(f"{path}: feature '{name}' would be the batch key '{name}', which holds "
                                 f"{keys[name]}: leave it out of features (name the others)")
        self._types = types

    def _source(self) -> _pcr.Table:
        """The table opened for an iteration, checked to be the one this loader was made on."""
        table = _pcr.Table(self.path, self.engine, self.direct, self.remote, self.access_log, self.job)
        if (table.content_id, table.num_rows) != (self._content_id, self._num_items):
            raise OSError(f"{self.path}: the table changed while open: another table ({table.num_rows} rows, content "
                          f"id {table.content_id}) than "
                          f"when this TableLoader was made ({self._num_items} rows, content id "
                          f"{self._content_id}): make a new TableLoader")
        return table

    def _batches(self, share: dict, table: Optional[_pcr.Table] = None):
        table, counted = self._opened(table)
        it = _pcr._TableLoader(table, batch_size=self.batch_size, features=self.features + self.dense, **share)
        for rows, columns in it:
            counted = self._count_read(table, counted)
            batch = {"rows": _torch.from_numpy(rows)}
            for name in self.features:
                batch[name] = _tensors(columns[name], self._types[name])
            if self.dense:
                n = len(rows)
                values = _np.zeros((n, len(self.dense)), dtype=_np.float32)
                presence = _np.zeros((n, len(self.dense)), dtype=bool)
                for j, name in enumerate(self.dense):
                    presence[:, j] = columns[name]["presence"]
                    values[:, j] = _np.where(presence[:, j], columns[name]["values"].astype(_np.float32), 0)
                batch["dense"] = _torch.from_numpy(values)
                batch["dense_presence"] = _torch.from_numpy(presence)
            yield batch


_NUMBER_TYPES = ("int64", "uint64", "bool", "float32", "float64")


def _values_tensor(values: _np.ndarray) -> _torch.Tensor:
    """A read column's values as a tensor, without a copy: uint64 and
    timestamps as int64 of the same bits (torch has neither)."""
    if values.dtype.kind in "Mu" and values.dtype != _np.uint8:
        values = values.view("int64")
    return _torch.from_numpy(values)


def _tensors(col: dict, kind: str) -> dict:
    """One column of a TableLoader batch as the tensors TableLoader gives."""
    presence = _torch.from_numpy(col["presence"])
    values = col["values"]
    if kind in ("string", "bytes"):
        objects = _pcr._row_objects(values, col["offsets"], col["presence"], "str" if kind == "string" else "bytes")
        return {"values": objects.tolist(), "presence": presence}
    values = _values_tensor(values)
    if "offsets" not in col:
        return {"values": values, "presence": presence}
    starts = _torch.from_numpy(col["offsets"][:-1].view("int64"))
    if kind == "float32_list" or kind == "float64_list":
        return {"values": values, "offsets": starts, "presence": presence}
    out = {"input": values, "offsets": starts, "presence": presence}
    if "scores" in col:
        out["per_sample_weights"] = _torch.from_numpy(col["scores"].astype(_np.float32, copy=False))
    return out


def table_batch(table: _pcr.Table, features, first_stripe: int = 0, num_stripes: Optional[int] = None) -> dict:
    """A projection of `table` as tensors for recommendation models, keyed as
    Table.read keys its arrays.

    For each feature name, a dict of tensors: "presence" (bool, one per row:
    False where the row lacks the feature, for every type), "values" (0
    where missing for scalars; the concatenated ids, numbers or bytes for
    lists and strings), and for lists and strings "offsets" (int64, one more
    than rows: row i is values[offsets[i]:offsets[i + 1]]) and for scored
    lists "scores". Id lists feed torch.nn.EmbeddingBag as
    bag(t["values"], t["offsets"], per_sample_weights=t.get("scores"))
    with include_last_offset=True. Timestamps are int64 ticks of their unit,
    and uint64 values and ids int64 tensors of the same bits (torch has no
    uint64).
    The tensors share pcr's arrays without a copy.
    """
    if isinstance(features, str):
        raise TypeError(f"features must be a list of names, not the str {features!r}")
    out = {}
    for name, col in table.read(list(features), first_stripe, num_stripes).items():
        item = {"presence": _torch.from_numpy(col["presence"]), "values": _values_tensor(col["values"])}
        if "offsets" in col:
            item["offsets"] = _torch.from_numpy(col["offsets"].view("int64"))
        if "scores" in col:
            item["scores"] = _torch.from_numpy(col["scores"])
        out[name] = item
    return out


TableLoader.__module__ = table_batch.__module__ = "pcr.torch"
