"""Launch commands: a ``Launch`` turned into one typed command per node of its allocation,
with every task's argv, working directory, environment and output files worked out here,
so that agents stay simple."""

from __future__ import annotations

import os
import pwd
from collections.abc import Callable

from phalanx.domain.cluster import Cluster
from phalanx.domain.jobspec import NODE_ADDRESS_AT_LAUNCH, NODE_NAME_AT_LAUNCH
from phalanx.engine import Launch
from phalanx.live.probecodec import probes_wire
from phalanx.live.taskenv import expand_pattern, task_environment, task_places
from phalanx.protocol.agent import AgentCommand, TaskSpec

__all__ = ["DEFAULT_PATH", "launch_commands", "master_port"]

DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
_MARK = "$(phalanx.node."
"""What ``NODE_NAME_AT_LAUNCH`` and ``NODE_ADDRESS_AT_LAUNCH`` begin with."""

_HOST = os.uname().nodename.split(".")[0]
"""This controller's host, short, as Slurm names hosts (``SLURM_WORKING_CLUSTER``)."""


def master_port(job_id: int) -> int:
    """Where rank 0 of torch.distributed listens: Lightning's SLURMEnvironment rule
    (15000 + the job id's last four digits), so every node derives the same port."""
    return 15000 + job_id % 10000


def launch_commands(
    cluster: Cluster,
    cmd: Launch,
    master_addr: str,
    *,
    as_user: bool,
    limit: int | None = None,
    address: Callable[[str], str] | None = None,
) -> dict[str, AgentCommand]:
    """node name -> its launch command (seq and epoch not set: sending sets them).
    ``limit``: a step of that many tasks. ``address``: a node's address (None: 127.0.0.1),
    for ``NODE_ADDRESS_AT_LAUNCH``. Raises ``KeyError`` for a user unknown here when tasks
    must run as the submitter (``as_user``)."""
    spec = cmd.spec
    names = [cluster.nodes[i].name for i in cmd.alloc.nodes]
    uid = gid = None
    base_env = dict(spec.environment)
    ids = _user_ids(spec.user)
    if as_user and spec.user != "root":
        if ids is None:
            raise KeyError(f"getpwnam(): name not found: '{spec.user}'")  # no such user here
        uid, gid = ids
    base_env.setdefault("PATH", DEFAULT_PATH)
    base_env.setdefault("USER", spec.user)
    workdir = os.path.abspath(spec.workdir)
    array = {"array_job_id": cmd.array_job_id, "array_task_id": cmd.array_task_id}
    default_out = "slurm-%A_%a.out" if cmd.array_job_id is not None else "slurm-%j.out"
    per_node: dict[str, AgentCommand] = {}
    places = task_places(cmd.alloc, spec.tasks_per_node)
    if spec.batch:
        places = places[:1]  # the script, once, on the first node
    elif limit is not None:
        places = places[:limit]  # a step of n tasks: block distribution, the last node
        # may have fewer
    for place in places:
        node = names[place.node_position]
        env = dict(base_env)
        env.update(
            task_environment(
                job_id=cmd.job_id,
                spec=spec,
                alloc=cmd.alloc,
                cluster=cluster,
                place=place,
                submit_dir=workdir,
                master_port=master_port(cmd.job_id),
                master_addr=master_addr,
                uid=ids[0] if ids else None,
                gid=ids[1] if ids else None,
                controller_host=_HOST,
                **array,
            )
        )

        def path(pattern: str, task: int = place.global_rank, on: str = node) -> str:
            name = expand_pattern(
                pattern,
                job_id=cmd.job_id,
                name=spec.name,
                user=spec.user,
                node=on,
                task=task,
                **array,
            )
            return os.path.join(workdir, name)

        own = spec.tasks[place.global_rank] if spec.tasks else None
        argv, cwd, output = list(spec.command), workdir, spec.output or default_out
        restart, probes = "Never", None
        if own is not None:
            # a gang whose tasks differ (a PyTorchJob's pods): the task's own variables win
            # over the ones set here, as a container's env wins over injected ones
            argv = list(own.command)
            env.update(own.environment)
            cwd = os.path.abspath(own.workdir) if own.workdir is not None else workdir
            output = own.output or output
            restart = own.restart
            probes = probes_wire(own.probes) if own.probes is not None else None
        if _MARK in "".join((*env.values(), *argv)):
            at = address(node) if address is not None else ""
            argv = [_placed(a, node, at) for a in argv]
            env = {k: _placed(v, node, at) for k, v in env.items()}
        command = per_node.get(node)
        if command is None:
            command = per_node[node] = AgentCommand(
                kind="launch",
                job_id=cmd.job_id,
                run=cmd.run,
                cpus=cmd.alloc.cpus,
                memory_mb=cmd.alloc.mem_mb,
            )
        command.tasks.append(
            TaskSpec.model_construct(
                argv=argv,
                cwd=cwd,
                env=env,
                stdout=path(output),
                stderr=path(spec.error) if spec.error is not None else None,
                open_mode=_open_mode(spec.extra, cmd.run, place.node_position),
                uid=uid,
                gid=gid,
                rank=place.global_rank,
                restart=restart,
                probes=probes,
            )
        )
    return per_node


def _user_ids(user: str) -> tuple[int, int] | None:
    """The uid and gid of ``user`` here (``SLURM_JOB_UID``, ``SLURM_JOB_GID``), None if this
    machine does not know the name."""
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        return None
    return entry.pw_uid, entry.pw_gid


def _open_mode(extra: tuple[tuple[str, str], ...], run: int, position: int) -> str:
    """``--open-mode``: Slurm truncates the output at the first start and appends after a
    requeue. Only the first node truncates: the others share the file (emulated nodes)."""
    if run > 1 or position > 0 or dict(extra).get("open_mode") == "append":
        return "append"
    return "truncate"


def _placed(text: str, node: str, address: str) -> str:
    """``text`` with the node known at launch in place of its markers."""
    if _MARK not in text:
        return text
    text = text.replace(NODE_NAME_AT_LAUNCH, node)
    return text.replace(NODE_ADDRESS_AT_LAUNCH, address or "127.0.0.1")
