# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

from __future__ import annotations

import pytest

from deckhouse_gpu.k8s_semantics.apimachinery.label_selector import (
    EVERYTHING,
    Operator,
    Requirement,
    parse_selector,
)

LABELS = {"app": "gpu", "tier": "node", "gpu.deckhouse.io/vendor": "Nvidia", "empty": ""}


@pytest.mark.parametrize("text", [None, "", "   "])
def test_blank_selects_everything(text):
    selector = parse_selector(text)
    assert selector == EVERYTHING
    assert selector.matches({})
    assert selector.matches(None)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("app=gpu", Requirement("app", Operator.EQUALS, frozenset({"gpu"}))),
        ("app==gpu", Requirement("app", Operator.EQUALS, frozenset({"gpu"}))),
        ("app!=gpu", Requirement("app", Operator.NOT_EQUALS, frozenset({"gpu"}))),
        ("app in (a,b)", Requirement("app", Operator.IN, frozenset({"a", "b"}))),
        ("app notin (a)", Requirement("app", Operator.NOT_IN, frozenset({"a"}))),
        ("app", Requirement("app", Operator.EXISTS)),
        ("!app", Requirement("app", Operator.DOES_NOT_EXIST)),
        ("app=", Requirement("app", Operator.EQUALS, frozenset({""}))),
        ("app in ()", Requirement("app", Operator.IN, frozenset({""}))),
        ("app in (a,)", Requirement("app", Operator.IN, frozenset({"a", ""}))),
        ("  app  in  ( a , b )  ", Requirement("app", Operator.IN, frozenset({"a", "b"}))),
        ("a.b/c-d=e_f.g", Requirement("a.b/c-d", Operator.EQUALS, frozenset({"e_f.g"}))),
        ("in=notin", Requirement("in", Operator.EQUALS, frozenset({"notin"}))),
    ],
)
def test_parses_each_operator(text, expected):
    assert parse_selector(text).requirements == (expected,)


@pytest.mark.parametrize(
    ("text", "matches"),
    [
        ("app=gpu", True),
        ("app==gpu", True),
        ("app=cpu", False),
        ("missing=gpu", False),
        ("app!=cpu", True),
        ("app!=gpu", False),
        ("missing!=gpu", True),  # an absent label is "not equal"
        ("app in (cpu,gpu)", True),
        ("app in (cpu)", False),
        ("missing in (gpu)", False),
        ("app notin (cpu)", True),
        ("app notin (gpu,cpu)", False),
        ("missing notin (gpu)", True),
        ("app", True),
        ("missing", False),
        ("!missing", True),
        ("!app", False),
        ("empty=", True),
        ("empty", True),
        ("gpu.deckhouse.io/vendor=Nvidia", True),
        ("gpu.deckhouse.io/vendor in (Amd, Intel)", False),
    ],
)
def test_matches_single_requirement(text, matches):
    assert parse_selector(text).matches(LABELS) is matches


def test_comma_means_and():
    assert parse_selector("app=gpu,tier=node,!missing").matches(LABELS)
    assert not parse_selector("app=gpu,tier=control-plane").matches(LABELS)
    assert not parse_selector("tier=control-plane,app=gpu").matches(LABELS)
    assert len(parse_selector("a,b=c,d in (e),!f").requirements) == 4


def test_matches_without_labels():
    assert parse_selector("!app").matches(None)
    assert not parse_selector("app").matches(None)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("app=gpu,", "expected a label key, found end of input"),
        (",app", "expected a label key, found ','"),
        ("app,,tier", "expected a label key, found ','"),
        ("app gpu", "expected '=', '==', '!=', 'in', 'notin'"),
        ("app in gpu", "expected '('"),
        ("app in (gpu", "expected ',' or ')', found end of input"),
        ("app in (a b)", "expected ',' or ')', found 'b'"),
        ("app=a=b", "unexpected '='"),
        ("!app=b", "unexpected '='"),
        ("!", "expected a label key after '!'"),
        ("=gpu", "expected a label key, found '='"),
        ("app)", "expected '=', '==', '!=', 'in', 'notin'"),
        ("-app=x", "invalid label key '-app'"),
        ("Bad.Prefix/app=x", "the prefix must be a DNS subdomain"),
        ("/app=x", "the prefix must be a DNS subdomain"),
        ("a" * 64 + "=x", "the name must be 1-63 characters"),
        ("app=" + "v" * 64, "invalid label value"),
        ("app=bad/value", "invalid label value 'bad/value'"),
        ("app in (x,-y)", "invalid label value '-y'"),
    ],
)
def test_rejects_invalid_syntax_with_a_clear_message(text, message):
    with pytest.raises(ValueError, match="invalid label") as caught:
        parse_selector(text)
    assert message in str(caught.value)
