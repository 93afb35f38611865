"""The durable journal, on both stores: inputs in order across a reopen, reads after a
position, the snapshot slot, agent epochs in the same database, and errors as data."""

from __future__ import annotations

from pathlib import Path

import pytest

from phalanx.domain.jobspec import JobSpec
from phalanx.engine import Cancel, Submit, TasksExited
from phalanx.errors import InputError
from phalanx.live.dburl import check_url, sqlite_path
from phalanx.live.journal import JournalError, SqliteJournal
from phalanx.live.store import open_store

SPEC = JobSpec(name="a", command=("sh", "-c", "echo $X"), environment=(("X", "1"),))


def test_sqlite_journal_is_wal_and_keeps_inputs_across_reopen(tmp_path: Path) -> None:
    path = str(tmp_path / "state.db")
    journal = SqliteJournal(path)
    assert journal.journal_mode == "wal"
    journal.write([Submit(5, SPEC), TasksExited(9, 1, 1, 3, 0)])
    journal.close()
    again = SqliteJournal(path)
    assert list(again.read()) == [Submit(5, SPEC), TasksExited(9, 1, 1, 3, 0)]
    again.close()


def test_inputs_read_back_in_order_after_a_reopen(db_url: str) -> None:
    store = open_store(db_url)
    assert store.journal.position() == 0 and list(store.journal.read()) == []
    written = [Submit(5, SPEC), TasksExited(9, 1, 1, 3, 0)]
    store.journal.write(written)
    store.journal.write([Cancel(12, 2, "bob")])
    store.close()
    again = open_store(db_url)
    assert list(again.journal.read()) == [*written, Cancel(12, 2, "bob")]
    assert again.journal.count() == 3
    again.close()


def test_read_after_a_position_gives_only_the_later_inputs(db_url: str) -> None:
    store = open_store(db_url)
    store.journal.write([Submit(i, SPEC) for i in range(1, 6)])
    middle = store.journal.position()
    store.journal.write([Cancel(i, i, "u") for i in range(10, 13)])
    assert list(store.journal.read(middle)) == [Cancel(i, i, "u") for i in range(10, 13)]
    assert list(store.journal.read(store.journal.position())) == []
    assert [e.at for e in store.journal.read()] == [1, 2, 3, 4, 5, 10, 11, 12]
    store.close()


def test_a_long_journal_reads_back_whole_across_pages(db_url: str) -> None:
    store = open_store(db_url)
    n = 25_000  # more than two pages of READ_BATCH
    store.journal.write([Cancel(i, i, "u") for i in range(n)])
    assert [e.at for e in store.journal.read()] == list(range(n))
    store.close()


def test_the_snapshot_slot_keeps_the_last_one_and_its_position(db_url: str) -> None:
    store = open_store(db_url)
    assert store.journal.load_snapshot() is None
    store.journal.save_snapshot(3, b"first")
    store.journal.save_snapshot(7, b"\x00second\xff")
    store.close()
    again = open_store(db_url)
    assert again.journal.load_snapshot() == (7, b"\x00second\xff")
    again.close()


def test_agent_epochs_live_in_the_same_store(db_url: str) -> None:
    store = open_store(db_url)
    store.epochs.save("n1", 1, "boot-a")
    store.epochs.save("n1", 2, "boot-b")
    store.epochs.save("n2", 1, "boot-c")
    store.close()
    again = open_store(db_url)
    assert again.epochs.load() == {"n1": (2, "boot-b"), "n2": (1, "boot-c")}
    again.close()


def test_an_unreachable_postgresql_is_a_journal_error_without_the_password(
    tmp_path: Path,
) -> None:
    url = f"postgresql://me:s3cret@/nodb?host={tmp_path}&connect_timeout=2"
    with pytest.raises(JournalError) as caught:
        open_store(url)
    assert "nodb" in str(caught.value) and "s3cret" not in str(caught.value)


@pytest.mark.parametrize(
    "url", ["state.db", "mysql://x/y", "sqlite://state.db", "sqlite:///", "file:///a"]
)
def test_a_url_of_another_kind_is_an_input_error_naming_the_field(url: str) -> None:
    with pytest.raises(InputError) as caught:
        check_url(url, "PHALANX_DB")
    assert "PHALANX_DB" in str(caught.value)


def test_sqlite_urls_follow_sqlalchemy_relative_and_absolute() -> None:
    assert sqlite_path("sqlite:///state.db") == "state.db"
    assert sqlite_path("sqlite:////var/lib/phalanx/state.db") == "/var/lib/phalanx/state.db"
    assert sqlite_path("postgresql://h/db") is None
