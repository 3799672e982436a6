# `make demo` runs the main job offline; `make test` runs lint and the tests. Both create or reuse .venv.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: setup demo test lint bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev,local,postgres]'
	touch $(STAMP)

demo: $(STAMP)
	LITELLM_LOCAL_MODEL_COST_MAP=True $(BIN)/occusim demo

lint: $(STAMP)
	$(BIN)/ruff check .

test: lint
	LITELLM_LOCAL_MODEL_COST_MAP=True $(BIN)/python -m pytest -q

bench: $(STAMP)
	for b in bench/bench_*.py; do LITELLM_LOCAL_MODEL_COST_MAP=True $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .ruff_cache
