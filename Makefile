# Two commands on a fresh machine: `make run` (the app with its embedded SQLite + local worker) and
# `make test` (the whole suite). Both create .venv and install what they need first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
TORCH_SPEC ?= torch==2.13.0

.PHONY: setup setup-dev run worker test test-unit test-integration clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

setup: $(PY)
	@$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install -q $(TORCH_SPEC)
	$(PY) -m pip install -q -r requirements.txt

setup-dev: setup
	$(PY) -m pip install -q -r requirements-dev.txt

run: setup
	$(PY) -m streamlit run dashboard/app.py

worker: setup
	$(PY) -m runner work

test: setup-dev
	$(PY) -m pytest -q tests

test-unit: setup-dev
	$(PY) -m pytest -q tests/unit

test-integration: setup-dev
	$(PY) -m pytest -q tests/integration

clean:
	rm -rf $(VENV) .pytest_cache
