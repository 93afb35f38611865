"""The durable journal: SQLite in WAL mode, inputs kept across a reopen."""

from __future__ import annotations

from pathlib import Path

from phalanx.domain.jobspec import JobSpec
from phalanx.engine import Submit, TasksExited
from phalanx.live.journal import SqliteJournal


def test_sqlite_journal_is_wal_and_keeps_inputs_across_reopen(tmp_path: Path) -> None:
    path = str(tmp_path / "state.db")
    journal = SqliteJournal(path)
    assert journal.journal_mode == "wal"
    spec = JobSpec(name="a", command=("sh", "-c", "echo $X"), environment=(("X", "1"),))
    journal.write([Submit(5, spec), TasksExited(9, 1, 1, 3, 0)])
    journal.close()
    again = SqliteJournal(path)
    assert list(again.read()) == [Submit(5, spec), TasksExited(9, 1, 1, 3, 0)]
    again.close()
