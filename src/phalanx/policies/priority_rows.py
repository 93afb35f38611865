"""The columns ``priority/multifactor`` recalculates from: one row per job it has seen.

A recalculation touches every pending job every ``calc_period``, and a deep queue holds
thousands: what it reads and writes is kept in numpy columns, one row per job (found by its
submit sequence), so that the sum runs over arrays and no per-job object is built. A job's
factors (what ``sprio`` prints) are a view of its row: the values of the last calculation that
included the job, as a fresh mapping per calculation would hold.

Rows of jobs that were in no calculation since the last compaction are given up when the
columns are full (their views keep their values), so the columns grow with the queue, not
with every job a long-lived controller has seen.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np
import numpy.typing as npt
from mypy_extensions import mypyc_attr

__all__ = ["FactorRows", "Factors", "Static"]

Static = tuple[float, float, float, float, float, float]
"""Weighted size, partition, QOS and short factors; their sum; the job's age weight."""

_NAMES = ("age", "fairshare", "jobsize", "partition", "qos", "short", "nice")

_MAX_TABLE = 1 << 24
"""Submit sequences below this are looked up in ``FactorRows``'s table (an array indexed by
sequence); a larger one sends a lookup to the dict."""


@mypyc_attr(allow_interpreted_subclasses=True)
class FactorRows:
    """Per-job columns. ``gen`` is the calculation a row's static factors were last
    confirmed in: they are reused only if the job was in the last calculation or was
    computed since (``current``), as a cache holding only those jobs would."""

    def __init__(self, capacity: int = 1024) -> None:
        self.row_of: dict[int, int] = {}
        self.statics: list[Static] = []
        self.views: list[Factors] = []
        self.current = 0
        """The generation valid now: bumped by every whole-queue calculation."""
        self.accounts: list[str] = []
        self.account_index: dict[str, int] = {}
        self._initial = max(capacity, 1)
        self._alloc(self._initial)

    _by_seq: npt.NDArray[np.intp] | None = None
    """``row_of`` as an array indexed by submit sequence (-1: no row), made on first use after
    rows were renumbered (a class default, so rows pickled before it existed make their
    own)."""

    def rows_of(self, seqs: npt.NDArray[np.int64]) -> npt.NDArray[np.intp] | None:
        """The rows of the jobs of submit sequences ``seqs``, as ``row_of`` gives them, over
        arrays (a deep queue's recalculation would otherwise look up every job in a dict);
        None if one has no row or a sequence is out of the table's range."""
        # The reductions by the ufuncs themselves: ``ndarray.min``/``max`` go through a
        # Python wrapper (numpy's ``_methods``) that costs more than they do here.
        n = len(seqs)
        top = int(np.maximum.reduce(seqs)) if n else -1
        if n and (int(np.minimum.reduce(seqs)) < 0 or top >= _MAX_TABLE):
            return None
        table = self._by_seq
        if table is None:
            table = self._by_seq = self._table(top + 1)
        if top >= len(table):
            return None  # sequences beyond every row made: not all have rows
        where = table[seqs]
        if n and int(np.minimum.reduce(where)) < 0:
            return None
        return where

    def _table(self, size: int) -> npt.NDArray[np.intp]:
        """``row_of`` as an array of at least ``size`` places."""
        seqs = [seq for seq in self.row_of if 0 <= seq < _MAX_TABLE]
        table = np.full(max(size, max(seqs, default=0) + 1, 1024), -1, np.intp)
        table[np.array(seqs, np.intp)] = np.array([self.row_of[s] for s in seqs], np.intp)
        return table

    def _alloc(self, capacity: int) -> None:
        self.submit: npt.NDArray[np.int64] = np.zeros(capacity, np.int64)
        self.nice: npt.NDArray[np.int64] = np.zeros(capacity, np.int64)
        """Minus the job's nice, as the sum adds it."""
        self.account: npt.NDArray[np.intp] = np.zeros(capacity, np.intp)
        self.gen: npt.NDArray[np.int64] = np.full(capacity, -1, np.int64)
        self.age_weight: npt.NDArray[np.float64] = np.zeros(capacity)
        self.static_sum: npt.NDArray[np.float64] = np.zeros(capacity)
        self.w_age: npt.NDArray[np.float64] = np.zeros(capacity)
        """The weighted age of the job's last calculation."""
        self.w_fs: npt.NDArray[np.float64] = np.zeros(capacity)
        """The weighted fair share of the job's last calculation."""

    def row(self, seq: int, submit: int, nice: int, account: str) -> int:
        """The job's row, made if it has none; the job's own fields written into it."""
        row = self.row_of.get(seq)
        if row is None:
            row = len(self.views)
            if row == len(self.gen):
                row = self._make_room()
            self.row_of[seq] = row
            table = self._by_seq
            if table is not None and 0 <= seq < _MAX_TABLE:
                if seq >= len(table):
                    grown = np.full(max(2 * len(table), seq + 1), -1, np.intp)
                    grown[: len(table)] = table
                    self._by_seq = table = grown
                table[seq] = row
            self.statics.append((0.0, 0.0, 0.0, 0.0, 0.0, 0.0))
            self.views.append(Factors(self, row))
        self.submit[row] = submit
        self.nice[row] = -nice
        index = self.account_index.get(account)
        if index is None:
            index = self.account_index[account] = len(self.accounts)
            self.accounts.append(account)
        self.account[row] = index
        return row

    def set_static(self, row: int, static: Static) -> None:
        self.statics[row] = static
        self.static_sum[row] = static[4]
        self.age_weight[row] = static[5]
        self.gen[row] = self.current

    def values(self, row: int) -> tuple[float, ...]:
        static = self.statics[row]
        return (
            float(self.w_age[row]),
            float(self.w_fs[row]),
            *static[:4],
            float(self.nice[row]),
        )

    def _freeze(self, rows: list[int]) -> None:
        """Freeze the views of ``rows``: ``values`` of each, the columns read once as lists
        (the same numbers: ``tolist`` gives each item as ``float()`` of it would), not one
        numpy scalar per row and column."""
        w_age: list[float] = self.w_age.tolist()
        w_fs: list[float] = self.w_fs.tolist()
        nice: list[int] = self.nice.tolist()
        statics = self.statics
        views = self.views
        for row in rows:
            view = views[row]
            if view._frozen is None:
                static = statics[row]
                view._frozen = (w_age[row], w_fs[row], *static[:4], float(nice[row]))

    def reserve(self, count: int) -> None:
        """Room for ``count`` more rows without giving any up (while rows are being read)."""
        need = len(self.views) + count
        if need > len(self.gen):
            self._resize(list(self.row_of.items()), max(need, 2 * len(self.gen)))

    def compact(self) -> None:
        """Give up now the rows ``_make_room`` gives up when the columns are full: saved
        state then holds the rows of the queue, not those of every job seen since the last
        compaction (no value changes: see ``_make_room``)."""
        self._make_room()

    def _make_room(self) -> int:
        """Give up the rows not confirmed in the last calculation (their views keep their
        values; the engine queues no job without computing it, so none of them is queued),
        then grow if still full; the next free row."""
        current = self.current
        gen: list[int] = self.gen.tolist()  # read per row: a list's items cost less
        keep = [(seq, row) for seq, row in self.row_of.items() if gen[row] == current]
        kept = {row for _, row in keep}
        self._freeze([row for row in range(len(self.views)) if row not in kept])
        self._resize(keep, max(self._initial, 2 * len(keep)))
        return len(keep)

    def _resize(self, keep: list[tuple[int, int]], capacity: int) -> None:
        """Columns of ``capacity`` rows holding the rows ``keep`` (seq, row), in order."""
        rows = np.array([row for _, row in keep], np.intp)
        ints = (self.submit, self.nice, self.account, self.gen)
        floats = (self.age_weight, self.static_sum, self.w_age, self.w_fs)
        self._alloc(capacity)
        n = len(keep)
        for new, col in zip((self.submit, self.nice, self.account, self.gen), ints, strict=True):
            new[:n] = col[rows]
        new_floats = (self.age_weight, self.static_sum, self.w_age, self.w_fs)
        for new_f, col_f in zip(new_floats, floats, strict=True):
            new_f[:n] = col_f[rows]
        self.statics = [self.statics[row] for _, row in keep]
        self.views = [self.views[row] for _, row in keep]
        self.row_of = {seq: i for i, (seq, _) in enumerate(keep)}
        self._by_seq = None
        for i, view in enumerate(self.views):
            view.row = i


@mypyc_attr(allow_interpreted_subclasses=True)
class Factors(Mapping[str, float]):
    """One job's breakdown, as ``sprio`` prints it: a view of its row until the row is given
    up, then the values it had."""

    __slots__ = ("_frozen", "_rows", "row")

    def __init__(self, rows: FactorRows, row: int) -> None:
        self._rows = rows
        self.row = row
        self._frozen: tuple[float, ...] | None = None

    def freeze(self) -> None:
        if self._frozen is None:
            self._frozen = self._rows.values(self.row)

    def _values(self) -> tuple[float, ...]:
        frozen = self._frozen
        return frozen if frozen is not None else self._rows.values(self.row)

    def __getitem__(self, key: str) -> float:
        try:
            i = _NAMES.index(key)
        except ValueError:
            raise KeyError(key) from None
        return self._values()[i]

    def __iter__(self) -> Iterator[str]:
        return iter(_NAMES)

    def __len__(self) -> int:
        return len(_NAMES)

    def __repr__(self) -> str:
        return f"Factors({dict(zip(_NAMES, self._values(), strict=True))})"
