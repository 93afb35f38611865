# Two entry points: `make run` (the main job on an embedded default) and `make test` (every test).
PY ?= $(shell command -v python3.11 || command -v python3)
TRACE := ../shared/traces/philly/philly.csv
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run simulate test lint bench clean native pure

$(STAMP): pyproject.toml
	@test -n "$(PY)" || { echo "make: no python3.11 or python3 found; set PY=" >&2; exit 2; }
	@# OpenMPI (mpirun under srun, with mpi4py) and iproute2 (agents in network namespaces)
	@# for the integration tests, before pip (mpi4py finds MPI); without apt they are skipped.
	@! command -v apt-get >/dev/null || { command -v mpirun >/dev/null && command -v ip >/dev/null; } || \
	  { echo "make: installing openmpi-bin, libopenmpi-dev and iproute2 (apt)"; \
	    apt-get install -y -q openmpi-bin libopenmpi-dev iproute2 >/dev/null 2>&1 || \
	    { apt-get update -q >/dev/null && \
	      apt-get install -y -q openmpi-bin libopenmpi-dev iproute2 >/dev/null; } || \
	    echo "make: could not install OpenMPI: the MPI tests will be skipped" >&2; }
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	@# The native Slurm shims (`phalanx shims`) are compiled C; without a compiler they are Python.
	@command -v cc >/dev/null || command -v gcc >/dev/null || ! command -v apt-get >/dev/null || \
	  { echo "make: installing gcc (apt) for the native Slurm shims"; \
	    apt-get install -y -q gcc >/dev/null 2>&1 || \
	    { apt-get update -q >/dev/null && apt-get install -y -q gcc >/dev/null; } || \
	    echo "make: no C compiler: the Slurm shims will be Python" >&2; }
	@# The tests run the PostgreSQL store against a server they start (initdb, pg_ctl).
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null || \
	  ! command -v apt-get >/dev/null || \
	  { echo "make: installing postgresql (apt) for the PostgreSQL store's tests"; \
	    apt-get install -y -q postgresql >/dev/null 2>&1 || \
	    { apt-get update -q >/dev/null && apt-get install -y -q postgresql >/dev/null; } || \
	    echo "make: no postgresql: its tests will be skipped" >&2; }
	@# The dashboard's browser tests drive Debian's chromium (Playwright, no browser download).
	@command -v chromium >/dev/null || ! command -v apt-get >/dev/null || \
	  { echo "make: installing chromium (apt) for the dashboard's browser tests"; \
	    apt-get install -y -q chromium >/dev/null 2>&1 || \
	    { apt-get update -q >/dev/null && apt-get install -y -q chromium >/dev/null; } || \
	    echo "make: no chromium: the dashboard's browser tests will be skipped" >&2; }
	@# kubectl for the Kubernetes API's tests (tests/kube): Debian's kubectl, else its older
	@# kubernetes-client; without either those tests are skipped.
	@command -v kubectl >/dev/null || ! command -v apt-get >/dev/null || \
	  { echo "make: installing kubectl (apt) for the Kubernetes API's tests"; \
	    apt-get install -y -q kubectl >/dev/null 2>&1 || \
	    { apt-get update -q >/dev/null && apt-get install -y -q kubectl >/dev/null 2>&1; } || \
	    apt-get install -y -q kubernetes-client >/dev/null 2>&1 || \
	    echo "make: no kubectl: the kubectl tests will be skipped" >&2; }
	@touch $(STAMP)
	@# The scheduling core's hot modules compiled with mypyc (C extensions beside their .py);
	@# without a C compiler, or if mypyc fails, they stay Python: never an install failure.
	@$(BIN)/python tools/native.py ensure || echo "make: the scheduling core stays pure Python" >&2

# Keeps the compiled modules up to date with their .py (a stale .so would run old code, and
# the tests refuse to start with one): rebuilt when a compiled module's source is newer,
# which takes a few minutes; nothing to do otherwise. PHALANX_PURE=1 removes them instead.
native: $(STAMP)
	@$(BIN)/python tools/native.py ensure || echo "make: the scheduling core stays pure Python" >&2

# Removes the compiled modules until the next `make native` (or test, run, simulate, bench);
# PHALANX_PURE=1 keeps them away for good.
pure:
	$(BIN)/python tools/native.py clean

# A live Phalanx on this machine: the controller and four emulated 8-GPU nodes (one agent
# process each), with a demo workload; `.venv/bin/phalanx down` stops it.
run: native
	$(BIN)/phalanx demo

# The first 20,000 jobs of the Philly trace on 64 nodes x 8 GPUs under all seven policies;
# without the shared traces, a week of the seeded synthetic AI workload instead.
simulate: native
	@if [ -f $(TRACE) ]; then workload="--trace $(TRACE) --limit 20000"; \
	else echo "($(TRACE) not found: using the synthetic workload generator)"; \
	workload="--generate 7"; fi; \
	$(BIN)/phalanx simulate $$workload --nodes 64 --gpus-per-node 8 --nodes-per-switch 8

lint: $(STAMP)
	$(BIN)/ruff check src tests bench tools
	$(BIN)/mypy
	$(BIN)/lint-imports

test: native
	$(BIN)/ruff check src tests bench tools
	$(BIN)/mypy
	$(BIN)/lint-imports
	# CI=true: hypothesis replays examples derived from each test (tests/conftest.py), so a
	# run is repeatable; exploring new examples is for local runs (plain pytest).
	CI=true $(BIN)/python -m pytest -q -p no:cacheprovider

bench: native
	$(BIN)/python bench/sim_speed.py
	$(BIN)/python bench/sched_pass.py
	$(BIN)/python bench/sim_report.py

clean:
	rm -rf $(VENV) build src/*.egg-info
	find src -name "*.so" -delete
