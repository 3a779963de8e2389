# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""CEL's string functions (``matches contains startsWith endsWith``) and Kubernetes' strings and
regex extensions (``charAt indexOf lastIndexOf lowerAscii upperAscii replace split substring trim
join``, ``find findAll``); ``indexOf`` and ``lastIndexOf`` of a list are served here too.

Regular expressions are RE2 (google-re2), as in Go.
"""

from __future__ import annotations

import functools
from typing import Any, Final

import re2  # type: ignore[import-untyped]

from deckhouse_gpu.k8s_semantics.cel.errors import EvalError
from deckhouse_gpu.k8s_semantics.cel.library.operators import nested_equal
from deckhouse_gpu.k8s_semantics.cel.values import no_overload, require_types


def _str(function: str, value: Any, *args: Any) -> str:
    if type(value) is not str:
        raise no_overload(function, value, *args)
    return str(value)


@functools.lru_cache(maxsize=256)
def _regex(pattern: str) -> Any:
    options = re2.Options()
    options.log_errors = False
    try:
        return re2.compile(pattern, options)
    except re2.error as error:
        raise EvalError(f"invalid regular expression {pattern!r}: {error}") from error


def matches(text: Any, pattern: Any) -> bool:
    require_types("matches", (str, str), text, pattern)
    return _regex(pattern).search(text) is not None


def contains(text: Any, part: Any) -> bool:
    require_types("contains", (str, str), text, part)
    return part in text


def starts_with(text: Any, part: Any) -> bool:
    require_types("startsWith", (str, str), text, part)
    return bool(text.startswith(part))


def ends_with(text: Any, part: Any) -> bool:
    require_types("endsWith", (str, str), text, part)
    return bool(text.endswith(part))


def char_at(text: Any, index: Any) -> str:
    require_types("charAt", (str, int), text, index)
    if not 0 <= index <= len(text):
        raise EvalError(f"index out of range: {index}")
    return str(text[index : index + 1])


def index_of(target: Any, item: Any, offset: Any = None) -> int:
    if type(target) is list and offset is None:
        return next((i for i, v in enumerate(target) if nested_equal(v, item)), -1)
    args = (item,) if offset is None else (item, offset)
    require_types("indexOf", (str, str, int)[: 1 + len(args)], target, *args)
    start = 0 if offset is None else offset
    if not 0 <= start <= len(target):
        raise EvalError(f"index out of range: {start}")
    return int(target.find(item, start))


def last_index_of(target: Any, item: Any, offset: Any = None) -> int:
    if type(target) is list and offset is None:
        return next((i for i in range(len(target) - 1, -1, -1) if nested_equal(target[i], item)), -1)
    args = (item,) if offset is None else (item, offset)
    require_types("lastIndexOf", (str, str, int)[: 1 + len(args)], target, *args)
    end = len(target) if offset is None else offset
    if not 0 <= end <= len(target):
        raise EvalError(f"index out of range: {end}")
    return int(target.rfind(item, 0, end + len(item)))


def lower_ascii(text: Any) -> str:
    return "".join(c.lower() if c.isascii() else c for c in _str("lowerAscii", text))


def upper_ascii(text: Any) -> str:
    return "".join(c.upper() if c.isascii() else c for c in _str("upperAscii", text))


def replace(text: Any, old: Any, new: Any, count: Any = -1) -> str:
    require_types("replace", (str, str, str, int), text, old, new, count)
    return str(text.replace(old, new, count if count >= 0 else -1))


def split(text: Any, separator: Any, count: Any = -1) -> list[Any]:
    require_types("split", (str, str, int), text, separator, count)
    if count == 0:
        return []
    if separator == "":  # Go: after each character
        chars = list(text)
        return chars if count < 0 or count >= len(chars) else [*chars[: count - 1], text[count - 1 :]]
    return list(text.split(separator, count - 1 if count > 0 else -1))


def substring(text: Any, start: Any, end: Any = None) -> str:
    stop = len(text) if end is None and type(text) is str else end
    require_types("substring", (str, int, int), text, start, stop)
    if not 0 <= start <= stop <= len(text):
        raise EvalError(f"substring out of range: [{start}:{stop}] of a string of {len(text)}")
    return str(text[start:stop])


_GO_SPACE: Final = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
_GO_SPACE_ALL: Final = _GO_SPACE + "\u200a\u2028\u2029\u202f\u205f\u3000"


def trim(text: Any) -> str:
    return _str("trim", text).strip(_GO_SPACE_ALL)


def join(items: Any, separator: Any = "") -> str:
    if type(items) is not list or type(separator) is not str or any(type(i) is not str for i in items):
        raise no_overload("join", items, separator)
    return str(separator).join(items)


def find(text: Any, pattern: Any) -> str:
    require_types("find", (str, str), text, pattern)
    match = _regex(pattern).search(text)
    return "" if match is None else str(match.group(0))


def find_all(text: Any, pattern: Any, limit: Any = -1) -> list[Any]:
    require_types("findAll", (str, str, int), text, pattern, limit)
    found: list[Any] = []
    for match in _regex(pattern).finditer(text):
        if 0 <= limit <= len(found):
            break
        found.append(str(match.group(0)))
    return found
