# `make demo` runs the main job offline; `make test` runs lint, the type check and the tests. Both create or
# reuse .venv.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
# The MCP Inspector CLI, an independent MCP client, for the interop tests (tests/server/test_mcp_inspector.py).
INSPECTOR_VERSION := 2.12.0
INSPECTOR_DIR := .cache/inspector
INSPECTOR_STAMP := $(INSPECTOR_DIR)/.installed-$(INSPECTOR_VERSION)
# oidc-provider, a real OAuth authorization server, for the OAuth flow test (tests/server/test_oauth_flow.py).
OIDC_PROVIDER_VERSION := 9.13.3
OIDC_PROVIDER_DIR := .cache/oidc-provider
OIDC_PROVIDER_STAMP := $(OIDC_PROVIDER_DIR)/.installed-$(OIDC_PROVIDER_VERSION)
# Third-party MCP clients for `make interop`, each in its own virtualenv under .cache/interop/<client>, pinned
# in tests/interop/requirements/<client>.txt.
INTEROP_DIR := .cache/interop
INTEROP_CLIENTS := $(basename $(notdir $(wildcard tests/interop/requirements/*.txt)))
INTEROP_STAMPS := $(foreach client,$(INTEROP_CLIENTS),$(INTEROP_DIR)/$(client)/.installed-stamp)
# RL frameworks for `make rl-interop`, each in its own virtualenv under .cache/rl-interop/<framework> (their pins
# clash with occusim's: verifiers wants mcp 2.0, openenv mcp<2), pinned in tests/rl_interop/requirements/.
RL_INTEROP_DIR := .cache/rl-interop
RL_FRAMEWORKS := $(basename $(notdir $(wildcard tests/rl_interop/requirements/*.txt)))
RL_INTEROP_STAMPS := $(foreach framework,$(RL_FRAMEWORKS),$(RL_INTEROP_DIR)/$(framework)/.installed-stamp)
# The adapters a requirements file installs from this checkout (integrations/<framework>), reinstalled on change.
RL_INTEGRATION_FILES = $(wildcard integrations/$(1)/pyproject.toml integrations/$(1)/*/*.py)
# pytest-xdist workers for `make test` ("auto": one per CPU; 0 runs every test in this process). Each test
# file runs on one worker (--dist loadfile), so a module's shared fixture (a batch run, a server) starts once.
TEST_WORKERS ?= auto
# Slow suites (a pytest marker expression) that `make test` leaves out unless SLOW=1, as CI sets it.
SLOW_TESTS := local_model or load
PYTEST_SELECT := $(if $(SLOW),,-m "not ($(SLOW_TESTS))")

.PHONY: setup demo test lint typecheck bench clean inspector oidc-provider interop interop-clients rl-interop rl-frameworks

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev,local,postgres,ray,hosted]'
	touch $(STAMP)

demo: $(STAMP)
	LITELLM_LOCAL_MODEL_COST_MAP=True $(BIN)/occusim demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/deptry .

typecheck: $(STAMP)
	$(BIN)/mypy

inspector: $(INSPECTOR_STAMP)

$(INSPECTOR_STAMP):
	@command -v npm >/dev/null || { echo "make inspector: npm (Node.js 20 or later) is needed to install the MCP Inspector CLI" >&2; exit 1; }
	npm install --prefix $(INSPECTOR_DIR) --no-audit --no-fund --loglevel=error \
		@modelcontextprotocol/inspector@$(INSPECTOR_VERSION)
	touch $(INSPECTOR_STAMP)

oidc-provider: $(OIDC_PROVIDER_STAMP)

$(OIDC_PROVIDER_STAMP):
	@command -v npm >/dev/null || { echo "make oidc-provider: npm (Node.js 20 or later) is needed to install oidc-provider" >&2; exit 1; }
	npm install --prefix $(OIDC_PROVIDER_DIR) --no-audit --no-fund --loglevel=error oidc-provider@$(OIDC_PROVIDER_VERSION)
	touch $(OIDC_PROVIDER_STAMP)

# One episode over stdio and over HTTP with each client (tests/interop; `make test` does not collect it).
interop: $(STAMP) interop-clients
	LITELLM_LOCAL_MODEL_COST_MAP=True $(BIN)/python -m pytest -q -n 0 -p no:cacheprovider \
		-o python_files='interop_*.py' --durations=0 tests/interop

interop-clients: $(INTEROP_STAMPS)

$(INTEROP_DIR)/%/.installed-stamp: tests/interop/requirements/%.txt
	rm -rf $(INTEROP_DIR)/$*
	$(PYTHON) -m venv $(INTEROP_DIR)/$*
	$(INTEROP_DIR)/$*/bin/python -m pip install -q -r $<
	touch $@

# Real occusim episodes driven from each RL framework's own virtualenv (tests/rl_interop; `make test` does not
# collect it).
rl-interop: $(STAMP) rl-frameworks
	LITELLM_LOCAL_MODEL_COST_MAP=True $(BIN)/python -m pytest -q -n 0 -p no:cacheprovider \
		-o python_files='interop_*.py' --durations=0 tests/rl_interop

rl-frameworks: $(RL_INTEROP_STAMPS)

.SECONDEXPANSION:
$(RL_INTEROP_DIR)/%/.installed-stamp: tests/rl_interop/requirements/%.txt $$(call RL_INTEGRATION_FILES,$$*)
	rm -rf $(RL_INTEROP_DIR)/$*
	$(PYTHON) -m venv $(RL_INTEROP_DIR)/$*
	$(RL_INTEROP_DIR)/$*/bin/python -m pip install -q -r $<
	touch $@

# Without npm the Inspector is not installed and its tests skip with the reason (CI=true makes them fail).
test: lint typecheck
	@if command -v npm >/dev/null; then $(MAKE) --no-print-directory inspector oidc-provider; \
	else echo "make test: npm not found, so the MCP Inspector CLI and oidc-provider are not installed and their tests are skipped" >&2; fi
	LITELLM_LOCAL_MODEL_COST_MAP=True $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile $(PYTEST_SELECT)

bench: $(STAMP)
	for b in bench/bench_*.py; do LITELLM_LOCAL_MODEL_COST_MAP=True $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .ruff_cache $(INSPECTOR_DIR) $(OIDC_PROVIDER_DIR) $(INTEROP_DIR)

