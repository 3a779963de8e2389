# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Least privilege, shown from real requests: every component of the module runs against one fake
API server with a token of its own (tests/e2e/api_rights_world.py), every request is recorded as
the (verb, resource, subresource, namespace) RBAC checks, and the lot is compared with the RBAC
the chart renders for each component's ServiceAccount (tests/support/rbac_rules.py).

A component that asks for a right its RBAC lacks fails the first test; a right the RBAC grants
that no component used fails the second, unless the comment above its rule in the template names
the verb and says why (EXPLAINED lists those exceptions), or it is one of the reviews the pod's
kube-rbac-proxy sidecar makes (SIDECAR: the sidecar, not the component, uses them). Findings not
fixed yet would be listed below (MISSING, UNUSED, both empty since the templates were narrowed):
each test requires exactly its list, so a fixed finding must leave it and a new one fails. The
recorded accesses are written to ``api-access.json`` in the test's temporary directory;
GPU_API_ACCESS_LOGS (a directory of such files, from a chaos run for example) adds its logs to the
comparison. docs/RELIABILITY.md lists what the test found.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from testkit.api_access import AccessLog
from tests.e2e.api_rights_world import COMPONENTS, day_of_a_node
from tests.module.helm_render_sets import RENDERED, containers
from tests.support.rbac_rules import Unused, missing_rights, service_account_rules, unused_rights

# What the world's components send that a cluster's would not: the simulated kubelet inside
# gpu-handler (--nvml-sim) writes the status of the MPS daemon Pods as the real kubelet does.
SIMULATION_ONLY = {("gpu-handler", "patch", "pods/status")}

# Findings not fixed yet; each test requires exactly its list, so that a fixed finding leaves it
# and a new one fails. (verb, resource) a component uses and its RBAC lacks:
MISSING: dict[str, set[tuple[str, str]]] = {}
# (verb, resource) granted, never used and not explained by a comment naming the verb. Empty: the
# templates grant what the recorded runs use, and the rest only with a comment saying why (``get``
# of a PhysicalGPU re-read after a write conflict, which a chaos run provokes).
UNUSED: dict[str, set[tuple[str, str]]] = {}
# The commented exceptions: granted, unused by the recorded runs, and kept for the path their
# comment names. Only these may stay unused (a chaos run's log, merged in, uses them).
# The synthetic subresources Kubernetes >= 1.36 checks a claim's status patch against (binding
# for the allocation, driver for status.devices) are a second check the fake API server does not
# make; tests/real/test_components_real.py shows both used on the real 1.36 server.
EXPLAINED: dict[str, set[tuple[str, str]]] = {
    "gpu-controller": {("get", "physicalgpus")},
    # A GPUClass re-read after a status conflict; a DeviceClass whose GPUClass is gone and that
    # the garbage collector has not deleted (the fake API server's collector always has).
    "gpu-dra-controller": {
        ("get", "gpuclasses"),
        ("delete", "deviceclasses"),
        ("patch", "resourceclaims/binding"),
    },
    "gpu-handler": {("get", "physicalgpus"), ("associated-node:patch", "resourceclaims/driver")},
}
# The rights of the kube-rbac-proxy sidecar in every component's pod (templates/_kube_rbac_proxy.tpl),
# bound to the pod's ServiceAccount through the platform's ClusterRole d8:rbac-proxy: the sidecar
# creates a TokenReview and a SubjectAccessReview for each scrape of /metrics. The component's own
# process never uses them, so no recorded run can; they are exempt from the unused check only when
# that role grants them and the pod runs the sidecar (test_the_sidecar_rights_are_the_proxy_role_s).
SIDECAR_ROLE = "ClusterRole d8:rbac-proxy"
SIDECAR = {("create", "tokenreviews"), ("create", "subjectaccessreviews")}


def sidecar_right(unused: Unused) -> bool:
    return unused.rule.role == SIDECAR_ROLE and (unused.verb, unused.resource) in SIDECAR


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> AccessLog:
    log = day_of_a_node()
    path = tmp_path_factory.mktemp("api-access") / "api-access.json"
    log.save(path)
    print(f"API accesses recorded in {path}")
    extra = os.environ.get("GPU_API_ACCESS_LOGS")
    for other in sorted(Path(extra).glob("*.json")) if extra else ():
        log = log.merge(AccessLog.load(other))
    return log


def test_every_component_made_its_requests(recorded: AccessLog) -> None:
    assert set(COMPONENTS) <= recorded.components()
    verbs = {(a.component, a.verb, a.resource_path) for a in recorded.counts}
    for done in [
        ("gpu-node-agent", "create", "physicalgpus"),
        ("gpu-node-agent", "delete", "physicalgpus"),
        ("gpu-controller", "patch", "physicalgpus/status"),
        ("gpu-handler", "patch", "resourceclaims/status"),
        ("gpu-handler", "create", "pods"),
        ("gpu-handler", "delete", "pods"),
        ("gpu-dra-controller", "patch", "resourceclaims/status"),
    ]:
        assert done in verbs, done


@pytest.mark.parametrize("component", COMPONENTS)
def test_no_component_needs_a_right_its_rbac_lacks(recorded: AccessLog, component: str) -> None:
    rules = service_account_rules(RENDERED["defaults"], component)
    accesses = [
        a
        for a in recorded.of_component(component)
        if (a.component, a.verb, a.resource_path) not in SIMULATION_ONLY
    ]
    missing = missing_rights(accesses, rules)
    assert {(a.verb, a.resource_path) for a in missing} == MISSING.get(component, set()), [
        str(a) for a in missing
    ]


@pytest.mark.parametrize("component", COMPONENTS)
def test_every_granted_right_is_used_or_explained(recorded: AccessLog, component: str) -> None:
    rules = service_account_rules(RENDERED["defaults"], component)
    assert rules, f"no RBAC rendered for {component}"
    unexplained = [
        u for u in unused_rights(recorded, component, rules) if not u.explained and not sidecar_right(u)
    ]
    assert {(u.verb, u.resource) for u in unexplained} == UNUSED.get(component, set()), [
        str(u) for u in unexplained
    ]


@pytest.mark.parametrize("component", COMPONENTS)
def test_only_the_known_commented_exceptions_stay_unused(recorded: AccessLog, component: str) -> None:
    rules = service_account_rules(RENDERED["defaults"], component)
    explained = {(u.verb, u.resource) for u in unused_rights(recorded, component, rules) if u.explained}
    assert explained <= EXPLAINED.get(component, set()), explained


@pytest.mark.parametrize("component", COMPONENTS)
def test_the_sidecar_rights_are_the_proxy_role_s(component: str) -> None:
    rendered = RENDERED["defaults"]
    rules = [r for r in service_account_rules(rendered, component) if r.role == SIDECAR_ROLE]
    assert {(verb, resource) for r in rules for verb, _, resource in r.rights()} == SIDECAR
    workload = next(w for w in rendered.workloads() if w["metadata"]["name"] == component)
    assert "kube-rbac-proxy" in {c["name"] for c in containers(workload, init=False)}
