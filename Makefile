# Two commands on a fresh machine: `make run` (the app with its embedded SQLite + local worker) and
# `make test` (every tier, as CI runs it). Both create .venv and install the project (editable) first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
TORCH_SPEC ?= torch==2.13.0
# the in-process tier: no interpreters or workers started, no server, no browser, no GPU
FAST := not slow and not subprocess and not postgres and not browser and not gpu

.PHONY: setup setup-dev run worker lint test test-fast test-unit test-integration clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# stamps: the editable install is redone only when the project's metadata changes
$(VENV)/.setup: $(PY) pyproject.toml requirements.txt
	@$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install -q $(TORCH_SPEC)
	$(PY) -m pip install -q -e .
	@touch $@

$(VENV)/.setup-dev: $(VENV)/.setup requirements-dev.txt
	$(PY) -m pip install -q -r requirements-dev.txt
	@touch $@

# a second interpreter for the tests of the timm family (timm needs a torchvision built for its torch; the index has
# CUDA builds only, and those run on the CPU): torch 2.14.1, torchvision and timm, nothing of the project installed;
# with the database packages a worker needs (their pins from requirements.txt), it is also a second torch's worker
EXTRAS ?= .venv/extras
WORKER_PACKAGES = $(shell grep -oE '^(numpy|sqlalchemy|alembic)[^ ]*' requirements.txt)
$(EXTRAS)/.setup-worker: requirements.txt
	$(PYTHON) -m venv $(EXTRAS)
	$(EXTRAS)/bin/python -m pip install -q torch==2.14.1 torchvision==0.29.1 timm $(foreach p,$(WORKER_PACKAGES),"$(p)")
	@touch $@

setup: $(VENV)/.setup

setup-dev: $(VENV)/.setup-dev

# make run MODELS=path/to/your/models: the embedded worker offers that folder's model files too;
# make run PORT=8600: another port than .streamlit/config.toml's 8501
run: setup
	$(if $(MODELS),COMPILE_LAB_MODELS_DIR=$(abspath $(MODELS)) ,)$(PY) -m streamlit run dashboard/app.py$(if $(PORT), --server.port $(PORT),)

worker: setup
	$(PY) -m runner work

lint: setup-dev
	$(PY) -m ruff check .

# every tier; .ci/services.sh installs chromium and starts PostgreSQL and a one-node Slurm where it may (root,
# apt-get), and says where they are as `export` lines. Two test
# processes share the cores (pytest-xdist): most tests wait on workers, servers and browsers. Tests marked `alone`
# need the cores to themselves (another process on them is a disturbance the lab names): they run after, serially.
# Inductor's CPU header is built first, once (runner/worker/header_warm.py), not in the first test job's compile.
test: setup-dev $(EXTRAS)/.setup-worker
	@eval "$$(.ci/services.sh)"; \
	$(PY) -m runner.worker.header_warm && \
	$(PY) -m pytest -q -n 2 --dist worksteal -m "not alone" --durations=60 tests && \
	$(PY) -m pytest -q -m alone tests

# the in-process tier, in two test processes as `make test` runs (the other folders hold no in-process test)
test-fast: setup-dev
	$(PY) -m pytest -q -n 2 --dist worksteal -m "$(FAST)" tests/unit tests/dashboard

test-unit: setup-dev
	$(PY) -m pytest -q tests/unit

test-integration: setup-dev
	$(PY) -m pytest -q tests/integration

clean:
	rm -rf $(VENV) $(EXTRAS) .pytest_cache .ruff_cache
