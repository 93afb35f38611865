"""The TARGETS column of ``kubectl get hpa``: each metric's current value over its target, as
kubectl's printer formats them (``formatHPAMetrics``): ``cpu: 12%/50%``, ``3/10`` for a Pods or
Object metric, ``1500m/1 (avg)`` for an Object metric's average, ``<unknown>`` before the first
measurement; two at most, then ``+ N more...``."""

from __future__ import annotations

from typing import Any

from phalanx.kube.conversion import convert

__all__ = ["targets"]

_SHOWN = 2


def _target(metric: dict[str, Any], key: str) -> dict[str, Any]:
    return ((metric.get(key) or {}).get("target")) or {}


def _current(statuses: list[Any], i: int, key: str) -> dict[str, Any] | None:
    if i >= len(statuses) or not isinstance(statuses[i], dict):
        return None
    body = statuses[i].get(key)
    return (body.get("current") or {}) if isinstance(body, dict) else None


def _one(metric: dict[str, Any], statuses: list[Any], i: int) -> str:
    kind = metric.get("type")
    if kind == "Pods":
        now = _current(statuses, i, "pods")
        value = now.get("averageValue") if now else None
        return f"{value or '<unknown>'}/{_target(metric, 'pods').get('averageValue', '')}"
    if kind == "Object":
        target = _target(metric, "object")
        now = _current(statuses, i, "object") or {}
        if target.get("averageValue") is not None:
            value = now.get("averageValue") or "<unknown>"
            return f"{value}/{target['averageValue']} (avg)"
        return f"{now.get('value') or '<unknown>'}/{target.get('value', '')}"
    if kind == "Resource":
        name = (metric.get("resource") or {}).get("name", "")
        target = _target(metric, "resource")
        now = _current(statuses, i, "resource") or {}
        if target.get("averageValue") is not None:
            return f"{name}: {now.get('averageValue') or '<unknown>'}/{target['averageValue']}"
        used = now.get("averageUtilization")
        current = f"{used}%" if isinstance(used, int) else "<unknown>"
        wanted = target.get("averageUtilization")
        return f"{name}: {current}/{f'{wanted}%' if isinstance(wanted, int) else '<auto>'}"
    return "<unknown>"


def targets(obj: dict[str, Any], now: float) -> str:
    """The cell for ``obj`` (an HPA of either served version)."""
    hpa = convert(obj, "autoscaling/v2")
    metrics = [m for m in (hpa.get("spec") or {}).get("metrics") or [] if isinstance(m, dict)]
    if not metrics:
        return "<none>"
    statuses = list((hpa.get("status") or {}).get("currentMetrics") or [])
    shown = [_one(m, statuses, i) for i, m in enumerate(metrics[:_SHOWN])]
    text = ", ".join(shown)
    if len(metrics) > _SHOWN:
        return f"{text} + {len(metrics) - _SHOWN} more..."
    return text
