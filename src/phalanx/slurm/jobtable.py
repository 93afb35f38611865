"""The option tables of ``sbatch``, ``srun`` and ``salloc``: every option Slurm 22.05 gives
each (``src/common/slurm_opt.c``, ``common_options[]``: an option belongs to a command when
it has that command's setter), with what Phalanx does with it (``commandline`` says how a
table reads). Most options are the three commands' shared job options, so there is one list:
a row names the commands it is theirs in (``b`` sbatch, ``s`` srun, ``a`` salloc).
"""

from __future__ import annotations

from phalanx.slurm.commandline import (
    FLAG,
    IGNORED,
    IMPLEMENTED,
    OPTIONAL,
    REFUSED,
    VALUE,
    Option,
    OptionTable,
)

__all__ = ["EXIT_USAGE", "PHALANX_OWN", "SALLOC", "SBATCH", "SRUN"]

EXIT_USAGE = 255
"""Slurm's status for a job command line it cannot read (it calls ``exit(-1)``)."""

# Why an option means nothing here, for the options that share a reason.
_CLUSTER = "one cluster: Phalanx is not federated"
_LAYOUT = "CPUs are allocated per node, not by socket, core or thread"
_BIND = "GPUs go to tasks whole (CUDA_VISIBLE_DEVICES); CPUs and memory are not bound"
_FREQ = "CPU and GPU frequencies and power are not managed by Phalanx"
_PLACE = "placement is the scheduler's, by topology score"
_MAIL = "Phalanx sends no mail"
_STEP = "srun's launch tuning: the node agents start the tasks"
_FILES = "the program runs from where it is (a shared file system)"

_N, _O, _V = FLAG, OPTIONAL, VALUE
_I, _G, _R = IMPLEMENTED, IGNORED, REFUSED

# (long name, short, takes, commands, status, note, aliases)
_ROWS: tuple[tuple[str, str, str, str, str, str, tuple[str, ...]], ...] = (
    ("accel-bind", "", _V, "s", _G, _BIND, ()),
    ("account", "A", _V, "bsa", _I, "", ()),
    ("acctg-freq", "", _V, "bsa", _G, "agents measure usage when tasks end, not by sampling", ()),
    ("array", "a", _V, "b", _I, "", ()),
    ("batch", "", _V, "b", _G, "the batch script runs on the job's first node", ()),
    ("bb", "", _V, "bsa", _R, "burst buffers are not supported by Phalanx", ()),
    ("bbf", "", _V, "bsa", _R, "burst buffers are not supported by Phalanx", ()),
    ("bcast", "", _O, "s", _G, _FILES, ()),
    ("bcast-exclude", "", _V, "s", _G, _FILES, ()),
    ("begin", "b", _V, "bsa", _I, "", ()),
    ("bell", "", _N, "a", _G, "no terminal bell", ()),
    ("chdir", "D", _V, "bsa", _I, "", ()),
    ("cluster-constraint", "", _V, "bsa", _G, _CLUSTER, ()),
    (
        "clusters",
        "M",
        _V,
        "bsa",
        _I,
        "`all` or a list naming this cluster (its ClusterName) is this cluster; "
        "any other name is a cluster that cannot be reached, as Slurm says",
        ("cluster",),
    ),
    ("comment", "", _V, "bsa", _I, "", ()),
    ("compress", "", _O, "s", _G, _FILES, ()),
    ("constraint", "C", _V, "bsa", _I, "", ()),
    ("container", "", _V, "bsa", _R, "OCI containers are not supported by Phalanx", ()),
    ("context", "", _V, "bsa", _G, "no SELinux contexts", ()),
    ("contiguous", "", _N, "bsa", _G, _PLACE, ()),
    ("core-spec", "S", _V, "bsa", _G, "no specialized cores: every CPU is allocatable", ()),
    ("cores-per-socket", "", _V, "bsa", _G, _LAYOUT, ()),
    ("cpu-bind", "", _V, "s", _G, _BIND, ("cpu_bind",)),
    ("cpu-freq", "", _V, "bsa", _G, _FREQ, ()),
    ("cpus-per-gpu", "", _V, "bsa", _I, "", ()),
    ("cpus-per-task", "c", _V, "bsa", _I, "", ()),
    ("deadline", "", _V, "bsa", _G, "jobs are not removed for missing a deadline", ()),
    ("debugger-test", "", _N, "s", _G, _STEP, ()),
    ("delay-boot", "", _V, "bsa", _G, "Phalanx does not reboot nodes", ()),
    ("dependency", "d", _V, "bsa", _I, "", ()),
    ("disable-status", "X", _N, "s", _G, "Ctrl-C signals the tasks at once", ()),
    ("distribution", "m", _V, "bsa", _G, "tasks are laid out in block order", ()),
    ("epilog", "", _V, "s", _R, "srun prolog and epilog programs are not run by Phalanx", ()),
    ("error", "e", _V, "bs", _I, "", ()),
    ("exact", "", _N, "s", _G, "a step gets the tasks it asks for within the allocation", ()),
    ("exclude", "x", _V, "bsa", _G, _PLACE + ": node lists are not constraints", ()),
    (
        "elastic",
        "",
        _N,
        "b",
        _I,
        "Phalanx's own, not Slurm's: with --nodes=MIN-MAX the running job may be grown up to "
        "MAX nodes (onto nodes no waiting job could use) and shrunk down to MIN (for a job "
        "that may preempt it) instead of being preempted whole",
        (),
    ),
    ("exclusive", "", _O, "bsa", _I, "", ()),
    ("export", "", _V, "bs", _I, "", ()),
    ("export-file", "", _V, "b", _G, "the job gets the submitting environment (--export)", ()),
    ("extra-node-info", "B", _V, "bsa", _G, _LAYOUT, ()),
    ("get-user-env", "", _O, "ba", _G, "the job gets the submitting environment (--export)", ()),
    ("gid", "", _V, "bsa", _R, "jobs run as their submitter (the controller knows the caller)", ()),
    ("gpu-bind", "", _V, "bsa", _G, _BIND, ()),
    ("gpu-freq", "", _V, "bsa", _G, _FREQ, ()),
    ("gpus", "G", _V, "bsa", _I, "", ()),
    ("gpus-per-node", "", _V, "bsa", _I, "", ()),
    ("gpus-per-socket", "", _V, "bsa", _G, _LAYOUT, ()),
    ("gpus-per-task", "", _V, "bsa", _I, "", ()),
    ("gres", "", _V, "bsa", _I, "", ()),
    ("gres-flags", "", _V, "bsa", _G, _BIND, ()),
    (
        "het-group",
        "",
        _V,
        "s",
        _R,
        "heterogeneous jobs are not supported by Phalanx",
        ("pack-group",),
    ),
    ("help", "h", _N, "bsa", _I, "", ()),
    ("hint", "", _V, "bsa", _G, _LAYOUT, ()),
    ("hold", "H", _N, "bsa", _I, "", ()),
    ("ignore-pbs", "", _N, "b", _G, "#PBS lines are never read", ()),
    (
        "immediate",
        "I",
        _O,
        "sa",
        _R,
        "Phalanx cannot withdraw a request that does not start at once",
        (),
    ),
    ("input", "i", _V, "bs", _G, "standard input is not forwarded to tasks", ()),
    ("interactive", "", _N, "s", _G, _STEP, ()),
    ("job-name", "J", _V, "bsa", _I, "", ()),
    ("jobid", "", _V, "s", _I, "runs the step in that job's allocation, as SLURM_JOB_ID does", ()),
    ("kill-command", "K", _O, "a", _G, "the command ends with the allocation", ()),
    ("kill-on-bad-exit", "K", _O, "s", _G, "a step ends when all its tasks have ended", ()),
    (
        "kill-on-invalid-dep",
        "",
        _V,
        "b",
        _G,
        "a never-satisfied dependency leaves the job pending",
        (),
    ),
    ("label", "l", _N, "s", _I, "", ()),
    ("licenses", "L", _V, "bsa", _R, "Invalid license specification: Phalanx has no licenses", ()),
    ("mail-type", "", _V, "bsa", _G, _MAIL, ()),
    ("mail-user", "", _V, "bsa", _G, _MAIL, ()),
    ("mcs-label", "", _V, "bsa", _G, "no MCS plugin", ()),
    ("mem", "", _V, "bsa", _I, "", ()),
    ("mem-bind", "", _V, "bsa", _G, _BIND, ()),
    ("mem-per-cpu", "", _V, "bsa", _I, "", ()),
    ("mem-per-gpu", "", _V, "bsa", _I, "", ()),
    ("mincpus", "", _V, "bsa", _G, "CPUs per node follow from tasks and --cpus-per-task", ()),
    (
        "mpi",
        "",
        _V,
        "s",
        _I,
        "`none` (tasks get SLURM_* variables: OpenMPI's mpirun, torchrun) and `list`; PMI2 "
        "and PMIx are refused with a message naming `none`",
        (),
    ),
    ("msg-timeout", "", _V, "s", _G, _STEP, ()),
    ("multi-prog", "", _N, "s", _R, "--multi-prog configuration files are not supported", ()),
    ("network", "", _V, "bsa", _G, "no network (switch window) resources", ()),
    ("nice", "", _O, "bsa", _I, "", ()),
    (
        "no-allocate",
        "Z",
        _N,
        "s",
        _R,
        "only SlurmUser or root may run tasks without an allocation",
        (),
    ),
    ("no-bell", "", _N, "a", _G, "no terminal bell", ()),
    (
        "no-kill",
        "k",
        _O,
        "bsa",
        _G,
        "a job whose node fails ends (gangs run whole or not at all)",
        (),
    ),
    ("no-requeue", "", _N, "b", _I, "", ()),
    ("no-shell", "", _N, "a", _R, "an allocation lives as long as salloc's command", ()),
    ("nodefile", "F", _V, "bsa", _G, _PLACE + ": node lists are not constraints", ()),
    ("nodelist", "w", _V, "bsa", _G, _PLACE + ": node lists are not constraints", ()),
    ("nodes", "N", _V, "bsa", _I, "", ()),
    ("ntasks", "n", _V, "bsa", _I, "", ()),
    ("ntasks-per-core", "", _V, "bsa", _G, _LAYOUT, ()),
    ("ntasks-per-gpu", "", _V, "bsa", _G, "give tasks GPUs with --gpus-per-task", ()),
    ("ntasks-per-node", "", _V, "bsa", _I, "", ("tasks-per-node",)),
    ("ntasks-per-socket", "", _V, "bsa", _G, _LAYOUT, ()),
    ("ntasks-per-tres", "", _V, "bsa", _G, "give tasks GPUs with --gpus-per-task", ()),
    ("open-mode", "", _V, "bs", _I, "", ()),
    ("output", "o", _V, "bs", _I, "", ()),
    (
        "overcommit",
        "O",
        _N,
        "bsa",
        _G,
        "one task per allocated CPU set; nothing is overcommitted",
        (),
    ),
    ("overlap", "", _O, "s", _G, "steps share their job's allocation", ()),
    ("oversubscribe", "s", _N, "bsa", _G, "nodes are shared only as far as their resources go", ()),
    ("parsable", "", _N, "b", _I, "", ()),
    ("partition", "p", _V, "bsa", _I, "", ()),
    ("power", "", _V, "bsa", _G, _FREQ, ()),
    ("prefer", "", _V, "bsa", _G, "no soft features: use --constraint", ()),
    ("preserve-env", "E", _N, "s", _G, "a step's tasks get srun's environment as it is", ()),
    ("priority", "", _V, "bsa", _G, "priority is multifactor; operators set it with the API", ()),
    ("profile", "", _V, "bsa", _G, "no acct_gather profiling", ()),
    ("prolog", "", _V, "s", _R, "srun prolog and epilog programs are not run by Phalanx", ()),
    ("propagate", "", _O, "bs", _G, "the agent sets the tasks' resource limits", ()),
    ("pty", "", _N, "s", _G, "output is relayed through pipes, not a pseudo-terminal", ()),
    ("qos", "q", _V, "bsa", _I, "", ()),
    ("quiet", "Q", _N, "bsa", _I, "", ()),
    ("quit-on-interrupt", "", _N, "s", _G, "Ctrl-C signals the tasks at once", ()),
    ("reboot", "", _N, "bsa", _G, "Phalanx does not reboot nodes", ()),
    ("relative", "r", _V, "s", _G, _PLACE, ()),
    ("requeue", "", _N, "b", _I, "", ()),
    ("reservation", "", _V, "bsa", _R, "Requested reservation is invalid: Phalanx has none", ()),
    ("resv-ports", "", _O, "s", _G, _STEP, ()),
    ("send-libs", "", _O, "s", _G, _FILES, ()),
    ("signal", "", _V, "bsa", _I, "", ()),
    ("slurmd-debug", "", _V, "s", _G, _STEP, ()),
    ("sockets-per-node", "", _V, "bsa", _G, _LAYOUT, ()),
    ("spread-job", "", _N, "bsa", _G, _PLACE, ()),
    ("switches", "", _V, "bsa", _I, "", ()),
    ("task-epilog", "", _V, "s", _R, "task prolog and epilog programs are not run by Phalanx", ()),
    ("task-prolog", "", _V, "s", _R, "task prolog and epilog programs are not run by Phalanx", ()),
    ("test-only", "", _N, "b", _I, "", ()),
    ("test-only", "", _N, "s", _R, "use sbatch --test-only to ask when a job would start", ()),
    ("thread-spec", "", _V, "bsa", _G, "no specialized threads: every CPU is allocatable", ()),
    ("threads", "T", _V, "s", _G, _STEP, ()),
    ("threads-per-core", "", _V, "bsa", _G, _LAYOUT, ()),
    ("time", "t", _V, "bsa", _I, "", ()),
    ("time-min", "", _V, "bsa", _G, "jobs are not shrunk to fit a backfill window", ()),
    ("tmp", "", _V, "bsa", _G, "temporary disk is not a scheduled resource", ()),
    ("uid", "", _V, "bsa", _R, "jobs run as their submitter (the controller knows the caller)", ()),
    ("unbuffered", "u", _N, "s", _I, "", ()),
    ("usage", "", _N, "bsa", _I, "", ()),
    ("use-min-nodes", "", _N, "bsa", _G, _PLACE, ()),
    ("verbose", "v", _N, "bsa", _I, "", ()),
    ("version", "V", _N, "bsa", _I, "", ()),
    ("wait", "W", _N, "b", _I, "", ()),
    ("wait", "W", _V, "s", _G, "a step ends when all its tasks have ended", ()),
    (
        "wait-all-nodes",
        "",
        _V,
        "ba",
        _G,
        "allocated nodes are up: Phalanx does not power them down",
        (),
    ),
    ("wckey", "", _V, "bsa", _G, "no workload characterization keys", ()),
    ("whole", "", _N, "s", _G, "steps share their job's allocation", ()),
    ("wrap", "", _V, "b", _I, "", ()),
)


def _table(prog: str, letter: str) -> OptionTable:
    return OptionTable(
        prog,
        (
            Option(name, short, kind, status, note, aliases)
            for name, short, kind, commands, status, note, aliases in _ROWS
            if letter in commands
        ),
        status=EXIT_USAGE,
        permute=False,
    )


PHALANX_OWN = frozenset({"elastic"})
"""Options of Phalanx's own, which Slurm does not have."""

SBATCH = _table("sbatch", "b")
SRUN = _table("srun", "s")
SALLOC = _table("salloc", "a")
