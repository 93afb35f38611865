# Two entry points: `make run` (the main job on an embedded default) and `make test` (every test).
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint bench clean

$(STAMP): pyproject.toml
	@command -v $(PY) >/dev/null 2>&1 || { echo "make: $(PY) not found; set PY=python3.11 or newer" >&2; exit 2; }
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	@touch $(STAMP)

run: $(STAMP)
	$(BIN)/phalanx simulate --trace ../shared/traces/philly/philly.csv --limit 20000 \
	    --nodes 64 --gpus-per-node 8 --nodes-per-switch 8 \
	    --policy fifo --policy slurm --policy k8s-default --policy kueue \
	    --policy volcano --policy tiresias --policy phalanx

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports

test: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -q -p no:cacheprovider

bench: $(STAMP)
	$(BIN)/python bench/sim_speed.py
	$(BIN)/python bench/sched_pass.py

clean:
	rm -rf $(VENV) build src/*.egg-info
