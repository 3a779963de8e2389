# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Nothing the module ships reads or writes ``resource.k8s.io/v1beta1`` or ``v1beta2`` (KUBERNETES-FACTS.md
F10: v1beta1 is removed in 1.38, v1beta2 in 1.39; ``v1`` is served from 1.34).

Two rules over the package's source, its kubelet protos, the chart (templates, hooks, CRDs, OpenAPI
schemas, monitoring) and the example objects of docs/examples:

- ``resource.k8s.io/v1beta1`` and ``v1beta2``, in either spelling (``group/version``, or the group and
  the version as separate strings as in a ``Resource(...)`` or an admission rule), appear nowhere;
- any other ``v1beta`` is allowed only in the files of ``ALLOWED``, each with the reason, and in
  files that name the group ``metadata.resource.k8s.io`` (the KEP-5304 device metadata file format,
  not an API the module calls). A new use of a beta API fails here until it says why it is not the
  DRA API.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "images/gpu-artifact/src/deckhouse_gpu"
SCANNED = (
    PACKAGE,
    "images/gpu-artifact/proto",
    "templates",
    "hooks",
    "crds",
    "openapi",
    "monitoring",
    "docs/examples",
    "module.yaml",
    "Chart.yaml",
)
SKIPPED_DIRS = {"__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache"}

# The kubelet's gRPC DRA plugin service has a v1beta1 of its own (k8s.io.kubelet.pkg.apis.dra.v1beta1,
# KUBERNETES-FACTS.md F6.1): another API than the resource.k8s.io group, served by every kubelet from 1.34 to
# 1.37, and gpu-handler serves it beside v1 for kubelets that prefer it.
KUBELET_GRPC = "the kubelet's gRPC DRA service v1beta1, not the resource.k8s.io API"
ALLOWED = {
    f"{PACKAGE}/ports/dra_plugin.py": KUBELET_GRPC,
    f"{PACKAGE}/adapters/kubelet/kubelet_grpc.py": KUBELET_GRPC + ": the versions it registers",
    f"{PACKAGE}/adapters/kubelet/kubelet_dra_handlers.py": KUBELET_GRPC + ": its handlers",
    f"{PACKAGE}/adapters/kubelet_gen/dra_v1beta1_pb2.py": KUBELET_GRPC + ", generated from its proto",
    f"{PACKAGE}/adapters/kubelet_gen/dra_v1beta1_pb2_grpc.py": KUBELET_GRPC + ", generated from its proto",
    "images/gpu-artifact/proto/k8s.io/kubelet/pkg/apis/dra/v1beta1/api.proto": KUBELET_GRPC + ": its proto",
}

# resource.k8s.io but not a longer group ending in it (metadata.resource.k8s.io).
_GROUP = r"(?<![\w.-])resource\.k8s\.io"
DRA_BETA = re.compile(
    rf"{_GROUP}/v1beta[12]\b"  # apiVersion: resource.k8s.io/v1beta1
    rf"|[\"']{_GROUP}[\"']\s*,\s*[\"']v1beta[12][\"']"  # Resource("resource.k8s.io", "v1beta1", ...)
    rf"|apiGroups:\s*\[[^\]]*[\"']{_GROUP}[\"'][^\]]*\]\s*\n\s*apiVersions:\s*\[[^\]]*v1beta"  # rules
)
OTHER_GROUP_BETA = re.compile(r"metadata\.resource\.k8s\.io/v1beta\d")
ANY_BETA = re.compile(r"v1beta\d*")


def scanned_files() -> Iterator[tuple[str, str]]:
    for top in SCANNED:
        root = ROOT / top
        paths = [root] if root.is_file() else sorted(root.rglob("*"))
        for path in paths:
            parts = path.relative_to(ROOT).parts
            if not path.is_file() or any(p in SKIPPED_DIRS or p.endswith(".egg-info") for p in parts):
                continue
            data = path.read_bytes()
            if b"\0" not in data:
                yield "/".join(parts), data.decode(errors="replace")


def dra_beta_uses(text: str) -> list[str]:
    return [m[0] for m in DRA_BETA.finditer(text)]


def unexplained_beta(text: str) -> list[str]:
    """Every ``v1beta`` of a file that does not name the device metadata group it means (such a
    file's bare versions are that group's; the first rule still holds there)."""
    return [] if OTHER_GROUP_BETA.search(text) else ANY_BETA.findall(text)


def test_nothing_reads_or_writes_the_beta_dra_api() -> None:
    found = {path: dra_beta_uses(text) for path, text in scanned_files()}
    assert {path: uses for path, uses in found.items() if uses} == {}


def test_every_other_beta_api_says_why_it_is_not_the_dra_api() -> None:
    files = dict(scanned_files())
    assert f"{PACKAGE}/domain/offers/slice_layout.py" in files  # the scan reaches the package
    unexplained = [path for path, text in files.items() if unexplained_beta(text) and path not in ALLOWED]
    assert unexplained == [], "a v1beta API outside ALLOWED: add the file with the reason, or use v1"
    for path in ALLOWED:
        if path in files:  # a file that went away needs no exception
            assert unexplained_beta(files[path]), f"{path} no longer uses a beta API: drop it from ALLOWED"
            says_why = "kubelet" in files[path] or path.endswith(".proto")
            assert says_why, f"{path} does not say it is the kubelet's"


@pytest.mark.parametrize(
    ("text", "dra", "other"),
    [
        ("apiVersion: resource.k8s.io/v1beta1", True, True),
        ("apiVersion: resource.k8s.io/v1beta2\nkind: ResourceSlice", True, True),
        ('Resource("resource.k8s.io", "v1beta2", "resourceslices")', True, True),
        ('- apiGroups: ["resource.k8s.io"]\n  apiVersions: ["v1beta1"]', True, True),
        ("apiVersion: resource.k8s.io/v1", False, False),
        ('- apiGroups: ["resource.k8s.io"]\n  apiVersions: ["v1", "*"]', False, False),
        ('API_VERSIONS = ("metadata.resource.k8s.io/v1beta1",)', False, False),
        ('# v1alpha1 readers skip v1beta1\nV = "metadata.resource.k8s.io/v1beta1"', False, False),
        ('V = "metadata.resource.k8s.io/v1beta1"\nW = "resource.k8s.io/v1beta1"', True, False),
        ('SUPPORTED = ("v1.DRAPlugin", "v1beta1.DRAPlugin")', False, True),
    ],
)
def test_the_patterns(text: str, dra: bool, other: bool) -> None:
    assert bool(dra_beta_uses(text)) is dra
    assert bool(unexplained_beta(text)) is other
