# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""One call as its handler sees it, and the methods a server offers."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, NoReturn

from deckhouse_gpu.adapters.unix_grpc.wire import RpcError, Status

log = logging.getLogger(__name__)


class CallContext:
    """Whether the caller still waits, and what to run when the call ends, however it ends."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ended = False
        self._callbacks: list[Callable[[], None]] = []

    def is_active(self) -> bool:
        with self._lock:
            return not self._ended

    def add_callback(self, callback: Callable[[], None]) -> None:
        """Runs ``callback`` when the call ends (at once if it has ended already)."""
        with self._lock:
            if not self._ended:
                self._callbacks.append(callback)
                return
        _run(callback)

    def abort(self, status: Status, message: str) -> NoReturn:
        raise RpcError(status, message)

    def end(self) -> None:
        """The call is over: answered, or the caller hung up, or the server stops."""
        with self._lock:
            if self._ended:
                return
            self._ended = True
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            _run(callback)


def _run(callback: Callable[[], None]) -> None:
    try:
        callback()
    except Exception:
        log.exception("a call's end callback failed")


@dataclass(frozen=True)
class Method:
    """A method of a service: how its messages are read and written, and its handler."""

    decode: Callable[[bytes], Any]
    encode: Callable[[Any], bytes]
    unary: Callable[[Any, CallContext], Any] | None = None
    stream: Callable[[Any, CallContext], Iterator[Any]] | None = None


def unary(
    handler: Callable[[Any, CallContext], Any], decode: Callable[[bytes], Any], encode: Callable[[Any], bytes]
) -> Method:
    return Method(decode, encode, unary=handler)


def server_stream(
    handler: Callable[[Any, CallContext], Iterator[Any]],
    decode: Callable[[bytes], Any],
    encode: Callable[[Any], bytes],
) -> Method:
    return Method(decode, encode, stream=handler)
