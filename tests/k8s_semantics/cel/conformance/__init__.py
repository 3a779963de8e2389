# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The CEL specification's conformance cases that fall inside the CEL Kubernetes gives DRA
selectors (KUBERNETES-FACTS.md F3, DESIGN.md D4), run through the engine by
tests/k8s_semantics/cel/test_conformance.py.

Source: google/cel-spec, tests/simple/testdata/*.textproto, read at these commits:
basic 39e2c5d9, plumbing fa630538, parse efc8f304, logic bbd23896, integer_math 7597e1eb,
fp_math 931f7cf9, comparisons d917b9f7, lists b3e452da, fields 7ad5414d, macros c7eddf5f,
macros2 9d597172, bindings_ext d921c827, string 5b71560c, string_ext 862a6318,
conversions 886e2a8e. Each module names the sections and tests it leaves out, and why.

Files left out whole, because the DRA environment or the engine has none of what they test:
dynamic, proto2, proto3, proto2_ext, wrappers, enums (protobuf messages, wrappers, JSON values
and enums); timestamps (durations and timestamps, refused by the engine at compile time); optionals
(optional types, refused likewise); type_deduction (the checker's deduced types, which the engine
does not expose); unknowns (partial evaluation); namespace (qualified variable names and
containers); block_ext (``cel.block``), math_ext, encoders_ext and network_ext (libraries that are
not in Kubernetes' CEL environment: Kubernetes has its own IP and CIDR libraries); broken (cases
that fail on at least one of cel-spec's implementations, kept apart until fixed).

Where Kubernetes differs from cel-spec's suite: its environment also enables homogeneous
aggregate literals, so an API server refuses a list or map literal whose elements have different
types (``[1, 'foo', 3]``, about forty cases here); the engine's partial type check accepts them
and evaluates them as cel-spec does. cel-spec runs some tests with its type checker off
(``disable_check``); Kubernetes never does, so for those a compile error is also accepted.
"""

from __future__ import annotations

from tests.k8s_semantics.cel.conformance import (
    arithmetic,
    basic,
    comprehensions,
    containers,
    conversions,
    equality,
    ordering,
    strings_ext,
    text,
)
from tests.k8s_semantics.cel.conformance.spec import Case

ALL_CASES: list[Case] = [
    *basic.CASES,
    *arithmetic.CASES,
    *equality.CASES,
    *ordering.CASES,
    *containers.CASES,
    *comprehensions.CASES,
    *text.CASES,
    *strings_ext.CASES,
    *conversions.CASES,
]
