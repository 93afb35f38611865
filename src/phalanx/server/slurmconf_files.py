"""Read a slurm.conf with its ``Include`` files and its sibling topology.conf and gres.conf.

The parsing is ``phalanx.config.slurmconf``; this module only reads files. ``Include`` paths
are relative to the directory of the file that includes them, and may be globs.
"""

from __future__ import annotations

import glob
from collections.abc import Sequence
from pathlib import Path

from phalanx.config.slurmconf import cluster_from_slurm_conf_text
from phalanx.config.textfile import read_text
from phalanx.domain.cluster import Cluster
from phalanx.errors import ConfigError

__all__ = ["cluster_from_slurm_conf"]


def _include(path: str, including: str) -> Sequence[tuple[str, str]]:
    target = Path(including).parent / Path(path).expanduser()
    if glob.has_magic(str(target)):
        matches = sorted(glob.glob(str(target)))
        if not matches:
            raise ConfigError(f"no file matches {str(target)!r}")
        targets = [Path(m) for m in matches]
    else:
        targets = [target]
    out = []
    for t in targets:
        try:
            out.append((read_text(t), str(t)))
        except OSError as exc:
            raise ConfigError(f"cannot read {str(t)!r}: {exc.strerror or exc}") from None
        except ConfigError as exc:  # the including line is named; name the included file too
            raise ConfigError(f"cannot read {str(t)!r}: {exc.message}") from None
    return out


def _sibling(path: Path, name: str) -> tuple[str | None, str]:
    sibling = path.parent / name
    try:
        return read_text(sibling), str(sibling)
    except FileNotFoundError:
        return None, str(sibling)


def cluster_from_slurm_conf(path: str | Path) -> Cluster:
    """The cluster of the slurm.conf at ``path``, with topology.conf and gres.conf beside it if
    they exist. Raises ``ConfigError`` for what cannot be used, ``OSError`` when ``path`` or a
    sibling that exists cannot be read."""
    conf = Path(path)
    topology, topology_source = _sibling(conf, "topology.conf")
    gres, gres_source = _sibling(conf, "gres.conf")
    return cluster_from_slurm_conf_text(
        read_text(conf),
        topology,
        gres,
        str(conf),
        include=_include,
        topology_source=topology_source,
        gres_source=gres_source,
    )
