"""Draining, downing and resuming nodes with ``scontrol update NodeName=...``, and how
``sinfo`` and ``scontrol show node`` show it, against Slurm 22.05's own output
(``drain_reference.txt``: the same commands on the reference Slurm, 4 nodes of 8 GPUs)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from slurm_cluster import run, submit

from phalanx.server.localcluster import LocalCluster
from phalanx.slurm import scontrol, sinfo

REFERENCE = Path(__file__).with_name("drain_reference.txt")
STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")
# The reference's nodes, n03 first: the first job goes to the first node that fits, and
# the reference's job ran on n03.
YAML = (
    """name: refcluster
nodes:
"""
    + "".join(
        f"""  - names: {name}
    gpus: 8
    gpu_model: h100
    cpus: 64
    memory: 500G
"""
        for name in ("n03", "n01", "n02", "n04")
    )
    + """partitions:
  - name: gpu
    nodes: ALL
    default: true
"""
)


def _reference() -> dict[str, list[tuple[str, int]]]:
    """Command -> (its output, stdout and stderr together, and exit status) of each run of
    it, in order."""
    out: dict[str, list[tuple[str, int]]] = {}
    for block in REFERENCE.read_text().split("\n$ ")[1:]:
        command, _, rest = block.partition("\n")
        text, _, rc = rest.rpartition("[rc=")
        out.setdefault(command, []).append((text, int(rc.split("]")[0])))
    return out


REF = _reference()


def _next(command: str) -> tuple[str, int]:
    """The reference's next run of ``command`` (each is compared once, in order)."""
    return REF[command].pop(0)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    state = tmp_path_factory.mktemp("drain")
    with LocalCluster(state, YAML) as local:
        yield local


def _run(cluster: LocalCluster, command: str) -> tuple[str, int]:
    words = command.split()
    # The reference's reasons and formats were typed in quotes (the capture lost them):
    # "Reason=bad gpu xid 79" and "-o '%N %T'" are one argument each.
    for i, word in enumerate(words):
        if word.lower().startswith("reason=") or word == "-o":
            at = i + (word == "-o")
            words = [*words[:at], " ".join(words[at:])]
            break
    main = {"scontrol": scontrol.main, "sinfo": sinfo.main}[words[0]]
    out, err, rc = run(main, words[1:], cluster.state_dir)
    return out + err, rc


def _same(cluster: LocalCluster, command: str) -> None:
    """Phalanx prints what Slurm printed, but for the times."""
    want, rc = _next(command)
    got, got_rc = _run(cluster, command)
    assert (STAMP.sub("T", got), got_rc) == (STAMP.sub("T", want), rc), got


def test_drain_down_and_resume_as_slurm(cluster: LocalCluster, tmp_path: Path) -> None:
    _same(cluster, "scontrol update nodename=n02 state=drain")  # no reason: refused
    _same(cluster, "scontrol update nodename=n02 state=drain reason=bad gpu xid 79")
    tmp_path.chmod(0o755)
    [job] = submit(cluster, tmp_path, command=["sleep", "300"], name="wrap")
    cluster.wait([job], ("RUNNING",), final=False)
    assert cluster.job(job)["nodelist"] == "n03"  # as the reference's
    _same(cluster, "scontrol update nodename=n03 state=drain reason=pcie gen3")
    _same(cluster, "sinfo")
    _same(cluster, "sinfo -R")
    _same(cluster, "sinfo -o %N %T %E %H %u")
    _same(cluster, "sinfo -R -o %20E %9u %19H %N")
    got, _ = _run(cluster, "scontrol show node n02")
    assert "State=IDLE+DRAIN " in got and STAMP.sub("T", got).rstrip().endswith(
        "Reason=bad gpu xid 79 [root@T]"
    )
    got, _ = _run(cluster, "scontrol show node n03")
    assert "State=MIXED+DRAIN " in got and "Reason=pcie gen3 [root@" in got
    got, _ = _run(cluster, "sinfo -N -l")
    rows = {r.split()[0]: r for r in got.splitlines()[2:]}
    assert rows["n02"].split()[3] == "drained" and rows["n02"].rstrip().endswith("bad gpu xid 79")
    assert rows["n03"].split()[3] == "draining"
    assert rows["n01"].split()[3] == "idle" and rows["n01"].rstrip().endswith("none")
    _same(cluster, "scontrol update nodename=n02 state=resume")
    _same(cluster, "scontrol update nodename=n02 state=resume")  # not drained now: refused
    _same(cluster, "scontrol update nodename=n03 state=undrain")
    _same(cluster, "scontrol update nodename=n09 state=drain reason=x")
    got, rc = _run(cluster, "scontrol update nodename=n01 state=bogus reason=x")
    assert rc == 1 and got.startswith("Invalid input: state=bogus\nRequest aborted\n")
    _same(cluster, "scontrol update nodename=n01 state=down reason=hw")
    _same(cluster, "sinfo -R")  # only n01, down, "hw"
    got, _ = _run(cluster, "scontrol show node n01")
    assert "State=DOWN " in got and "Reason=hw [root@" in got
    _same(cluster, "scontrol update nodename=n01 state=resume")
    _same(cluster, "scontrol update nodename=n[01-02] state=drain reason=maint")
    got, _ = _run(cluster, "sinfo -R")
    want = _next("sinfo -R")[0]
    assert STAMP.sub("T", got) == STAMP.sub("T", want)
    got, _ = _run(cluster, "sinfo --list-reasons --long")
    want = _next("sinfo --list-reasons --long")[0]
    # The reference's n01 had just been resumed and had not answered yet (drain*): its row
    # printed apart from n02's. Here both answer, so they print alike, in one row.
    head, n01, n02 = (STAMP.sub("T", line) for line in want.splitlines()[1:])
    assert n01.replace("drain* n01", "drain  n02") == n02
    assert STAMP.sub("T", got).splitlines()[1:] == [head, n02.replace("n02", "n[01-02]")]
    _same(cluster, "scontrol update nodename=n[01-02] state=resume")
    got, _ = _run(cluster, "sinfo -t drain")
    assert got == _next("sinfo -t drain")[0]
