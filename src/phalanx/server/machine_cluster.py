"""A cluster of one node, this machine, when no cluster definition is given."""

from __future__ import annotations

from phalanx.config.clusterspec import cluster_from_yaml
from phalanx.domain.cluster import Cluster

__all__ = ["one_node_cluster"]


def one_node_cluster(name: str, *, gpus: int, gpu_model: str, cpus: int, memory_mb: int) -> Cluster:
    text = f"""
name: local
nodes:
  - names: {name}
    gpus: {gpus}
    gpu_model: {gpu_model or "gpu"}
    cpus: {cpus}
    memory: {memory_mb}M
partitions:
  - name: main
    nodes: ALL
    default: true
qos:
  - name: normal
    priority: 0
  - name: high
    priority: 1000
    preempt: [normal]
    preempt_mode: requeue
"""
    return cluster_from_yaml(text, f"<this machine {name}>")
