"""Strict reading of YAML input, with the line and field path of every value.

``yaml.safe_load`` forgets where a value came from, so an error could not name its line. Here
the document is composed into PyYAML's node tree and read through ``YamlField``: each value
knows its line and its path (``nodes[2].gpus``), and every read checks the type, so a wrong
value fails as ``ConfigError(message, source=..., line=..., field=...)``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

import yaml
from yaml.constructor import SafeConstructor

from phalanx.domain.time import Duration, parse_duration
from phalanx.errors import ConfigError, InputError

__all__ = ["MAX_INT", "YamlField", "compose_yaml", "optional"]

_CONSTRUCTOR = SafeConstructor()
MAX_INT = 2**31 - 1
"""The largest integer a configuration field takes: Kubernetes' int32, past any count of GPUs
or CPUs, shares or priority Slurm keeps. A node of 10^30 GPUs overflowed the int64 columns the
scheduler keeps per node (an OverflowError traceback from phalanx simulate)."""
_T = TypeVar("_T")


def compose_yaml(text: str, source: str) -> YamlField:
    """The root of a one-document YAML text. Syntax errors and an empty text are ``ConfigError``."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        raise ConfigError(f"invalid YAML: {exc.problem}", source=source, line=line) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"invalid YAML: {exc}", source=source) from None
    except RecursionError:  # PyYAML's composer recurses once per level: [[[...]]] 5,000 deep
        raise ConfigError("invalid YAML: nested too deeply", source=source) from None
    if root is None:
        raise ConfigError("empty document", source=source, line=1)
    return YamlField(root, "", source)


def optional(
    spec: Mapping[str, YamlField], key: str, parse: Callable[[YamlField], _T], default: _T
) -> _T:
    """``parse(spec[key])``, or ``default`` when the key is absent (or null)."""
    return parse(spec[key]) if key in spec else default


class YamlField:
    """A YAML node and the field path that leads to it: every error names both."""

    __slots__ = ("node", "path", "source")

    def __init__(self, node: yaml.Node, path: str, source: str) -> None:
        self.node = node
        self.path = path
        self.source = source

    @property
    def line(self) -> int:
        return int(self.node.start_mark.line) + 1

    def error(self, message: str) -> ConfigError:
        return ConfigError(message, source=self.source, line=self.line, field=self.path or None)

    def child(self, node: yaml.Node, key: str | int) -> YamlField:
        if isinstance(key, int):
            return YamlField(node, f"{self.path}[{key}]", self.source)
        return YamlField(node, f"{self.path}.{key}" if self.path else key, self.source)

    def mapping(self, allowed: Iterable[str], required: Iterable[str] = ()) -> dict[str, YamlField]:
        """Key -> field, in file order. Unknown, duplicate and missing keys are errors; keys
        whose value is null are left out, so null always means "absent"."""
        if not isinstance(self.node, yaml.MappingNode):
            raise self.error(f"expected a mapping, got {self.kind()}")
        allowed = set(allowed)
        out: dict[str, YamlField] = {}
        for key_node, value_node in self.node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            key_field = self.child(key_node, str(key))
            if key is None or key not in allowed:
                raise key_field.error(f"unknown key {key!r}; expected one of {sorted(allowed)}")
            if key in out:  # `out` still holds null values here, so `a: null` + `a: 1` fails
                raise key_field.error(f"duplicate key {key!r}")
            out[key] = self.child(value_node, key)
        present = {k: f for k, f in out.items() if not f.is_null()}
        for key in required:
            if key not in present:
                raise self.error(f"missing required key {key!r}")
        return present

    def sequence(self) -> list[YamlField]:
        if not isinstance(self.node, yaml.SequenceNode):
            raise self.error(f"expected a list, got {self.kind()}")
        return [self.child(n, i) for i, n in enumerate(self.node.value)]

    def is_scalar(self) -> bool:
        return isinstance(self.node, yaml.ScalarNode)

    def is_null(self) -> bool:
        return self.is_scalar() and str(self.node.tag).endswith(":null")

    def text(self) -> str:
        """The scalar as written: YAML 1.1 does not get to turn ``1:00:00`` into 3600."""
        if not self.is_scalar() or self.is_null():
            raise self.error(f"expected a single value, got {self.kind()}")
        return str(self.node.value).strip()

    def as_int(self, minimum: int = 0, maximum: int = MAX_INT) -> int:
        value = _CONSTRUCTOR.construct_object(self.node) if self.is_scalar() else None
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.error(f"expected an integer, got {self.kind()}")
        if value < minimum:
            raise self.error(f"must be >= {minimum}, got {value}")
        if value > maximum:
            raise self.error(f"must be <= {maximum}, got {value}")
        return value

    def as_bool(self) -> bool:
        value = _CONSTRUCTOR.construct_object(self.node) if self.is_scalar() else None
        if not isinstance(value, bool):
            raise self.error(f"expected true or false, got {self.kind()}")
        return value

    def as_str(self) -> str:
        value = self.text()
        if not value:
            raise self.error("must not be empty")
        return value

    def as_str_list(self) -> list[str]:
        return [item.as_str() for item in self.sequence()]

    def as_duration(self, plain_unit: Duration) -> Duration | None:
        """A Slurm time (``UNLIMITED`` -> None); a plain number counts ``plain_unit``: minutes
        for Slurm's time limits, seconds for its GraceTime."""
        value = self.text()
        if value.isdecimal():
            return int(value) * plain_unit
        try:
            return parse_duration(value, field=self.path)
        except InputError as exc:
            raise self.error(exc.message) from None

    def kind(self) -> str:
        """How the value reads in an error message."""
        if isinstance(self.node, yaml.MappingNode):
            return "a mapping"
        if isinstance(self.node, yaml.SequenceNode):
            return "a list"
        return "null" if self.is_null() else repr(self.node.value)
