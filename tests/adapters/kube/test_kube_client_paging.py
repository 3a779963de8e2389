# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""ClientKube's reads that keep a big cluster cheap: lists page by page, watches with bookmarks
that move the resourceVersion on, metadata-only reads of big objects."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import pytest

from deckhouse_gpu.adapters.kube.kube_client import METADATA_ONLY, METADATA_ONLY_WATCH, PAGE_SIZE, ClientKube
from deckhouse_gpu.ports.kube import NODES, PODS, WatchExpired


class _Response:
    def __init__(self, status: int, body: bytes) -> None:
        self.status, self.data = status, body
        self.headers: dict[str, str] = {}
        self._unread = body

    def read1(self, size: int) -> bytes:
        chunk, self._unread = self._unread[:size], self._unread[size:]
        return chunk

    def close(self) -> None:
        pass

    def release_conn(self) -> None:
        pass


class _Transport:
    """Answers each request with the next of ``answers`` and keeps what was sent."""

    def __init__(self, *answers: tuple[int, bytes]) -> None:
        self.answers = list(answers)
        self.sent: list[tuple[dict[str, str], Mapping[str, str]]] = []

    def request(
        self, method: str, path: str, query: Sequence[tuple[str, str]], headers: Mapping[str, str],
        body: Any, timeout: tuple[float, float],
    ) -> _Response:  # fmt: skip
        self.sent.append((dict(query), dict(headers)))
        return _Response(*self.answers.pop(0))

    def close(self) -> None:
        pass


def _page(names: list[str], version: str, token: str = "") -> tuple[int, bytes]:
    meta = {"resourceVersion": version} | ({"continue": token} if token else {})
    items = [{"metadata": {"name": n, "namespace": "a"}} for n in names]
    return 200, json.dumps({"metadata": meta, "items": items}).encode()


def test_a_list_is_read_page_by_page_and_keeps_the_first_pages_version() -> None:
    transport = _Transport(
        _page(["p1", "p2"], "10", "next-1"), _page(["p3"], "10", "next-2"), _page([], "10")
    )
    listed = ClientKube(transport).list(PODS, field_selector="status.phase=Pending")
    assert [p["metadata"]["name"] for p in listed.items] == ["p1", "p2", "p3"]
    assert listed.resource_version == "10"
    assert all(p["kind"] == "Pod" for p in listed.items)
    queries = [query for query, _ in transport.sent]
    assert [q.get("continue") for q in queries] == [None, "next-1", "next-2"]
    assert {q["limit"] for q in queries} == {str(PAGE_SIZE)}
    assert {q["fieldSelector"] for q in queries} == {"status.phase=Pending"}


def test_an_expired_continue_token_is_a_watch_expiry() -> None:
    gone = json.dumps({"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"}).encode()
    transport = _Transport(_page(["p1"], "10", "next-1"), (410, gone))
    with pytest.raises(WatchExpired):
        ClientKube(transport).list(PODS)


def test_watches_ask_for_bookmarks_and_report_them_with_their_version() -> None:
    lines = [
        {"type": "ADDED", "object": {"metadata": {"name": "w1", "resourceVersion": "11"}}},
        {"type": "BOOKMARK", "object": {"kind": "Node", "metadata": {"resourceVersion": "57"}}},
    ]
    stream = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    transport = _Transport((200, stream))
    events = list(ClientKube(transport).watch(NODES, "10", field_selector="metadata.name=w1"))
    assert [(e.type, e.object["metadata"]["resourceVersion"]) for e in events] == [
        ("ADDED", "11"),
        ("BOOKMARK", "57"),
    ]
    assert transport.sent[0][0]["allowWatchBookmarks"] == "true"


def test_metadata_only_resources_ask_for_partial_object_metadata() -> None:
    nodes = replace(NODES, metadata_only=True)
    transport = _Transport(_page(["w1"], "5"), (200, b""))
    kube = ClientKube(transport)
    kube.list(nodes)
    list(kube.watch(nodes, "5"))
    assert [headers["Accept"] for _, headers in transport.sent] == [METADATA_ONLY, METADATA_ONLY_WATCH]
