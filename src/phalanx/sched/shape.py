"""The per-node resource shape of a job: what placement needs to know, hashable.

Two pending jobs with equal shapes and time limits fail to place identically in a pass, which
lets a pass skip the second one without trying (the equivalence class of Kubernetes' scheduler).
"""

from __future__ import annotations

from typing import ClassVar

from mypy_extensions import mypyc_attr

from phalanx.domain.jobspec import MILLI, JobSpec

__all__ = ["Shape"]


@mypyc_attr(allow_interpreted_subclasses=True)
class Shape:
    """What a frozen dataclass would be, written out: compiled (``tools/native.py``), the
    methods ``dataclasses`` generates run interpreted, and a job's shape is made, hashed and
    compared on every submission. Same ``repr``, equality and hash (that of the tuple of the
    fields) as the dataclass; nothing assigns a field after ``__init__``."""

    __match_args__: ClassVar[tuple[str, ...]] = (
        "partition",
        "nodes_min",
        "nodes_max",
        "gpus",
        "milli",
        "cpus",
        "mem_mb",
        "models",
        "features",
        "exclusive",
        "switches",
    )
    __slots__ = (
        "base_key",
        "cpus",
        "exclusive",
        "features",
        "gpus",
        "mem_mb",
        "milli",
        "models",
        "need_key",
        "nodes_max",
        "nodes_min",
        "partition",
        "switches",
    )

    def __init__(
        self,
        partition: str,
        nodes_min: int,
        nodes_max: int,
        gpus: int,
        milli: int,
        cpus: int,
        mem_mb: int,
        models: frozenset[str],
        features: frozenset[str],
        exclusive: bool,
        switches: int | None,
    ) -> None:
        self.partition = partition
        self.nodes_min = nodes_min
        self.nodes_max = nodes_max
        self.gpus = gpus
        """Whole GPUs per node."""
        self.milli = milli
        """A fraction of one shared GPU (single-task jobs only), else 0."""
        self.cpus = cpus
        self.mem_mb = mem_mb
        self.models = models
        self.features = features
        self.exclusive = exclusive
        self.switches = switches
        self.base_key: tuple[str, frozenset[str], frozenset[str]] = (partition, models, features)
        """Where it may run, as ``Occupancy``'s static masks are kept (made once: a tuple
        hashes anew at every look-up)."""
        self.need_key: tuple[object, ...] | None = (
            (partition, models, features, gpus, cpus, mem_mb, milli, exclusive)
            if gpus or cpus or mem_mb or milli or exclusive
            else None
        )
        """What one node must hold, as ``Occupancy.eligible`` keeps its masks; None when one
        node's share needs nothing."""

    def _fields(
        self,
    ) -> tuple[str, int, int, int, int, int, int, frozenset[str], frozenset[str], bool, int | None]:
        return (
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

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, Shape)
        return self is other or self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return (
            f"{type(self).__qualname__}(partition={self.partition!r}, "
            f"nodes_min={self.nodes_min!r}, nodes_max={self.nodes_max!r}, gpus={self.gpus!r}, "
            f"milli={self.milli!r}, cpus={self.cpus!r}, mem_mb={self.mem_mb!r}, "
            f"models={self.models!r}, features={self.features!r}, "
            f"exclusive={self.exclusive!r}, switches={self.switches!r})"
        )

    def __reduce__(self) -> tuple[type[Shape], tuple[object, ...]]:
        # Pickled as a call of the class with its fields.
        return Shape, self._fields()

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
