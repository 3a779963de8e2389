# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""ClientKube honours the API server's Retry-After: a throttled request is sent again after it
(capped), a bounded number of times; what stays throttled reaches the caller with the delay."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from deckhouse_gpu.adapters.kube.kube_client import THROTTLE_RETRIES, ClientKube
from deckhouse_gpu.domain.backoff import RETRY_AFTER_CAP_SECONDS
from deckhouse_gpu.ports.kube import NODES, Unavailable


class _Response:
    def __init__(self, status: int, body: dict[str, Any], headers: dict[str, str]) -> None:
        self.status, self.headers, self.data = status, headers, json.dumps(body).encode()

    def read1(self, size: int) -> bytes:
        return self.data

    def close(self) -> None:
        pass

    def release_conn(self) -> None:
        pass


class _Transport:
    """Answers each request with the next of ``answers``: (status, Retry-After or None)."""

    def __init__(self, *answers: tuple[int, str | None]) -> None:
        self.answers, self.sent = list(answers), 0

    def request(
        self, method: str, path: str, query: Sequence[tuple[str, str]], headers: Mapping[str, str],
        body: Any, timeout: tuple[float, float],
    ) -> _Response:  # fmt: skip
        status, retry_after = self.answers[self.sent]
        self.sent += 1
        if status == 200:
            return _Response(200, {"metadata": {"name": "w1"}}, {})
        extra = {} if retry_after is None else {"Retry-After": retry_after}
        return _Response(status, {"reason": "TooManyRequests", "message": "slow down"}, extra)

    def close(self) -> None:
        pass


def _client(transport: _Transport) -> tuple[ClientKube, list[float]]:
    slept: list[float] = []
    return ClientKube(transport, sleep=slept.append), slept


def test_a_throttled_request_is_sent_again_after_retry_after() -> None:
    transport = _Transport((429, "2"), (429, "1"), (200, None))
    client, slept = _client(transport)
    assert client.get(NODES, "w1")["metadata"]["name"] == "w1"
    assert (transport.sent, slept) == (3, [2.0, 1.0])


def test_retries_are_bounded_and_the_delay_reaches_the_caller_capped() -> None:
    transport = _Transport(*[(429, "3600")] * (THROTTLE_RETRIES + 1))
    client, slept = _client(transport)
    with pytest.raises(Unavailable) as caught:
        client.get(NODES, "w1")
    assert transport.sent == THROTTLE_RETRIES + 1
    assert slept == [RETRY_AFTER_CAP_SECONDS] * THROTTLE_RETRIES
    assert caught.value.retry_after == RETRY_AFTER_CAP_SECONDS


@pytest.mark.parametrize("status", [429, 500, 503])
def test_without_retry_after_nothing_is_repeated_here(status: int) -> None:
    transport = _Transport((status, None))
    client, slept = _client(transport)
    with pytest.raises(Unavailable) as caught:
        client.get(NODES, "w1")
    assert (transport.sent, slept, caught.value.retry_after) == (1, [], None)


def test_a_server_error_with_retry_after_is_repeated_too() -> None:
    transport = _Transport((503, "1"), (200, None))
    client, slept = _client(transport)
    client.get(NODES, "w1")
    assert slept == [1.0]
