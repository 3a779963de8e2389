# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The DRA CEL engine (k8s_semantics/cel): the Kubernetes quantity and semver libraries."""

from __future__ import annotations

import pytest

from deckhouse_gpu.k8s_semantics.cel import Semver
from tests.k8s_semantics.cel.sample_device import C, evaluate

# --- the Kubernetes quantity and semver libraries ----------------------------------------------------

QUANTITY_EXPRESSIONS = [
    "quantity('1Gi') == quantity('1024Mi') && quantity('1k') != quantity('1Ki')",
    "quantity('1') == quantity('1000m') && quantity('0.5') == quantity('500m')",
    "isQuantity('1.5Gi') && !isQuantity('1.5 Gi') && !isQuantity('') && !isQuantity('Gi')",
    "sign(quantity('-1')) == -1 && sign(quantity('0')) == 0 && sign(quantity('2m')) == 1",
    "quantity('2k').isInteger() && !quantity('1.5').isInteger() && quantity('2k').asInteger() == 2000",
    "quantity('1.5').asApproximateFloat() == 1.5 && quantity('1Ki').asApproximateFloat() == 1024.0",
    "quantity('1Gi').add(quantity('1Gi')) == quantity('2Gi')",
    "quantity('1Gi').add(1) == quantity('1073741825') && quantity('1Gi').add(1).isInteger()",
    "quantity('1Gi').sub(quantity('512Mi')) == quantity('512Mi') && quantity('1').sub(2) == quantity('-1')",
    "quantity('2').isGreaterThan(quantity('1')) && quantity('1').isLessThan(quantity('2'))",
    "!quantity('1').isGreaterThan(quantity('1000m')) && !quantity('1').isLessThan(quantity('1000m'))",
    "quantity('1').compareTo(quantity('1000m')) == 0 && quantity('1').compareTo(quantity('2')) == -1",
    "quantity('3').compareTo(quantity('2')) == 1",
    f"{C}.memory.compareTo(quantity('40Gi')) == 0 && {C}.memory.isGreaterThan(quantity('39Gi'))",
    f"{C}.memory.add(quantity('1Gi')).compareTo(quantity('41Gi')) == 0",
    "device.capacity.exists(d, device.capacity[d].exists(n, device.capacity[d][n] == quantity('1.5')))",
]

SEMVER_EXPRESSIONS = [
    "semver('1.2.3').major() == 1 && semver('1.2.3').minor() == 2 && semver('1.2.3').patch() == 3",
    "semver('v1.2', true) == semver('1.2.0') && semver('01.02.03', true) == semver('1.2.3')",
    "semver('1', true) == semver('1.0.0') && semver('v1.0.0-rc.1', true) == semver('1.0.0-rc.1')",
    "isSemver('1.2.3') && !isSemver('v1.2.3') && isSemver('v1.2.3', true) && !isSemver('1.2', false)",
    "isSemver('1.2', true) && !isSemver('1.2-beta', true) && !isSemver('1.2.3.4', true)",
    "isSemver('1.0.0-alpha.1+build.5') && !isSemver('1.0.0-01') && !isSemver('1.0.0-') && !isSemver('')",
    "semver('1.2.3-alpha').isLessThan(semver('1.2.3')) && semver('1.10.0').isGreaterThan(semver('1.9.0'))",
    "semver('1.0.0-alpha.1').isLessThan(semver('1.0.0-alpha.beta'))",  # numeric before alphanumeric
    "semver('1.0.0-alpha').isLessThan(semver('1.0.0-alpha.1'))",  # fewer parts first
    "semver('1.0.0-2').isLessThan(semver('1.0.0-10'))",  # numeric parts by value
    "semver('1.0.0-beta').isGreaterThan(semver('1.0.0-alpha'))",
    "semver('1.2.3+build.1') == semver('1.2.3+build.2') && semver('1.2.3') != semver('1.2.4')",
    "semver('2.0.0').compareTo(semver('1.9.9')) == 1 && semver('1.0.0').compareTo(semver('1.0.0')) == 0",
    "semver('1.0.0').compareTo(semver('1.0.1')) == -1",
]


@pytest.mark.parametrize("expression", QUANTITY_EXPRESSIONS + SEMVER_EXPRESSIONS)
def test_kubernetes_libraries(expression: str) -> None:
    assert evaluate(expression) is True


def test_semver_parses_like_blang_semver() -> None:
    version = Semver.parse("1.2.3-rc.1.x-y+b.2")
    assert (version.major, version.minor, version.patch) == (1, 2, 3)
    assert version.pre == ("rc", 1, "x-y")
    assert version.build == ("b", "2")
    assert str(version) == "1.2.3-rc.1.x-y+b.2"
    for bad in ("1.2", "v1.2.3", "1.02.3", "1.2.3-", "1.2.3+", "1.2.3-a..b", " 1.2.3", "1.2.3-01"):
        with pytest.raises(ValueError, match=r"semantic version|leading zero"):
            Semver.parse(bad)
