# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The CEL specification's conformance cases (tests/k8s_semantics/cel/conformance, from google/cel-spec's
tests/simple/testdata) run through the engine's closed-expression entry point, ``compile_value``.

Every case passes or is listed, with its reason, in conformance/expected_failures.py; a listed
case that passes fails too. A case that cel-spec runs with its type checker off may also fail to
compile here, as it would on Kubernetes, which always checks (KUBERNETES-FACTS.md F3). The figures (cases
run, passed, expected failures by reason) are printed by ``test_figures`` under ``pytest -s`` and
by ``python -m tests.k8s_semantics.cel.test_conformance``.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pytest

from deckhouse_gpu.k8s_semantics.cel import SelectorError
from deckhouse_gpu.k8s_semantics.cel.engine import compile_value
from deckhouse_gpu.k8s_semantics.cel.values import unkey
from tests.k8s_semantics.cel.conformance import ALL_CASES
from tests.k8s_semantics.cel.conformance.expected_failures import EXPECTED_FAILURES
from tests.k8s_semantics.cel.conformance.spec import Case


@dataclass(frozen=True)
class Outcome:
    passed: bool
    detail: str = ""
    refused: bool = False  # an unchecked case that did not compile


def same(actual: Any, expected: Any) -> bool:
    """Equal values of the same CEL type: 1 is not 1u, 1.0 or true; -0.0 is not 0.0; NaN is NaN."""
    if type(actual) is not type(expected):
        return False
    if isinstance(actual, float):
        if math.isnan(actual) or math.isnan(expected):
            return math.isnan(actual) and math.isnan(expected)
        return actual == expected and math.copysign(1, actual) == math.copysign(1, expected)
    if isinstance(actual, list):
        return len(actual) == len(expected) and all(same(a, e) for a, e in zip(actual, expected, strict=True))
    if isinstance(actual, dict):
        keys = {unkey(k): v for k, v in actual.items()}
        return len(keys) == len(expected) and all(
            any(same(k, e) for e in expected) and same(v, expected[k]) for k, v in keys.items()
        )
    return bool(actual == expected)


def run(case: Case) -> Outcome:
    expect = case.expect
    try:
        compiled = compile_value(case.expr, expect.bindings.keys())
    except SelectorError as error:
        if not expect.checked:
            return Outcome(True, str(error), refused=True)
        return Outcome(False, f"does not compile: {error}")
    try:
        value = compiled.evaluate(expect.bindings)
    except SelectorError as error:
        if expect.error:
            return Outcome(True, str(error))
        return Outcome(False, f"fails: {error}; cel-spec expects {expect.value!r}")
    if expect.error:
        return Outcome(False, f"yields {value!r}; cel-spec expects an error")
    if not same(value, expect.value):
        return Outcome(False, f"yields {value!r} ({type(value).__name__}); cel-spec expects {expect.value!r}")
    return Outcome(True)


@pytest.mark.parametrize("case", ALL_CASES, ids=lambda case: case.id)
def test_case(case: Case) -> None:
    outcome = run(case)
    reason = EXPECTED_FAILURES.get(case.id)
    if reason is None:
        assert outcome.passed, f"{case.id}: {case.expr!r} {outcome.detail}"
    else:
        assert not outcome.passed, f"{case.id} passes now: take it off the expected failures ({reason})"


def test_expected_failures_name_cases() -> None:
    assert set(EXPECTED_FAILURES) <= {case.id for case in ALL_CASES}
    assert len({case.id for case in ALL_CASES}) == len(ALL_CASES)


def figures() -> str:
    outcomes = {case.id: run(case) for case in ALL_CASES}
    passed = [i for i, o in outcomes.items() if o.passed]
    refused = [i for i, o in outcomes.items() if o.refused]
    by_reason = Counter(
        EXPECTED_FAILURES[i] for i, o in outcomes.items() if not o.passed and i in EXPECTED_FAILURES
    )
    files = Counter(case.file for case in ALL_CASES)
    lines = [
        f"cel-spec conformance: {len(outcomes)} cases from {len(files)} files, {len(passed)} passed "
        f"({len(refused)} of them unchecked cases refused at compile time), "
        f"{len(outcomes) - len(passed)} failed",
        *(f"  expected failure x{count}: {reason}" for reason, count in by_reason.most_common()),
        *(f"  {file}: {count}" for file, count in sorted(files.items())),
    ]
    return "\n".join(lines)


def test_figures() -> None:
    print(figures())


if __name__ == "__main__":
    print(figures())
