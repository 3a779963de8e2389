# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Imports only the parts of the ``kubernetes`` client the adapter uses.

``import kubernetes`` runs package initialisers that load every API class and every one of the
~800 models: about 20 MiB per process that a node agent on every node does not need (it works
with raw JSON). Here the packages are registered without their initialisers, and models load
one by one, on first use. The pydantic response wrapper, never built because the adapter reads
raw bodies, is replaced by a plain class (its schema alone costs ~4 MiB). Nothing changes when
the full package was imported already.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
import types
from pathlib import Path
from typing import Any, TypeVar

_MODEL_LINE = re.compile(r"^from kubernetes\.client\.models\.(\w+) import (\w+)$")


def _package(name: str, path: Path) -> types.ModuleType:
    """A package whose real initialiser runs only if someone asks for a name it would define."""
    module = types.ModuleType(name)
    module.__path__ = [str(path)]
    module.__package__ = name
    module.__file__ = str(path / "__init__.py")
    sys.modules[name] = module
    initialised = False

    def complete(attribute: str) -> Any:
        nonlocal initialised
        # `from package import submodule` asks the package first: hand out the submodule alone.
        if (path / f"{attribute}.py").is_file() or (path / attribute / "__init__.py").is_file():
            return importlib.import_module(f"{name}.{attribute}")
        if not initialised:
            source = (path / "__init__.py").read_text()
            exec(compile(source, module.__file__ or name, "exec"), module.__dict__)  # noqa: S102
            initialised = True
        if attribute in module.__dict__:
            return module.__dict__[attribute]
        hook = module.__dict__.get("__getattr__")
        if hook is not None and hook is not complete:  # the initialiser brought its own lazy loader
            return hook(attribute)
        raise AttributeError(f"module {name!r} has no attribute {attribute!r}")

    module.__getattr__ = complete  # type: ignore[method-assign]  # PEP 562 module attribute hook
    return module


def _lazy_models(path: Path) -> types.ModuleType:
    index: dict[str, str] = {}
    for line in (path / "__init__.py").read_text().splitlines():
        match = _MODEL_LINE.match(line.strip())
        if match:
            index[match.group(2)] = match.group(1)
    models = _package("kubernetes.client.models", path)

    def load(name: str) -> Any:
        if name not in index:
            raise AttributeError(f"module 'kubernetes.client.models' has no attribute {name!r}")
        value = getattr(importlib.import_module(f"kubernetes.client.models.{index[name]}"), name)
        setattr(models, name, value)
        return value

    models.__getattr__ = load  # type: ignore[method-assign]  # PEP 562 module attribute hook
    return models


class _Response[T]:
    """Stands in for kubernetes.client.api_response.ApiResponse (same fields, no validation)."""

    def __init__(self, **fields: Any) -> None:
        self.status_code: int = fields.get("status_code", 0)
        self.headers: Any = fields.get("headers")
        self.data: T | None = fields.get("data")
        self.raw_data: bytes = fields.get("raw_data", b"")


def _plain_response_module() -> types.ModuleType:
    module = types.ModuleType("kubernetes.client.api_response")
    module.ApiResponse = _Response  # type: ignore[attr-defined]
    module.T = TypeVar("T")  # type: ignore[attr-defined]
    sys.modules[module.__name__] = module
    return module


def install() -> None:
    """Registers light ``kubernetes``, ``kubernetes.client`` and ``kubernetes.config`` packages."""
    if "kubernetes" in sys.modules:
        return
    spec = importlib.util.find_spec("kubernetes")
    if spec is None or spec.origin is None:
        raise ImportError("the kubernetes client package is not installed")
    root = Path(spec.origin).parent
    kubernetes = _package("kubernetes", root)
    client = _package("kubernetes.client", root / "client")
    config = _package("kubernetes.config", root / "config")
    _package("kubernetes.utils", root / "utils")  # rest.py needs retry/keepalive, not create_from_yaml
    kubernetes.client, kubernetes.config = client, config  # type: ignore[attr-defined]
    client.models = _lazy_models(root / "client" / "models")  # type: ignore[attr-defined]
    client.api_response = _plain_response_module()  # type: ignore[attr-defined]
    # What kubernetes.config and kubernetes.utils import from the package itself.
    from kubernetes.client.configuration import Configuration  # noqa: PLC0415

    client.Configuration = Configuration  # type: ignore[attr-defined]
    from kubernetes.client.api_client import ApiClient  # noqa: PLC0415

    client.ApiClient = ApiClient  # type: ignore[attr-defined]
