# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A Pod's claims found as the scheduler finds them: by name, or generated from a template."""

from __future__ import annotations

from typing import Any

from deckhouse_gpu.domain.report.pod_claims import (
    ALLOCATED,
    MISSING,
    NOT_CREATED,
    UNALLOCATED,
    pod_claims,
    template_names,
)


def _pod(generated: dict[str, str]) -> dict[str, Any]:
    return {
        "metadata": {"namespace": "ml", "name": "p"},
        "spec": {
            "resourceClaims": [
                {"name": "direct", "resourceClaimName": "shared-claim"},
                {"name": "made", "resourceClaimTemplateName": "t"},
                {"name": "later", "resourceClaimTemplateName": "t"},
            ]
        },
        "status": {
            "resourceClaimStatuses": [{"name": k, "resourceClaimName": v} for k, v in generated.items()]
        },
    }


def test_generated_claims_are_read_and_templates_stand_in_for_the_others() -> None:
    allocated: dict[str, Any] = {
        "metadata": {"namespace": "ml", "name": "p-made-x1"},
        "status": {"allocation": {"devices": {}}},
    }
    claims: dict[str, dict[str, Any]] = {
        "ml/shared-claim": {"metadata": {"namespace": "ml", "name": "shared-claim"}},
        "ml/p-made-x1": allocated,
    }
    template = {"spec": {"spec": {"devices": {"requests": [{"name": "gpu"}]}}}}
    pod = _pod({"made": "p-made-x1"})
    assert template_names(pod) == ["t"]  # "later" still needs its template
    found = pod_claims(pod, claims, {"t": template})
    assert [(c.entry, c.claim, c.source, c.state) for c in found] == [
        ("direct", "ml/shared-claim", "claim shared-claim", UNALLOCATED),
        ("made", "ml/p-made-x1", "template t", ALLOCATED),
        ("later", "ml/p-later", "template t", NOT_CREATED),
    ]
    assert found[2].obj == {
        "metadata": {"namespace": "ml", "name": "p-later"},
        "spec": template["spec"]["spec"],
    }
    assert found[1].node_selector is None  # allocated without one: available on every node


def test_what_does_not_exist_is_named() -> None:
    found = pod_claims(_pod({"made": "p-made-gone"}), {}, {})
    assert [(c.state, c.problem) for c in found] == [
        (MISSING, "ResourceClaim ml/shared-claim does not exist"),
        (MISSING, "ResourceClaim ml/p-made-gone does not exist"),
        (MISSING, "ResourceClaimTemplate ml/t does not exist"),
    ]
