# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""cel-python's grammar, which the DRA CEL compiler is written against
(k8s_semantics/cel/compiler/compile_*.py dispatch on its rule names): the pinned version, and the
rule and terminal names, so that an upgrade that renames, adds or removes one fails here and says
which."""

from __future__ import annotations

import importlib.metadata
import importlib.resources
import re
from pathlib import Path

import lark
from celpy.celparser import CELParser

from deckhouse_gpu.k8s_semantics.cel.compiler import compile_base, compile_operators
from deckhouse_gpu.k8s_semantics.cel.compiler.compile_base import GRAMMAR_RULES, GRAMMAR_TERMINALS
from deckhouse_gpu.k8s_semantics.cel.compiler.compiler import Compiler
from deckhouse_gpu.k8s_semantics.cel.compiler.typecheck import ARITHMETIC_TYPES

ROOT = Path(__file__).resolve().parents[3]
PINNED = "0.5.0"
REQUIREMENTS = (ROOT / "requirements-dev.txt", ROOT / "images" / "gpu-artifact" / "requirements.txt")
# Rules of the grammar that the compiler does not read: a message's field initializers (message
# construction is refused at member_object).
IGNORED_RULES = frozenset({"fieldinits"})


def _names(parser: lark.Lark) -> tuple[set[str], set[str]]:
    """The rule and terminal names of a parser's grammar, less those Lark makes up itself
    (``__exprlist_star_0``, ``__ANON_1``)."""
    rules = {str(rule.origin.name) for rule in parser.rules}
    terminals = {str(terminal.name) for terminal in parser.terminals}
    return {r for r in rules if not r.startswith("__")}, {t for t in terminals if not t.startswith("__")}


def _installed() -> tuple[set[str], set[str]]:
    CELParser()  # builds the shared Lark parser from celpy/cel.lark
    assert CELParser.CEL_PARSER is not None
    return _names(CELParser.CEL_PARSER)


def _changed(expected: set[str] | frozenset[str], actual: set[str]) -> str:
    return f"missing {sorted(expected - actual)}, new {sorted(actual - expected)}"


def grammar_problems(rules: set[str], terminals: set[str]) -> list[str]:
    """What keeps the compiler from working with a grammar of these names, in words."""
    problems = []
    known = GRAMMAR_RULES | IGNORED_RULES
    if rules != known:
        problems.append(
            f"the grammar rules k8s_semantics/cel/compiler/compile_*.py dispatch on: {_changed(known, rules)}"
        )
    if not terminals >= GRAMMAR_TERMINALS:
        problems.append(
            "the grammar terminals k8s_semantics/cel/compiler/literals.py reads: "
            f"{_changed(GRAMMAR_TERMINALS, terminals)}"
        )
    return problems


def test_cel_python_is_pinned_where_it_is_installed_from() -> None:
    for requirements in REQUIREMENTS:
        pins = re.findall(r"^cel-python==(\S+)$", requirements.read_text(), re.MULTILINE)
        assert pins == [PINNED], f"{requirements.relative_to(ROOT)} pins cel-python {pins}, not {PINNED}"
    assert importlib.metadata.version("cel-python") == PINNED


def test_the_installed_grammar_has_the_names_the_compiler_knows() -> None:
    problems = grammar_problems(*_installed())
    assert not problems, (
        f"cel-python {importlib.metadata.version('cel-python')} changed {'; '.join(problems)}"
    )


def test_a_renamed_rule_is_reported_by_name() -> None:
    text = importlib.resources.files("celpy").joinpath("cel.lark").read_text()
    renamed = re.sub(r"\bmember_dot\b(?!_)", "member_select", text)
    parser = lark.Lark(renamed, parser="lalr", start="expr", maybe_placeholders=False, priority="invert")
    assert grammar_problems(*_names(parser)) == [
        "the grammar rules k8s_semantics/cel/compiler/compile_*.py dispatch on: "
        "missing ['member_dot'], new ['member_select']"
    ]


def test_grammar_rules_lists_every_rule_name_the_compiler_uses() -> None:
    """GRAMMAR_RULES is what the grammar is held to: it must name every rule the compilers have a
    visitor for or otherwise look for."""
    visitors = {name.removeprefix("visit_") for name in dir(Compiler) if name.startswith("visit_")}
    used = (
        visitors
        | compile_base._WRAPPERS_AND_PARENS
        | set(compile_operators._OPERATOR_NAMES)
        | set(compile_operators._ORDERING)
        | set(ARITHMETIC_TYPES)
        | {"unary_not", "unary_neg", "ident", "member_dot", "exprlist", "mapinits"}
    )
    assert used == GRAMMAR_RULES, _changed(GRAMMAR_RULES, used)
