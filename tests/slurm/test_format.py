"""Slurm's field widths, times, memory and id ranges (``phalanx.slurm.format``)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from phalanx.slurm.format import (
    MAX_WIDTH,
    Spec,
    clock,
    fit,
    hms,
    instant,
    memory,
    parse_long,
    parse_percent,
    ranges,
    render,
    sacct_cut,
    template,
    width,
)


def test_fit_cuts_and_pads_like_squeue() -> None:
    assert fit("train_llm", 8, right=True) == "train_ll"
    assert fit("wrap", 8, right=True) == "    wrap"
    assert fit("wrap", 8, right=False) == "wrap    "
    assert fit("n[01-15]", 3, right=False, cut=False) == "n[01-15]"
    assert fit("anything", 0, right=True) == "anything"


def test_sacct_cut_marks_truncation_with_a_plus() -> None:
    assert sacct_cut("CANCELLED by 0", 10, right=True) == "CANCELLED+"
    assert sacct_cut("1.batch", 12, right=False) == "1.batch     "


def test_clock_and_hms() -> None:
    assert [clock(s) for s in (2, 29 * 60 + 58, 7200, 86400, 365 * 86400)] == [
        "0:02",
        "29:58",
        "2:00:00",
        "1-00:00:00",
        "365-00:00:00",
    ]
    assert [hms(s) for s in (0, 29, 3661, 90061)] == [
        "00:00:00",
        "00:00:29",
        "01:01:01",
        "1-01:01:01",
    ]


def test_instant_is_local_iso_or_a_placeholder() -> None:
    assert instant(None) == "N/A"
    assert instant(None, "Unknown") == "Unknown"
    text = instant(1_795_961_184_000)
    assert len(text) == 19 and text[10] == "T"


def test_memory_uses_the_largest_exact_unit() -> None:
    assert [memory(m) for m in (8000, 65536, 512000, 7680000, 2 * 1024**2)] == [
        "8000M",
        "64G",
        "500G",
        "7500G",
        "2T",
    ]
    assert memory(65536, "M") == "65536M"


def test_ranges() -> None:
    assert ranges([9, 2, 3, 4, 5, 6, 7, 8]) == "2-9"
    assert ranges([0, 2, 3, 4, 7]) == "0,2-4,7"
    assert ranges([]) == ""


def test_parse_percent_reads_width_justification_and_literals() -> None:
    prefix, specs, bad = parse_percent("%.18i %-8j|%T%X", "ijT")
    assert prefix == ""
    assert specs == [Spec("i", 18, True, " "), Spec("j", 8, False, "|"), Spec("T", 0, False, "")]
    assert bad == ["X"]
    line = render(prefix, specs, ["5", "bigjobname", "PENDING"])
    assert line == "                 5 bigjobna|PENDING"


@pytest.mark.parametrize(
    "fmt", ["%.18i %-8j|%T%X", "{x} %5j%.3i{}%N %.4N", "pre %-0j %i", "%i %.9P %%s %.2t %R"]
)
def test_template_renders_as_render(fmt: str) -> None:
    prefix, specs, _ = parse_percent(fmt, "ijTNPtR")
    whole = frozenset("NR")
    for values in (
        ["5", "bigjobname", "PENDING", "n[1-4]"],
        ["123456789012345678901", "", "{}%s", "node-with-a-long-name"],
        ["7", "x", "R", ""],
    ):
        values = (values * 2)[: len(specs)]
        expected = render(prefix, specs, values, whole)
        assert template(prefix, specs, whole) % tuple(values) == expected


def test_parse_long_reads_sizes_and_suffixes() -> None:
    specs, bad = parse_long("JobID:|,name:30,State,Bogus", ["JobID", "Name", "State"])
    assert specs == [Spec("JobID", 0, False, "|"), Spec("Name", 30), Spec("State", 20)]
    assert bad == ["Bogus"]


def test_a_field_wider_than_the_limit_is_refused_as_a_bad_field() -> None:
    # %999999999i over 200 jobs built 14 GB of lines; 30 digits raised "width too big".
    _, specs, bad = parse_percent(f"%.{MAX_WIDTH}i %999999999j %{'9' * 30}T", "ijT")
    assert specs == [Spec("i", MAX_WIDTH, True, "  ")]  # a bad field's text goes to the last
    assert bad == [
        f"%999999999j (width over {MAX_WIDTH})",
        f"%{'9' * 30}T (width over {MAX_WIDTH})",
    ]
    specs, bad = parse_long(f"JobID:{MAX_WIDTH + 1},Name:.{MAX_WIDTH}", ["JobID", "Name"])
    assert specs == [Spec("Name", MAX_WIDTH, True)]
    assert bad == [f"JobID:{MAX_WIDTH + 1} (width over {MAX_WIDTH})"]


def test_a_width_is_ascii_digits() -> None:
    # "²".isdigit() is true but int("²") raises: it was a traceback.
    assert width("") == 0 and width("12") == 12 and width(str(MAX_WIDTH)) == MAX_WIDTH
    assert width("²") is None and width(str(MAX_WIDTH + 1)) is None
    _, specs, bad = parse_percent("%²i %5j", "ij")
    assert specs == [Spec("j", 5)] and bad == ["²"]


def test_the_commands_import_no_heavy_modules() -> None:
    code = (
        "import sys; import phalanx.slurm.squeue, phalanx.slurm.sacct, phalanx.slurm.sinfo; "
        "print(sorted(m for m in ('numpy', 'pydantic', 'httpx', 'yaml', 'fastapi') "
        "if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
