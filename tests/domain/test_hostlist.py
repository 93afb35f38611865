"""Slurm hostlist expressions: expand, compress, and their round trip."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from phalanx.domain.hostlist import MAX_HOSTS, compress, expand
from phalanx.errors import ConfigError


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        ("n[01-03,07]", ["n01", "n02", "n03", "n07"]),  # scontrol show hostnames (reference 44)
        ("gpu[001-003,007],cpu1", ["gpu001", "gpu002", "gpu003", "gpu007", "cpu1"]),
        ("r[1-2]n[1-2]", ["r1n1", "r1n2", "r2n1", "r2n2"]),
        ("n[8-10]", ["n8", "n9", "n10"]),
        ("n[08-10]", ["n08", "n09", "n10"]),
        ("gpu[1-2]-ib", ["gpu1-ib", "gpu2-ib"]),
        ("n[3]", ["n3"]),
        ("login", ["login"]),
        ("a1, b2", ["a1", "b2"]),
        ("n1,n1", ["n1", "n1"]),
        ("", []),
        ("  ", []),
    ],
)
def test_expand(expr: str, names: list[str]) -> None:
    assert expand(expr) == names


@pytest.mark.parametrize(
    ("names", "expr"),
    [
        (["n01", "n02", "n03", "n07"], "n[01-03,07]"),  # scontrol show hostlist (reference 45)
        (["gpu001", "gpu002", "gpu003"], "gpu[001-003]"),
        (["gpu007"], "gpu007"),
        (["n9", "n10"], "n[9-10]"),
        (["n09", "n10"], "n[09-10]"),
        (["n1", "n01"], "n[1,01]"),
        (["gpu1", "cpu1", "cpu2", "login"], "gpu1,cpu[1-2],login"),
        (["n3", "n1", "n2"], "n[3,1-2]"),
        ([], ""),
    ],
)
def test_compress(names: list[str], expr: str) -> None:
    assert compress(names) == expr


def test_compress_sorted_dedups_and_orders_by_prefix_then_number() -> None:
    assert compress(["b2", "a10", "b1", "a9", "b1"], sort=True) == "a[9-10],b[1-2]"


@pytest.mark.parametrize(
    ("expr", "words"),
    [
        ("gpu[1-3", "unbalanced '['"),
        ("gpu1-3]", "unbalanced ']'"),
        ("n[[1]]", "nested"),
        ("n[5-3]", "reversed range"),
        ("n[]", "empty brackets"),
        ("n[a-c]", "invalid range"),
        ("n[1-]", "invalid range"),
        ("a,,b", "empty host name"),
        ("a b", "whitespace"),
        (f"n[1-{MAX_HOSTS + 1}]", "exceeds"),
        ("a[1-1000]b[1-1001]", "more than"),
    ],
)
def test_expand_rejects_malformed(expr: str, words: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(words)) as info:
        expand(expr)
    assert repr(expr) in str(info.value)


@pytest.mark.parametrize("bad", ["", "a,b", "n[1]", "a b"])
def test_compress_rejects_names_that_are_not_single_hosts(bad: str) -> None:
    with pytest.raises(ConfigError, match="invalid host name"):
        compress(["ok1", bad])


_prefix = st.sampled_from(["gpu", "n", "r1n", "node-", "login", "a.b"])
_number = st.integers(min_value=0, max_value=120)
_width = st.integers(min_value=0, max_value=4)


@st.composite
def _name(draw: st.DrawFn) -> str:
    prefix = draw(_prefix)
    if draw(st.booleans()) and prefix in ("login", "a.b"):
        return prefix  # a name without a number
    return f"{prefix}{draw(_number):0{draw(_width)}d}"


@given(st.lists(_name(), max_size=40))
def test_expand_inverts_compress(names: list[str]) -> None:
    assert expand(compress(names)) == names


@given(st.lists(_name(), max_size=40))
def test_compress_is_stable_on_its_own_output(names: list[str]) -> None:
    expr = compress(names)
    assert compress(expand(expr)) == expr


@given(st.lists(_name(), max_size=40))
def test_sorted_compress_keeps_the_set(names: list[str]) -> None:
    assert sorted(expand(compress(names, sort=True))) == sorted(set(names))
