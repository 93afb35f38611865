"""The layers of ARCHITECTURE.md hold: import-linter contracts, and a sans-IO core."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "phalanx"
CORE = ("domain", "sched", "policies", "engine", "workloads")
NO_CLOCK = {"time", "random", "datetime"}


def test_import_linter_contracts_hold() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    if not lint.exists():
        pytest.skip("lint-imports is not installed next to this interpreter")
    done = subprocess.run(
        [str(lint)], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


def imported_modules(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return found


CORE_FILES = sorted(p for layer in CORE for p in (SRC / layer).rglob("*.py"))


@pytest.mark.parametrize("path", CORE_FILES, ids=lambda p: str(p.relative_to(SRC)))
def test_core_module_reads_no_clock_and_no_randomness(path: Path) -> None:
    bad = {m for m in imported_modules(path) if m.split(".")[0] in NO_CLOCK}
    assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


def test_the_check_sees_every_layer() -> None:
    assert {p.relative_to(SRC).parts[0] for p in CORE_FILES} == set(CORE)


def test_one_driver_loop_holds_the_event_heap() -> None:
    """The simulator, the live controller and the test driver are one loop
    (``phalanx.runtime.Driver``) with other ports: none of them keeps an event heap of its
    own."""
    layers = ("sim", "live", "runtime", "testing")
    heaps = sorted(
        str(p.relative_to(SRC))
        for layer in layers
        for p in (SRC / layer).rglob("*.py")
        if "heapq" in imported_modules(p)
    )
    assert heaps == ["runtime/driver.py"]


MAX_MODULE_LINES = 600


def test_no_module_is_over_600_lines() -> None:
    # ARCHITECTURE.md: a module past about 400 lines is asking to be split; none stays past 600.
    long = {
        str(p.relative_to(SRC)): n
        for p in SRC.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"
