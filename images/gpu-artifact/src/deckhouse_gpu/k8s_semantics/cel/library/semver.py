# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The ``kubernetes.Semver`` value: ``github.com/blang/semver/v4`` parsing and precedence, and the
``normalizeAndParse`` leniency of Kubernetes' ``semver(text, true)``."""

from __future__ import annotations

import re
from typing import Final

_UINT_MAX: Final = 2**64 - 1  # blang/semver reads every number as a uint64


class Semver:
    """A semantic version as ``github.com/blang/semver/v4`` parses it; equal when ``compareTo`` is 0."""

    __slots__ = ("build", "major", "minor", "patch", "pre")

    _PATTERN = re.compile(
        r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)"
        r"(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
    )

    def __init__(
        self, major: int, minor: int, patch: int, pre: tuple[str | int, ...] = (), build: tuple[str, ...] = ()
    ) -> None:
        self.major, self.minor, self.patch, self.pre, self.build = major, minor, patch, pre, build

    @classmethod
    def parse(cls, text: str, normalize: bool = False) -> Semver:
        """``semver.Parse``, or the Kubernetes ``normalizeAndParse`` with ``normalize``."""
        if normalize:
            text = _normalize_semver(text)
        match = cls._PATTERN.fullmatch(text)
        if match is None:
            raise ValueError(f"{text!r} is not a semantic version")
        numbers = [int(match[i]) for i in (1, 2, 3)]
        pre: list[str | int] = []
        for part in match[4].split(".") if match[4] else []:
            if part.isdigit():
                if len(part) > 1 and part[0] == "0":
                    raise ValueError(f"{text!r}: numeric pre-release part {part!r} has a leading zero")
                pre.append(int(part))
            else:
                pre.append(part)
        if any(n > _UINT_MAX for n in numbers) or any(isinstance(p, int) and p > _UINT_MAX for p in pre):
            raise ValueError(f"{text!r}: a number is out of range")
        build = tuple(match[5].split(".")) if match[5] else ()
        return cls(numbers[0], numbers[1], numbers[2], tuple(pre), build)

    def compare(self, other: Semver) -> int:
        """-1, 0 or 1 by semver precedence (build metadata ignored)."""
        for mine, theirs in ((self.major, other.major), (self.minor, other.minor), (self.patch, other.patch)):
            if mine != theirs:
                return -1 if mine < theirs else 1
        if not self.pre or not other.pre:
            return (not self.pre) - (not other.pre)
        for mine_part, their_part in zip(self.pre, other.pre, strict=False):
            if mine_part == their_part:
                continue
            if isinstance(mine_part, int) != isinstance(their_part, int):
                return -1 if isinstance(mine_part, int) else 1  # numeric parts sort first
            return -1 if mine_part < their_part else 1  # type: ignore[operator]
        return (len(self.pre) > len(other.pre)) - (len(self.pre) < len(other.pre))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Semver) and self.compare(other) == 0

    def __hash__(self) -> int:
        return hash((self.major, self.minor, self.patch, self.pre))

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.pre:
            text += "-" + ".".join(str(p) for p in self.pre)
        return text + ("+" + ".".join(self.build) if self.build else "")

    def __repr__(self) -> str:
        return f"Semver({str(self)!r})"


def _normalize_semver(text: str) -> str:
    """Kubernetes' ``normalizeAndParse``: drop a ``v``, strip leading zeros, pad minor and patch."""
    text = text.removeprefix("v")
    parts = text.split(".", 2)
    for index, part in enumerate(parts):
        if len(part) > 1:
            stripped = part.lstrip("0")
            parts[index] = stripped if stripped and stripped[0] in "0123456789" else "0" + stripped
    if len(parts) < 3:
        if any(c in parts[-1] for c in "+-"):
            raise ValueError("short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return ".".join(parts)
