"""DRA device selectors (``cel.expression``) evaluated the way the Kubernetes scheduler does.

The expressions are parsed by cel-python's CEL grammar (``celpy.celparser``, an LALR parser) and
compiled here into a tree of Python closures, built once per expression text; a device is turned
into a :class:`DeviceView` once and every compiled selector runs against it. Evaluating through
cel-python's own interpreter costs 0.2-0.9 ms per expression and device, the closures 0.6-3 us
(constant calls such as ``quantity("10Gi")`` are folded at compile time); the faster libraries
measured (benchmarks/cel_engines.py) cannot model this environment.

The environment is the one of ``k8s.io/dynamic-resource-allocation/cel``
(shared/reference/k8s-dra-facts.md section 3):

- ``device.driver``, ``device.attributes`` and ``device.capacity`` (maps of domain -> map of id;
  a key is split at its first ``/``, a key without a domain belongs to the driver's domain), and
  ``device.allowMultipleAllocations`` (absent reads as false), declared only when the
  DRAConsumableCapacity feature is on: otherwise naming it fails to compile;
- ``device.attributes[d]`` / ``device.capacity[d]`` of an unknown domain ``d`` is an empty map (and,
  as upstream overrides ``Find``, ``has(device.attributes.d)`` is true for any ``d`` while
  ``"d" in device.attributes`` and ``size()`` see the real domains); an unknown id inside a domain is
  a "no such key" error;
- attribute values: int, bool, string, and ``version`` as a Semver; capacity values are
  Quantities. A ``version`` that is not a semantic version, or an attribute with no supported value,
  makes every evaluation on that device fail, as upstream;
- the result must be a bool, otherwise an error; every error fails the evaluation.

CEL semantics implemented: literals (int, uint, double, string, bytes, bool, null, lists, maps);
``! - * / % + - < <= > >= == != in && || ?:`` with int64/uint64 overflow errors, truncating division,
heterogeneous equality (``1 == 1.0``; a value of another type is unequal, but a Quantity or Semver
on the left compared with another type is an error), cross-type numeric ordering; error absorption
by ``&&``, ``||``, ``all`` and ``exists``; field selection, indexing, ``has()``; the macros
``all exists exists_one map filter`` (and two-variable ``all exists existsOne transformList
transformMap``), ``cel.bind``; the functions ``size int uint double string bool bytes dyn type
matches contains startsWith endsWith``; Kubernetes' extensions: strings (``charAt indexOf
lastIndexOf lowerAscii upperAscii replace split substring trim join``), regex (``find findAll``),
lists (``isSorted sum min max indexOf lastIndexOf``), sets (``sets.contains sets.equivalent
sets.intersects``), Quantity (``quantity isQuantity sign isInteger asInteger asApproximateFloat add
sub isGreaterThan isLessThan compareTo``, ``==`` by value, ordering operators refused) and Semver
(``semver`` with optional normalize, ``isSemver``, ``major minor patch isGreaterThan isLessThan
compareTo``, ``==``). Regular expressions are RE2 (google-re2), as in Go.

Approximated or absent, on purpose:

- Type checking is partial. Static types are known for literals, the ``device`` fields (attribute
  values are ``dyn``, capacity values Quantities), function results and comprehension variables;
  where both operands of an operator have known types that cel-go's checker refuses (``map ==
  string``, ``Quantity < Quantity``, ``int + double``, ``!1``, a non-bool result such as ``1``), the
  expression fails to compile, as on a cluster; so do names this engine does not know (variables,
  functions, device fields) and wrong argument counts. Argument types of functions are checked only
  when evaluated, and an operand of type ``dyn`` is checked at runtime: ``==`` with an unrelated
  type is false, the other operators an error, as cel-go evaluates them. Where unsure (``null``,
  ``int == double``) compilation is lenient. The allocator evaluates stored objects, which the API
  server has already checked.
- Not implemented, so refused at compile time: timestamps and durations, optional types
  (``?.``, ``optional.of``), the URL, IP, CIDR, format and authz libraries, ``ext.Lists`` v3,
  ``strings.quote``, ``format``, message construction. Expressions using them fail to compile
  rather than evaluate differently.
- Runtime cost: modelled on cel-go's cost tracker and enforced against :data:`MAX_COST`. Each
  variable, field selection, index, ``has()`` and function or operator call costs 1; ``&&``, ``||``,
  ``?:`` and literals cost 0; a list literal 10 and a map literal 30. Size-dependent calls cost what
  cel-go charges: ``in`` on a list its length, string and list ``+`` 0.1 per element or character,
  ``==`` and ordering of strings 0.1 per character of the shorter, ``contains`` and ``matches`` the
  product of both lengths' factors; the strings, regex, lists and sets extensions 1 plus 0.1 per
  character or 1 per element of their receiver. A comprehension adds a fixed cost per iteration for
  its hidden accumulator (3 for ``all``/``exists``, 2 for ``exists_one``, 12 for ``map``/``filter``/
  ``transform*``). The figure may differ from cel-go's by a few units per node; the limit is checked
  after every comprehension iteration and at the end, so a runaway expression stops early. The
  estimated (static) cost check that the API server applies to new expressions is not done.
- Nesting: parentheses and chains of ``||`` / ``&&`` cost no depth; about 450 nested operators
  (Python's recursion limit; cel-go's parser allows 250) fail to compile with "nested too deeply".
"""

from __future__ import annotations

import functools
import itertools
import math
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from decimal import Decimal
from typing import Any, Final, cast

import lark
import re2  # type: ignore[import-untyped]
from celpy.celparser import CELParseError, CELParser

from deckhouse_gpu.domain.quantity import Quantity, QuantityError

MAX_EXPRESSION_BYTES: Final = 10 * 1024  # CELSelectorExpressionMaxLength
MAX_COST: Final = 1_000_000  # CELSelectorExpressionMaxCost, also the scheduler's runtime limit
CACHE_SIZE: Final = 4096  # compiled expressions kept per engine

_INT_MIN: Final = -(2**63)
_INT_MAX: Final = 2**63 - 1
_UINT_MAX: Final = 2**64 - 1
_SHOWN: Final = 80  # characters of an expression quoted in an error


class SelectorError(Exception):
    """An expression that does not compile, fails to evaluate or does not yield a bool."""


def _shown(expression: str) -> str:
    flat = " ".join(expression.split())
    return flat if len(flat) <= _SHOWN else flat[: _SHOWN - 3] + "..."


def _selector_error(expression: str, reason: str) -> SelectorError:
    return SelectorError(f"CEL selector {_shown(expression)!r}: {reason}")


# --- values ------------------------------------------------------------------------------------


class _EvalError(Exception):
    """A CEL error value: absorbed by ``&&``, ``||``, ``all`` and ``exists``, fatal otherwise."""


class _CostExceeded(Exception):
    """The runtime cost limit: never absorbed."""


class _Uint(int):
    """A CEL uint (a plain Python int is a CEL int)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"{int(self)}u"


class _CelType:
    """A CEL type value, as ``type(x)`` returns and ``int``, ``string``... name."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _CelType) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return self.name


class _DomainMap(dict[str, Any]):
    """``device.attributes`` and ``device.capacity``: an unknown domain reads as an empty map."""

    __slots__ = ()


class _Device(dict[str, Any]):
    """The ``device`` variable (an object: fields, not keys)."""

    __slots__ = ()


class _BoolKey:
    """A bool map key, kept apart from the ints 0 and 1 that Python would merge it with."""

    __slots__ = ("value",)

    def __init__(self, value: bool) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _BoolKey) and other.value == self.value

    def __hash__(self) -> int:
        return hash(("bool", self.value))


_TRUE_KEY, _FALSE_KEY = _BoolKey(True), _BoolKey(False)
_EMPTY: Final[dict[Any, Any]] = {}


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


_TYPE_NAMES: Final[dict[type, str]] = {
    bool: "bool",
    int: "int",
    _Uint: "uint",
    float: "double",
    str: "string",
    bytes: "bytes",
    type(None): "null_type",
    list: "list",
    dict: "map",
    _DomainMap: "map",
    _Device: "kubernetes.DRADevice",
    Quantity: "kubernetes.Quantity",
    Semver: "kubernetes.Semver",
    _CelType: "type",
}
_TYPE_IDENTS: Final = {
    name: _CelType(name)
    for name in ("bool", "int", "uint", "double", "string", "bytes", "list", "map", "null_type", "type")
}


def _type_name(value: object) -> str:
    return _TYPE_NAMES.get(type(value), type(value).__name__)


def _no_overload(function: str, *args: object) -> _EvalError:
    return _EvalError(f"no such overload: {function}({', '.join(_type_name(a) for a in args)})")


def _map_key(key: Any) -> Any:
    kind = type(key)
    if kind is str or kind is int or kind is _Uint:
        return key
    if kind is bool:
        return _TRUE_KEY if key else _FALSE_KEY
    if kind is float and not math.isnan(key) and key.is_integer():
        return int(key)  # heterogeneous lookup: 1.0 finds the key 1
    if kind is float:
        return key  # never found
    raise _EvalError(f"unsupported map key type: {_type_name(key)}")


def _unkey(key: Any) -> Any:
    return key.value if type(key) is _BoolKey else key


# --- equality, ordering, arithmetic ------------------------------------------------------------

_SCALARS: Final = frozenset({str, int, _Uint, bool, float, bytes, type(None), _CelType})
_NUMBERS: Final = frozenset({int, _Uint, float})
_MAPS: Final = frozenset[type]((dict, _DomainMap, _Device))


def _equals(left: Any, right: Any) -> bool:
    """``==`` as cel-go's heterogeneous equality; the left operand's type decides."""
    left_type, right_type = type(left), type(right)
    if left_type is right_type and left_type in _SCALARS:
        return bool(left == right)
    if left_type is Quantity or left_type is Semver:
        if right_type is left_type:
            return bool(left == right)
        if right is None:
            return False
        raise _no_overload("_==_", left, right)
    if left_type in _NUMBERS and right_type in _NUMBERS:
        return bool(left == right)
    if left_type is list and right_type is list:
        return len(left) == len(right) and all(_nested_equals(a, b) for a, b in zip(left, right, strict=True))
    if left_type in _MAPS and right_type in _MAPS:
        if len(left) != len(right):
            return False
        return all(key in right and _nested_equals(value, right[key]) for key, value in left.items())
    return False


def _nested_equals(left: Any, right: Any) -> bool:
    try:
        return _equals(left, right)
    except _EvalError:
        return False


def _ordered(function: str, left: Any, right: Any) -> None:
    """Raises unless ``<``, ``<=``, ``>``, ``>=`` are defined between the two values."""
    left_type, right_type = type(left), type(right)
    if left_type in _NUMBERS and right_type in _NUMBERS:
        return
    if left_type is right_type and left_type in (str, bytes, bool):
        return
    raise _no_overload(function, left, right)


def _int(value: int, function: str) -> int:
    if _INT_MIN <= value <= _INT_MAX:
        return value
    raise _EvalError(f"integer overflow in {function}")


def _uint(value: int, function: str) -> _Uint:
    if 0 <= value <= _UINT_MAX:
        return _Uint(value)
    raise _EvalError(f"unsigned integer overflow in {function}")


def _add(left: Any, right: Any) -> Any:
    kind = type(left)
    if kind is type(right):
        if kind is int:
            return _int(left + right, "_+_")
        if kind is _Uint:
            return _uint(left + right, "_+_")
        if kind in (float, str, bytes):
            return left + right
        if kind is list:
            return [*left, *right]
    raise _no_overload("_+_", left, right)


def _sub(left: Any, right: Any) -> Any:
    kind = type(left)
    if kind is type(right):
        if kind is int:
            return _int(left - right, "_-_")
        if kind is _Uint:
            return _uint(left - right, "_-_")
        if kind is float:
            return left - right
    raise _no_overload("_-_", left, right)


def _mul(left: Any, right: Any) -> Any:
    kind = type(left)
    if kind is type(right):
        if kind is int:
            return _int(left * right, "_*_")
        if kind is _Uint:
            return _uint(left * right, "_*_")
        if kind is float:
            return left * right
    raise _no_overload("_*_", left, right)


def _div(left: Any, right: Any) -> Any:
    kind = type(left)
    if kind is type(right):
        if kind is int or kind is _Uint:
            if right == 0:
                raise _EvalError("division by zero")
            quotient = abs(left) // abs(right)  # Go truncates toward zero
            quotient = quotient if (left < 0) == (right < 0) else -quotient
            return _int(quotient, "_/_") if kind is int else _Uint(quotient)
        if kind is float:
            try:
                return left / right
            except ZeroDivisionError:
                if left == 0 or math.isnan(left):
                    return math.nan
                return math.copysign(math.inf, left) * math.copysign(1.0, right)
    raise _no_overload("_/_", left, right)


def _mod(left: Any, right: Any) -> Any:
    kind = type(left)
    if kind is type(right) and (kind is int or kind is _Uint):
        if right == 0:
            raise _EvalError("modulus by zero")
        remainder = abs(left) % abs(right)  # Go: the sign of the dividend
        return _Uint(remainder) if kind is _Uint else (remainder if left >= 0 else -remainder)
    raise _no_overload("_%_", left, right)


def _size_of(value: Any) -> int:
    kind = type(value)
    if kind is str or kind is bytes or kind is list or kind in _MAPS:
        return len(value)
    return 1


def _traversal(size: int) -> int:
    """cel-go's ``ceil(size * StringTraversalCostFactor)``."""
    return (size + 9) // 10


def _compare_cost(left: Any, right: Any) -> int:
    kind = type(left)
    if (kind is str or kind is bytes) and type(right) is kind:
        return max(1, _traversal(min(len(left), len(right))))
    return 1


def _concat_cost(left: Any, right: Any) -> int:
    kind = type(left)
    if (kind is str or kind is bytes or kind is list) and type(right) is kind:
        return max(1, _traversal(len(left) + len(right)))
    return 1


# --- conversions -------------------------------------------------------------------------------

_GO_INT = re.compile(r"[+-]?[0-9]+")
_GO_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?)")
_GO_FLOAT_WORDS: Final = {
    **{word: math.inf for word in ("inf", "+inf", "infinity", "+infinity")},
    **{word: -math.inf for word in ("-inf", "-infinity")},
    "nan": math.nan,
}
_GO_BOOLS: Final = {
    **dict.fromkeys(("1", "t", "T", "TRUE", "true", "True"), True),
    **dict.fromkeys(("0", "f", "F", "FALSE", "false", "False"), False),
}


def _to_int(value: Any) -> int:
    kind = type(value)
    if kind is int:
        return int(value)
    if kind is _Uint:
        return _int(int(value), "int")
    if kind is float:
        if not (-(2.0**63) <= value < 2.0**63):
            raise _EvalError("range error converting double to int")
        return int(value)
    if kind is str:
        if not _GO_INT.fullmatch(value):
            raise _EvalError(f"cannot convert {value!r} to int")
        return _int(int(value), "int")
    raise _no_overload("int", value)


def _to_uint(value: Any) -> _Uint:
    kind = type(value)
    if kind is int or kind is _Uint:
        return _uint(int(value), "uint")
    if kind is float:
        if not (0 <= value < 2.0**64):
            raise _EvalError("range error converting double to uint")
        return _Uint(int(value))
    if kind is str:
        if not value.isascii() or not value.isdigit():
            raise _EvalError(f"cannot convert {value!r} to uint")
        return _uint(int(value), "uint")
    raise _no_overload("uint", value)


def _to_double(value: Any) -> float:
    kind = type(value)
    if kind is float or kind is int or kind is _Uint:
        return float(value)
    if kind is str:
        word = _GO_FLOAT_WORDS.get(value.lower())
        if word is not None:
            return word
        if not _GO_FLOAT.fullmatch(value):
            raise _EvalError(f"cannot convert {value!r} to double")
        return float(value)
    raise _no_overload("double", value)


def _format_double(value: float) -> str:
    """Go's ``strconv.FormatFloat(value, 'g', -1, 64)``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    text = "".join(str(d) for d in digits)
    point = len(text) + int(exponent)  # the decimal point's position after the first digit
    prefix = "-" if sign else ""
    if point - 1 < -4 or point - 1 >= 6:  # shortest 'g' switches to an exponent from 1e+06
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        power = point - 1
        return f"{prefix}{mantissa}e{'-' if power < 0 else '+'}{abs(power):02d}"
    if point <= 0:
        return f"{prefix}0.{'0' * -point}{text}"
    if point >= len(text):
        return prefix + text + "0" * (point - len(text))
    return f"{prefix}{text[:point]}.{text[point:]}"


def _to_string(value: Any) -> str:
    kind = type(value)
    if kind is str:
        return str(value)
    if kind is bool:
        return "true" if value else "false"
    if kind is int or kind is _Uint:
        return str(int(value))
    if kind is float:
        return _format_double(value)
    if kind is bytes:
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError as error:
            raise _EvalError("invalid UTF-8 in bytes converted to string") from error
    raise _no_overload("string", value)


def _to_bool(value: Any) -> bool:
    if type(value) is bool:
        return bool(value)
    if type(value) is str and value in _GO_BOOLS:
        return _GO_BOOLS[value]
    if type(value) is str:
        raise _EvalError(f"cannot convert {value!r} to bool")
    raise _no_overload("bool", value)


def _to_bytes(value: Any) -> bytes:
    if type(value) is bytes:
        return bytes(value)
    if type(value) is str:
        return str(value).encode("utf-8")
    raise _no_overload("bytes", value)


def _type_of(value: Any) -> _CelType:
    return _TYPE_IDENTS.get(_type_name(value)) or _CelType(_type_name(value))


def _size(value: Any) -> int:
    kind = type(value)
    if kind is str or kind is bytes or kind is list or kind in _MAPS:
        return len(value)
    raise _no_overload("size", value)


# --- strings, regular expressions, lists, sets -------------------------------------------------


def _str(function: str, value: Any, *args: Any) -> str:
    if type(value) is not str:
        raise _no_overload(function, value, *args)
    return str(value)


def _require(function: str, kinds: tuple[type, ...], *values: Any) -> None:
    if len(values) != len(kinds) or any(type(v) is not k for v, k in zip(values, kinds, strict=True)):
        raise _no_overload(function, *values)


@functools.lru_cache(maxsize=256)
def _regex(pattern: str) -> Any:
    options = re2.Options()
    options.log_errors = False
    try:
        return re2.compile(pattern, options)
    except re2.error as error:
        raise _EvalError(f"invalid regular expression {pattern!r}: {error}") from error


def _matches(text: Any, pattern: Any) -> bool:
    _require("matches", (str, str), text, pattern)
    return _regex(pattern).search(text) is not None


def _contains(text: Any, part: Any) -> bool:
    _require("contains", (str, str), text, part)
    return part in text


def _starts_with(text: Any, part: Any) -> bool:
    _require("startsWith", (str, str), text, part)
    return bool(text.startswith(part))


def _ends_with(text: Any, part: Any) -> bool:
    _require("endsWith", (str, str), text, part)
    return bool(text.endswith(part))


def _char_at(text: Any, index: Any) -> str:
    _require("charAt", (str, int), text, index)
    if not 0 <= index <= len(text):
        raise _EvalError(f"index out of range: {index}")
    return str(text[index : index + 1])


def _index_of(target: Any, item: Any, offset: Any = None) -> int:
    if type(target) is list and offset is None:
        return next((i for i, v in enumerate(target) if _nested_equals(v, item)), -1)
    args = (item,) if offset is None else (item, offset)
    _require("indexOf", (str, str, int)[: 1 + len(args)], target, *args)
    start = 0 if offset is None else offset
    if not 0 <= start <= len(target):
        raise _EvalError(f"index out of range: {start}")
    return int(target.find(item, start))


def _last_index_of(target: Any, item: Any, offset: Any = None) -> int:
    if type(target) is list and offset is None:
        return next((i for i in range(len(target) - 1, -1, -1) if _nested_equals(target[i], item)), -1)
    args = (item,) if offset is None else (item, offset)
    _require("lastIndexOf", (str, str, int)[: 1 + len(args)], target, *args)
    end = len(target) if offset is None else offset
    if not 0 <= end <= len(target):
        raise _EvalError(f"index out of range: {end}")
    return int(target.rfind(item, 0, end + len(item)))


def _lower_ascii(text: Any) -> str:
    return "".join(c.lower() if c.isascii() else c for c in _str("lowerAscii", text))


def _upper_ascii(text: Any) -> str:
    return "".join(c.upper() if c.isascii() else c for c in _str("upperAscii", text))


def _replace(text: Any, old: Any, new: Any, count: Any = -1) -> str:
    _require("replace", (str, str, str, int), text, old, new, count)
    return str(text.replace(old, new, count if count >= 0 else -1))


def _split(text: Any, separator: Any, count: Any = -1) -> list[Any]:
    _require("split", (str, str, int), text, separator, count)
    if count == 0:
        return []
    if separator == "":  # Go: after each character
        chars = list(text)
        return chars if count < 0 or count >= len(chars) else [*chars[: count - 1], text[count - 1 :]]
    return list(text.split(separator, count - 1 if count > 0 else -1))


def _substring(text: Any, start: Any, end: Any = None) -> str:
    stop = len(text) if end is None and type(text) is str else end
    _require("substring", (str, int, int), text, start, stop)
    if not 0 <= start <= stop <= len(text):
        raise _EvalError(f"substring out of range: [{start}:{stop}] of a string of {len(text)}")
    return str(text[start:stop])


_GO_SPACE: Final = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
_GO_SPACE_ALL: Final = _GO_SPACE + "\u200a\u2028\u2029\u202f\u205f\u3000"


def _trim(text: Any) -> str:
    return _str("trim", text).strip(_GO_SPACE_ALL)


def _join(items: Any, separator: Any = "") -> str:
    if type(items) is not list or type(separator) is not str or any(type(i) is not str for i in items):
        raise _no_overload("join", items, separator)
    return str(separator).join(items)


def _find(text: Any, pattern: Any) -> str:
    _require("find", (str, str), text, pattern)
    match = _regex(pattern).search(text)
    return "" if match is None else str(match.group(0))


def _find_all(text: Any, pattern: Any, limit: Any = -1) -> list[Any]:
    _require("findAll", (str, str, int), text, pattern, limit)
    found: list[Any] = []
    for match in _regex(pattern).finditer(text):
        if 0 <= limit <= len(found):
            break
        found.append(str(match.group(0)))
    return found


def _list(function: str, value: Any) -> list[Any]:
    if type(value) is not list:
        raise _no_overload(function, value)
    return list(value)


def _less(left: Any, right: Any) -> bool:
    _ordered("_<_", left, right)
    return bool(left < right)


def _is_sorted(items: Any) -> bool:
    values = _list("isSorted", items)
    return not any(_less(b, a) for a, b in itertools.pairwise(values))


def _sum(items: Any) -> Any:
    values = _list("sum", items)
    total: Any = 0
    for index, value in enumerate(values):
        total = value if index == 0 else _add(total, value)
    return total


def _extreme(function: str, items: Any, pick_left: Callable[[Any, Any], bool]) -> Any:
    values = _list(function, items)
    if not values:
        raise _EvalError(f"{function} called on an empty list")
    best = values[0]
    for value in values[1:]:
        if not pick_left(best, value):
            best = value
    return best


def _sets_contains(left: Any, right: Any) -> bool:
    _require("sets.contains", (list, list), left, right)
    return all(any(_nested_equals(a, b) for a in left) for b in right)


def _sets_equivalent(left: Any, right: Any) -> bool:
    return _sets_contains(left, right) and _sets_contains(right, left)


def _sets_intersects(left: Any, right: Any) -> bool:
    _require("sets.intersects", (list, list), left, right)
    return any(_nested_equals(a, b) for a in left for b in right)


# --- Kubernetes quantity and semver libraries --------------------------------------------------


def _quantity(text: Any) -> Quantity:
    if type(text) is not str:
        raise _no_overload("quantity", text)
    try:
        return Quantity.parse(text)
    except QuantityError as error:
        raise _EvalError(str(error)) from error


def _is_quantity(text: Any) -> bool:
    if type(text) is not str:
        raise _no_overload("isQuantity", text)
    try:
        Quantity.parse(text)
    except QuantityError:
        return False
    return True


def _q(function: str, value: Any, *args: Any) -> Quantity:
    if type(value) is not Quantity:
        raise _no_overload(function, value, *args)
    return value


def _q_operand(function: str, value: Any, other: Any) -> Quantity:
    if type(other) is int:
        return Quantity.of(other)
    if type(other) is not Quantity:
        raise _no_overload(function, value, other)
    return other


def _q_add(value: Any, other: Any) -> Quantity:
    return _q("add", value, other).add(_q_operand("add", value, other))


def _q_sub(value: Any, other: Any) -> Quantity:
    return _q("sub", value, other).sub(_q_operand("sub", value, other))


def _as_integer(value: Any) -> int:
    quantity = _q("asInteger", value)
    if not quantity.is_integer():
        raise _EvalError(f"cannot convert value to integer: {quantity} is not a whole int64")
    return quantity.as_integer()


def _semver(text: Any, normalize: Any = False) -> Semver:
    _require("semver", (str, bool), text, normalize)
    try:
        return Semver.parse(text, normalize)
    except ValueError as error:
        raise _EvalError(f"could not parse semver: {error}") from error


def _is_semver(text: Any, normalize: Any = False) -> bool:
    _require("isSemver", (str, bool), text, normalize)
    try:
        Semver.parse(text, normalize)
    except ValueError:
        return False
    return True


def _sv(function: str, value: Any) -> Semver:
    if type(value) is not Semver:
        raise _no_overload(function, value)
    return value


def _compare(function: str, value: Any, other: Any) -> int:
    """compareTo / isGreaterThan / isLessThan of two Quantities or two Semvers."""
    kind = type(value)
    if (kind is Quantity or kind is Semver) and type(other) is kind:
        return cast(Quantity | Semver, value).compare(other)
    raise _no_overload(function, value, other)


# --- the function tables -----------------------------------------------------------------------

# name -> (implementation, accepted argument counts, extra cost from the arguments or None)
_Impl = Callable[..., Any]
_CostFn = Callable[..., int] | None
_Entry = tuple[_Impl, frozenset[int], _CostFn]


def _entry(impl: _Impl, *counts: int, cost: _CostFn = None) -> _Entry:
    return impl, frozenset(counts), cost


def _receiver_cost(target: Any, *_: Any) -> int:
    """The strings/lists extensions: a pass over the receiver."""
    kind = type(target)
    if kind is list:
        return len(target)
    if kind is str or kind is bytes:
        return _traversal(len(target))
    return 0


def _contains_cost(text: Any, part: Any) -> int:
    return _traversal(_size_of(text)) * _traversal(_size_of(part)) - 1


def _matches_cost(text: Any, pattern: Any) -> int:
    return _traversal(1 + _size_of(text)) * math.ceil(_size_of(pattern) * 0.25) - 1


def _arg_cost(_: Any, part: Any) -> int:
    return max(0, _traversal(_size_of(part)) - 1)


_GLOBALS: Final[dict[str, _Entry]] = {
    "size": _entry(_size, 1),
    "int": _entry(_to_int, 1),
    "uint": _entry(_to_uint, 1),
    "double": _entry(_to_double, 1),
    "string": _entry(_to_string, 1),
    "bool": _entry(_to_bool, 1),
    "bytes": _entry(_to_bytes, 1),
    "dyn": _entry(lambda value: value, 1),
    "type": _entry(_type_of, 1),
    "matches": _entry(_matches, 2, cost=_matches_cost),
    "quantity": _entry(_quantity, 1),
    "isQuantity": _entry(_is_quantity, 1),
    "sign": _entry(lambda q: _q("sign", q).sign(), 1),
    "semver": _entry(_semver, 1, 2),
    "isSemver": _entry(_is_semver, 1, 2),
    "sets.contains": _entry(_sets_contains, 2, cost=lambda a, b: _size_of(a) * _size_of(b)),
    "sets.equivalent": _entry(_sets_equivalent, 2, cost=lambda a, b: 2 * _size_of(a) * _size_of(b)),
    "sets.intersects": _entry(_sets_intersects, 2, cost=lambda a, b: _size_of(a) * _size_of(b)),
}

# Method calls: the receiver is the first argument; counts exclude it.
_METHODS: Final[dict[str, _Entry]] = {
    "size": _entry(_size, 0),
    "matches": _entry(_matches, 1, cost=_matches_cost),
    "contains": _entry(_contains, 1, cost=_contains_cost),
    "startsWith": _entry(_starts_with, 1, cost=_arg_cost),
    "endsWith": _entry(_ends_with, 1, cost=_arg_cost),
    "charAt": _entry(_char_at, 1, cost=_receiver_cost),
    "indexOf": _entry(_index_of, 1, 2, cost=_receiver_cost),
    "lastIndexOf": _entry(_last_index_of, 1, 2, cost=_receiver_cost),
    "lowerAscii": _entry(_lower_ascii, 0, cost=_receiver_cost),
    "upperAscii": _entry(_upper_ascii, 0, cost=_receiver_cost),
    "replace": _entry(_replace, 2, 3, cost=_receiver_cost),
    "split": _entry(_split, 1, 2, cost=_receiver_cost),
    "substring": _entry(_substring, 1, 2, cost=_receiver_cost),
    "trim": _entry(_trim, 0, cost=_receiver_cost),
    "join": _entry(_join, 0, 1, cost=_receiver_cost),
    "find": _entry(_find, 1, cost=_matches_cost),
    "findAll": _entry(_find_all, 1, 2, cost=lambda t, p, *_: _matches_cost(t, p)),
    "isSorted": _entry(_is_sorted, 0, cost=_receiver_cost),
    "sum": _entry(_sum, 0, cost=_receiver_cost),
    "min": _entry(lambda items: _extreme("min", items, lambda a, b: not _less(b, a)), 0, cost=_receiver_cost),
    "max": _entry(lambda items: _extreme("max", items, lambda a, b: not _less(a, b)), 0, cost=_receiver_cost),
    "isInteger": _entry(lambda q: _q("isInteger", q).is_integer(), 0),
    "asInteger": _entry(_as_integer, 0),
    "asApproximateFloat": _entry(lambda q: float(_q("asApproximateFloat", q).value), 0),
    "add": _entry(_q_add, 1),
    "sub": _entry(_q_sub, 1),
    "compareTo": _entry(lambda a, b: _compare("compareTo", a, b), 1),
    "isGreaterThan": _entry(lambda a, b: _compare("isGreaterThan", a, b) > 0, 1),
    "isLessThan": _entry(lambda a, b: _compare("isLessThan", a, b) < 0, 1),
    "major": _entry(lambda v: _sv("major", v).major, 0),
    "minor": _entry(lambda v: _sv("minor", v).minor, 0),
    "patch": _entry(lambda v: _sv("patch", v).patch, 0),
}

_NAMESPACES: Final = frozenset({"sets"})
_FOLDABLE: Final = frozenset({"quantity", "semver", "isQuantity", "isSemver"})  # pure, worth folding
# Per-iteration cost of the accumulator a macro expands to in cel-go.
_ITERATION_COST: Final = {
    "all": 3,
    "exists": 3,
    "exists_one": 2,
    "existsOne": 2,
    "map": 12,
    "filter": 12,
    "transformList": 12,
    "transformMap": 12,
}
_DEVICE_FIELDS: Final = ("driver", "attributes", "capacity")
_CONSUMABLE_FIELD: Final = "allowMultipleAllocations"


# --- selection and indexing ----------------------------------------------------------------------


def _select(value: Any, name: str) -> Any:
    kind = type(value)
    if kind is dict:
        try:
            return value[name]
        except KeyError:
            raise _EvalError(f"no such key: {name}") from None
    if kind is _DomainMap:
        return value.get(name, _EMPTY)
    if kind is _Device:
        try:
            return value[name]
        except KeyError:
            raise _EvalError(f"no such field: {name}") from None
    raise _EvalError(f"type '{_type_name(value)}' does not support field selection")


def _present(value: Any, name: str) -> bool:
    kind = type(value)
    if kind is dict or kind is _Device:
        return name in value
    if kind is _DomainMap:
        return True  # upstream's Find never misses
    raise _EvalError(f"invalid type for field selection in has(): {_type_name(value)}")


def _index(value: Any, key: Any) -> Any:
    kind = type(value)
    if kind is _DomainMap:
        return value.get(key, _EMPTY) if type(key) is str else _EMPTY
    if kind is dict:
        try:
            return value[_map_key(key)]
        except KeyError:
            raise _EvalError(f"no such key: {_unkey(key)}") from None
    if kind is list:
        key_type = type(key)
        if key_type is float and key.is_integer():
            key = int(key)
        elif key_type is not int and key_type is not _Uint:
            raise _no_overload("_[_]", value, key)
        if not 0 <= key < len(value):
            raise _EvalError(f"index out of bounds: {key}")
        return value[key]
    raise _no_overload("_[_]", value, key)


def _contained(item: Any, container: Any) -> bool:
    kind = type(container)
    if kind is list:
        return any(_nested_equals(item, element) for element in container)
    if kind is dict or kind is _DomainMap:
        try:
            return _map_key(item) in container
        except _EvalError:
            return False
    raise _no_overload("@in", item, container)


def _iterated(function: str, value: Any) -> Iterable[Any]:
    """What a comprehension ranges over: a list's elements or a map's keys."""
    kind = type(value)
    if kind is list:
        return cast(list[Any], value)
    if kind is dict or kind is _DomainMap:
        return [_unkey(k) for k in value]
    raise _EvalError(f"{function}: cannot range over {_type_name(value)}")


def _pairs(function: str, value: Any) -> Iterable[tuple[Any, Any]]:
    """What a two-variable comprehension ranges over: (index, element) or (key, value)."""
    kind = type(value)
    if kind is list:
        return list(enumerate(value))
    if kind is dict or kind is _DomainMap:
        return [(_unkey(k), v) for k, v in value.items()]
    raise _EvalError(f"{function}: cannot range over {_type_name(value)}")


# --- the compiler ------------------------------------------------------------------------------


class _Frame:
    """One evaluation: the variables in scope and the cost so far."""

    __slots__ = ("cost", "limit", "vars")

    def __init__(self, variables: dict[str, Any], limit: int) -> None:
        self.vars = variables
        self.cost = 0
        self.limit = limit


_Fn = Callable[[_Frame], Any]
_UNSET: Final = object()

# Static types, as far as this engine knows them: a name ("int", "kubernetes.Quantity", ...), a
# ("list", element) or ("map", key, value) tuple, or DYN when only the evaluation can tell.
_Type = str | tuple[Any, ...]
DYN: Final = "dyn"
_NUMERIC_TYPES: Final = frozenset({"int", "uint", "double"})
_ORDERED_TYPES: Final = frozenset({"string", "bytes", "bool"})
_ATTRIBUTES_TYPE: Final = ("map", "string", ("map", "string", DYN))
_CAPACITY_TYPE: Final = ("map", "string", ("map", "string", "kubernetes.Quantity"))
_DEVICE_TYPE: Final = "kubernetes.DRADevice"
_FIELD_TYPES: Final[dict[str, _Type]] = {
    "driver": "string",
    "attributes": _ATTRIBUTES_TYPE,
    "capacity": _CAPACITY_TYPE,
    _CONSUMABLE_FIELD: "bool",
}
_RESULT_TYPES: Final[dict[str, _Type]] = {
    **dict.fromkeys(("size", "int", "sign", "asInteger", "compareTo", "major", "minor", "patch"), "int"),
    **dict.fromkeys(("indexOf", "lastIndexOf"), "int"),
    "uint": "uint",
    "double": "double",
    "asApproximateFloat": "double",
    **dict.fromkeys(
        ("string", "charAt", "lowerAscii", "upperAscii", "replace", "substring", "trim"), "string"
    ),
    **dict.fromkeys(("join", "find"), "string"),
    "bytes": "bytes",
    "type": "type",
    **dict.fromkeys(
        ("bool", "matches", "contains", "startsWith", "endsWith", "isQuantity", "isSemver"), "bool"
    ),
    **dict.fromkeys(("isInteger", "isGreaterThan", "isLessThan", "isSorted"), "bool"),
    **dict.fromkeys(("sets.contains", "sets.equivalent", "sets.intersects"), "bool"),
    **dict.fromkeys(("quantity", "add", "sub"), "kubernetes.Quantity"),
    "semver": "kubernetes.Semver",
    **dict.fromkeys(("split", "findAll"), ("list", "string")),
}


def _type_of_value(value: Any) -> _Type:
    kind = type(value)
    if kind is list:
        return ("list", _common_type([_type_of_value(v) for v in value]))
    if kind is dict:
        keys = [_type_of_value(_unkey(k)) for k in value]
        return ("map", _common_type(keys), _common_type([_type_of_value(v) for v in value.values()]))
    return _TYPE_NAMES.get(kind, DYN)


def _common_type(types: list[_Type]) -> _Type:
    return types[0] if types and all(t == types[0] for t in types) else DYN


def _type_text(static: _Type) -> str:
    if isinstance(static, tuple):
        return f"{static[0]}({', '.join(_type_text(t) for t in static[1:])})"
    return static


def _compatible(left: _Type, right: _Type) -> bool:
    """Whether cel-go's checker could accept ``left == right`` (lenient where unsure)."""
    if DYN in (left, right) or "null_type" in (left, right) or left == right:
        return True
    if left in _NUMERIC_TYPES and right in _NUMERIC_TYPES:
        return True
    if (
        isinstance(left, tuple)
        and isinstance(right, tuple)
        and len(left) == len(right)
        and left[0] == right[0]
    ):
        return all(_compatible(a, b) for a, b in zip(left[1:], right[1:], strict=True))
    return False


def _element_type(container: _Type) -> _Type:
    """What indexing a list or map yields; a comprehension's variable over it."""
    if isinstance(container, tuple):
        return cast(_Type, container[-1])
    return DYN


def _range_type(container: _Type) -> _Type:
    """A one-variable comprehension's variable: a list's element or a map's key."""
    if isinstance(container, tuple):
        return cast(_Type, container[1])
    return DYN


class _Node:
    """A compiled subexpression: its closure, static type, and ``value`` when constant (folded)."""

    __slots__ = ("cost", "fn", "type", "value")

    def __init__(self, fn: _Fn, value: Any = _UNSET, cost: int = 0, static: _Type = DYN) -> None:
        self.fn, self.value, self.cost, self.type = fn, value, cost, static

    @property
    def constant(self) -> bool:
        return self.value is not _UNSET


def _typed(node: _Node, static: _Type) -> _Node:
    node.type = static
    return node


def _constant(value: Any, cost: int = 0) -> _Node:
    static = _type_of_value(value)
    if cost == 0:

        def literal(fr: _Frame) -> Any:
            return value

        return _Node(literal, value, 0, static)

    def folded(fr: _Frame) -> Any:
        fr.cost += cost
        return value

    return _Node(folded, value, cost, static)


class _CompileError(Exception):
    pass


def _no_matching(function: str, *types: _Type) -> _CompileError:
    return _CompileError(
        f"found no matching overload for '{function}' applied to ({', '.join(_type_text(t) for t in types)})"
    )


_WRAPPERS: Final = frozenset(
    {"expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication", "unary", "member"}
)
_WRAPPERS_AND_PARENS: Final = _WRAPPERS | {"primary", "paren_expr"}
_OPERATOR_NAMES: Final = {
    "relation_eq": "_==_",
    "relation_ne": "_!=_",
    "relation_lt": "_<_",
    "relation_le": "_<=_",
    "relation_gt": "_>_",
    "relation_ge": "_>=_",
    "relation_in": "@in",
    "addition_add": "_+_",
    "addition_sub": "_-_",
    "multiplication_mul": "_*_",
    "multiplication_div": "_/_",
    "multiplication_mod": "_%_",
}
_ARITHMETIC_TYPES: Final = {
    "addition_add": frozenset({"int", "uint", "double", "string", "bytes", "list"}),
    "addition_sub": _NUMERIC_TYPES,
    "multiplication_mul": _NUMERIC_TYPES,
    "multiplication_div": _NUMERIC_TYPES,
    "multiplication_mod": frozenset({"int", "uint"}),
}


def _unwrap(tree: Any) -> Any:
    """The first node below single-child wrappers (and parentheses)."""
    while isinstance(tree, lark.Tree) and tree.data in _WRAPPERS_AND_PARENS and len(tree.children) == 1:
        tree = tree.children[0]
    return tree


def _ident_name(tree: Any) -> str | None:
    node = _unwrap(tree)
    if isinstance(node, lark.Tree) and node.data == "ident":
        return str(node.children[0])
    return None


def _args(tree: lark.Tree[Any], index: int) -> list[Any]:
    """The expressions of an optional ``exprlist`` child."""
    if len(tree.children) > index and isinstance(tree.children[index], lark.Tree):
        return list(tree.children[index].children)
    return []


def _kind(static: _Type) -> str:
    return static[0] if isinstance(static, tuple) else static


class _Compiler:
    def __init__(self, consumable_capacity: bool) -> None:
        self.device_fields = set(_DEVICE_FIELDS) | ({_CONSUMABLE_FIELD} if consumable_capacity else set())
        self.scope: list[tuple[str, _Type]] = []  # comprehension and bind variables, innermost last
        self.functions: set[str] = set()
        self.selected_fields: set[str] = set()
        self.binds_variables = False

    def compile(self, tree: Any) -> _Node:
        tree = _unwrap(tree)  # iteratively: parentheses and precedence levels cost no recursion
        if isinstance(tree, lark.Token):
            raise _CompileError(f"unexpected token {tree!s}")
        handler = getattr(self, f"visit_{tree.data}", None)
        if handler is None:
            raise _CompileError(f"unsupported syntax: {tree.data}")
        node: _Node = handler(tree)
        return node

    def _local(self, name: str) -> _Type | None:
        for bound, static in reversed(self.scope):
            if bound == name:
                return static
        return None

    def _bool_operand(self, function: str, node: _Node) -> _Fn:
        if node.type not in (DYN, "bool"):
            raise _no_matching(function, node.type)
        return node.fn

    # -- structure --

    def _single(self, tree: lark.Tree[Any]) -> _Node:
        return self.compile(tree.children[0])

    visit_primary = visit_member = visit_paren_expr = _single

    def visit_expr(self, tree: lark.Tree[Any]) -> _Node:
        if len(tree.children) == 1:
            return self._single(tree)
        cond_node, then_node, other_node = (self.compile(c) for c in tree.children)
        cond = self._bool_operand("_?_:_", cond_node)
        then, other = then_node.fn, other_node.fn

        def ternary(fr: _Frame) -> Any:
            test = cond(fr)
            if test is True:
                return then(fr)
            if test is False:
                return other(fr)
            raise _no_overload("_?_:_", test)

        return _Node(ternary, static=then_node.type if then_node.type == other_node.type else DYN)

    def visit_conditionalor(self, tree: lark.Tree[Any]) -> _Node:
        return self._logical_chain(tree, is_or=True)

    def visit_conditionaland(self, tree: lark.Tree[Any]) -> _Node:
        return self._logical_chain(tree, is_or=False)

    def _logical_chain(self, tree: lark.Tree[Any], is_or: bool) -> _Node:
        """``a || b || c`` as one node: the grammar nests a chain leftwards, one level per operand."""
        operands = []
        node: Any = tree
        while isinstance(node, lark.Tree) and node.data == tree.data and len(node.children) == 2:
            operands.append(node.children[1])
            node = _unwrap(node.children[0])
        operands.append(node)
        name = "_||_" if is_or else "_&&_"
        fns = [self._bool_operand(name, self.compile(operand)) for operand in reversed(operands)]
        return _Node(_logical(fns, is_or), static="bool")

    def visit_relation(self, tree: lark.Tree[Any]) -> _Node:
        if len(tree.children) == 1:
            return self._single(tree)
        operator_tree, right_tree = tree.children
        operator = str(operator_tree.data)
        left, right = self.compile(operator_tree.children[0]), self.compile(right_tree)
        name, types = _OPERATOR_NAMES[operator], (left.type, right.type)
        if DYN not in types:
            if operator in ("relation_eq", "relation_ne") and not _compatible(*types):
                raise _no_matching(name, *types)
            if operator == "relation_in" and _kind(right.type) not in ("list", "map"):
                raise _no_matching(name, *types)
            if operator in _ORDERING and not (
                (left.type in _NUMERIC_TYPES and right.type in _NUMERIC_TYPES)
                or (left.type == right.type and left.type in _ORDERED_TYPES)
            ):
                raise _no_matching(name, *types)
        return _typed(_relation_node(operator, left, right), "bool")

    def _arithmetic(self, tree: lark.Tree[Any]) -> _Node:
        if len(tree.children) == 1:
            return self._single(tree)
        operator_tree, right_tree = tree.children
        operator = str(operator_tree.data)
        left, right = self.compile(operator_tree.children[0]), self.compile(right_tree)
        static = left.type if left.type == right.type else DYN
        if DYN not in (left.type, right.type) and (
            static == DYN or _kind(static) not in _ARITHMETIC_TYPES[operator]
        ):
            raise _no_matching(_OPERATOR_NAMES[operator], left.type, right.type)
        a_fn, b_fn = left.fn, right.fn
        if operator == "addition_add":

            def add(fr: _Frame) -> Any:
                a, b = a_fn(fr), b_fn(fr)
                fr.cost += _concat_cost(a, b)
                return _add(a, b)

            return _Node(add, static=static)
        apply = {
            "addition_sub": _sub,
            "multiplication_mul": _mul,
            "multiplication_div": _div,
            "multiplication_mod": _mod,
        }[operator]

        def arithmetic(fr: _Frame) -> Any:
            a, b = a_fn(fr), b_fn(fr)
            fr.cost += 1
            return apply(a, b)

        return _Node(arithmetic, static=static)

    visit_addition = visit_multiplication = _arithmetic

    def visit_unary(self, tree: lark.Tree[Any]) -> _Node:
        if len(tree.children) == 1:
            return self._single(tree)
        operator, operand_tree = tree.children
        operand_node = self.compile(operand_tree)
        operand = operand_node.fn
        if operator.data == "unary_not":
            self._bool_operand("!_", operand_node)

            def logical_not(fr: _Frame) -> Any:
                value = operand(fr)
                fr.cost += 1
                if type(value) is not bool:
                    raise _no_overload("!_", value)
                return not value

            return _Node(logical_not, static="bool")
        if operand_node.type not in (DYN, "int", "double"):
            raise _no_matching("-_", operand_node.type)

        def negate(fr: _Frame) -> Any:
            value = operand(fr)
            fr.cost += 1
            if type(value) is int:
                return _int(-value, "-_")
            if type(value) is float:
                return -value
            raise _no_overload("-_", value)

        return _Node(negate, static=operand_node.type)

    # -- members --

    def _selectable(self, target: _Node, name: str) -> _Type:
        """The static type of ``target.name``; a compile error where it cannot be selected."""
        if target.type == DYN:
            return DYN
        if _kind(target.type) == "map":
            return _element_type(target.type)
        raise _CompileError(f"type '{_type_text(target.type)}' does not support field selection ('{name}')")

    def visit_member_dot(self, tree: lark.Tree[Any]) -> _Node:
        target_tree, name_token = tree.children
        name = str(name_token)
        if self._is_device(target_tree):
            self._device_field(name)

            def device_field(fr: _Frame) -> Any:
                fr.cost += 2  # the variable and the field
                try:
                    return fr.vars["device"][name]
                except KeyError:  # a view built without the consumable-capacity field
                    raise _EvalError(f"no such field: {name}") from None

            return _Node(device_field, static=_FIELD_TYPES[name])
        target_node = self.compile(target_tree)
        static = self._selectable(target_node, name)
        target = target_node.fn

        def select(fr: _Frame) -> Any:
            value = target(fr)
            fr.cost += 1
            return _select(value, name)

        return _Node(select, static=static)

    def _device_field(self, name: str) -> None:
        if name not in self.device_fields:
            raise _CompileError(f"undefined field '{name}' of device")
        self.selected_fields.add(name)

    def visit_member_index(self, tree: lark.Tree[Any]) -> _Node:
        target_tree, key_tree = tree.children
        target_node, key = self.compile(target_tree), self.compile(key_tree)
        if target_node.type != DYN and _kind(target_node.type) not in ("list", "map"):
            raise _no_matching("_[_]", target_node.type, key.type)
        static, target = _element_type(target_node.type), target_node.fn
        if key.constant and type(key.value) is str:
            constant_key = key.value

            def index_by_string(fr: _Frame) -> Any:
                value = target(fr)
                fr.cost += 1
                if type(value) is _DomainMap:
                    return value.get(constant_key, _EMPTY)
                return _index(value, constant_key)

            return _Node(index_by_string, static=static)
        key_fn = key.fn

        def index(fr: _Frame) -> Any:
            value, k = target(fr), key_fn(fr)
            fr.cost += 1
            return _index(value, k)

        return _Node(index, static=static)

    def visit_member_object(self, tree: lark.Tree[Any]) -> _Node:
        raise _CompileError("message construction is not supported")

    def visit_member_dot_arg(self, tree: lark.Tree[Any]) -> _Node:
        target_tree, name = tree.children[0], str(tree.children[1])
        args = _args(tree, 2)
        namespace = _ident_name(target_tree)
        if namespace is not None and self._local(namespace) is None and namespace != "device":
            if namespace == "cel" and name == "bind":
                self.functions.add("cel.bind")
                return self._bind(args)
            if namespace in _NAMESPACES:
                return self._call_global(f"{namespace}.{name}", args)
        if name in _ITERATION_COST and len(args) >= 2 and _ident_name(args[0]) is not None:
            self.functions.add(name)
            return self._comprehension(name, target_tree, args)
        self.functions.add(name)
        entry = _METHODS.get(name)
        if entry is None:
            raise _CompileError(f"undeclared reference to '{name}'")
        impl, counts, cost_fn = entry
        if len(args) not in counts:
            raise _CompileError(f"found no matching overload for '{name}' with {len(args)} argument(s)")
        target = self.compile(target_tree).fn
        node = _call([target, *(self.compile(a).fn for a in args)], impl, cost_fn)
        return _typed(node, _RESULT_TYPES.get(name, DYN))

    # -- primaries --

    def visit_literal(self, tree: lark.Tree[Any]) -> _Node:
        return _constant(_literal_value(cast(lark.Token, tree.children[0])))

    def visit_ident(self, tree: lark.Tree[Any]) -> _Node:
        return self._variable(str(tree.children[0]), local=True)

    def visit_dot_ident(self, tree: lark.Tree[Any]) -> _Node:
        return self._variable(str(tree.children[0]), local=False)

    def _variable(self, name: str, local: bool) -> _Node:
        static = self._local(name) if local else None
        if static is not None or name == "device":

            def variable(fr: _Frame) -> Any:
                fr.cost += 1
                return fr.vars[name]

            return _Node(variable, static=_DEVICE_TYPE if static is None else static)
        if name in _TYPE_IDENTS:
            return _constant(_TYPE_IDENTS[name])
        raise _CompileError(f"undeclared reference to '{name}'")

    def visit_ident_arg(self, tree: lark.Tree[Any]) -> _Node:
        name, args = str(tree.children[0]), _args(tree, 1)
        if name == "has":
            self.functions.add(name)
            return self._has(args)
        return self._call_global(name, args)

    def visit_dot_ident_arg(self, tree: lark.Tree[Any]) -> _Node:
        return self._call_global(str(tree.children[0]), _args(tree, 1))

    def visit_list_lit(self, tree: lark.Tree[Any]) -> _Node:
        items = [self.compile(item) for item in _args(tree, 0)]
        if all(item.constant for item in items):
            return _constant([item.value for item in items], 10 + sum(item.cost for item in items))
        fns = [item.fn for item in items]

        def make_list(fr: _Frame) -> Any:
            values = [fn(fr) for fn in fns]
            fr.cost += 10
            return values

        return _Node(make_list, static=("list", _common_type([item.type for item in items])))

    def visit_map_lit(self, tree: lark.Tree[Any]) -> _Node:
        nodes = [self.compile(part) for part in _args(tree, 0)]
        keys, values = nodes[0::2], nodes[1::2]
        for key in keys:
            if key.type not in (DYN, "string", "int", "uint", "bool"):
                raise _CompileError(f"unsupported map key type: {_type_text(key.type)}")
        pairs = [(k.fn, v.fn) for k, v in zip(keys, values, strict=True)]

        def make_map(fr: _Frame) -> Any:
            result: dict[Any, Any] = {}
            for key_fn, value_fn in pairs:
                key = key_fn(fr)
                if type(key) is float:
                    raise _EvalError("unsupported map key type: double")
                normal = _map_key(key)
                if normal in result:
                    raise _EvalError(f"duplicate map key: {key!r}")
                result[normal] = value_fn(fr)
            fr.cost += 30
            return result

        static = ("map", _common_type([k.type for k in keys]), _common_type([v.type for v in values]))
        return _Node(make_map, static=static)

    # -- calls and macros --

    def _is_device(self, tree: Any) -> bool:
        return _ident_name(tree) == "device" and self._local("device") is None

    def _call_global(self, name: str, arg_trees: list[Any]) -> _Node:
        self.functions.add(name)
        entry = _GLOBALS.get(name)
        if entry is None:
            raise _CompileError(f"undeclared reference to '{name}'")
        impl, counts, cost_fn = entry
        if len(arg_trees) not in counts:
            raise _CompileError(f"found no matching overload for '{name}' with {len(arg_trees)} argument(s)")
        args = [self.compile(a) for a in arg_trees]
        if name in _FOLDABLE and all(a.constant for a in args):
            try:
                return _constant(impl(*(a.value for a in args)), 1 + sum(a.cost for a in args))
            except _EvalError:
                pass  # fails when evaluated, as upstream
        static = args[0].type if name == "dyn" else _RESULT_TYPES.get(name, DYN)
        return _typed(_call([a.fn for a in args], impl, cost_fn), DYN if name == "dyn" else static)

    def _has(self, arg_trees: list[Any]) -> _Node:
        select = _unwrap(arg_trees[0]) if len(arg_trees) == 1 else None
        if not isinstance(select, lark.Tree) or select.data != "member_dot":
            raise _CompileError("invalid argument to has() macro")
        target_tree, name = select.children[0], str(select.children[1])
        if self._is_device(target_tree):
            self._device_field(name)
        target_node = self.compile(target_tree)
        if target_node.type not in (DYN, _DEVICE_TYPE):
            self._selectable(target_node, name)
        target = target_node.fn

        def has(fr: _Frame) -> Any:
            value = target(fr)
            fr.cost += 1
            return _present(value, name)

        return _Node(has, static="bool")

    def _bind(self, arg_trees: list[Any]) -> _Node:
        name = _ident_name(arg_trees[0]) if len(arg_trees) == 3 else None
        if name is None:
            raise _CompileError("cel.bind() takes a variable name, a value and an expression")
        init_node = self.compile(arg_trees[1])
        self.scope.append((name, init_node.type))
        body_node = self.compile(arg_trees[2])
        self.scope.pop()
        self.binds_variables = True
        init, body = init_node.fn, body_node.fn

        def bind(fr: _Frame) -> Any:
            saved = fr.vars.get(name, _UNSET)
            fr.vars[name] = init(fr)
            try:
                return body(fr)
            finally:
                _restore(fr.vars, name, saved)

        return _Node(bind, static=body_node.type)

    def _comprehension(self, macro: str, target_tree: Any, arg_trees: list[Any]) -> _Node:
        two = macro.startswith("transform") or (len(arg_trees) == 3 and macro in _TWO_VARIABLE)
        count = 2 if two else 1
        names = [_ident_name(a) for a in arg_trees[:count]]
        allowed = (3, 4) if macro.startswith("transform") else (2, 3) if macro == "map" else (count + 1,)
        if None in names or len(arg_trees) not in allowed:
            raise _CompileError(f"invalid arguments to the {macro}() macro")
        target_node = self.compile(target_tree)
        if target_node.type != DYN and _kind(target_node.type) not in ("list", "map"):
            raise _CompileError(f"{macro}() cannot range over {_type_text(target_node.type)}")
        container = target_node.type
        if two:
            first = "int" if _kind(container) == "list" else _range_type(container)
            variables = [(names[0] or "", first), (names[1] or "", _element_type(container))]
        else:
            variables = [(names[0] or "", _range_type(container))]
        self.scope.extend(variables)
        bodies = [self.compile(a) for a in arg_trees[count:]]
        del self.scope[-count:]
        self.binds_variables = True
        function = _comprehension_fn(
            macro, target_node.fn, [n for n, _ in variables], [b.fn for b in bodies], _LOOPS[macro], two
        )
        if macro in ("map", "transformList"):
            static: _Type = ("list", bodies[-1].type)
        elif macro == "filter":
            static = container if _kind(container) == "list" else ("list", _range_type(container))
        elif macro == "transformMap":
            static = ("map", variables[0][1], bodies[-1].type)
        else:
            static = "bool"
        return _Node(function, static=static)


_TWO_VARIABLE: Final = frozenset({"all", "exists", "existsOne"})


def _restore(variables: dict[str, Any], name: str, saved: Any) -> None:
    if saved is _UNSET:
        variables.pop(name, None)
    else:
        variables[name] = saved


def _logical(operands: list[_Fn], is_or: bool) -> _Fn:
    """``||`` (``is_or``) or ``&&`` over operands left to right, commutative over errors as in CEL:
    a decisive operand (true for ``||``, false for ``&&``) wins over an error on either side."""
    decisive = is_or
    name = "_||_" if is_or else "_&&_"

    def logical(fr: _Frame) -> Any:
        error: _EvalError | None = None
        for operand in operands:
            try:
                value = operand(fr)
            except _EvalError as raised:
                error = error or raised
                continue
            if value is decisive:
                return decisive
            if value is not (not decisive):
                error = error or _no_overload(name, value)
        if error is not None:
            raise error
        return not decisive

    return logical


def _relation_node(operator: str, left: _Node, right: _Node) -> _Node:
    a_fn, b_fn = left.fn, right.fn
    if operator in ("relation_eq", "relation_ne"):
        negate = operator == "relation_ne"
        if right.constant and type(right.value) is str:
            constant, extra = right.value, right.cost

            def equals_string(fr: _Frame) -> Any:
                a = a_fn(fr)
                fr.cost += extra + 1
                result = a == constant if type(a) is str else _equals(a, constant)
                return result is not negate

            return _Node(equals_string)

        def equals(fr: _Frame) -> Any:
            a, b = a_fn(fr), b_fn(fr)
            fr.cost += _compare_cost(a, b)
            return _equals(a, b) is not negate

        return _Node(equals)
    if operator == "relation_in":
        return _membership(left, right)
    compare, name = _ORDERING[operator]

    def ordering(fr: _Frame) -> Any:
        a, b = a_fn(fr), b_fn(fr)
        fr.cost += _compare_cost(a, b)
        _ordered(name, a, b)
        return compare(a, b)

    return _Node(ordering)


_ORDERING: Final[dict[str, tuple[Callable[[Any, Any], bool], str]]] = {
    "relation_lt": (lambda a, b: a < b, "_<_"),
    "relation_le": (lambda a, b: a <= b, "_<=_"),
    "relation_gt": (lambda a, b: a > b, "_>_"),
    "relation_ge": (lambda a, b: a >= b, "_>=_"),
}


def _membership(item: _Node, container: _Node) -> _Node:
    item_fn, container_fn = item.fn, container.fn
    if container.constant and type(container.value) is list and all(type(v) is str for v in container.value):
        strings, extra = frozenset(container.value), container.cost + len(container.value)

        def in_strings(fr: _Frame) -> Any:
            value = item_fn(fr)
            fr.cost += extra
            return value in strings if type(value) is str else _contained(value, container.value)

        return _Node(in_strings)

    def contained(fr: _Frame) -> Any:
        value, where = item_fn(fr), container_fn(fr)
        fr.cost += len(where) if type(where) is list else 1
        return _contained(value, where)

    return _Node(contained)


def _call(fns: list[_Fn], impl: _Impl, cost_fn: _CostFn) -> _Node:
    """A function call; ``fns`` are the receiver (for a method) and the arguments."""
    if len(fns) == 1 and cost_fn is None:
        (only,) = fns

        def call1(fr: _Frame) -> Any:
            value = only(fr)
            fr.cost += 1
            return impl(value)

        return _Node(call1)
    if len(fns) == 2 and cost_fn is None:
        first, second = fns

        def call2(fr: _Frame) -> Any:
            a, b = first(fr), second(fr)
            fr.cost += 1
            return impl(a, b)

        return _Node(call2)

    def call(fr: _Frame) -> Any:
        values = [fn(fr) for fn in fns]
        fr.cost += 1 + (cost_fn(*values) if cost_fn is not None else 0)
        return impl(*values)

    return _Node(call)


# -- comprehensions --

_Loop = Callable[[_Frame, list[_Fn], Iterator[Any]], Any]


def _check_cost(fr: _Frame) -> None:
    if fr.cost > fr.limit:
        raise _CostExceeded


def _loop_all(fr: _Frame, bodies: list[_Fn], steps: Iterator[Any]) -> Any:
    (predicate,) = bodies
    error: _EvalError | None = None
    for _ in steps:
        try:
            value = predicate(fr)
        except _EvalError as raised:
            error = error or raised
            continue
        if value is False:
            return False
        if value is not True:
            error = error or _no_overload("all", value)
    if error is not None:
        raise error
    return True


def _loop_exists(fr: _Frame, bodies: list[_Fn], steps: Iterator[Any]) -> Any:
    (predicate,) = bodies
    error: _EvalError | None = None
    for _ in steps:
        try:
            value = predicate(fr)
        except _EvalError as raised:
            error = error or raised
            continue
        if value is True:
            return True
        if value is not False:
            error = error or _no_overload("exists", value)
    if error is not None:
        raise error
    return False


def _loop_exists_one(fr: _Frame, bodies: list[_Fn], steps: Iterator[Any]) -> Any:
    (predicate,) = bodies
    found = 0
    for _ in steps:
        value = predicate(fr)
        if type(value) is not bool:
            raise _no_overload("exists_one", value)
        found += value
    return found == 1


def _loop_map(fr: _Frame, bodies: list[_Fn], steps: Iterator[Any]) -> Any:
    *condition, transform = bodies
    result = []
    for _ in steps:
        if condition:
            keep = condition[0](fr)
            if type(keep) is not bool:
                raise _no_overload("map", keep)
            if not keep:
                continue
        result.append(transform(fr))
    return result


def _loop_filter(fr: _Frame, bodies: list[_Fn], steps: Iterator[Any]) -> Any:
    (predicate,) = bodies
    result = []
    for item in steps:
        keep = predicate(fr)
        if type(keep) is not bool:
            raise _no_overload("filter", keep)
        if keep:
            result.append(item)
    return result


def _loop_transform_map(fr: _Frame, bodies: list[_Fn], steps: Iterator[Any]) -> Any:
    *condition, transform = bodies
    result: dict[Any, Any] = {}
    for key in steps:
        if condition:
            keep = condition[0](fr)
            if type(keep) is not bool:
                raise _no_overload("transformMap", keep)
            if not keep:
                continue
        result[_map_key(key)] = transform(fr)
    return result


_LOOPS: Final[dict[str, _Loop]] = {
    "all": _loop_all,
    "exists": _loop_exists,
    "exists_one": _loop_exists_one,
    "existsOne": _loop_exists_one,
    "map": _loop_map,
    "filter": _loop_filter,
    "transformList": _loop_map,
    "transformMap": _loop_transform_map,
}


def _comprehension_fn(
    macro: str, target: _Fn, names: list[str], bodies: list[_Fn], loop: _Loop, two: bool
) -> _Fn:
    step_cost = _ITERATION_COST[macro]

    def comprehension(fr: _Frame) -> Any:
        source = target(fr)
        items: Iterable[Any] = _pairs(macro, source) if two else _iterated(macro, source)
        variables = fr.vars
        saved = [variables.get(n, _UNSET) for n in names]

        def steps() -> Iterator[Any]:
            for item in items:
                fr.cost += step_cost
                _check_cost(fr)
                if two:
                    variables[names[0]], variables[names[1]] = item
                    yield item[0]
                else:
                    variables[names[0]] = item
                    yield item

        try:
            return loop(fr, bodies, steps())
        finally:
            for name, value in zip(names, saved, strict=True):
                _restore(variables, name, value)

    return comprehension


# -- literals --

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
            raise _CompileError(f"invalid escape sequence in {text}")
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
                raise _CompileError(f"invalid unicode escape in {text}")
            parts.append(chr(code).encode())
        position = match.end()
    if "\\" in body[position:]:
        raise _CompileError(f"invalid escape sequence in {text}")
    parts.append(body[position:].encode())
    joined = b"".join(parts)
    return joined if is_bytes else joined.decode("utf-8", errors="surrogateescape")


def _integer(text: str) -> int:
    """cel-go's reading of an integer literal: hexadecimal after ``0x``, otherwise decimal."""
    sign, digits = ("-", text[1:]) if text.startswith("-") else ("", text)
    value = int(digits[2:], 16) if digits[:2].lower() == "0x" else int(digits, 10)
    return -value if sign else value


def _literal_value(token: lark.Token) -> Any:
    kind, text = token.type, str(token)
    if kind == "INT_LIT":
        value = _integer(text)
        if not _INT_MIN <= value <= _INT_MAX:
            raise _CompileError(f"invalid int literal {text}")
        return value
    if kind == "UINT_LIT":
        value = _integer(text[:-1])
        if not 0 <= value <= _UINT_MAX:
            raise _CompileError(f"invalid uint literal {text}")
        return _Uint(value)
    if kind == "FLOAT_LIT":
        return float(text)
    if kind in ("STRING_LIT", "MLSTRING_LIT", "BYTES_LIT"):
        return _string_literal(text)
    if kind == "BOOL_LIT":
        return text == "true"
    if kind == "NULL_LIT":
        return None
    raise _CompileError(f"unsupported literal {text}")


# --- the public API ----------------------------------------------------------------------------


class DeviceView:
    """The CEL ``device`` variable for one ResourceSlice device, built once and reused."""

    __slots__ = ("_error", "_variables", "name")

    def __init__(self, name: str, variables: dict[str, Any], error: str | None) -> None:
        self.name = name
        self._variables = variables
        self._error = error

    def __repr__(self) -> str:
        return f"DeviceView({self.name!r})"


def _split_key(key: str, driver: str) -> tuple[str, str]:
    domain, slash, name = key.partition("/")
    return (domain, name) if slash else (driver, key)


def _attribute_value(key: str, attribute: Any) -> Any:
    """The value of one ResourceSlice attribute; ValueError as upstream's getAttributeValue fails."""
    if not isinstance(attribute, Mapping):
        raise ValueError(f"attribute {key}: unsupported attribute value")
    if attribute.get("int") is not None:
        value = attribute["int"]
        if type(value) is not int:
            raise ValueError(f"attribute {key}: int value {value!r} is not an integer")
        return value
    if attribute.get("bool") is not None:
        if type(attribute["bool"]) is not bool:
            raise ValueError(f"attribute {key}: bool value {attribute['bool']!r} is not a bool")
        return attribute["bool"]
    if attribute.get("string") is not None:
        return str(attribute["string"])
    if attribute.get("version") is not None:
        try:
            return Semver.parse(str(attribute["version"]))
        except ValueError as error:
            raise ValueError(f"attribute {key}: parse semantic version: {error}") from error
    raise ValueError(f"attribute {key}: unsupported attribute value")


def device_view(driver: str, device: Mapping[str, Any], *, consumable_capacity: bool = True) -> DeviceView:
    """The ``device`` variable for one entry of a ResourceSlice's ``spec.devices`` of ``driver``.

    A device that upstream cannot turn into a CEL value (an unparsable version, an attribute with no
    value, a capacity that is not a quantity) gives a view on which every selector fails."""
    attributes, capacity = _DomainMap(), _DomainMap()
    error = None
    try:
        for key, attribute in (device.get("attributes") or {}).items():
            domain, name = _split_key(str(key), driver)
            attributes.setdefault(domain, {})[name] = _attribute_value(str(key), attribute)
        for key, entry in (device.get("capacity") or {}).items():
            domain, name = _split_key(str(key), driver)
            value = entry.get("value") if isinstance(entry, Mapping) else None
            try:
                capacity.setdefault(domain, {})[name] = Quantity.parse(str(value))
            except QuantityError as problem:
                raise ValueError(f"capacity {key}: {problem}") from problem
    except ValueError as problem:
        error = str(problem)
    fields = _Device(driver=driver, attributes=attributes, capacity=capacity)
    if consumable_capacity:
        fields[_CONSUMABLE_FIELD] = bool(device.get(_CONSUMABLE_FIELD) or False)
    return DeviceView(str(device.get("name", "")), {"device": fields}, error)


class CompiledSelector:
    """One expression, compiled; :meth:`matches` evaluates it for a device."""

    __slots__ = ("_fn", "_private_scope", "device_fields", "expression", "functions")

    def __init__(
        self, expression: str, fn: _Fn, private_scope: bool, functions: frozenset[str], fields: frozenset[str]
    ) -> None:
        self.expression = expression
        self._fn = fn
        self._private_scope = private_scope
        self.functions = functions  # every function, method and macro called
        self.device_fields = fields  # the fields selected on ``device``

    def matches(self, device: DeviceView) -> bool:
        """True or False for the device; SelectorError where the scheduler gets an error."""
        if device._error is not None:
            raise _selector_error(self.expression, f"device {device.name!r}: {device._error}")
        variables = dict(device._variables) if self._private_scope else device._variables
        frame = _Frame(variables, MAX_COST)
        try:
            result = self._fn(frame)
        except _EvalError as error:
            raise _selector_error(self.expression, f"device {device.name!r}: {error}") from None
        except _CostExceeded:
            raise _selector_error(
                self.expression, f"device {device.name!r}: operation cancelled: actual cost limit exceeded"
            ) from None
        except RecursionError:
            raise _selector_error(self.expression, "expression nested too deeply to evaluate") from None
        except (ArithmeticError, LookupError, TypeError, ValueError) as error:  # not foreseen here
            raise _selector_error(
                self.expression, f"device {device.name!r}: evaluation failed: {type(error).__name__}: {error}"
            ) from error
        if frame.cost > MAX_COST:
            raise _selector_error(
                self.expression, f"device {device.name!r}: operation cancelled: actual cost limit exceeded"
            )
        if type(result) is not bool:
            raise _selector_error(
                self.expression, f"device {device.name!r}: the result is {_type_name(result)}, not bool"
            )
        return result

    def __repr__(self) -> str:
        return f"CompiledSelector({_shown(self.expression)!r})"


class SelectorEngine:
    """Compiles DRA selectors once per expression text, for one feature set."""

    def __init__(self, *, consumable_capacity: bool = True) -> None:
        self.consumable_capacity = consumable_capacity
        self._cache: dict[str, CompiledSelector | str] = {}  # a compile error is kept as its message
        self._lock = threading.Lock()

    def compile(self, expression: str) -> CompiledSelector:
        """The compiled selector (the same object for the same text); SelectorError if it does not compile."""
        with self._lock:
            cached = self._cache.get(expression)
        if cached is None:
            cached = self._compile(expression)
            with self._lock:
                cached = self._cache.setdefault(expression, cached)
                if len(self._cache) > CACHE_SIZE:
                    del self._cache[next(iter(self._cache))]
        if isinstance(cached, str):
            raise SelectorError(cached)
        return cached

    def _compile(self, expression: str) -> CompiledSelector | str:
        try:
            return self._compiled(expression)
        except SelectorError as error:
            return str(error)

    def _compiled(self, expression: str) -> CompiledSelector:
        size = len(expression.encode())
        if not expression.strip():
            raise _selector_error(expression, "the expression is empty")
        if size > MAX_EXPRESSION_BYTES:
            raise _selector_error(
                expression, f"{size} bytes, longer than the limit of {MAX_EXPRESSION_BYTES}"
            )
        try:
            tree = CELParser().parse(expression)
        except CELParseError as error:
            where = f"line {error.line}, column {error.column}" if error.line else "the end"
            raise _selector_error(expression, f"syntax error at {where}") from None
        except lark.exceptions.LarkError as error:
            raise _selector_error(expression, f"syntax error: {type(error).__name__}") from None
        compiler = _Compiler(self.consumable_capacity)
        try:
            root = compiler.compile(tree)
        except _CompileError as error:
            raise _selector_error(expression, f"compilation failed: {error}") from None
        except RecursionError:
            raise _selector_error(
                expression, "compilation failed: the expression is nested too deeply"
            ) from None
        if root.type not in (DYN, "bool"):
            raise _selector_error(
                expression, f"compilation failed: must evaluate to bool, not {_type_text(root.type)}"
            )
        return CompiledSelector(
            expression,
            root.fn,
            compiler.binds_variables,
            frozenset(compiler.functions),
            frozenset(compiler.selected_fields),
        )
