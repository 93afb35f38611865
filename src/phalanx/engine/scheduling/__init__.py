"""The scheduling pass: one numbered recipe (``recipe``) calling plugins at typed points.

``points`` resolves a profile's plugins once; ``context`` is the narrow view plugins get;
``statuses``, ``members``, ``preemption`` and ``limits`` own the engine-side steps.
"""

from phalanx.engine.scheduling.recipe import Recipe

__all__ = ["Recipe"]
