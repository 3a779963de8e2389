# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""CEL engines for DRA device selectors: compile time and time per evaluation, p50.

Five typical selectors run over the 208 devices of 8 H100 cards (Physical + 25 MIG offers each).
An evaluation is one expression on one device whose CEL view was built beforehand (once per
device, as the allocator does). Engines that are not installed are skipped; only cel-python (and so
``dra_cel``) is a dependency of the module.

Measured on the development machine (2 cores, CPython 3.12.1) with all four installed, p50 of one
evaluation / of one compile, in microseconds:

==============================  ===============  ===============  ===============  ===============
selector                        dra_cel (ours)   celpy interp.    cel-expr-python  cel (Rust)
==============================  ===============  ===============  ===============  ===============
driver ==                       0.63 / 192       194 / 146        3.0 / 33         0.32 / 13
attribute string ==             0.91 / 304       244 / 241        2.1 / 71         5.2 / 23
capacity compareTo(quantity())  3.0 / 521        647 / 812        21 / 87          30 / 45
model in [...] && type ==       1.9 / 749        617 / 650        3.9 / 125        8.5 / 68
has(attribute)                  0.85 / 308       366 / 316        2.4 / 47         3.7 / 23
==============================  ===============  ===============  ===============  ===============

Compiling is cel-python's LALR parse for dra_cel (once per expression text: the engine caches);
cel-expr-python and the Rust binding build their devices' activations/contexts beforehand here
(converting a device costs them 15-60 us more each time it is done). ``make bench`` prints the
current figures of the engines installed (in the module's venv: dra_cel and celpy).

Why the module evaluates with its own closures over cel-python's parser (k8s_semantics/cel):

- cel-python's interpreter is exact enough (tests/module/test_deviceclass_examples.py ran on it)
  but takes 0.2-0.9 ms per evaluation: a claim's request against a few hundred devices costs
  tenths of a second per expression.
- cel-expr-python 0.1.3 (Google's cel-cpp): fast with a prepared activation, but it converts every
  Python map eagerly and refuses dict subclasses, so ``device.attributes[d]`` of an unknown domain
  cannot yield an empty map; custom types declared with ``Type.AbstractType`` fail at evaluation
  ("Unimplemented type"), so Quantity and Semver would have to be maps or protobuf messages (no
  ``==`` by value, no refusal of ``<``); no runtime cost limit; the wheel also installs a stray
  ``bazel-project`` tree into site-packages. Measured here with Quantity as a ``{n, d}`` map.
- common-expression-language 0.10.0 (Rust cel-interpreter): fast once a device's context is built,
  but values are converted into it eagerly (no map default for unknown domains), there are no
  opaque values (a function returning a Python object fails: Quantity as a map again), ``1 == 1u``
  is true, and there is no cost limit.
- cel-bind 0.8.4 (another cel-cpp binding): variables can only be declared as scalars, lists or
  messages, not maps, so ``device.attributes[...]`` cannot be expressed; not measured. It also
  installs a top-level ``cel`` package that clashes with common-expression-language.
"""

from __future__ import annotations

import importlib
import statistics
import time
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from benchmarks.common import line
from deckhouse_gpu.domain.offers.card_offers import card_offers
from deckhouse_gpu.domain.offers.model import OfferPolicy
from deckhouse_gpu.domain.offers.slice_layout import render
from deckhouse_gpu.k8s_semantics.apimachinery.quantity import Quantity
from deckhouse_gpu.k8s_semantics.cel import SelectorEngine, device_view
from testkit.gpu_objects import node_cards

DRIVER = "gpu.deckhouse.io"
_A = f'device.attributes["{DRIVER}"]'
SELECTORS = {
    "driver ==": f'device.driver == "{DRIVER}"',
    "attribute string ==": f'{_A}.deviceType == "MIG"',
    "capacity compareTo(quantity())": f'device.capacity["{DRIVER}"].memory.compareTo(quantity("10Gi")) >= 0',
    "model in [...] && type ==": f'{_A}.device in ["a30-pcie", "h100-sxm5-80gb"] && {_A}.deviceType == "MIG"',
    "has(attribute)": f"has({_A}.migProfile)",
}
COMPILES = 20
ROUNDS = 5

# An engine: (name, compile(expression) -> program, views(devices) -> list, evaluate(program, view))
Engine = tuple[
    str, Callable[[str], Any], Callable[[list[dict[str, Any]]], list[Any]], Callable[[Any, Any], Any]
]


def devices() -> list[dict[str, Any]]:
    cards = node_cards("bench", "h100-80gb", 8)
    slices = render("bench", [card_offers(card, OfferPolicy()) for card in cards], 35, 1, None)
    return [device for piece in slices for device in piece["spec"].get("devices") or []]


def _dra_cel() -> Engine:
    def views(found: list[dict[str, Any]]) -> list[Any]:
        return [device_view(DRIVER, device) for device in found]

    return (
        "dra_cel",
        lambda expression: SelectorEngine().compile(expression),
        views,
        lambda program, view: program.matches(view),
    )


def _split(devices_: list[dict[str, Any]], quantity: Callable[[str], Any]) -> list[dict[str, Any]]:
    """Plain nested maps of each device for the engines that take Python dicts."""
    found = []
    for device in devices_:
        attributes: dict[str, dict[str, Any]] = {}
        for key, value in device.get("attributes", {}).items():
            domain, slash, name = key.partition("/")
            domain, name = (domain, name) if slash else (DRIVER, key)
            attributes.setdefault(domain, {})[name] = next(iter(value.values()))
        capacity: dict[str, dict[str, Any]] = {}
        for key, entry in device.get("capacity", {}).items():
            domain, slash, name = key.partition("/")
            domain, name = (domain, name) if slash else (DRIVER, key)
            capacity.setdefault(domain, {})[name] = quantity(entry["value"])
        found.append({"driver": DRIVER, "attributes": attributes, "capacity": capacity})
    return found


def _fraction_map(text: str) -> dict[str, int]:
    value = Quantity.parse(text).value
    return {"n": value.numerator, "d": value.denominator}


def _compare_maps(left: dict[str, int], right: dict[str, int]) -> int:
    a, b = Fraction(left["n"], left["d"]), Fraction(right["n"], right["d"])
    return (a > b) - (a < b)


def _celpy() -> Engine | None:
    try:
        import celpy  # noqa: PLC0415 - optional
        from celpy import celtypes  # noqa: PLC0415
    except ImportError:
        return None

    class DomainMap(celtypes.MapType):
        def __missing__(self, key: Any) -> celtypes.MapType:
            return celtypes.MapType()

    def compare_to(left: Any, right: Any) -> Any:
        return celtypes.IntType(left.compare(right))

    functions: dict[str, Any] = {"quantity": lambda text: Quantity.parse(str(text)), "compareTo": compare_to}
    environment = celpy.Environment()

    def compile_(expression: str) -> Any:
        return environment.program(environment.compile(expression), functions=functions)

    def cel_value(value: Any) -> Any:
        if isinstance(value, dict):
            return celtypes.MapType({celtypes.StringType(k): cel_value(v) for k, v in value.items()})
        if isinstance(value, bool):
            return celtypes.BoolType(value)
        if isinstance(value, int):
            return celtypes.IntType(value)
        return celtypes.StringType(value) if isinstance(value, str) else value

    def views(found: list[dict[str, Any]]) -> list[Any]:
        result = []
        for device in _split(found, Quantity.parse):
            view = cel_value({"driver": device["driver"]})
            for field in ("attributes", "capacity"):
                view[celtypes.StringType(field)] = DomainMap(
                    {celtypes.StringType(d): cel_value(m) for d, m in device[field].items()}
                )
            result.append({"device": view})
        return result

    return "celpy interpreted", compile_, views, lambda program, view: program.evaluate(view)


def _cel_expr_python() -> Engine | None:
    try:
        cel = importlib.import_module("cel_expr_python.cel")
    except ImportError:
        return None
    kind = cel.Type
    quantity_type = kind.Map(kind.STRING, kind.INT)
    declarations = [
        cel.FunctionDecl(
            "quantity",
            [cel.Overload("quantity_string", quantity_type, [kind.STRING], impl=_fraction_map)],
        ),
        cel.FunctionDecl(
            "compareTo",
            [cel.Overload("q_compare", kind.INT, [quantity_type, quantity_type], True, _compare_maps)],
        ),
    ]
    environment = cel.NewEnv(variables={"device": kind.Map(kind.STRING, kind.DYN)}, functions=declarations)

    def views(found: list[dict[str, Any]]) -> list[Any]:
        return [environment.Activation({"device": device}) for device in _split(found, _fraction_map)]

    return "cel-expr-python", environment.compile, views, lambda program, view: program.eval(view)


def _rust_cel() -> Engine | None:
    try:
        cel = importlib.import_module("cel")
    except ImportError:
        return None
    if not hasattr(cel, "Context"):
        return None  # another distribution's "cel" package

    def views(found: list[dict[str, Any]]) -> list[Any]:
        contexts = []
        for device in _split(found, _fraction_map):
            context = cel.Context(functions={"quantity": _fraction_map, "compareTo": _compare_maps})
            context.add_variable("device", device)
            contexts.append(context)
        return contexts

    return "cel (Rust)", cel.compile, views, lambda program, view: program.execute(view)


def _p50_us(action: Callable[[], object], runs: int, per: int = 1) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        samples.append((time.perf_counter() - started) * 1e6 / per)
    return statistics.median(samples)


def run() -> None:
    found = devices()
    print(f"DRA selectors (CEL): compile, and one evaluation p50 over {len(found)} devices")
    for engine in (_dra_cel(), _celpy(), _cel_expr_python(), _rust_cel()):
        if engine is not None:
            _measure(engine, found)


def _measure(engine: Engine, found: list[dict[str, Any]]) -> None:
    name, compile_, make_views, evaluate = engine
    views = make_views(found)
    rounds = 3 if name.startswith("celpy") else ROUNDS  # 0.2-0.9 ms an evaluation
    for label, expression in SELECTORS.items():
        program = compile_(expression)

        def all_devices(program: Any = program) -> None:
            for view in views:
                evaluate(program, view)

        def compile_once(expression: str = expression) -> None:
            compile_(expression)

        compile_us = _p50_us(compile_once, COMPILES)
        evaluate_us = _p50_us(all_devices, rounds, len(views))
        line(f"{name}: {label}", evaluate_us, f"us per evaluation, compile {compile_us:6.0f} us", 2)


if __name__ == "__main__":
    run()
