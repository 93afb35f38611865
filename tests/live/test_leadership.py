"""Leadership on PostgreSQL: one controller holds the lock and the epoch; a standby takes
the lead only when the leader's session is gone; the deposed leader's writes are refused
(journal, snapshot, agent epochs) and nothing of them is committed."""

from __future__ import annotations

import pytest

from phalanx.engine import Cancel
from phalanx.live.leadership import Deposed, PostgresLeadership, SoleLeader
from phalanx.live.store import open_journal, open_store
from phalanx.testing.postgres import TempPostgres


def _takes_lead(leadership: PostgresLeadership, within_s: float = 5.0) -> bool:
    """As a standby does: try until the old session is gone (its backend exits a moment
    after the connection closes)."""
    import time

    deadline = time.monotonic() + within_s
    while not leadership.try_lead():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture
def url(postgres: TempPostgres) -> str:
    return postgres.new_database()


def test_one_leads_and_the_other_stands_by_until_the_leader_is_gone(url: str) -> None:
    first = PostgresLeadership(url, "http://ctl1:6817")
    second = PostgresLeadership(url, "http://ctl2:6817")
    try:
        assert first.try_lead() and first.epoch == 1
        assert not second.try_lead() and second.epoch == 0
        assert second.leader() == "http://ctl1:6817"
        assert first.still_leads() and not second.still_leads()
        first.close()  # the leader's session ends (a kill -9 ends it the same way)
        assert _takes_lead(second) and second.epoch == 2
        assert second.leader() == "http://ctl2:6817"
    finally:
        second.close()


def test_a_deposed_leader_can_write_nothing(url: str) -> None:
    old_store, new_store = open_store(url), open_store(url)
    old = PostgresLeadership(url, "http://ctl1:6817")
    new = PostgresLeadership(url, "http://ctl2:6817")
    try:
        assert old.try_lead()
        assert old_store.fence is not None and new_store.fence is not None
        old_store.fence.epoch = old.epoch
        old_store.journal.write([Cancel(1, 1, "alice")])
        old_store.journal.save_snapshot(1, b"old")
        # The old leader's session is lost (its database link): another takes over.
        old._conn.close()
        assert _takes_lead(new)
        new_store.fence.epoch = new.epoch
        assert not old.still_leads()  # it cannot tell any more: it must not act
        before = new_store.journal.position()
        with pytest.raises(Deposed) as refused:
            old_store.journal.write([Cancel(2, 2, "alice")])
        assert refused.value.leader == "http://ctl2:6817"
        assert "deposed" in str(refused.value)
        assert new_store.journal.position() == before
        with pytest.raises(Deposed):
            old_store.journal.save_snapshot(1, b"late")
        with pytest.raises(Deposed):
            old_store.epochs.save("n001", 7, "boot")
        assert "n001" not in new_store.epochs.load()
        # The new leader writes; a snapshot never goes back to an older position.
        new_store.journal.write([Cancel(3, 3, "alice")])
        new_store.journal.save_snapshot(2, b"new")
        late = open_journal(url, new.epoch)
        late.save_snapshot(1, b"older")
        late.close()
        assert new_store.journal.load_snapshot() == (2, b"new")
    finally:
        new.close()
        old_store.close()
        new_store.close()


def test_the_embedded_store_has_one_controller_that_always_leads(tmp_path: object) -> None:
    sole = SoleLeader("http://127.0.0.1:6817")
    assert sole.try_lead() and sole.still_leads()
    assert sole.leader() == "http://127.0.0.1:6817"
