# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Kubernetes label selector strings (``a=b,c in (x,y),!d``): a parser and a matcher.

It follows the grammar of ``k8s.io/apimachinery/pkg/labels.Parse`` for the operators we use, so
the in-memory API server filters exactly as the real one would, and a selector the real server
would reject is rejected here too instead of silently matching nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum


class Operator(StrEnum):
    EQUALS = "="
    NOT_EQUALS = "!="
    IN = "in"
    NOT_IN = "notin"
    EXISTS = "exists"
    DOES_NOT_EXIST = "!"


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: Operator
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        match self.operator:
            case Operator.EXISTS:
                return present
            case Operator.DOES_NOT_EXIST:
                return not present
            case Operator.EQUALS | Operator.IN:
                return present and labels[self.key] in self.values
            case Operator.NOT_EQUALS | Operator.NOT_IN:
                # As in Kubernetes: an absent label satisfies "!=" and "notin".
                return not present or labels[self.key] not in self.values


@dataclass(frozen=True)
class Selector:
    """Requirements joined by AND; no requirements selects everything."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        present = labels or {}
        return all(requirement.matches(present) for requirement in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements


EVERYTHING = Selector()

_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?"
_NAME_RE = re.compile(_NAME)
_PREFIX_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
# One token: an operator, a parenthesis, a comma, or a run of anything else (a key or a value).
_TOKEN_RE = re.compile(r"\s*(==|!=|=|!|\(|\)|,|[^\s!=(),]+)")
_SPECIAL = frozenset({"==", "!=", "=", "!", "(", ")", ","})


def parse_selector(text: str | None) -> Selector:
    """Parses a selector; ``None`` or blank selects everything. Raises ``ValueError`` when invalid."""
    if text is None or not text.strip():
        return EVERYTHING
    parser = _Parser(text, _tokenize(text))
    requirements = [parser.requirement()]
    while parser.take(","):
        requirements.append(parser.requirement())
    if parser.peek() is not None:
        raise ValueError(f"invalid label selector {text!r}: unexpected {parser.peek()!r}")
    return Selector(tuple(requirements))


def _tokenize(text: str) -> list[str]:
    # Every non-blank character starts some token, so findall consumes the whole text.
    return _TOKEN_RE.findall(text)


class _Parser:
    def __init__(self, text: str, tokens: list[str]) -> None:
        self._text = text
        self._tokens = tokens
        self._next = 0

    def peek(self) -> str | None:
        return self._tokens[self._next] if self._next < len(self._tokens) else None

    def take(self, token: str) -> bool:
        if self.peek() == token:
            self._next += 1
            return True
        return False

    def _fail(self, expected: str) -> ValueError:
        found = self.peek()
        what = "end of input" if found is None else repr(found)
        return ValueError(f"invalid label selector {self._text!r}: expected {expected}, found {what}")

    def _word(self, expected: str) -> str:
        token = self.peek()
        if token is None or token in _SPECIAL:
            raise self._fail(expected)
        self._next += 1
        return token

    def requirement(self) -> Requirement:
        if self.take("!"):
            return Requirement(_check_key(self._word("a label key after '!'")), Operator.DOES_NOT_EXIST)
        key = _check_key(self._word("a label key"))
        token = self.peek()
        if token is None or token == ",":
            return Requirement(key, Operator.EXISTS)
        if token in ("=", "==", "!="):
            self._next += 1
            operator = Operator.NOT_EQUALS if token == "!=" else Operator.EQUALS
            # "a=" is legal: it selects an empty value.
            value = "" if self.peek() in (None, ",") else _check_value(self._word("a label value"))
            return Requirement(key, operator, frozenset({value}))
        if token in ("in", "notin"):
            self._next += 1
            operator = Operator.IN if token == "in" else Operator.NOT_IN
            return Requirement(key, operator, self._values())
        raise self._fail("'=', '==', '!=', 'in', 'notin', ',' or end of input")

    def _values(self) -> frozenset[str]:
        if not self.take("("):
            raise self._fail("'('")
        values: set[str] = set()
        while True:
            # Kubernetes reads an empty slot ("()" or "(a,)") as the empty value.
            token = self.peek()
            values.add("" if token in (",", ")") else _check_value(self._word("a label value")))
            if self.take(")"):
                return frozenset(values)
            if not self.take(","):
                raise self._fail("',' or ')'")


def _check_key(key: str) -> str:
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _PREFIX_RE.fullmatch(prefix)):
        raise ValueError(f"invalid label key {key!r}: the prefix must be a DNS subdomain")
    if len(name) > 63 or not _NAME_RE.fullmatch(name):
        raise ValueError(
            f"invalid label key {key!r}: the name must be 1-63 characters of [A-Za-z0-9-_.], "
            "starting and ending with an alphanumeric character"
        )
    return key


def _check_value(value: str) -> str:
    if len(value) > 63 or not _NAME_RE.fullmatch(value):
        raise ValueError(
            f"invalid label value {value!r}: it must be at most 63 characters of [A-Za-z0-9-_.], "
            "starting and ending with an alphanumeric character"
        )
    return value
