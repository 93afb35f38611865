"""Compile the scheduling core's hot modules with mypyc (C extensions next to their .py).

    python tools/native.py ensure   # build if a compiled module's .py is newer than its .so
    python tools/native.py build    # build now
    python tools/native.py clean    # remove the .so files: pure Python again
    python tools/native.py stale    # list the .so files older than their .py (exit 1 if any)

The simulator runs the same code either way; compiled it is 1.3 to 1.5 times as fast (README,
"Benchmarks"). Python imports an extension module in preference to the .py beside it, so a
stale .so would run old code: ``make`` rebuilds them when a listed module changes, and the
tests refuse to start with a stale one. ``PHALANX_PURE=1`` makes ``ensure`` remove them.

Without a C compiler, or when mypyc fails, ``ensure`` prints why and leaves the code pure:
the install never fails for it. A failed build is not retried until a source changes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
PKG = SRC / "phalanx"
# mypyc puts every compiled module in one shared library, ``phalanx/native__mypyc*.so``, and
# a small extension per module that loads it: calls between them are direct C calls.
GROUP = "phalanx.native"
FAILED = ROOT / "build" / "native" / "failed"

# The modules of a simulated run's hot path (profiles: README "Benchmarks"). Left pure:
# package __init__ files; sched/points.py (runtime-checkable protocols, which mypyc does not
# support); the inputs of the engine (events: frozen dataclasses, pickled in snapshots, that
# a compiled module would unpickle through their refusing ``__setattr__``, and that the
# journal's codec reads with ``dataclasses.fields``; its decisions, commands and timers are
# compiled: ``engine.records``, written out, pickled as calls); modules only read at set-up
# (registry, catalog, profile, idempotency); runtime/ports.py, whose ``Journal`` protocol
# live/journal.py extends with a runtime-checkable one (compiled, a protocol gains
# ``__getstate__``, ``__setstate__`` and ``__mypyc_attrs__``, which ``isinstance`` then looks
# for on every journal);
# policies/clusterqueue/assign.py, whose shortcut a property test turns off by patching the
# module (a compiled module's calls to its own functions are bound when it is compiled).
PACKAGES = (
    "sched",
    "engine",
    "engine/scheduling",
    "policies",
    "policies/clusterqueue",
    "runtime",
)
MODULES = ("sim/simulator.py", "sim/executor.py")
PURE = (
    "sched/points.py",
    "sched/registry.py",
    "sched/profile.py",
    "policies/catalog.py",
    "engine/idempotency.py",
    "engine/events.py",
    "runtime/ports.py",
    "policies/clusterqueue/assign.py",
)


def sources() -> list[Path]:
    """The .py files compiled, in a stable order."""
    found = [p for d in PACKAGES for p in sorted((PKG / d).glob("*.py"))]
    found += [PKG / m for m in MODULES]
    return [
        p for p in found if p.name != "__init__.py" and p.relative_to(PKG).as_posix() not in PURE
    ]


def _suffix() -> str:
    return str(sysconfig.get_config_var("EXT_SUFFIX"))


def built() -> list[Path]:
    """Every compiled extension under src/phalanx (whatever the list said when it was built)."""
    return sorted(PKG.rglob("*" + _suffix()))


def _group_lib() -> Path:
    return SRC / (GROUP.replace(".", "/") + "__mypyc" + _suffix())


def stale() -> list[str]:
    """Why each compiled extension is out of date with its source, one line each."""
    reasons = []
    newest = max((p.stat().st_mtime for p in sources()), default=0.0)
    for so in built():
        if so == _group_lib():
            if so.stat().st_mtime < newest:
                reasons.append(f"{so.relative_to(ROOT)} is older than a compiled module's .py")
            continue
        py = so.with_name(so.name[: -len(_suffix())] + ".py")
        if not py.exists():
            reasons.append(f"{so.relative_to(ROOT)} has no {py.name} beside it")
        elif so.stat().st_mtime < py.stat().st_mtime:
            reasons.append(f"{so.relative_to(ROOT)} is older than {py.relative_to(ROOT)}")
        elif py not in sources():
            reasons.append(f"{so.relative_to(ROOT)}: {py.name} is no longer compiled")
    return reasons


def clean() -> None:
    for so in built():
        so.unlink()


def _compiler() -> str | None:
    cc = str(sysconfig.get_config_var("CC") or "cc").split()[0]
    return shutil.which(cc) or shutil.which("cc") or shutil.which("gcc")


def build() -> bool:
    """Compile ``sources()`` in a temporary folder and copy the extensions into src/phalanx.
    The old ones are removed first: a failure leaves the code pure, never half old."""
    clean()
    if _compiler() is None:
        print("native: no C compiler: the scheduling core stays pure Python", file=sys.stderr)
        return False
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="phalanx-native-") as tmp:
        # A child process: mypyc and setuptools print a lot and may exit on their own.
        script = (
            "import sys\n"
            "from setuptools import setup\n"
            "from mypyc.build import mypycify\n"
            "tmp, group, *paths = sys.argv[1:]\n"
            "paths = ['--cache-dir', tmp + '/mypy-cache', *paths]  # not src/.mypy_cache\n"
            "setup(name='phalanx-native', py_modules=[],\n"
            "      ext_modules=mypycify(paths, opt_level='3', group_name=group,\n"
            "                           target_dir=tmp + '/c'),\n"
            "      script_args=['-q', 'build_ext', '--build-lib', tmp + '/lib',\n"
            "                   '--build-temp', tmp + '/temp'])\n"
        )
        paths = [str(p.relative_to(SRC)) for p in sources()]
        log = Path(tmp) / "log"
        with log.open("w") as out:
            rc = subprocess.call(
                [sys.executable, "-c", script, tmp, GROUP, *paths],
                cwd=SRC,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        made = sorted((Path(tmp) / "lib").rglob("*" + _suffix())) if rc == 0 else []
        if not made:
            lines = log.read_text(errors="replace").splitlines()
            errors = [ln for ln in lines if "error" in ln.lower()] or lines[-15:]
            print("native: mypyc failed; the scheduling core stays pure Python:", file=sys.stderr)
            for line in errors[:30]:
                print("  " + line, file=sys.stderr)
            FAILED.parent.mkdir(parents=True, exist_ok=True)
            FAILED.touch()
            return False
        for so in made:
            target = SRC / so.relative_to(Path(tmp) / "lib")
            shutil.copy2(so, target)
            os.utime(target)  # newer than its source, whatever the copy kept
    FAILED.unlink(missing_ok=True)
    print(f"native: compiled {len(paths)} modules in {time.monotonic() - t0:.0f} s")
    return True


def ensure() -> None:
    """What ``make`` runs before the tests and the commands: pure when asked, else up to date."""
    if os.environ.get("PHALANX_PURE"):
        if built():
            clean()
            print("native: PHALANX_PURE is set: removed the compiled modules")
        return
    newest = max(p.stat().st_mtime for p in [*sources(), Path(__file__)])
    present = {so.name[: -len(_suffix())] for so in built()}
    complete = all(p.stem in present for p in sources()) and _group_lib().exists()
    if complete and not stale() and _group_lib().stat().st_mtime >= newest:
        return
    if FAILED.exists() and FAILED.stat().st_mtime >= newest:
        return  # failed on these very sources: said so then, pure until they change
    build()


def main(argv: list[str]) -> int:
    command = argv[0] if argv else "ensure"
    if command == "ensure":
        ensure()
    elif command == "build":
        return 0 if build() else 1
    elif command == "clean":
        clean()
    elif command == "stale":
        reasons = stale()
        for line in reasons:
            print(line)
        return 1 if reasons else 0
    else:
        print(f"usage: {Path(__file__).name} [ensure|build|clean|stale]", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
