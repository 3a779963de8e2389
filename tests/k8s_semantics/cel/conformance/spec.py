# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The form of the conformance data: cases of the CEL specification's conformance suite, the
``simple`` test files of google/cel-spec (tests/simple/testdata/*.textproto), rewritten as Python.

A case keeps the file, section and test name it comes from, its expression and what cel-spec
expects: a value (a test without a result expects ``true``), or an error (``ERROR``). ``unchecked``
marks a test that cel-spec runs with ``disable_check: true``; ``bound`` gives the variable bindings
of one that has them. Values are the engine's runtime values: int, ``U`` (uint), float, str, bytes,
bool, None, list, dict and ``T`` (a type value).

Expressions are cel-spec's as its text format decodes them, except that control characters the
text format would put into a literal are written as the CEL escapes for the same value. A test name
that repeats within its section (three do in string_ext's index_of) gets ``#2`` appended, and so on.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from deckhouse_gpu.k8s_semantics.cel.values import CelType, Uint

SOURCE: Final = "google/cel-spec tests/simple/testdata"
U = Uint
T = CelType


@dataclass(frozen=True)
class Expect:
    """What cel-spec expects of a test."""

    value: Any = True
    error: bool = False
    checked: bool = True  # False where cel-spec disables its type checker
    bindings: Mapping[str, Any] = field(default_factory=dict)


ERROR: Final = Expect(error=True)


def unchecked(expected: Any) -> Expect:
    """A test that cel-spec runs without its type checker (``disable_check: true``)."""
    base = expected if isinstance(expected, Expect) else Expect(value=expected)
    return dataclasses.replace(base, checked=False)


def bound(expected: Any, **bindings: Any) -> Expect:
    """A test with variable bindings (declared as dyn)."""
    base = expected if isinstance(expected, Expect) else Expect(value=expected)
    return dataclasses.replace(base, bindings=bindings)


@dataclass(frozen=True)
class Case:
    file: str  # tests/simple/testdata/<file>.textproto
    section: str
    name: str
    expr: str
    expect: Expect

    @property
    def id(self) -> str:
        return f"{self.file}/{self.section}/{self.name}"


Row = tuple[str, str, Any]  # test name, expression, expected value or Expect


def spec_file(file: str, sections: Mapping[str, list[Row]]) -> list[Case]:
    """The cases of one cel-spec file, section by section in its order."""
    cases = []
    for section, rows in sections.items():
        seen: dict[str, int] = {}
        for name, expr, expected in rows:
            seen[name] = seen.get(name, 0) + 1
            unique = name if seen[name] == 1 else f"{name}#{seen[name]}"
            expect = expected if isinstance(expected, Expect) else Expect(value=expected)
            cases.append(Case(file, section, unique, expr, expect))
    return cases
