# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The gRPC wire rules of the kubelet-facing server, and what it does with requests that are no
gRPC call or no HTTP/2 at all (a raw h2 client, since grpcio's never sends them)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.events import DataReceived, ResponseReceived, StreamEnded, TrailersReceived

from deckhouse_gpu.adapters.unix_grpc.call import CallContext, unary
from deckhouse_gpu.adapters.unix_grpc.connection import MAX_STREAMS
from deckhouse_gpu.adapters.unix_grpc.server import UnixGrpcServer
from deckhouse_gpu.adapters.unix_grpc.wire import RpcError, Status, frame, percent_encoded, unframe


def test_messages_are_length_prefixed_and_uncompressed():
    assert frame(b"abc") == b"\x00\x00\x00\x00\x03abc"
    assert unframe(frame(b"abc")) == b"abc"
    assert unframe(frame(b"")) == b""


@pytest.mark.parametrize(
    ("body", "status", "text"),
    [
        (b"", Status.INTERNAL, "not a whole message"),
        (b"\x01\x00\x00\x00\x01x", Status.UNIMPLEMENTED, "compressed"),
        (b"\x07\x00\x00\x00\x01x", Status.INTERNAL, "invalid message flag 7"),
        (frame(b"a") + frame(b"b"), Status.UNIMPLEMENTED, "exactly one message"),
        (b"\x00\x00\x00\x00\x09short", Status.UNIMPLEMENTED, "exactly one message"),
    ],
)
def test_a_request_body_that_is_not_one_message_is_an_error(body, status, text):
    with pytest.raises(RpcError) as raised:
        unframe(body)
    assert raised.value.status == status
    assert text in raised.value.message


def test_status_messages_are_percent_encoded_utf8():
    assert percent_encoded("plain text: ok") == "plain text: ok"
    assert percent_encoded("50%\n") == "50%25%0A"
    assert percent_encoded("ё") == "%D1%91"


class RawClient:
    """An HTTP/2 client that sends whatever a test asks, over the server's socket."""

    def __init__(self, path: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(5)
        self.sock.connect(path)
        self.h2 = H2Connection(H2Configuration(client_side=True, header_encoding="utf-8"))
        self.h2.initiate_connection()
        self.flush()

    def flush(self) -> None:
        self.sock.sendall(self.h2.data_to_send())

    def request(self, headers: list[tuple[str, str]], body: bytes) -> tuple[dict[str, str], bytes]:
        """Everything the server answers on one stream: its headers and trailers merged, and data."""
        stream = self.h2.get_next_available_stream_id()
        self.h2.send_headers(stream, headers)
        self.h2.send_data(stream, body, end_stream=True)
        self.flush()
        answer: dict[str, str] = {}
        data = b""
        while True:
            received = self.sock.recv(65536)
            assert received, "the server closed the connection"
            for event in self.h2.receive_data(received):
                if isinstance(event, ResponseReceived | TrailersReceived) and event.stream_id == stream:
                    answer.update(dict(event.headers or ()))  # type: ignore[arg-type]
                elif isinstance(event, DataReceived) and event.stream_id == stream:
                    data += event.data or b""
                elif isinstance(event, StreamEnded) and event.stream_id == stream:
                    return answer, data
            self.flush()


def grpc_headers(path: str, **changes: str) -> list[tuple[str, str]]:
    headers = {
        ":method": "POST",
        ":scheme": "http",
        ":path": path,
        ":authority": "localhost",
        "content-type": "application/grpc",
        "te": "trailers",
        **changes,
    }
    return list(headers.items())


@pytest.fixture
def server(tmp_path: Path) -> Iterator[UnixGrpcServer]:
    def echo(request: bytes, _context: CallContext) -> bytes:
        return request

    running = UnixGrpcServer(str(tmp_path / "raw.sock"), 2, "raw")
    running.add_service("test.Echo", {"Echo": unary(echo, bytes, bytes)})
    running.start()
    yield running
    running.stop(0)


def test_a_well_formed_call_gets_headers_one_message_and_ok_trailers(server):
    answer, data = RawClient(server.path).request(grpc_headers("/test.Echo/Echo"), frame(b"ping"))
    assert answer[":status"] == "200"
    assert answer["content-type"] == "application/grpc"
    assert answer["grpc-status"] == "0"
    assert unframe(data) == b"ping"


@pytest.mark.parametrize(
    ("changes", "http_status", "text"),
    [
        ({":method": "GET"}, "405", "is not POST"),
        ({"content-type": "application/json"}, "415", "is not gRPC"),
        ({"grpc-encoding": "gzip"}, "200", "grpc-encoding 'gzip'"),
    ],
)
def test_a_request_that_is_no_grpc_call_is_answered_with_a_status_only(server, changes, http_status, text):
    client = RawClient(server.path)
    answer, data = client.request(grpc_headers("/test.Echo/Echo", **changes), frame(b"x"))
    assert answer[":status"] == http_status
    assert answer["grpc-status"] == str(int(Status.UNIMPLEMENTED))
    assert text in answer["grpc-message"].replace("%27", "'")
    assert data == b""
    # The connection stays usable.
    assert client.request(grpc_headers("/test.Echo/Echo"), frame(b"ok"))[0]["grpc-status"] == "0"


def test_the_server_caps_the_calls_open_at_once_on_a_connection(server):
    client = RawClient(server.path)
    client.request(grpc_headers("/test.Echo/Echo"), frame(b"x"))  # the server's SETTINGS arrive first
    assert client.h2.remote_settings.max_concurrent_streams == MAX_STREAMS


def test_garbage_instead_of_http2_closes_only_that_connection(server):
    broken = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    broken.settimeout(5)
    broken.connect(server.path)
    broken.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    closed = b""
    while chunk := broken.recv(65536):  # the server says GOAWAY (if anything) and closes
        closed += chunk
    broken.close()
    answer, data = RawClient(server.path).request(grpc_headers("/test.Echo/Echo"), frame(b"still"))
    assert answer["grpc-status"] == "0"
    assert unframe(data) == b"still"


def test_a_client_that_leaves_mid_request_does_not_stop_the_server(server):
    client = RawClient(server.path)
    stream = client.h2.get_next_available_stream_id()
    client.h2.send_headers(stream, grpc_headers("/test.Echo/Echo"))
    client.h2.send_data(stream, frame(b"never ended")[:4])
    client.flush()
    client.sock.close()
    answer, _ = RawClient(server.path).request(grpc_headers("/test.Echo/Echo"), frame(b"next"))
    assert answer["grpc-status"] == "0"
