# Every target sets up its own virtual environment with Python 3.12 and the pinned
# dependencies, so a fresh clone needs nothing preinstalled.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
ARTIFACT := images/gpu-artifact
SCENARIO ?= mixed-cluster

.PHONY: venv demo test lint typecheck unit bench clean

$(VENV)/.installed: requirements-dev.txt $(ARTIFACT)/requirements.txt $(ARTIFACT)/pyproject.toml
	rm -rf $(VENV)
	"$$(tools/find-python312)" -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps -e $(ARTIFACT)
	touch $@

venv: $(VENV)/.installed

demo: venv
	$(VENV)/bin/gpu-simulator --scenario $(SCENARIO)

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: venv
	$(VENV)/bin/mypy

unit: venv
	$(PY) -m pytest -q

test: lint typecheck unit

bench: venv
	$(PY) -m benchmarks

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
