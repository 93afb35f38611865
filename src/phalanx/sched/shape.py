"""The per-node resource shape of a job: what placement needs to know, hashable.

Two pending jobs with equal shapes and time limits fail to place identically in a pass, which
lets a pass skip the second one without trying (the equivalence class of Kubernetes' scheduler).
"""

from __future__ import annotations

from dataclasses import dataclass

from mypy_extensions import mypyc_attr

from phalanx.domain.jobspec import MILLI, JobSpec

__all__ = ["Shape"]


@mypyc_attr(allow_interpreted_subclasses=True)
@dataclass(frozen=True, slots=True)
class Shape:
    partition: str
    nodes_min: int
    nodes_max: int
    gpus: int
    """Whole GPUs per node."""
    milli: int
    """A fraction of one shared GPU (single-task jobs only), else 0."""
    cpus: int
    mem_mb: int
    models: frozenset[str]
    features: frozenset[str]
    exclusive: bool
    switches: int | None

    def __reduce__(self) -> tuple[type[Shape], tuple[object, ...]]:
        # Pickled as a call of the class with its fields: compiled (tools/native.py), the
        # default unpickling would set them through the frozen class's ``__setattr__``.
        return Shape, (
            self.partition,
            self.nodes_min,
            self.nodes_max,
            self.gpus,
            self.milli,
            self.cpus,
            self.mem_mb,
            self.models,
            self.features,
            self.exclusive,
            self.switches,
        )

    @staticmethod
    def of(spec: JobSpec, partition: str) -> Shape:
        return Shape(
            partition=partition,
            nodes_min=spec.nodes_min,
            nodes_max=spec.nodes_max,
            gpus=spec.gpus_per_node,
            milli=spec.gpu_milli,
            cpus=spec.cpus_per_node,
            mem_mb=spec.mem_per_node_mb,
            models=spec.gpu_models,
            features=spec.features,
            exclusive=spec.exclusive,
            switches=spec.switches,
        )

    def gpu_equivalent(self, nodes: int) -> float:
        return nodes * self.gpus + self.milli / MILLI
