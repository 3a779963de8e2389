# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""One HTTP/2 connection of the kubelet: a reader thread turns frames into calls, workers answer.

The ``h2`` state machine is not thread-safe, so every use of it (and every write to the socket,
which keeps frames in order) happens under one condition; a worker whose answer does not fit the
peer's flow-control window waits on it until the reader sees a WINDOW_UPDATE.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.errors import ErrorCodes
from h2.events import (
    ConnectionTerminated,
    DataReceived,
    Event,
    RequestReceived,
    StreamEnded,
    StreamReset,
)
from h2.exceptions import H2Error, NoSuchStreamError, ProtocolError, StreamClosedError
from h2.settings import SettingCodes, Settings

from deckhouse_gpu.adapters.unix_grpc.call import CallContext, Method
from deckhouse_gpu.adapters.unix_grpc.wire import (
    MAX_MESSAGE_BYTES,
    PREFIX,
    RpcError,
    Status,
    check_request,
    frame,
    response_headers,
    trailers,
    trailers_only,
    unframe,
)

log = logging.getLogger(__name__)

READ_BYTES = 65536
# Calls open at once on one connection (said in our SETTINGS; grpc-go queues the rest): with the
# request limit this bounds what one connection can make the handler hold.
MAX_STREAMS = 32


# h2 remembers up to 65,536 closed streams per connection, to take frames that arrive late for
# them: about 9 MiB on the kubelet's long-lived connection, a call per stream. Late frames come
# right after a close; a few hundred is plenty.
CLOSED_STREAMS_KEPT = 512


class _Http2(H2Connection):
    MAX_CLOSED_STREAMS = CLOSED_STREAMS_KEPT


class Gone(Exception):
    """The caller is no longer there: the stream was reset or the connection closed."""


@dataclass
class _Call:
    stream_id: int
    path: str
    method: Method | None  # None: answered already (an error), what still arrives is dropped
    context: CallContext = field(default_factory=CallContext)
    body: bytearray = field(default_factory=bytearray)
    headers_sent: bool = False
    request_ended: bool = False


class Connection:
    def __init__(
        self, sock: socket.socket, methods: Mapping[str, Method], submit: Callable[[Callable[[], None]], bool]
    ) -> None:
        self._sock = sock
        self._methods = methods
        self._submit = submit
        self._h2 = _Http2(H2Configuration(client_side=False, header_encoding="utf-8"))
        self._h2.local_settings = Settings(
            client=False, initial_values={SettingCodes.MAX_CONCURRENT_STREAMS: MAX_STREAMS}
        )
        self._cond = threading.Condition()
        self._calls: dict[int, _Call] = {}
        self._reset: list[CallContext] = []  # calls the caller reset, ended outside the condition
        self._closed = False

    # The reader thread.

    def serve(self) -> None:
        try:
            with self._cond:
                self._h2.initiate_connection()
                self._flush()
            while not self._closed:
                data = self._sock.recv(READ_BYTES)
                if not data:
                    break
                with self._cond:
                    for event in self._h2.receive_data(data):
                        self._on_event(event)
                    self._flush()
                    self._cond.notify_all()  # window updates and resets wake waiting writers
                    reset, self._reset = self._reset, []
                for context in reset:  # their callbacks (a health subscription's close) run unlocked
                    context.end()
        except ProtocolError as error:
            log.warning("kubelet connection broke the HTTP/2 protocol", extra={"error": str(error)})
            with self._cond, contextlib.suppress(OSError, Gone, H2Error):
                self._h2.close_connection(error_code=ErrorCodes.PROTOCOL_ERROR)
                self._flush()
        except (OSError, Gone) as error:
            if not self._closed:
                log.debug("kubelet connection lost", extra={"error": str(error)})
        finally:
            self._end_all()
            self._sock.close()

    def _on_event(self, event: Event) -> None:
        if isinstance(event, RequestReceived):
            self._on_request(event.stream_id, dict(event.headers or ()))  # type: ignore[arg-type]
        elif isinstance(event, DataReceived):
            self._on_data(event)
        elif isinstance(event, StreamEnded):
            self._on_request_end(event.stream_id)
        elif isinstance(event, StreamReset):
            gone = self._calls.pop(event.stream_id, None)
            if gone is not None:
                self._reset.append(gone.context)
        elif isinstance(event, ConnectionTerminated):
            self._closed = True

    def _on_request(self, stream_id: int, headers: dict[str, str]) -> None:
        path = headers.get(":path", "")
        refused = check_request(headers)
        method = self._methods.get(path)
        if refused is None and method is None:
            refused = 200, RpcError(Status.UNIMPLEMENTED, f"unknown method {path}")
        call = _Call(stream_id, path, method if refused is None else None)
        self._calls[stream_id] = call
        if refused is not None:
            http_status, error = refused
            self._answer(call, trailers_only(error.status, error.message, http_status))

    def _on_data(self, event: DataReceived) -> None:
        with contextlib.suppress(StreamClosedError):
            self._h2.acknowledge_received_data(event.flow_controlled_length or 0, event.stream_id)
        call = self._calls.get(event.stream_id or 0)
        if call is None or call.method is None:
            return
        call.body += event.data or b""
        if len(call.body) > PREFIX + MAX_MESSAGE_BYTES:
            call.method = None
            call.body = bytearray()
            limit = f"the request is larger than {MAX_MESSAGE_BYTES} bytes"
            self._answer(call, trailers_only(Status.RESOURCE_EXHAUSTED, limit))

    def _on_request_end(self, stream_id: int | None) -> None:
        call = self._calls.get(stream_id or 0)
        if call is None or call.method is None:
            return
        call.request_ended = True
        if not self._submit(lambda: self._run(call)):
            self._answer(call, trailers_only(Status.UNAVAILABLE, "the plugin is stopping"))

    # Worker threads.

    def _run(self, call: _Call) -> None:
        method = call.method
        assert method is not None
        items: Iterator[object] | None = None
        try:
            request = method.decode(unframe(bytes(call.body)))
            call.body = bytearray()
            if method.unary is not None:
                self._send(call, method.encode(method.unary(request, call.context)))
            else:
                assert method.stream is not None
                items = method.stream(request, call.context)
                for item in items:
                    self._send(call, method.encode(item))
            self._finish(call, Status.OK, "")
        except Gone:
            pass
        except RpcError as error:
            self._finish(call, error.status, error.message)
        except Exception as error:
            log.exception("a kubelet call failed", extra={"method": call.path})
            self._finish(call, Status.UNKNOWN, f"{type(error).__name__}: {error}")
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()  # a stream the caller left: its generator's cleanup runs now
            call.context.end()

    def _send(self, call: _Call, payload: bytes) -> None:
        data = memoryview(frame(payload))
        with self._cond:
            if not call.headers_sent:
                self._use(call, self._h2.send_headers, call.stream_id, response_headers())
                call.headers_sent = True
            while data:
                window = self._wait_for_window(call)
                size = min(window, self._h2.max_outbound_frame_size, len(data))
                chunk = data[:size].tobytes()
                self._use(call, self._h2.send_data, call.stream_id, chunk)
                data = data[size:]

    def _wait_for_window(self, call: _Call) -> int:
        while True:
            if not self._live(call):
                raise Gone
            window: int = self._use(call, self._h2.local_flow_control_window, call.stream_id)
            if window > 0:
                return window
            self._cond.wait()

    def _finish(self, call: _Call, status: Status, message: str) -> None:
        with self._cond:
            if not self._live(call):
                return
            if call.headers_sent:
                self._answer(call, trailers(status, message))
            else:
                self._answer(call, trailers_only(status, message))

    # Under the condition.

    def _live(self, call: _Call) -> bool:
        return not self._closed and self._calls.get(call.stream_id) is call

    def _answer(self, call: _Call, headers: list[tuple[str, str]]) -> None:
        """Ends our side of the call's stream with ``headers``; a caller still sending is told to
        stop (RST_STREAM NO_ERROR, as the gRPC protocol asks of an early answer)."""
        with contextlib.suppress(Gone):
            self._use(call, self._h2.send_headers, call.stream_id, headers, True)
            if not call.request_ended:
                self._use(call, self._h2.reset_stream, call.stream_id, ErrorCodes.NO_ERROR)
        self._calls.pop(call.stream_id, None)

    def _use(self, call: _Call, action: Callable[..., Any], *args: object) -> Any:
        """An h2 action on the call's stream, and its frames written; Gone if the stream is."""
        try:
            result = action(*args)
        except (StreamClosedError, NoSuchStreamError) as error:
            self._calls.pop(call.stream_id, None)
            raise Gone from error
        self._flush()
        return result

    def _flush(self) -> None:
        out = self._h2.data_to_send()
        if not out:
            return
        try:
            self._sock.sendall(out)
        except OSError as error:
            self._closed = True
            self._cond.notify_all()
            raise Gone from error

    # Any thread.

    def close(self) -> None:
        """Tells the kubelet (GOAWAY), ends every call and wakes the reader, which closes the socket."""
        with self._cond:
            if not self._closed:
                with contextlib.suppress(Gone, H2Error):
                    self._h2.close_connection()
                    self._flush()
            self._closed = True
            self._cond.notify_all()
        self._end_all()
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)

    def _end_all(self) -> None:
        with self._cond:
            self._closed = True
            calls = list(self._calls.values())
            self._calls.clear()
            self._cond.notify_all()
        for call in calls:
            call.context.end()
