"""Configuration files that are not UTF-8 are a ``ConfigError`` naming the file (exit 2 from
the commands), never a ``UnicodeDecodeError`` traceback.

Found with hostile inputs: a binary slurm.conf, topology.conf, gres.conf or Include file (and a
binary ``--cluster`` YAML for ``phalanx simulate``) ended ``phalanx simulate``/``up`` with a
traceback, as their handlers take ``OSError`` and ``PhalanxError`` only."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from phalanx.errors import ConfigError
from phalanx.server.slurmconf_files import cluster_from_slurm_conf
from phalanx.sim.experiment import cluster_file

REF = Path(__file__).parent.parent / "config" / "data" / "slurm-ref"
GARBAGE = b"NodeName=n1 \xff\xfe\n"


@pytest.mark.parametrize("name", ["slurm.conf", "topology.conf", "gres.conf", "extra.conf"])
def test_a_file_that_is_not_utf8_is_named(tmp_path: Path, name: str) -> None:
    conf = tmp_path / "conf"
    shutil.copytree(REF, conf)
    if name == "extra.conf":
        with (conf / "slurm.conf").open("a") as handle:
            handle.write("Include extra.conf\n")
    (conf / name).write_bytes(GARBAGE)
    with pytest.raises(ConfigError) as info:
        cluster_from_slurm_conf(conf / "slurm.conf")
    assert str(conf / name) in str(info.value)
    assert "not UTF-8 text (byte 0xff at offset 12)" in str(info.value)


def test_the_reference_files_still_read(tmp_path: Path) -> None:
    assert len(cluster_from_slurm_conf(REF / "slurm.conf").nodes) == 4


def test_a_cluster_yaml_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_bytes(b"name: x\nnodes: \xff\n")
    with pytest.raises(ConfigError, match="not UTF-8 text") as info:
        cluster_file(str(path))
    assert info.value.source == str(path)
