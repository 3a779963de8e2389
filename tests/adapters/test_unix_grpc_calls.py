# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The kubelet-facing gRPC server against grpcio's client (a C-core HTTP/2 peer, not our code):
unary and streaming calls, statuses, flow control, concurrency, limits and stop."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from deckhouse_gpu.adapters.unix_grpc.call import CallContext, server_stream, unary
from deckhouse_gpu.adapters.unix_grpc.connection import CLOSED_STREAMS_KEPT
from deckhouse_gpu.adapters.unix_grpc.server import UnixGrpcServer
from deckhouse_gpu.adapters.unix_grpc.wire import MAX_MESSAGE_BYTES, Status


def same(data: bytes) -> bytes:
    return data


class Echo:
    """A test service: echo, fail, abort, a big answer, and a stream that counts."""

    def __init__(self) -> None:
        self.stream_closed = threading.Event()
        self.callback_ran = threading.Event()
        self.gate = threading.Barrier(4, timeout=5)

    def echo(self, request: bytes, _context: CallContext) -> bytes:
        return request

    def fail(self, _request: bytes, _context: CallContext) -> bytes:
        raise ValueError("the handler broke")

    def refuse(self, request: bytes, context: CallContext) -> bytes:
        context.abort(Status.UNAVAILABLE, request.decode())

    def big(self, request: bytes, _context: CallContext) -> bytes:
        return bytes(range(256)) * (int(request) // 256)

    def together(self, request: bytes, _context: CallContext) -> bytes:
        self.gate.wait()  # four calls on one connection, all in their handlers at once
        return request

    def count(self, request: bytes, context: CallContext) -> Iterator[bytes]:
        context.add_callback(self.callback_ran.set)
        try:
            for index in range(int(request)):
                yield str(index).encode()
            while context.is_active():
                time.sleep(0.01)
        finally:
            self.stream_closed.set()


@pytest.fixture
def echo() -> Echo:
    return Echo()


@pytest.fixture
def server(tmp_path: Path, echo: Echo) -> Iterator[UnixGrpcServer]:
    running = UnixGrpcServer(str(tmp_path / "test.sock"), 6, "test")
    running.add_service(
        "test.Echo",
        {
            "Echo": unary(echo.echo, same, same),
            "Fail": unary(echo.fail, same, same),
            "Refuse": unary(echo.refuse, same, same),
            "Big": unary(echo.big, same, same),
            "Together": unary(echo.together, same, same),
            "Count": server_stream(echo.count, same, same),
        },
    )
    running.start()
    yield running
    running.stop(0)


@pytest.fixture
def channel(server: UnixGrpcServer) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(f"unix:{server.path}") as opened:
        yield opened


def call(
    channel: grpc.Channel, method: str, request: bytes, compression: grpc.Compression | None = None
) -> bytes:
    stub: Any = channel.unary_unary(f"/test.Echo/{method}")  # bytes in, bytes out
    return bytes(stub(request, timeout=5, compression=compression))


def test_a_unary_call_answers_with_its_message(channel):
    assert call(channel, "Echo", b"hello") == b"hello"
    assert call(channel, "Echo", b"") == b""  # an empty message is still one message


def test_an_unknown_method_is_unimplemented(channel):
    with pytest.raises(grpc.RpcError) as raised:
        call(channel, "Missing", b"x")
    assert raised.value.code() == grpc.StatusCode.UNIMPLEMENTED
    assert "/test.Echo/Missing" in str(raised.value.details())


def test_a_handler_exception_is_unknown_with_its_text(channel):
    with pytest.raises(grpc.RpcError) as raised:
        call(channel, "Fail", b"x")
    assert raised.value.code() == grpc.StatusCode.UNKNOWN
    assert raised.value.details() == "ValueError: the handler broke"
    assert call(channel, "Echo", b"after") == b"after"  # the connection goes on


def test_abort_sends_its_status_and_a_message_that_needs_encoding(channel):
    reason = "100 % busy: ждите\nagain"
    with pytest.raises(grpc.RpcError) as raised:
        call(channel, "Refuse", reason.encode())
    assert raised.value.code() == grpc.StatusCode.UNAVAILABLE
    assert raised.value.details() == reason


def test_an_answer_larger_than_the_flow_control_window_arrives_whole(channel):
    size = 3 * 1024 * 1024  # the peer's window starts at 64 KiB: the server must wait for updates
    answer = call(channel, "Big", str(size).encode())
    assert len(answer) == size
    assert answer[:512] == bytes(range(256)) * 2


def test_a_request_over_the_limit_is_refused_and_the_connection_lives(channel):
    with pytest.raises(grpc.RpcError) as raised:
        call(channel, "Echo", b"x" * (MAX_MESSAGE_BYTES + 1))
    assert raised.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    # Our limit, not the client's.
    assert f"larger than {MAX_MESSAGE_BYTES} bytes" in str(raised.value.details())
    assert call(channel, "Echo", b"x" * 100_000) == b"x" * 100_000  # several DATA frames


def test_a_compressed_request_is_unimplemented(channel):
    with pytest.raises(grpc.RpcError) as raised:
        call(channel, "Echo", b"x" * 1000, compression=grpc.Compression.Gzip)
    assert raised.value.code() == grpc.StatusCode.UNIMPLEMENTED


def test_calls_on_one_connection_run_at_the_same_time(channel):
    answers: dict[int, bytes] = {}

    def one(index: int) -> None:
        answers[index] = call(channel, "Together", str(index).encode())

    threads = [threading.Thread(target=one, args=(index,)) for index in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert answers == {index: str(index).encode() for index in range(4)}


def test_a_long_lived_connection_does_not_grow_with_its_calls(server, channel):
    # The kubelet keeps one connection for every call; h2 would remember 65,536 closed streams.
    for _ in range(1500):
        call(channel, "Echo", b"x")
    (connection,) = server._connections
    remembered = len(connection._h2._closed_streams)  # h2's own bookkeeping, pinned in requirements
    assert 0 < remembered <= CLOSED_STREAMS_KEPT < 1500
    assert not connection._calls


def test_a_stream_sends_every_item_and_a_hang_up_ends_the_handler(channel, echo):
    stream = channel.unary_stream("/test.Echo/Count")(b"3", timeout=10)
    assert [next(stream) for _ in range(3)] == [b"0", b"1", b"2"]
    stream.cancel()
    assert echo.stream_closed.wait(5), "the generator's cleanup did not run"
    assert echo.callback_ran.wait(5), "the end-of-call callback did not run"


def test_stop_ends_open_streams_and_refuses_new_calls(server, channel, echo):
    stream = channel.unary_stream("/test.Echo/Count")(b"1", timeout=10)
    assert next(stream) == b"0"
    began = time.monotonic()
    server.stop(0.2)
    assert time.monotonic() - began < 3
    assert echo.stream_closed.wait(5)
    with pytest.raises(grpc.RpcError) as raised:
        list(stream)
    assert raised.value.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED)
    with pytest.raises(grpc.RpcError) as refused:
        call(channel, "Echo", b"late")
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE


def test_stop_lets_a_running_call_finish_within_the_grace(tmp_path):
    entered, release = threading.Event(), threading.Event()

    def slow(request: bytes, _context: CallContext) -> bytes:
        entered.set()
        release.wait(5)
        return request

    server = UnixGrpcServer(str(tmp_path / "slow.sock"), 2, "slow")
    server.add_service("test.Slow", {"Call": unary(slow, same, same)})
    server.start()
    with grpc.insecure_channel(f"unix:{server.path}") as channel:
        stub: Any = channel.unary_unary("/test.Slow/Call")
        answer = stub.future(b"done", timeout=10)
        assert entered.wait(5)
        stopping = threading.Thread(target=server.stop, args=(5.0,))
        stopping.start()
        time.sleep(0.1)
        release.set()
        assert answer.result(timeout=5) == b"done"
        stopping.join(5)
        assert not stopping.is_alive()
