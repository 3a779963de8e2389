# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The conformance cases the engine is known to fail, each with the reason. test_conformance.py
fails if one of them starts to pass, so that the list stays true, and if a case not listed here
fails."""

from __future__ import annotations

from typing import Final

# Reasons, shared by the cases they explain.
QUOTE: Final = (
    "strings.quote is not implemented: the engine refuses it at compile time "
    "(deckhouse_gpu/domain/cel/__init__.py lists what is not implemented)"
)

EXPECTED_FAILURES: Final[dict[str, str]] = {
    **{
        f"string_ext/quote/{name}": QUOTE
        for name in (
            "multiline",
            "escaped",
            "backspace",
            "form_feed",
            "carriage_return",
            "horizontal_tab",
            "vertical_tab",
            "double_slash",
            "two_escape_sequences",
            "verbatim",
            "ends_with",
            "starts_with",
            "printable_unicode",
            "mid_string_quote",
            "single_quote_with_double_quote",
            "size_unicode_char",
            "size_unicode_string",
            "unicode",
            "unicode_code_points",
            "unicode_2",
            "empty_quote",
        )
    },
}
