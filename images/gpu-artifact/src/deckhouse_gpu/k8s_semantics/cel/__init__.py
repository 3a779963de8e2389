# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""DRA device selectors (``cel.expression``) evaluated the way the Kubernetes scheduler does.

``compiler`` parses an expression with cel-python's CEL grammar and compiles it into Python
closures, once per text (``engine`` caches them); ``device_view`` turns a ResourceSlice device into
the ``device`` variable once, and every compiled selector runs against it. Evaluating through
cel-python's own interpreter costs 0.2-0.9 ms per expression and device, the closures 0.6-3 us; the
faster libraries measured (benchmarks/cel_engines.py) cannot model this environment.

CEL semantics implemented: literals (int, uint, double, string, bytes, bool, null, lists, maps);
``! - * / % + - < <= > >= == != in && || ?:`` with int64/uint64 overflow errors, truncating division,
heterogeneous equality (``1 == 1.0``; a value of another type is unequal, but a Quantity or Semver
on the left compared with another type is an error), cross-type numeric ordering (an integer meets a
double through cel-go's rounding conversion, ``operators``; NaN cannot be ordered); error absorption
by ``&&``, ``||``, ``all`` and ``exists``; field selection, indexing, ``has()``; the macros
``all exists exists_one map filter`` (and two-variable ``all exists existsOne transformList
transformMap``), ``cel.bind``; the functions ``size int uint double string bool bytes dyn type
matches contains startsWith endsWith``; Kubernetes' strings, regex, lists, sets, Quantity and Semver
libraries (``strings_library``, ``lists_library``, ``kubernetes_library``). The result must be a
bool, otherwise an error; every error fails the evaluation. Type checking is partial
(``typecheck``: it does not refuse list and map literals of mixed element types, which Kubernetes'
homogeneous-literal check does) and the runtime cost is modelled on cel-go's (``costs``). The CEL
specification's conformance cases run through ``engine.compile_value``
(tests/k8s_semantics/cel/test_conformance.py).

Not implemented, so refused at compile time rather than evaluated differently: timestamps and
durations, optional types (``?.``, ``optional.of``), the URL, IP, CIDR, format and authz libraries,
``ext.Lists`` v3, ``strings.quote``, ``format``, message construction.
"""

from deckhouse_gpu.k8s_semantics.cel.device_view import DeviceView, device_view
from deckhouse_gpu.k8s_semantics.cel.engine import (
    CACHE_SIZE,
    MAX_COST,
    MAX_EXPRESSION_BYTES,
    CompiledSelector,
    SelectorEngine,
)
from deckhouse_gpu.k8s_semantics.cel.errors import SelectorError
from deckhouse_gpu.k8s_semantics.cel.library.semver import Semver

__all__ = [
    "CACHE_SIZE",
    "MAX_COST",
    "MAX_EXPRESSION_BYTES",
    "CompiledSelector",
    "DeviceView",
    "SelectorEngine",
    "SelectorError",
    "Semver",
    "device_view",
]
