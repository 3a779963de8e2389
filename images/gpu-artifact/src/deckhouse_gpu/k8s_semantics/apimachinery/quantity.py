# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A Kubernetes ``resource.Quantity``: strict parsing, exact arithmetic and canonical text.

The grammar is the one of ``resource.ParseQuantity``: a signed decimal number followed by one
suffix, a binary SI one (``Ki`` .. ``Ei``), a decimal SI one (``n u m k M G T P E`` or none) or a
decimal exponent (``e3``, ``E-2``). Like the API server, a non-zero value is rounded up to a
multiple of 1n. Stricter than the API server on purpose: the number needs a digit, surrounding
spaces are refused, and exponents are limited to ±1000 so a hostile value cannot build a huge
number. The DRA allocator and its CEL library use it for counters, capacities and selectors.
"""

from __future__ import annotations

import functools
import math
import re
from fractions import Fraction

_QUANTITY = re.compile(r"([+-]?)([0-9]+(?:\.[0-9]*)?|\.[0-9]+)([numkMGTPE]|[KMGTPE]i|[eE][+-]?[0-9]+)?")
_DECIMAL = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_MAX_EXPONENT = 1000
_NANO = 10**9
_INT64 = 2**63


class QuantityError(ValueError):
    """The text is not a Kubernetes quantity."""


class Quantity:
    """An exact quantity; equal when the values are equal (``1Gi`` == ``1024Mi``)."""

    __slots__ = ("text", "value")

    def __init__(self, text: str, value: Fraction) -> None:
        self.text = text
        self.value = value

    @classmethod
    def parse(cls, text: str) -> Quantity:
        # A cluster's slices repeat a few hundred distinct amounts over and over (every MIG
        # placement of every card); quantities are never changed, so one parse serves them all.
        return _parse(text) if cls is Quantity else cls._parse_text(text)

    @classmethod
    def _parse_text(cls, text: str) -> Quantity:
        match = _QUANTITY.fullmatch(text)
        if match is None:
            raise QuantityError(f"{text!r} is not a Kubernetes quantity")
        sign, number, suffix = match[1], match[2], match[3] or ""
        scientific = suffix not in _BINARY and suffix not in _DECIMAL and suffix != ""  # e3, E-2
        try:
            value = Fraction(number)
            exponent = int(suffix[1:]) if scientific else 0
        except ValueError:  # more digits than int() converts (sys.get_int_max_str_digits())
            raise QuantityError(f"{text[:40]!r}...: too many digits") from None
        if suffix in _BINARY:
            value *= 2 ** _BINARY[suffix]
        elif scientific:
            if abs(exponent) > _MAX_EXPONENT:
                raise QuantityError(f"{text!r}: exponent beyond ±{_MAX_EXPONENT}")
            value *= Fraction(10) ** exponent
        elif suffix:
            value *= Fraction(10) ** _DECIMAL[suffix]
        value = Fraction(math.ceil(value * _NANO), _NANO)
        return cls(text, -value if sign == "-" else value)

    @classmethod
    def of(cls, value: Fraction | int) -> Quantity:
        return cls(str(value), Fraction(value))

    def compare(self, other: Quantity) -> int:
        """-1, 0 or 1, like ``Quantity.Cmp``."""
        return (self.value > other.value) - (self.value < other.value)

    def is_integer(self) -> bool:
        """``AsInt64`` succeeds: a whole number within int64."""
        return self.value.denominator == 1 and -_INT64 <= self.value < _INT64

    def as_integer(self) -> int:
        if not self.is_integer():
            raise QuantityError(f"{self.text!r} is not an integer within int64")
        return int(self.value)

    def sign(self) -> int:
        return (self.value > 0) - (self.value < 0)

    @property
    def binary(self) -> bool:
        """Written with a binary suffix: its canonical text keeps binary suffixes."""
        return self.text.rstrip("0123456789").endswith("i")

    def add(self, other: Quantity) -> Quantity:
        return Quantity.exact(self.value + other.value, self.binary)

    def sub(self, other: Quantity) -> Quantity:
        return Quantity.exact(self.value - other.value, self.binary)

    @classmethod
    def exact(cls, value: Fraction | int, binary: bool = False) -> Quantity:
        """A quantity of ``value`` with its canonical text (binary or decimal suffixes)."""
        return cls(canonical(Fraction(value), binary), Fraction(value))

    def __str__(self) -> str:
        return self.text

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self.value == other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"Quantity({self.text!r})"


@functools.lru_cache(maxsize=16384)
def _parse(text: str) -> Quantity:
    return Quantity._parse_text(text)


def canonical(value: Fraction, binary: bool = False) -> str:
    """The text Kubernetes prints for a value: the largest suffix that keeps it whole
    (``1536Mi``, ``2k``, ``500m``); fractions below one use ``m``, ``u`` or ``n``."""
    sign = "-" if value < 0 else ""
    value = abs(value)
    if value == 0:
        return "0"
    if value.denominator == 1:
        number = int(value)
        if binary:
            for suffix, power in sorted(_BINARY.items(), key=lambda item: -item[1]):
                if number % (1 << power) == 0:
                    return f"{sign}{number >> power}{suffix}"
            return f"{sign}{number}"
        for suffix in ("E", "P", "T", "G", "M", "k"):
            scale = 10 ** _DECIMAL[suffix]
            if number % scale == 0:
                return f"{sign}{number // scale}{suffix}"
        return f"{sign}{number}"
    for suffix in ("m", "u", "n"):
        scaled = value * 10 ** -_DECIMAL[suffix]
        if scaled.denominator == 1:
            return f"{sign}{int(scaled)}{suffix}"
    return f"{sign}{math.ceil(value * _NANO)}n"
