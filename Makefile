# Every target sets up its own virtual environment with Python 3.12 and the pinned
# dependencies, so a fresh clone needs nothing preinstalled.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
ARTIFACT := images/gpu-artifact
SCENARIO ?= mixed-cluster
# The kubelet's gRPC protos are compiled into this package by tools/gen-proto; never committed.
PROTOS := $(shell find $(ARTIFACT)/proto -name '*.proto')
KUBELET_GEN := $(ARTIFACT)/src/deckhouse_gpu/adapters/kubelet_gen
# Prometheus' promtool for the rule checks and its server for the check of every rule and dashboard
# query against the components' metrics; tools/fetch-promtool takes both from the distribution.
PROMTOOL := .tools/promtool
PROMETHEUS := .tools/prometheus
# A gRPC client on grpc-go, the kubelet's implementation, for the plugin's interoperability tests.
GRPC_GO_KUBELET := .tools/grpc-go-kubelet
# Real Kubernetes binaries for the real-cluster tier (tests/real): ../shared/k8s decompressed
# once by tools/fetch-kube-assets; KUBE_ASSETS points the tests at another directory.
KUBE_ASSETS_STAMP := .tools/k8s/.fetched
SHARED_K8S ?= ../shared/k8s

.PHONY: venv proto demo test lint typecheck unit real-tier bench chaos clean

$(VENV)/.installed: requirements-dev.txt lib/python/requirements.txt $(ARTIFACT)/requirements.txt $(ARTIFACT)/pyproject.toml
	rm -rf $(VENV)
	"$$(tools/find-python312)" -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	PYTHON=$(PY) tools/gen-proto
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps -e $(ARTIFACT)
	touch $@

# Regenerates when a proto or the script changes, or when the package is missing (a git clean).
# The venv is order-only: a new venv generates by itself, and must not make this stale.
$(KUBELET_GEN)/__init__.py: $(PROTOS) tools/gen-proto | $(VENV)/.installed
	PYTHON=$(PY) tools/gen-proto

venv: $(VENV)/.installed $(KUBELET_GEN)/__init__.py

proto: $(VENV)/.installed
	PYTHON=$(PY) tools/gen-proto

demo: venv
	$(VENV)/bin/gpu-simulator --scenario $(SCENARIO)

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports --no-cache

typecheck: venv
	$(VENV)/bin/mypy

$(PROMTOOL) $(PROMETHEUS) &: tools/fetch-promtool
	tools/fetch-promtool

$(GRPC_GO_KUBELET): tools/fetch-grpc-go tests/support/grpc_go_kubelet/main.go
	tools/fetch-grpc-go

$(KUBE_ASSETS_STAMP): tools/fetch-kube-assets | $(VENV)/.installed
	PYTHON=$(PY) tools/fetch-kube-assets $(SHARED_K8S)
	touch $@

# Podman, runc and busybox-static for the container-runtime tier (tests/runtime): a few
# `command -v` when they are there, so it runs every time instead of leaving a stamp.
.PHONY: runtime-tools
runtime-tools:
	tools/install-podman

unit: venv $(PROMTOOL) $(PROMETHEUS) $(GRPC_GO_KUBELET) $(KUBE_ASSETS_STAMP) runtime-tools
	$(PY) -m pytest -q

# The real-cluster tier alone: make real-tier (KUBE_ASSETS=DIR to use your own binaries).
real-tier: venv $(KUBE_ASSETS_STAMP)
	$(PY) -m pytest -q -m real_cluster tests/real

test: lint typecheck unit

# The release notes of a version, from CHANGELOG/<VERSION>.yml: make release-notes VERSION=v0.1.0
.PHONY: release-notes
release-notes: $(VENV)/.installed
	$(PY) tools/release-notes $(VERSION)

# SCHEDULER_NODES: node counts of the real kube-scheduler runs (docs/DRA.md, "Scale"); 40,200 adds
# the 200-node rows (tens of minutes).
SCHEDULER_NODES ?= 40
bench: venv
	SCHEDULER_NODES=$(SCHEDULER_NODES) $(PY) -m benchmarks

# The whole stack behind a faulty API server at 0, 5 and 20 % (benchmarks/chaos.py).
chaos: venv
	$(PY) -m benchmarks.chaos

# Faults of a real control plane under the four components (tests/real/chaos_real.py), FAULTS per
# version, figures appended to CHAOS_REAL_REPORT (docs/RELIABILITY.md).
FAULTS ?= 15
CHAOS_REAL_REPORT ?= chaos-real.jsonl
.PHONY: chaos-real
chaos-real: venv $(KUBE_ASSETS_STAMP)
	CHAOS_REAL_FAULTS=$(FAULTS) CHAOS_REAL_REPORT=$(CHAOS_REAL_REPORT) $(PY) -m pytest -q -s -m real_cluster \
		tests/real/test_chaos_real.py

# SIGTERM at random moments to each long-running component, TRIALS times each (testkit/signal_storm.py),
# against an API server that churns, refuses, hangs or answers 503: every stop must be clean.
TRIALS ?= 250
.PHONY: sigterm-storm
sigterm-storm: venv
	for component in gpu-node-agent gpu-handler gpu-controller gpu-dra-controller; do \
		work=$$(mktemp -d /tmp/storm-XXXXXX); \
		PYTHONPATH=images/gpu-artifact/src:. $(PY) -m testkit.signal_storm --component $$component \
			--trials $(TRIALS) --workdir $$work > $$work/trials.jsonl; status=$$?; \
		grep summary $$work/trials.jsonl; grep '"clean": false' $$work/trials.jsonl; \
		test $$status -eq 0 || exit 1; rm -rf $$work; \
	done

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache $(KUBELET_GEN) .tools
