"""DRA device selectors evaluated the way Kubernetes evaluates them, for tests.

The expressions run on cel-python (``celpy``); this module adds what the Kubernetes DRA CEL
environment adds (shared/reference/k8s-dra-facts.md section 3):

- the ``device`` variable built from one device of a ResourceSlice: ``driver``, ``attributes``
  and ``capacity`` as maps of domain -> map of name (a key is split at its first ``/``; a key
  without a domain belongs to the driver's domain), and ``allowMultipleAllocations`` (absent
  reads as false; declared only when the DRAConsumableCapacity feature is on);
- an unknown domain reads as an empty map; an unknown name inside a domain is an evaluation
  error (guard with ``has()``), and so is a result that is not a bool;
- capacity values are quantities, with the Kubernetes quantity library: ``quantity()``,
  ``isQuantity()``, ``sign()``, and the methods ``compareTo``, ``isGreaterThan``,
  ``isLessThan``, ``add``, ``sub``, ``isInteger``, ``asInteger``, ``asApproximateFloat``;
  ``==`` compares values, and ``<``, ``>=``, ... on quantities are errors, as on a cluster.

Not modelled: the type checker (an expression the API server rejects at create, such as a map
compared with a string, fails here only when it is evaluated), cost estimation, the semver
library and ``version`` attributes (the driver publishes none).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import celpy
import lark
from celpy import celtypes
from celpy.celparser import CELParseError
from celpy.evaluation import CELEvalError, bool_eq, bool_ne

from deckhouse_gpu.domain.quantity import Quantity, QuantityError

MAX_EXPRESSION_BYTES = 10 * 1024  # CELSelectorExpressionMaxLength


class SelectorError(Exception):
    """An expression that does not compile, fails to evaluate, or does not yield a bool."""


class _DomainMap(celtypes.MapType):
    """``device.attributes`` / ``device.capacity``: an unknown domain is an empty map."""

    def __missing__(self, key: Any) -> celtypes.MapType:
        return celtypes.MapType()


def _quantity(value: Any) -> Quantity:
    if not isinstance(value, Quantity):
        raise TypeError(f"no such overload: expected a quantity, got {type(value).__name__}")
    return value


def _operand(value: Any) -> Quantity:
    """``add`` and ``sub`` take a quantity or an int."""
    if isinstance(value, celtypes.IntType):
        return Quantity.of(int(value))
    return _quantity(value)


def _parse(text: Any) -> Quantity:
    if not isinstance(text, celtypes.StringType):
        raise TypeError("no such overload: quantity() takes a string")
    try:
        return Quantity.parse(str(text))
    except QuantityError as error:
        raise ValueError(str(error)) from error


def _is_quantity(text: Any) -> celtypes.BoolType:
    try:
        _parse(text)
    except ValueError:
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _strict_eq(left: Any, right: Any) -> Any:
    """Quantities compare only with quantities (the type checker refuses the rest)."""
    if isinstance(left, Quantity) != isinstance(right, Quantity):
        raise TypeError(f"no such overload: {type(left).__name__} == {type(right).__name__}")
    if isinstance(left, Quantity):
        return celtypes.BoolType(left == right)
    return bool_eq(left, right)


def _strict_ne(left: Any, right: Any) -> Any:
    if isinstance(left, Quantity) or isinstance(right, Quantity):
        return celtypes.logical_not(_strict_eq(left, right))
    return bool_ne(left, right)


FUNCTIONS: dict[str, Any] = {
    "quantity": _parse,
    "isQuantity": _is_quantity,
    "sign": lambda q: celtypes.IntType(_quantity(q).sign()),
    "compareTo": lambda q, other: celtypes.IntType(_quantity(q).compare(_quantity(other))),
    "isGreaterThan": lambda q, other: celtypes.BoolType(_quantity(q).compare(_quantity(other)) > 0),
    "isLessThan": lambda q, other: celtypes.BoolType(_quantity(q).compare(_quantity(other)) < 0),
    "add": lambda q, other: Quantity.of(_quantity(q).value + _operand(other).value),
    "sub": lambda q, other: Quantity.of(_quantity(q).value - _operand(other).value),
    "isInteger": lambda q: celtypes.BoolType(_quantity(q).is_integer()),
    "asInteger": lambda q: celtypes.IntType(_quantity(q).as_integer()),
    "asApproximateFloat": lambda q: celtypes.DoubleType(float(_quantity(q).value)),
    "_==_": _strict_eq,
    "_!=_": _strict_ne,
}

_ENVIRONMENT = celpy.Environment()


def split_key(key: str, driver: str) -> tuple[str, str]:
    """An attribute or capacity key as (domain, name); no domain means the driver's."""
    domain, slash, name = key.partition("/")
    return (domain, name) if slash else (driver, key)


def _attribute(value: Mapping[str, Any]) -> celtypes.Value:
    kinds = [kind for kind in ("int", "bool", "string", "version") if kind in value]
    if len(kinds) != 1:
        raise SelectorError(f"an attribute has exactly one of int, bool, string, version: {value}")
    kind = kinds[0]
    if kind == "int":
        return celtypes.IntType(int(value["int"]))
    if kind == "bool":
        return celtypes.BoolType(bool(value["bool"]))
    if kind == "string":
        return celtypes.StringType(str(value["string"]))
    raise SelectorError("version attributes are not modelled (the driver publishes none)")


def device_view(device: Mapping[str, Any], driver: str, consumable_capacity: bool = True) -> celtypes.MapType:
    """The CEL ``device`` variable for one ResourceSlice device of ``driver``."""
    attributes: dict[str, celtypes.MapType] = {}
    for key, value in (device.get("attributes") or {}).items():
        domain, name = split_key(key, driver)
        attributes.setdefault(domain, celtypes.MapType())[celtypes.StringType(name)] = _attribute(value)
    capacity: dict[str, celtypes.MapType] = {}
    for key, entry in (device.get("capacity") or {}).items():
        domain, name = split_key(key, driver)
        amount = Quantity.parse(str(entry["value"]))
        capacity.setdefault(domain, celtypes.MapType())[celtypes.StringType(name)] = amount  # type: ignore[assignment]
    view: dict[celtypes.StringType, celtypes.Value] = {
        celtypes.StringType("driver"): celtypes.StringType(driver),
        celtypes.StringType("attributes"): _DomainMap(
            {celtypes.StringType(k): v for k, v in attributes.items()}
        ),
        celtypes.StringType("capacity"): _DomainMap({celtypes.StringType(k): v for k, v in capacity.items()}),
    }
    if consumable_capacity:
        shared = bool(device.get("allowMultipleAllocations"))
        view[celtypes.StringType("allowMultipleAllocations")] = celtypes.BoolType(shared)
    return celtypes.MapType(view)


class Selector:
    """One ``cel.expression`` of a DeviceClass or a request, compiled once."""

    def __init__(self, expression: str) -> None:
        self.expression = expression
        if len(expression.encode()) > MAX_EXPRESSION_BYTES:
            raise SelectorError(
                f"longer than {MAX_EXPRESSION_BYTES} bytes: the API server would not compile it"
            )
        try:
            self.tree = _ENVIRONMENT.compile(expression)
        except CELParseError as error:
            raise SelectorError(f"does not compile: {error}\n{expression}") from error
        self._program = _ENVIRONMENT.program(self.tree, functions=FUNCTIONS)

    def matches(self, device: celtypes.MapType) -> bool:
        """True or False for the device; raises SelectorError where the scheduler gets an error."""
        try:
            result = self._program.evaluate({"device": device})
        except CELEvalError as error:
            raise SelectorError(f"evaluation error {error.args}: {self.expression}") from error
        if not isinstance(result, celtypes.BoolType):
            raise SelectorError(f"the result {result!r} is not a bool: {self.expression}")
        return bool(result)

    def functions(self) -> set[str]:
        """Every function, method and macro the expression calls."""
        names = set()
        for node in _subtrees(self.tree):
            if node.data == "ident_arg":
                names.add(str(node.children[0]))
            elif node.data == "member_dot_arg":
                names.add(str(node.children[1]))
        return names

    def device_fields(self) -> set[str]:
        """The fields selected on the ``device`` variable (``device.driver`` -> ``driver``)."""
        fields = set()
        for node in _subtrees(self.tree):
            if node.data == "member_dot" and _identifier(node.children[0]) == "device":
                fields.add(str(node.children[1]))
        return fields


def _subtrees(tree: lark.Tree[Any]) -> Iterator[lark.Tree[Any]]:
    yield from tree.iter_subtrees()


def _identifier(node: Any) -> str | None:
    """The name of a plain identifier (``member -> primary -> ident``), else None."""
    while isinstance(node, lark.Tree):
        if node.data == "ident":
            return str(node.children[0])
        if len(node.children) != 1:
            return None
        node = node.children[0]
    return None


def selects(selectors: list[Selector], device: celtypes.MapType) -> bool:
    """All selectors must hold, as for a class's selectors together with a request's."""
    return all(selector.matches(device) for selector in selectors)
