# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Fuzzing of ``Quantity.parse`` against the ``kubernetes`` client's own parser.

For every generated text both parse to the same value (after the nano rounding Kubernetes applies,
the client's ``Decimal`` computed at 200 digits instead of its context's 28) or both refuse it, and
``Quantity.parse`` raises nothing but ``QuantityError``. The client is laxer than the API server in
the ways ``CLIENT_ONLY`` lists; there it may accept what Kubernetes (and ``Quantity``) refuses, never
the reverse. Found here, both a bare ValueError that no caller catches, QuantityError or a value now:
``1E`` (10^18, the suffix E) did not parse at all, and a number or exponent of more than 4300
digits hit Python's int conversion limit.
"""

from __future__ import annotations

import decimal
import math
import re
from collections.abc import Callable
from fractions import Fraction

from hypothesis import example, given
from hypothesis import strategies as st
from kubernetes.utils.quantity import parse_quantity

from deckhouse_gpu.k8s_semantics.apimachinery.quantity import Quantity, QuantityError
from tests.support.fuzzing import fuzz

_EXPONENT_AND_SUFFIX = re.compile(
    r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)[eE][+-]?[0-9]+(?:[numkKMGTPE]|[KMGTPE]i)"
)
_EXPONENT = re.compile(r"[eE][+-]?([0-9]+)$")
# What the client takes and Kubernetes' resource.ParseQuantity refuses (so does Quantity), each
# with a test on the text. The client hands the number to Python's Decimal whole.
CLIENT_ONLY: dict[str, Callable[[str], bool]] = {
    "surrounding or inner white space (Decimal strips it)": lambda t: any(c.isspace() for c in t),
    "digit separators: 1_000 (Decimal)": lambda t: "_" in t,
    "non-ASCII digits such as Arabic-Indic (Decimal)": lambda t: not t.isascii(),
    "Infinity, NaN and sNaN (Decimal)": lambda t: re.search(r"(?i)inf|nan", t) is not None,
    "the suffix K (the client's table has it; Kubernetes has k only)": lambda t: t.endswith("K"),
    "an exponent together with a suffix: 1e3Ki": lambda t: _EXPONENT_AND_SUFFIX.fullmatch(t) is not None,
    "an exponent beyond ±1000 (Quantity's own limit against huge numbers)": lambda t: bool(
        (m := _EXPONENT.search(t)) and len(m[1]) < 4000 and int(m[1]) > 1000
    ),
    "more than 4300 digits (Python's int conversion limit)": lambda t: len(t) > 4300,
}

_NUMBERS = st.one_of(
    st.from_regex(r"\A[+-]?[0-9]{1,20}\Z"),
    st.from_regex(r"\A[+-]?[0-9]{0,12}\.[0-9]{0,14}\Z"),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.decimals(allow_nan=False, allow_infinity=False, places=12).map(str),
)
_SUFFIXES = st.sampled_from(
    [
        *("", "n", "u", "m", "k", "K", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"),
        *("ki", "mi", "i", "e", "E3", "e3", "e-2", "E+2", "e1001", "e-1001", "Mb", " ", "_", "\u03bc"),
    ]
)
QUANTITY_LIKE = st.one_of(
    st.builds(lambda n, s: n + s, _NUMBERS, _SUFFIXES),
    st.builds(lambda n, e, s: f"{n}e{e}{s}", _NUMBERS, st.integers(-1200, 1200), _SUFFIXES),
    st.text(alphabet="0123456789.+-eEikKMGTPnum _\t\u0661", max_size=12),  # U+0661: an Arabic-Indic 1
    st.text(max_size=8),
)


def _client(text: str) -> Fraction | None:
    with decimal.localcontext() as context:
        context.prec = 200
        try:
            value = parse_quantity(text)
        except (ValueError, ArithmeticError):
            return None
    if not value.is_finite():
        return None
    exact = Fraction(value)
    rounded = Fraction(math.ceil(abs(exact) * 10**9), 10**9)  # Kubernetes rounds up to 1n
    return -rounded if exact < 0 else rounded


def _shown(value: Fraction | None) -> str:
    try:
        return str(value)
    except ValueError:  # more digits than str() converts
        return "a number of more than 4300 digits"


def _ours(text: str) -> Fraction | None:
    try:
        return Quantity.parse(text).value
    except QuantityError:
        return None


@given(QUANTITY_LIKE)
@example("1E")
@example("1" * 5000)
@example("1e" + "9" * 5000)
@example("0." + "0" * 5000 + "1Mi")
@fuzz(1000)
def test_quantity_parses_as_the_kubernetes_client_does(text: str) -> None:
    ours, theirs = _ours(text), _client(text)  # _ours lets any other exception through
    if ours == theirs:
        return
    reasons = [reason for reason, applies in CLIENT_ONLY.items() if applies(text)]
    where = f"{text[:60]!r}: Quantity {_shown(ours)}, client {_shown(theirs)}"
    assert ours is None, where
    assert theirs is not None, where
    assert reasons, where


@given(st.fractions(max_denominator=10**9).filter(lambda f: abs(f) < 2**80), st.booleans())
@fuzz(200)
def test_the_canonical_text_parses_back_to_its_value(value: Fraction, binary: bool) -> None:
    exact = Quantity.exact(Fraction(math.ceil(value * 10**9), 10**9), binary)
    assert Quantity.parse(exact.text) == exact
    assert _client(exact.text) == exact.value
