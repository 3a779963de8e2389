# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What a gRPC call looks like on HTTP/2: headers, length-prefixed messages and trailers
(DESIGN.md F6.5)."""

from __future__ import annotations

from enum import IntEnum

# The default limit of grpc-go and grpcio for a received message; the kubelet's are far smaller.
MAX_MESSAGE_BYTES = 4 * 1024 * 1024
PREFIX = 5  # compressed flag (1 byte) and length (4 bytes, big-endian)
CONTENT_TYPE = "application/grpc"


class Status(IntEnum):
    """The gRPC status codes this server sends (the numbers are the protocol's)."""

    OK = 0
    CANCELLED = 1
    UNKNOWN = 2
    INTERNAL = 13
    RESOURCE_EXHAUSTED = 8
    UNIMPLEMENTED = 12
    UNAVAILABLE = 14


class RpcError(Exception):
    """Ends a call with ``status`` and ``message`` (a handler raises it through ``abort``)."""

    def __init__(self, status: Status, message: str) -> None:
        super().__init__(f"{status.name}: {message}")
        self.status = status
        self.message = message


def frame(payload: bytes) -> bytes:
    return b"\x00" + len(payload).to_bytes(4, "big") + payload


def unframe(body: bytes) -> bytes:
    """The one uncompressed message of a unary or server-streaming request."""
    if len(body) < PREFIX:
        raise RpcError(Status.INTERNAL, f"the request holds {len(body)} bytes, not a whole message")
    if body[0] == 1:
        raise RpcError(Status.UNIMPLEMENTED, "compressed messages are not supported")
    if body[0] != 0:
        raise RpcError(Status.INTERNAL, f"invalid message flag {body[0]}")
    length = int.from_bytes(body[1:PREFIX], "big")
    if len(body) != PREFIX + length:
        raise RpcError(Status.UNIMPLEMENTED, "a request of this method carries exactly one message")
    return body[PREFIX:]


def check_request(headers: dict[str, str]) -> tuple[int, RpcError] | None:
    """The HTTP status and gRPC error for a request that is no gRPC call, or None."""
    if headers.get(":method") != "POST":
        return 405, RpcError(Status.UNIMPLEMENTED, f"method {headers.get(':method')!r} is not POST")
    content_type = headers.get("content-type", "")
    if not content_type.startswith(CONTENT_TYPE):
        return 415, RpcError(Status.UNIMPLEMENTED, f"content-type {content_type!r} is not gRPC")
    encoding = headers.get("grpc-encoding", "identity")
    if encoding != "identity":
        return 200, RpcError(Status.UNIMPLEMENTED, f"grpc-encoding {encoding!r} is not supported")
    return None


def response_headers() -> list[tuple[str, str]]:
    return [(":status", "200"), ("content-type", CONTENT_TYPE)]


def trailers(status: Status, message: str = "") -> list[tuple[str, str]]:
    fields = [("grpc-status", str(int(status)))]
    if message:
        fields.append(("grpc-message", percent_encoded(message)))
    return fields


def trailers_only(status: Status, message: str, http_status: int = 200) -> list[tuple[str, str]]:
    """A call answered by its status alone: one HEADERS frame that also ends the stream."""
    return [(":status", str(http_status)), ("content-type", CONTENT_TYPE), *trailers(status, message)]


def percent_encoded(message: str) -> str:
    """grpc-message: UTF-8, with '%' and every byte outside printable ASCII as %XX."""
    return "".join(
        chr(byte) if 0x20 <= byte <= 0x7E and byte != 0x25 else f"%{byte:02X}" for byte in message.encode()
    )
