"""Our declarations of Kubernetes' messages (phalanx/kube/pb/): each is well formed, and each
declared kind gets a message class the protobuf runtime builds from it."""

from __future__ import annotations

import pytest

from phalanx.kube.pb import registry
from phalanx.kube.pb.declare import SCALARS, Message
from phalanx.kube.protobuf import decode, encode

MESSAGES = sorted(registry.DECLARED.values())


@pytest.mark.parametrize("message", MESSAGES, ids=[m.name for m in MESSAGES])
def test_a_message_declares_each_number_and_name_once_with_known_types(message: object) -> None:
    assert isinstance(message, Message)
    numbers = [f.number for f in message.fields]
    names = [f.name for f in message.fields]
    assert len(set(numbers)) == len(numbers), message.name
    assert len(set(names)) == len(names), message.name
    for f in message.fields:
        assert f.number > 0 and set(f.flags) <= set("opi"), (message.name, f)
        assert f.type in SCALARS or f.type in registry.DECLARED, (message.name, f)
        if f.inline:
            # Go inlines embedded structs only: a singular message, no other flags.
            assert f.type in registry.DECLARED and f.flags == "i" and not f.repeated, f
        assert not (f.map and f.repeated), f


def test_every_declared_kind_has_a_class_and_round_trips_its_metadata() -> None:
    kinds = [(module.API_VERSION, kind) for module in registry._GROUPS for kind in module.KINDS]
    kinds += [("v1", "Status"), ("apps/v1", "DeleteOptions")]
    assert len(kinds) >= 20
    for api_version, kind in kinds:
        cls = registry.kind_class(api_version, kind)
        assert cls is not None, (api_version, kind)
        obj = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}}
        if kind in ("Status", "DeleteOptions"):
            obj.pop("metadata")
        decoded = decode(encode(obj))
        assert (decoded["apiVersion"], decoded["kind"]) == (api_version, kind)
        if kind not in ("Status", "DeleteOptions"):
            assert decoded["metadata"]["name"] == "x"


def test_kinds_we_do_not_declare_have_no_class() -> None:
    assert registry.kind_class("v1", "PodSpec") is None  # a message, not a kind
    assert registry.kind_class("apps/v1", "StatefulSet") is None
    assert registry.kind_class("v2", "Status") is None
