"""The state directory finds the agents still running for it, by their command line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from phalanx.server.statedir import StateDir, agent_node


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for p in started:
        p.kill()
        p.wait()


def _sleeper(procs: list[subprocess.Popen[bytes]], *argv: str) -> int:
    """A process whose command line is ``python -c SLEEP ARGV...`` (it only sleeps)."""
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", *argv])
    procs.append(p)
    return p.pid


def test_agents_are_known_by_their_command_line_not_by_pid_files_alone(
    tmp_path: Path, procs: list[subprocess.Popen[bytes]]
) -> None:
    state = StateDir(tmp_path / "state")
    state.make()
    other = StateDir(tmp_path / "other")
    mine = _sleeper(procs, "-m", "phalanx.agent", "--socket", str(state.socket), "--node", "n1")
    unlisted = _sleeper(procs, "-m", "phalanx.agent", "--socket", str(state.socket), "--node", "n2")
    theirs = _sleeper(procs, "-m", "phalanx.agent", "--socket", str(other.socket), "--node", "n1")
    stranger = _sleeper(procs, "--node", "n3")  # a reused PID: not an agent
    state.agent_pid("n1").write_text(f"{mine}\n")
    state.agent_pid("n3").write_text(f"{stranger}\n")
    assert agent_node(mine, state.socket) == "n1"
    assert agent_node(theirs, state.socket) is None
    assert agent_node(stranger, state.socket) is None
    # The agent whose PID file was overwritten is found all the same.
    assert state.live_agents() == {"n1": [mine], "n2": [unlisted]}
    procs[0].kill()
    procs[0].wait()
    assert state.live_agents() == {"n2": [unlisted]}


def test_an_agents_child_before_its_exec_is_not_a_second_agent(
    tmp_path: Path, procs: list[subprocess.Popen[bytes]]
) -> None:
    """A task being launched is, between fork and exec, a process with the agent's command
    line; ``phalanx up`` and the crash test must not count it as a second agent."""
    state = StateDir(tmp_path / "state")
    state.make()
    forking = (
        "import os, sys, time\n"
        "child = os.fork()\n"
        "if child: print(child, flush=True)\n"
        "time.sleep(60)\n"
    )
    argv = ["-m", "phalanx.agent", "--socket", str(state.socket), "--node", "n1"]
    agent = subprocess.Popen([sys.executable, "-c", forking, *argv], stdout=subprocess.PIPE)
    procs.append(agent)
    assert agent.stdout is not None
    child = int(agent.stdout.readline())
    try:
        assert agent_node(child, state.socket) == "n1"  # the same command line
        assert state.live_agents() == {"n1": [agent.pid]}
    finally:
        os.kill(child, signal.SIGKILL)
        agent.stdout.close()
