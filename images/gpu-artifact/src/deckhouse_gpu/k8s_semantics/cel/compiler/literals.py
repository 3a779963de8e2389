# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""CEL literals as cel-go reads them: int (decimal or ``0x``) and uint within range, double (with a
digit after the point), bool, null, and strings and bytes with ``r``/``b`` prefixes, single or
triple quotes and escapes."""

from __future__ import annotations

import re
from typing import Any, Final

import lark

from deckhouse_gpu.k8s_semantics.cel.errors import CompileError
from deckhouse_gpu.k8s_semantics.cel.values import INT_MAX, INT_MIN, UINT_MAX, Uint

_ESCAPE = re.compile(
    r"\\(?:([abfnrtv\\'\"`?])|[xX]([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|([0-3][0-7]{2}))"
)
_SIMPLE_ESCAPES: Final = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


def _string_literal(text: str) -> str | bytes:
    """A CEL string or bytes literal: ``r`` and ``b`` prefixes, single or triple quotes, escapes."""
    prefix = text[: len(text) - len(text.lstrip("rRbB"))].lower()
    body = text[len(prefix) :]
    quote = 3 if body[:3] in ("'''", '"""') else 1
    body = body[quote:-quote]
    is_bytes = "b" in prefix
    if "r" in prefix:
        return body.encode() if is_bytes else body
    parts: list[bytes] = []
    position = 0
    for match in _ESCAPE.finditer(body):
        if "\\" in body[position : match.start()]:
            raise CompileError(f"invalid escape sequence in {text}")
        parts.append(body[position : match.start()].encode())
        simple, hex2, hex4, hex8, octal = match.groups()
        if simple is not None:
            parts.append(_SIMPLE_ESCAPES.get(simple, simple).encode())
        elif hex2 is not None or octal is not None:
            code = int(hex2, 16) if hex2 is not None else int(octal, 8)
            parts.append(bytes([code]) if is_bytes else chr(code).encode())
        else:
            code = int(hex4 or hex8, 16)
            if is_bytes or code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                raise CompileError(f"invalid unicode escape in {text}")
            parts.append(chr(code).encode())
        position = match.end()
    if "\\" in body[position:]:
        raise CompileError(f"invalid escape sequence in {text}")
    parts.append(body[position:].encode())
    joined = b"".join(parts)
    return joined if is_bytes else joined.decode("utf-8", errors="surrogateescape")


def _integer(text: str) -> int:
    """cel-go's reading of an integer literal: hexadecimal after ``0x``, otherwise decimal."""
    sign, digits = ("-", text[1:]) if text.startswith("-") else ("", text)
    value = int(digits[2:], 16) if digits[:2].lower() == "0x" else int(digits, 10)
    return -value if sign else value


def literal_value(token: lark.Token) -> Any:
    kind, text = token.type, str(token)
    if kind == "INT_LIT":
        value = _integer(text)
        if not INT_MIN <= value <= INT_MAX:
            raise CompileError(f"invalid int literal {text}")
        return value
    if kind == "UINT_LIT":
        value = _integer(text[:-1])
        if not 0 <= value <= UINT_MAX:
            raise CompileError(f"invalid uint literal {text}")
        return Uint(value)
    if kind == "FLOAT_LIT":
        # cel-python's FLOAT_LIT also takes a point with no digit after it ("1.", "1.e3"), which
        # cel-go's NUM_FLOAT (google/cel-go parser/gen/CEL.g4: DIGIT+ '.' DIGIT+) does not.
        if text.lower().split("e")[0].endswith("."):
            raise CompileError(f"invalid double literal {text}: a digit must follow the point")
        return float(text)
    if kind in ("STRING_LIT", "MLSTRING_LIT", "BYTES_LIT"):
        return _string_literal(text)
    if kind == "BOOL_LIT":
        return text == "true"
    if kind == "NULL_LIT":
        return None
    raise CompileError(f"unsupported literal {text}")
