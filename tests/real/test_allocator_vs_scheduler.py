# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Our allocator (k8s_semantics/allocator) against the real kube-scheduler of 1.34, 1.35 and 1.36.

Random pools as the module publishes them (tests/real/allocator_diff.py: whole cards, MIG with the
card's counter set, shared cards, health taints; the 1.34 layout on 1.34, the 1.35 layout on
1.35 and 1.36) each on a fake Node of its own (a Node object with a Ready status, no kubelet: the
scheduler binds without one), and on each node a short sequence of random claims (ExactCount or
All, selectors on attributes and capacity, capacity requests, tolerations, constraints,
firstAvailable). Each claim is created directly with a Pod that uses it and may only go to its
node; the scheduler allocates it (``status.allocation``) or marks the Pod unschedulable. Our
allocator then answers the same claim on the same slices, with the scheduler's earlier
allocations on that node in use, and both must agree on feasibility and on the devices (request,
device, consumed capacity, tolerations; not the random shareID).

What is determined and what is not (read in the scheduler's source,
staging/src/k8s.io/dynamic-resource-allocation/structured/internal/*/pools_*.go, GatherPools):
  - Every case is pinned to one node, so the order in which the scheduler tries nodes plays no
    part; a node has one pool (``gpus/<node>``), so the order of pools plays none either.
  - 1.34 and 1.35 search a pool's slices in the order the scheduler's informer lists them, a Go
    map's order, different from one attempt to the next. Where a node has several slices with
    devices (1.34: one per card; 1.35: partitionable and plain devices apart), the scheduler's
    answer must be the answer of our allocator for one of the orders of those slices
    (``allocator_diff.slice_orders``); with one such slice the comparison is exact.
  - 1.36 sorts a pool's slices by name (kubernetes/kubernetes #136641): one order, compared
    exactly; our allocator gets the slices in the publisher's order and must sort them itself.

The pools and claims come from a seeded generator: ``ALLOCATOR_DIFF_SEED`` and
``ALLOCATOR_DIFF_CASES`` change them for a longer local run. A disagreement fails the test with
the whole record (slices as stored, classes, earlier allocations, claim, both answers) as JSON,
also written next to the test's tmp_path; ``allocator_diff.replay`` answers it again.
"""

from __future__ import annotations

import json
import os
import random
import re
import secrets
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from deckhouse_gpu.k8s_semantics.allocator.cel_matcher import CelMatcher
from testkit.real_cluster import ApiError, RealCluster
from tests.real.allocator_diff import (
    Answer,
    Facts,
    Pools,
    Record,
    agrees,
    as_fraction_free,
    class_objects,
    normalize,
    ours,
    random_claim,
    random_pools,
)

CASES = int(os.environ.get("ALLOCATOR_DIFF_CASES", "36"))
SEED = int(os.environ.get("ALLOCATOR_DIFF_SEED", "20260"))
MAX_STEPS = 3
ROUND_TIMEOUT = 90.0
# How long an unschedulable Pod must stay so before it counts as "does not fit": the scheduler
# retries on every slice and claim event, and a first attempt may have raced the slices' informer.
SETTLE = 1.5
WORKERS = 6
# kube-scheduler 1.34.9 with DRAConsumableCapacity panics and exits on some claims of several
# requests or subrequests ("index out of range [1] with length 1" in the experimental allocator's
# CmpRequestOverCapacity; seen by this test, not on 1.35 or 1.36). On 1.34 such a claim is
# reported and left out; on any other version a crash fails the test.
CRASHING = ("1.34",)
CRASH = "scheduler crashed: "
# A run that compared too little proves little: at least this share of the generated claims must
# be compared (the rest: known scheduler crashes), and of those at least this share allocated and
# at least this share refused, so that both sides of the comparison are exercised every run.
MIN_COMPARED = 0.8
MIN_ALLOCATED = 0.3
MIN_UNSCHEDULABLE = 0.05


@dataclass
class Case:
    pools: Pools
    claims: list[dict[str, Any]]
    stored_slices: list[dict[str, Any]] = field(default_factory=list)
    allocated: list[dict[str, Any]] = field(default_factory=list)  # the scheduler's results so far


def _pod(name: str, namespace: str, claim: str, node: str) -> dict[str, Any]:
    pinned = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "containers": [
                {"name": "c", "image": "registry.invalid/pause:1", "resources": {"claims": [{"name": "gpu"}]}}
            ],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": claim}],
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [pinned]}
                }
            },
            # Node taints play no part here (1.36 gives a new Node not-ready, a controller-manager
            # started by another test adds unreachable): the claim alone decides.
            "tolerations": [{"operator": "Exists"}],
            "automountServiceAccountToken": False,
            "terminationGracePeriodSeconds": 0,
        },
    }


def _unschedulable(pod: dict[str, Any]) -> str | None:
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return f"{condition.get('reason')}: {condition.get('message')}"
    return None


class Run:
    """One version's run: its namespace, classes, nodes and slices, deleted at the end."""

    def __init__(self, cluster: RealCluster, token: str) -> None:
        self.cluster = cluster
        self.version = cluster.version
        self.namespace = f"adiff-{token}"
        self.prefix = f"adiff-{token}"
        self.classes = class_objects(self.prefix)
        self.nodes: list[str] = []
        self.slices: list[str] = []
        self.pool = ThreadPoolExecutor(WORKERS)
        self.scheduler = cluster.start_scheduler()

    def each(self, work: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
        return list(self.pool.map(work, items))

    def setup(self, cases: list[Case]) -> None:
        self.cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace}})
        self.cluster.ensure(
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": "default", "namespace": self.namespace},
            }
        )
        self.classes = {role: self.cluster.create(obj) for role, obj in self.classes.items()}

        def node(case: Case) -> None:
            name = case.pools.node
            self.cluster.add_node(name, {"gpu-test/allocator-diff": "true"})
            self.nodes.append(name)
            for item in case.pools.slices:
                case.stored_slices.append(self.cluster.create(item))
                self.slices.append(item["metadata"]["name"])

        self.each(node, cases)

    def round(self, step: int, cases: list[Case]) -> dict[int, tuple[dict[str, Any], list[Any] | None, str]]:
        """Creates step ``step``'s claim and Pod of every case and waits for the scheduler's answer:
        index -> (claim as stored, results or None, the Pod's unschedulable message)."""
        names = {index: f"{case.pools.node}-{step}" for index, case in enumerate(cases)}

        def create(index: int) -> dict[str, Any]:
            case = cases[index]
            claim = dict(case.claims[step])
            claim["metadata"] = {**claim["metadata"], "name": names[index], "namespace": self.namespace}
            stored = self.cluster.create(claim)
            self.cluster.create(_pod(names[index], self.namespace, names[index], case.pools.node))
            return stored

        stored = dict(zip(names, self.each(create, list(names)), strict=True))
        decided: dict[int, tuple[dict[str, Any], list[Any] | None, str]] = {}
        unschedulable_since: dict[int, float] = {}
        deadline = time.monotonic() + ROUND_TIMEOUT
        while len(decided) < len(names):
            if not self.scheduler.alive():
                culprit, report = self._crash(step, cases, names)
                index = next((i for i, n in names.items() if n == culprit), None)
                if self.version not in CRASHING or index is None:
                    raise AssertionError(report)
                # A known crash of this version's scheduler (CRASHING): the claim goes, the
                # scheduler starts again, and the claim counts as neither side's answer.
                decided[index] = (stored[index], None, CRASH + report)
                self._forget(culprit)
                self.scheduler = self.cluster.start_scheduler()
                continue
            if time.monotonic() > deadline:
                missing = sorted(set(names) - set(decided))
                raise AssertionError(
                    f"k8s {self.version}: the scheduler answered no claim of {[names[i] for i in missing]} "
                    f"in {ROUND_TIMEOUT:.0f} s"
                )
            time.sleep(0.3)
            claims = self._list(f"/apis/resource.k8s.io/v1/namespaces/{self.namespace}/resourceclaims")
            pods = self._list(f"/api/v1/namespaces/{self.namespace}/pods")
            for index, name in names.items():
                if index in decided:
                    continue
                allocation = ((claims.get(name) or {}).get("status") or {}).get("allocation")
                if allocation:
                    decided[index] = (claims[name], list(allocation["devices"]["results"]), "")
                    continue
                message = _unschedulable(pods.get(name) or {})
                if message is None:
                    unschedulable_since.pop(index, None)
                    continue
                since = unschedulable_since.setdefault(index, time.monotonic())
                if time.monotonic() - since >= SETTLE:
                    decided[index] = (stored[index], None, message)
        # Claims that did not fit go, so that a later retry cannot take devices from later steps.
        self.each(
            self._forget,
            [
                names[i]
                for i, (_, results, message) in decided.items()
                if results is None and not message.startswith(CRASH)
            ],
        )
        return decided

    def _crash(self, step: int, cases: list[Case], names: dict[int, str]) -> tuple[str, str]:
        """The scheduler exited: which claim it panicked on (its log names the Pod), and that claim."""
        log = self.scheduler.log.read_text(errors="replace")
        panics = re.findall(r'"Observed a panic" pod="[^/]+/([^"]+)" panic="([^"]*)"', log)
        found = panics[-1] if panics else None
        culprit = found[0] if found else "?"
        claim = next((cases[i].claims[step] for i, n in names.items() if n == culprit), None)
        pools = [
            {**asdict(c.pools), "slices": len(c.pools.slices)}
            for c in cases
            if f"{c.pools.node}-{step}" == culprit
        ]
        return culprit, (
            f"k8s {self.version}: kube-scheduler exited on the Pod of claim {culprit}"
            f" ({found[1] if found else 'no panic in its log'}):\n{json.dumps(claim, indent=1)}\n"
            f"the node's pools: {pools}"
        )

    def _list(self, path: str) -> dict[str, dict[str, Any]]:
        found = self.cluster.request("GET", path)
        return {item["metadata"]["name"]: item for item in found.get("items") or ()}

    def _forget(self, name: str) -> None:
        """Deletes a Pod and its claim: the Pod at once (no kubelet confirms), the claim after
        its finalizer (the scheduler's delete protection) is taken off."""
        try:
            self.cluster.request(
                "DELETE",
                f"/api/v1/namespaces/{self.namespace}/pods/{name}",
                {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0},
            )
        except ApiError as error:
            if error.status != 404:
                raise
        path = f"/apis/resource.k8s.io/v1/namespaces/{self.namespace}/resourceclaims/{name}"
        try:
            self.cluster.request(
                "PATCH", path, {"metadata": {"finalizers": None}}, content_type="application/merge-patch+json"
            )
            self.cluster.request("DELETE", path)
        except ApiError as error:
            if error.status != 404:
                raise

    def cleanup(self) -> None:
        try:
            claims = self._list(f"/apis/resource.k8s.io/v1/namespaces/{self.namespace}/resourceclaims")
            self.each(self._forget, sorted(claims))
        finally:
            self.each(
                lambda name: self.cluster.delete("resource.k8s.io/v1", "ResourceSlice", name), self.slices
            )
            self.each(lambda name: self.cluster.delete("v1", "Node", name), self.nodes)
            for obj in self.classes.values():
                self.cluster.delete("resource.k8s.io/v1", "DeviceClass", obj["metadata"]["name"])
            self.cluster.delete("v1", "Namespace", self.namespace)
            self.pool.shutdown()


def _cases(version: str, token: str, class_names: dict[str, str], namespace: str) -> list[Case]:
    minor = int(version.split(".")[1])
    rng = random.Random(SEED * 100 + minor)  # noqa: S311 - test data, seeded to be replayable
    cases = []
    for index in range(CASES):
        pools = random_pools(rng, f"adiff-{token}-{index:03d}", minor)
        facts = Facts.of(pools.slices)
        steps = rng.choice((1, 2, 2, 3, 3))
        claims = [
            random_claim(rng, f"c{step}", namespace, facts, class_names, minor) for step in range(steps)
        ]
        cases.append(Case(pools, claims))
    return cases


def test_allocator_agrees_with_the_scheduler(real_cluster: RealCluster, tmp_path: Path) -> None:
    token = secrets.token_hex(3)
    run = Run(real_cluster, token)
    class_names = {role: obj["metadata"]["name"] for role, obj in run.classes.items()}
    cases = _cases(real_cluster.version, token, class_names, run.namespace)
    matcher = CelMatcher()
    disagreements: list[Record] = []
    crashes: list[str] = []
    counts = {"fit": 0, "no fit": 0, "orders": 0, "ambiguous": 0}
    began = time.monotonic()
    try:
        run.setup(cases)
        classes = list(run.classes.values())
        for step in range(MAX_STEPS):
            active = [case for case in cases if len(case.claims) > step]
            if not active:
                break
            decided = run.round(step, active)
            for index, (claim, results, message) in decided.items():
                case = active[index]
                if message.startswith(CRASH):
                    crashes.append(message.removeprefix(CRASH).splitlines()[0])
                    continue
                mine = ours(
                    real_cluster.version,
                    case.pools.node,
                    case.stored_slices,
                    classes,
                    case.allocated,
                    claim,
                    matcher,
                )
                theirs: Answer = None if results is None else normalize(results)
                counts["fit" if results is not None else "no fit"] += 1
                counts["orders"] += sum(mine.answers.values())
                counts["ambiguous"] += len(mine.answers) > 1
                if not agrees(theirs, mine):
                    pools = {k: v for k, v in asdict(case.pools).items() if k != "slices"}
                    disagreements.append(
                        Record(
                            real_cluster.version,
                            case.pools.node,
                            pools,
                            case.stored_slices,
                            classes,
                            list(case.allocated),
                            claim,
                            results,
                            message,
                            [[as_fraction_free(a), n] for a, n in mine.answers.items()],
                            sorted(set(mine.errors)),
                        )
                    )
                if results is not None:
                    case.allocated.extend(results)
    finally:
        run.cleanup()
    elapsed = time.monotonic() - began
    generated = sum(len(case.claims) for case in cases)
    compared = counts["fit"] + counts["no fit"]
    print(
        f"k8s {real_cluster.version}: {len(cases)} pools, {generated} claims, {compared} compared, "
        f"{counts['fit']} claims allocated, "
        f"{counts['no fit']} unschedulable, {counts['ambiguous']} with several possible answers "
        f"({counts['orders']} slice orders tried), {len(disagreements)} disagreements, "
        f"{len(crashes)} scheduler crashes, {elapsed:.1f} s"
    )
    for crash in crashes:
        print(f"  known scheduler crash, left out: {crash}")
    if disagreements:
        dump = tmp_path / "disagreements.json"
        dump.write_text("[\n" + ",\n".join(record.json() for record in disagreements) + "\n]\n")
        first = disagreements[0]
        raise AssertionError(
            f"k8s {real_cluster.version}: the scheduler and our allocator disagree on "
            f"{len(disagreements)} claims (all of them in {dump}); the first:\n{first.json()}"
        )
    assert compared >= MIN_COMPARED * generated, (
        f"k8s {real_cluster.version}: only {compared} of {generated} claims compared ({len(crashes)} crashes)"
    )
    version = real_cluster.version
    assert counts["fit"] >= MIN_ALLOCATED * compared, f"k8s {version}: too few allocated: {counts}"
    assert counts["no fit"] >= MIN_UNSCHEDULABLE * compared, f"k8s {version}: too few refused: {counts}"
