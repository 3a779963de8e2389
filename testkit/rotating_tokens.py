# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""ServiceAccount tokens in files, rotated as the kubelet rotates a pod's projected token.

Each component's token comes from the TokenRequest API with the shortest expiry the API server
allows (``SHORTEST_SECONDS``: ``expirationSeconds`` below ten minutes is refused; kube-apiserver's
``--service-account-extend-token-expiration`` stretches only tokens asked for with 3607 s, and no
``--service-account-max-token-expiration`` is set here), bound to an object of its own: a Pod on
the node for a node component (the token then carries the node's name, which the module's
admission policies read), a Secret for a Deployment's. The file is written the way the kubelet
writes it (a new file renamed over the old one, no newline). ``renew_due`` renews tokens past 80 %
of their life, as the kubelet does (the old one stays valid until it expires); ``rotate`` gives a
component a token bound to a new object and deletes the old object, which makes the API server
refuse the old token at once (401): the component keeps working only if it reads the file again.
"""

from __future__ import annotations

import base64
import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from testkit.real_cluster import ApiError, RealCluster

SHORTEST_SECONDS = 600
RENEW_AT = 0.8  # of a token's life, as the kubelet's token manager renews projected tokens


@dataclass
class Held:
    account: str
    node: str | None
    path: Path
    bound: dict[str, Any]  # the object the token is bound to: kind, name, uid
    issued_at: float
    expires_at: float


class RotatingTokens:
    def __init__(self, cluster: RealCluster, directory: Path, namespace: str) -> None:
        self.cluster, self.directory, self.namespace = cluster, directory, namespace
        directory.mkdir(parents=True, exist_ok=True)
        self.held: dict[str, Held] = {}
        self.rotations = 0
        self._serial = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None

    def issue(self, account: str, node: str | None = None, path: Path | None = None) -> Path:
        """The file (``path``, or one in the directory) of a first token of ``account`` (a node
        component's with ``node``)."""
        with self._lock:
            path = self.directory / f"{account}.token" if path is None else path
            self.held[account] = self._token(account, node, path)
            return path

    def rotate(self, account: str) -> None:
        """A token bound to a new object in the file, and the old token refused from now on."""
        with self._lock:
            old = self.held[account]
            self.held[account] = self._token(account, old.node, old.path)
            self._delete(old.bound)
            self.rotations += 1

    def renew_due(self, now: float | None = None) -> list[str]:
        """Renews (same bound object) every token past ``RENEW_AT`` of its life; the accounts."""
        now = time.time() if now is None else now
        renewed = []
        with self._lock:
            for account, held in self.held.items():
                if now >= held.issued_at + RENEW_AT * (held.expires_at - held.issued_at):
                    token, issued, expires = self._request(account, held.bound)
                    _write(held.path, token)
                    held.issued_at, held.expires_at = issued, expires
                    renewed.append(account)
        return renewed

    def start_renewing(self, every: float = 5.0) -> None:
        """A thread that renews what is due, as the kubelet does; failures (the API server down)
        are tried again on the next round, long before the tokens expire."""

        def renew() -> None:
            while not self._stop.wait(every):
                try:
                    self.renew_due()
                except (ApiError, OSError):
                    continue

        self._renewer = threading.Thread(target=renew, name="token-renewer", daemon=True)
        self._renewer.start()

    def stop(self) -> None:
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join(10)

    # -- the API server's part -----------------------------------------------------------------

    def _token(self, account: str, node: str | None, path: Path) -> Held:
        self._serial += 1
        name = f"{account}-{node or 'controller'}-{self._serial}"
        if node is not None:
            bound = self.cluster.create(daemon_pod(self.namespace, name, account, node))
        else:
            bound = self.cluster.create(
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": name, "namespace": self.namespace},
                }
            )
        ref = bound_reference(bound)
        token, issued, expires = self._request(account, ref)
        _write(path, token)
        return Held(account, node, path, ref, issued, expires)

    def _request(self, account: str, bound: dict[str, Any]) -> tuple[str, float, float]:
        answer = self.cluster.request(
            "POST",
            f"/api/v1/namespaces/{self.namespace}/serviceaccounts/{account}/token",
            {
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenRequest",
                "spec": {"expirationSeconds": SHORTEST_SECONDS, "boundObjectRef": bound},
            },
        )
        token = str(answer["status"]["token"])
        claims = token_claims(token)
        return token, float(claims["iat"]), float(claims["exp"])

    def _delete(self, bound: dict[str, Any]) -> None:
        plural = "pods" if bound["kind"] == "Pod" else "secrets"
        path = f"/api/v1/namespaces/{self.namespace}/{plural}/{bound['name']}?gracePeriodSeconds=0"
        try:
            self.cluster.request("DELETE", path)
        except ApiError as error:
            if error.status != 404:
                raise


def token_claims(token: str) -> dict[str, Any]:
    """The JWT's claims (its middle part), unverified: what the test reads of its own token."""
    payload = token.split(".")[1]
    return dict(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))))


def bound_reference(obj: dict[str, Any]) -> dict[str, Any]:
    """What a TokenRequest names as the object its token is bound to."""
    return {
        "apiVersion": "v1",
        "kind": obj["kind"],
        "name": obj["metadata"]["name"],
        "uid": obj["metadata"]["uid"],
    }


def daemon_pod(namespace: str, name: str, account: str, node: str) -> dict[str, Any]:
    """A Pod object only (no kubelet runs it), on ``node``, tolerating every taint: what a
    DaemonSet's pod is to the token bound to it."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": account}},
        "spec": {
            "serviceAccountName": account,
            "nodeName": node,
            "automountServiceAccountToken": False,
            "tolerations": [{"operator": "Exists"}],
            "containers": [{"name": "main", "image": "registry.example/gpu:test"}],
        },
    }


def _write(path: Path, token: str) -> None:
    """As the kubelet's atomic writer: the reader sees the old file or the new, never a half."""
    partial = path.with_suffix(".partial")
    partial.write_text(token)
    os.replace(partial, path)
