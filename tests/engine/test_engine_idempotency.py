"""Idempotency keys: the newest ``KEYS_KEPT`` are remembered, oldest given up first, and a
pickled copy (a snapshot) answers as the original."""

from __future__ import annotations

import pickle

import pytest

from phalanx.engine import idempotency
from phalanx.engine.idempotency import RequestIds


def test_a_key_gets_the_ids_of_its_submission_and_the_oldest_go_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(idempotency, "KEYS_KEPT", 3)
    ids = RequestIds()
    ids.remember("alice/a/0", 1, 1)
    ids.remember("alice/b/0", 2, 4)  # an array of 4 tasks
    assert ids.get("alice/b/0") == [2, 3, 4, 5] and ids.get("bob/b/0") is None
    ids.remember("alice/c/0", 6, 1)
    ids.remember("alice/d/0", 7, 1)
    assert len(ids) == 3 and ids.get("alice/a/0") is None
    assert [ids.get(f"alice/{k}/0") for k in "bcd"] == [[2, 3, 4, 5], [6], [7]]


@pytest.mark.parametrize("keys", [[], [""], ["u/k/0", "u/k/1", "v/x y/0"], ["odd\0key", "u/k/0"]])
def test_a_pickled_copy_answers_as_the_original(keys: list[str]) -> None:
    ids = RequestIds()
    for n, key in enumerate(keys):
        ids.remember(key, 10 * n + 1, n + 1)
    copy = pickle.loads(pickle.dumps(ids))
    assert len(copy) == len(keys)
    assert [copy.get(k) for k in keys] == [ids.get(k) for k in keys]
    # The order survives: the next key pushes out the same oldest one in both.
    assert list(copy._order) == list(ids._order) == keys
