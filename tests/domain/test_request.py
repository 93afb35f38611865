"""Slurm's option syntax: arrays, dependencies, signals, memory sizes and node counts."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from phalanx.domain.jobspec import SIGNALS, ArraySpec, Dependency, DepKind
from phalanx.domain.request import (
    MAX_ARRAY_TASKS,
    parse_array,
    parse_dependency,
    parse_memory_mb,
    parse_nodes,
    parse_signal,
)
from phalanx.domain.time import SECOND
from phalanx.errors import SpecError

# ---------------------------------------------------------------------------- arrays


@pytest.mark.parametrize(
    ("text", "ids"),
    [
        ("0-3", (0, 1, 2, 3)),
        ("7", (7,)),
        ("1,3,5-7", (1, 3, 5, 6, 7)),
        ("0-9:3", (0, 3, 6, 9)),
        ("1-10:4", (1, 5, 9)),
        ("5,1,3", (1, 3, 5)),
        ("2,2,1-2", (1, 2)),
        (" 4 , 2 ", (2, 4)),
        ("0-99:50,10", (0, 10, 50)),
    ],
)
def test_array_ranges_steps_and_lists(text: str, ids: tuple[int, ...]) -> None:
    assert parse_array(text) == ArraySpec(ids, None)


def test_array_throttle() -> None:
    spec = parse_array("0-15%4")
    assert spec.task_ids == tuple(range(16))
    assert spec.throttle == 4


def test_array_throttle_with_a_list() -> None:
    assert parse_array("1,3%1") == ArraySpec((1, 3), 1)


def test_array_takes_task_ids_up_to_the_limit() -> None:
    assert MAX_ARRAY_TASKS == 1001
    spec = parse_array("0-1000")
    assert len(spec.task_ids) == MAX_ARRAY_TASKS
    assert spec.task_ids[-1] == 1000
    assert parse_array("1000").task_ids == (1000,)


@pytest.mark.parametrize("text", ["0-1001", "1001", "5,1001", "999-2000:500"])
def test_array_refuses_ids_past_the_limit(text: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_array(text)
    assert info.value.field == "array"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "x",
        "5-3",  # descending range
        "0-9:0",  # zero step
        "1,,2",
        "-1",
        "1-2-3",
        "0-3%0",  # a throttle of 0
        "0-3%a",
        "0-3%-1",
        "%4",
        "1.5",
        "0-3%²",  # str.isdigit takes "²", int() refused it: a ValueError, not a SpecError
    ],
)
def test_array_errors_name_the_field(text: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_array(text)
    assert info.value.field == "array"
    assert "array" in str(info.value)


@given(st.sets(st.integers(min_value=0, max_value=MAX_ARRAY_TASKS - 1), min_size=1), st.randoms())
def test_array_of_a_comma_list_is_its_ids_sorted(ids: set[int], rnd: random.Random) -> None:
    order = list(ids)
    rnd.shuffle(order)
    spec = parse_array(",".join(str(i) for i in order))
    assert spec.task_ids == tuple(sorted(ids))
    assert spec.throttle is None


# ---------------------------------------------------------------------------- dependencies


def test_dependency_afterok_with_several_ids() -> None:
    assert parse_dependency("afterok:1:2") == (Dependency(DepKind.AFTEROK, (1, 2)),)


def test_dependency_several_kinds_in_order() -> None:
    assert parse_dependency("afterany:3,afternotok:4,after:5") == (
        Dependency(DepKind.AFTERANY, (3,)),
        Dependency(DepKind.AFTERNOTOK, (4,)),
        Dependency(DepKind.AFTER, (5,)),
    )


@pytest.mark.parametrize("text", ["singleton", "SINGLETON", " singleton "])
def test_dependency_singleton(text: str) -> None:
    assert parse_dependency(text) == (Dependency(DepKind.SINGLETON, ()),)


def test_dependency_kind_is_case_insensitive() -> None:
    assert parse_dependency("AfterOK:9") == (Dependency(DepKind.AFTEROK, (9,)),)


def test_dependency_on_an_array_task_names_the_array_job() -> None:
    assert parse_dependency("afterok:12_3") == (Dependency(DepKind.AFTEROK, (12,)),)


@pytest.mark.parametrize(
    "text",
    [
        "afterok:1?afterany:2",  # any-of
        "afterok:1?",
        "bogus:1",
        "before:1",
        "afterok",  # no ids
        "afterok:",
        "afterok:x",
        "afterany:1:y",
        "singleton:4",
        "",
    ],
)
def test_dependency_errors_name_the_field(text: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_dependency(text)
    assert info.value.field == "dependency"


def test_dependency_any_of_is_refused_with_a_reason() -> None:
    with pytest.raises(SpecError, match=r"\?"):
        parse_dependency("afterok:1?afterok:2")


# ---------------------------------------------------------------------------- signals


@pytest.mark.parametrize(
    ("text", "number", "lead_s"),
    [
        ("B:USR1@90", SIGNALS["USR1"], 90),
        ("SIGTERM", SIGNALS["TERM"], 60),
        ("TERM", SIGNALS["TERM"], 60),
        ("sigusr2", SIGNALS["USR2"], 60),
        ("usr2@0", SIGNALS["USR2"], 0),
        ("R:B:HUP@5", SIGNALS["HUP"], 5),
        ("R:INT@65535", SIGNALS["INT"], 65535),
        ("10", 10, 60),
        ("1@30", 1, 30),
        ("64", 64, 60),
    ],
)
def test_signal(text: str, number: int, lead_s: int) -> None:
    assert parse_signal(text) == (number, lead_s * SECOND)


def test_signal_default_lead_is_sixty_seconds() -> None:
    _, lead = parse_signal("USR1")
    assert lead == 60 * SECOND


@pytest.mark.parametrize(
    "text",
    ["FOO", "SIGFOO", "0", "65", "-1", "B:", "", "USR1@x", "USR1@-5", "USR1@65536", "²", "USR1@²"],
)
def test_signal_errors_name_the_field(text: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_signal(text)
    assert info.value.field == "signal"


# ---------------------------------------------------------------------------- memory


@pytest.mark.parametrize(
    ("text", "mb"),
    [
        ("100", 100),
        ("100M", 100),
        ("100m", 100),
        ("2048K", 2),
        ("4G", 4096),
        ("4g", 4096),
        ("4GB", 4096),
        ("1.5G", 1536),
        ("1T", 1024 * 1024),
        ("0", 0),
        (" 8G ", 8192),
    ],
)
def test_memory(text: str, mb: int) -> None:
    assert parse_memory_mb(text) == mb


def test_memory_of_a_few_kilobytes_is_not_zero() -> None:
    assert parse_memory_mb("1K") >= 1


@pytest.mark.parametrize("text", ["", "x", "G", "-1G", "1P", "1 G", "4GiB", "1e3"])
def test_memory_errors_name_the_field(text: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_memory_mb(text)
    assert info.value.field == "mem"


def test_memory_error_names_the_field_given() -> None:
    with pytest.raises(SpecError) as info:
        parse_memory_mb("lots", field="mem-per-cpu")
    assert info.value.field == "mem-per-cpu"


# ---------------------------------------------------------------------------- node counts


@pytest.mark.parametrize(
    ("text", "expected"), [("1", (1, 1)), ("4", (4, 4)), ("2-8", (2, 8)), ("3-3", (3, 3))]
)
def test_nodes(text: str, expected: tuple[int, int]) -> None:
    assert parse_nodes(text) == expected


@pytest.mark.parametrize("text", ["0", "-2", "3-2", "a", "2-x", "", "1.5", "0-4"])
def test_nodes_errors_name_the_field(text: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_nodes(text)
    assert info.value.field == "nodes"
