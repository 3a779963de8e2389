# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The comprehension macros at runtime (``all exists exists_one map filter``, the two-variable
``all exists existsOne transformList transformMap``): variables bound per step, the per-iteration
cost checked against the limit after every step, and errors absorbed by ``all`` and ``exists``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Final

from deckhouse_gpu.k8s_semantics.cel.compiler.costs import ITERATION_COST
from deckhouse_gpu.k8s_semantics.cel.errors import CostExceeded, EvalError
from deckhouse_gpu.k8s_semantics.cel.nodes import UNSET, Fn, Frame
from deckhouse_gpu.k8s_semantics.cel.selection import range_items, range_pairs
from deckhouse_gpu.k8s_semantics.cel.values import map_key, no_overload


def restore_variable(variables: dict[str, Any], name: str, saved: Any) -> None:
    if saved is UNSET:
        variables.pop(name, None)
    else:
        variables[name] = saved


_Loop = Callable[[Frame, list[Fn], Iterator[Any]], Any]


def _check_cost(fr: Frame) -> None:
    if fr.cost > fr.limit:
        raise CostExceeded


def decide(fr: Frame, fns: Iterable[Fn], decisive: bool, name: str) -> Any:
    """CEL's error-absorbing logic, shared by ``||``/``&&`` and ``exists``/``all``: the first
    ``decisive`` value wins even after an error on another operand or element; otherwise the first
    error (or a non-bool) is raised, and with none the result is ``not decisive``."""
    error: EvalError | None = None
    for fn in fns:
        try:
            value = fn(fr)
        except EvalError as raised:
            error = error or raised
            continue
        if value is decisive:
            return decisive
        if value is not (not decisive):
            error = error or no_overload(name, value)
    if error is not None:
        raise error
    return not decisive


def _loop_all(fr: Frame, bodies: list[Fn], steps: Iterator[Any]) -> Any:
    (predicate,) = bodies
    return decide(fr, (predicate for _ in steps), False, "all")


def _loop_exists(fr: Frame, bodies: list[Fn], steps: Iterator[Any]) -> Any:
    (predicate,) = bodies
    return decide(fr, (predicate for _ in steps), True, "exists")


def _loop_exists_one(fr: Frame, bodies: list[Fn], steps: Iterator[Any]) -> Any:
    (predicate,) = bodies
    found = 0
    for _ in steps:
        value = predicate(fr)
        if type(value) is not bool:
            raise no_overload("exists_one", value)
        found += value
    return found == 1


def _loop_map(fr: Frame, bodies: list[Fn], steps: Iterator[Any]) -> Any:
    *condition, transform = bodies
    result = []
    for _ in steps:
        if condition:
            keep = condition[0](fr)
            if type(keep) is not bool:
                raise no_overload("map", keep)
            if not keep:
                continue
        result.append(transform(fr))
    return result


def _loop_filter(fr: Frame, bodies: list[Fn], steps: Iterator[Any]) -> Any:
    (predicate,) = bodies
    result = []
    for item in steps:
        keep = predicate(fr)
        if type(keep) is not bool:
            raise no_overload("filter", keep)
        if keep:
            result.append(item)
    return result


def _loop_transform_map(fr: Frame, bodies: list[Fn], steps: Iterator[Any]) -> Any:
    *condition, transform = bodies
    result: dict[Any, Any] = {}
    for key in steps:
        if condition:
            keep = condition[0](fr)
            if type(keep) is not bool:
                raise no_overload("transformMap", keep)
            if not keep:
                continue
        result[map_key(key)] = transform(fr)
    return result


LOOPS: Final[dict[str, _Loop]] = {
    "all": _loop_all,
    "exists": _loop_exists,
    "exists_one": _loop_exists_one,
    "existsOne": _loop_exists_one,
    "map": _loop_map,
    "filter": _loop_filter,
    "transformList": _loop_map,
    "transformMap": _loop_transform_map,
}


def comprehension_fn(
    macro: str, target: Fn, names: list[str], bodies: list[Fn], loop: _Loop, two: bool
) -> Fn:
    step_cost = ITERATION_COST[macro]

    def comprehension(fr: Frame) -> Any:
        source = target(fr)
        items: Iterable[Any] = range_pairs(macro, source) if two else range_items(macro, source)
        variables = fr.vars
        saved = [variables.get(n, UNSET) for n in names]

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
                restore_variable(variables, name, value)

    return comprehension
