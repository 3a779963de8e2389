# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The metric names a PromQL expression reads, so that a test can fail on a name no component
exports. Prometheus 2.42 (Debian's) has no parse API; this reads what the module's expressions
use: selectors with label matchers, ranges, aggregations with ``by``/``without``, vector
matching with ``on``/``ignoring``/``group_*``, functions, numbers and Grafana's ``$variables``.
"""

from __future__ import annotations

import re

_STRINGS = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|`[^`]*`')
_MATCHERS = re.compile(r"\{[^{}]*\}")
_LABEL_LISTS = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)")
_RANGES = re.compile(r"\[[^\[\]]*\]")
_OFFSETS = re.compile(r"\boffset\s+-?\$?[\w]+")
# An identifier that is not part of a number (1e6, 0x1F) or of a $variable.
_IDENTIFIER = re.compile(r"(?<![\w.:$])([A-Za-z_:][\w:]*)(\s*\()?")
_KEYWORDS = frozenset(
    {
        "and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right",
        "offset", "bool", "inf", "nan", "atan2",
        # aggregations: followed by "(" once their label list is gone, listed for `sum without(...)`
        "sum", "avg", "min", "max", "count", "stddev", "stdvar", "topk", "bottomk", "quantile",
        "count_values", "group",
    }
)  # fmt: skip
_LABEL_VALUES = re.compile(r"^\s*label_values\(\s*([A-Za-z_:][\w:]*)\s*(?:\{[^{}]*\})?\s*,\s*\w+\s*\)\s*$")


def metric_names(expr: str) -> set[str]:
    """Names of the series ``expr`` selects; a ``{__name__=...}`` selector is refused, as its
    names cannot be checked."""
    text = _STRINGS.sub('""', expr)
    if "__name__" in text:
        raise ValueError(f"selects by __name__, which cannot be checked: {expr}")
    text = _MATCHERS.sub(" ", text)
    text = _LABEL_LISTS.sub(" ", text)
    text = _RANGES.sub(" ", text)
    text = _OFFSETS.sub(" ", text)
    names = set()
    for match in _IDENTIFIER.finditer(text):
        name, call = match.group(1), match.group(2)
        if call is None and name not in _KEYWORDS:
            names.add(name)
    return names


def variable_metric(query: str) -> str:
    """The metric of a Grafana ``label_values(metric, label)`` variable query."""
    match = _LABEL_VALUES.match(query)
    if match is None:
        raise ValueError(f"not a label_values(metric, label) query: {query}")
    return match.group(1)
