"""The accounting query's time bounds on both stores: any integer a client sends is a bound.

Found by running tests/integration/test_api_fuzz.py harder (random seed, 240 s):
``GET /v1/accounting?since=9223372036854775808`` answered 500, SQLite refusing an integer
past 64 bits (``OverflowError``)."""

from __future__ import annotations

import json
from collections.abc import Callable

from phalanx.live.accounting import AcctRow, records
from phalanx.live.store import Store

_ROW = AcctRow(7, None, None, "ann", 1_000, 5_000, json.dumps({"job_id": 7}))


def test_bounds_past_64_bits_keep_every_row_or_none(stores: Callable[[], Store]) -> None:
    table = stores().accounting
    table.archive([_ROW])
    big, small = 2**63, -(2**63) - 1
    assert records(table, since=big) == []  # nothing ends that late
    assert records(table, until=small) == []  # nothing was submitted that early
    assert records(table, since=small, until=big) == [_ROW.record]
    assert records(table, since=5_000, until=1_000) == [_ROW.record]  # the edges are kept
    assert records(table, since=5_001) == records(table, until=999) == []
