# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""``k8s_semantics/resourceslice/slice_rules*`` accepts exactly what the real API server accepts, per version.

gpu-handler checks every slice it renders with these rules before it writes it (and refuses to
publish what the server would refuse), so the rules must say what the server says: for random
slices near every limit (tests/real/slice_cases.py), the server's answer to a dry-run create and
our rules' verdict agree on 1.34, 1.35 and 1.36. Only the rules that no API server checks (the
allocator's traps, named as such in their message) are left out of the comparison.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, event, given, settings

from deckhouse_gpu.k8s_semantics.resourceslice.slice_rules import validate_slice
from testkit.real_cluster import ApiError, RealCluster
from tests.real.slice_cases import LAYOUTS, base, near_limit_slices

# A rule that the API server does not check says so in its message (slice_rules_devices.py).
ALLOCATOR_ONLY = "the API server accepts it"


def server_accepts(cluster: RealCluster, resource_slice: dict[str, Any]) -> tuple[bool, str]:
    try:
        cluster.create(resource_slice, dry_run=True)
    except ApiError as refused:
        if refused.status not in (400, 422):
            raise
        return False, str(refused.body.get("message", refused))
    return True, ""


def our_problems(resource_slice: dict[str, Any], version: str) -> list[str]:
    minor = int(version.split(".")[1])
    return [str(p) for p in validate_slice(resource_slice, minor) if ALLOCATOR_ONLY not in p.rule]


def test_every_base_layout_is_valid_where_its_version_allows_it(real_cluster: RealCluster) -> None:
    # The 1.35 devices slice refers to a counter set in another slice of the pool, which 1.34
    # does not allow; the 1.34 layout (counters and devices in one slice) is gone in 1.35.
    old = real_cluster.version == "1.34"
    for layout in LAYOUTS:
        valid = (layout, old) not in (("1.35-devices", True), ("1.34", False))
        accepted, message = server_accepts(real_cluster, base(layout))
        assert accepted == valid, f"{layout}: {message}"
        assert (our_problems(base(layout), real_cluster.version) == []) == valid, layout


@settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=near_limit_slices())
def test_our_rules_agree_with_the_server(real_cluster: RealCluster, case: Any) -> None:
    layout, chosen, resource_slice = case
    accepted, message = server_accepts(real_cluster, resource_slice)
    event("server accepts" if accepted else "server refuses")
    problems = our_problems(resource_slice, real_cluster.version)
    assert accepted == (not problems), (
        f"Kubernetes {real_cluster.version}, layout {layout}, "
        f"changed {json.dumps(chosen, default=str)[:400]}:\n"
        f"  server: {'accepts' if accepted else 'refuses: ' + message[:1500]}\n"
        f"  slice_rules: {problems or 'accepts'}"
    )
