"""Phalanx: a workload manager for GPU clusters.

One pure scheduling core (``phalanx.engine``) driven by a discrete-event simulator
(``phalanx.sim``) and, later, by a live controller. See ARCHITECTURE.md for the layers.
"""

__version__ = "0.1.0"
__all__ = ["__version__"]
