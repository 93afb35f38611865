"""Batch scripts: #SBATCH lines as Slurm reads them, the shebang, how the script runs."""

from __future__ import annotations

import os
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from phalanx.slurm.commandline import CommandLineError
from phalanx.slurm.script import (
    command_for,
    directive_args,
    parse_begin,
    require_shebang,
    wrap_script,
)


def test_directives_in_every_form_slurm_accepts() -> None:
    text = (
        "#!/bin/bash\n"
        "\n"
        "# Parameters\n"
        "#SBATCH --job-name=a\n"
        "#SBATCH   -N   2   \n"
        "#SBATCH\t-t\t5\n"
        "#SBATCH -n 4 -c 2 # four tasks\n"
        "#SBATCH --comment=\"two words\" -o 'x y.out'\n"
        "#SBATCHX --not-one\n"
        " #SBATCH --indented-is-a-comment\n"
        "##SBATCH --commented-out\n"
        "echo start\n"
        "#SBATCH --after-the-first-command\n"
    )
    assert directive_args(text) == [
        ["--job-name=a"],
        ["-N", "2"],
        ["-t", "5"],
        ["-n", "4", "-c", "2"],
        ["--comment=two words", "-o", "x y.out"],
    ]


def test_the_shebang_is_required() -> None:
    with pytest.raises(CommandLineError) as caught:
        require_shebang("echo hi\n", "sbatch")
    assert caught.value.status == 1
    assert caught.value.lines == [
        "sbatch: error: This does not look like a batch script.  The first",
        "sbatch: error: line must start with #! followed by the path to an interpreter.",
        "sbatch: error: For instance: #!/bin/sh",
    ]
    with pytest.raises(CommandLineError):
        require_shebang("#!/bin/sh\r\necho\r\n", "sbatch")
    require_shebang("#!/bin/sh\n", "sbatch")


def test_a_shell_script_travels_in_the_command() -> None:
    text = "#!/usr/bin/env bash\necho hi\n"
    assert command_for(text, "job.sh", ["a"], {}) == (
        ["/usr/bin/env", "bash", "-c", text, "job.sh", "a"],
        None,
    )
    wrapped = wrap_script("echo hi")
    assert command_for(wrapped, "sbatch", [], {})[0][:2] == ["/bin/sh", "-c"]
    assert command_for("#!/bin/bash -l\n", "s", [], {})[0][:3] == ["/bin/bash", "-l", "-c"]


def test_another_interpreter_gets_a_private_spool_file(tmp_path: Path) -> None:
    text = f"#!{sys.executable}\nprint(1)\n"
    command, spooled = command_for(text, "job.py", ["x"], {"HOME": str(tmp_path)})
    assert spooled is not None and command == [spooled, "x"]
    assert Path(spooled).read_text() == text
    assert os.stat(spooled).st_mode & 0o777 == 0o700
    assert Path(spooled).parent == tmp_path / ".cache" / "phalanx" / "spool"


NOW = datetime(2026, 3, 1, 12, 0, 0).timestamp()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("now", datetime(2026, 3, 1, 12, 0, 0)),
        ("now+60", datetime(2026, 3, 1, 12, 1, 0)),
        ("now+1hour", datetime(2026, 3, 1, 13, 0, 0)),
        ("now+2days", datetime(2026, 3, 3, 12, 0, 0)),
        ("16:00", datetime(2026, 3, 1, 16, 0, 0)),
        ("10:30", datetime(2026, 3, 2, 10, 30, 0)),
        ("midnight", datetime(2026, 3, 2, 0, 0, 0)),
        ("teatime", datetime(2026, 3, 1, 16, 0, 0)),
        ("tomorrow", datetime(2026, 3, 2, 0, 0, 0)),
        ("2026-04-01T08:00:00", datetime(2026, 4, 1, 8, 0, 0)),
    ],
)
def test_begin(text: str, expected: datetime) -> None:
    assert parse_begin(text, "sbatch", NOW) == round(expected.timestamp() * 1000)


def test_begin_defaults_to_the_clock() -> None:
    assert abs(parse_begin("now", "sbatch") - time.time() * 1000) < 5000
