# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A ValidatingAdmissionPolicy evaluated on admission requests as the API server builds them
(cel-python for the CEL): match conditions, then variables in order, then validations."""

from __future__ import annotations

from typing import Any

import celpy
from celpy import celtypes
from celpy.adapter import json_to_cel

NODE_KEY = "authentication.kubernetes.io/node-name"
NOT_MATCHED = "<not matched>"


def evaluate(expression: str, activation: dict[str, Any]) -> Any:
    env = celpy.Environment()
    return env.program(env.compile(expression)).evaluate(activation)


def user(name: str, node: str | None) -> dict[str, Any]:
    """request.userInfo of a service account token, bound to ``node`` unless None."""
    return {"username": name, "extra": {NODE_KEY: [node]} if node is not None else {}}


def admit(policy: dict[str, Any], review: dict[str, Any]) -> list[str]:
    """The messages of the failed validations; [] is allowed; [NOT_MATCHED] skips the policy."""
    activation = {key: json_to_cel(value) for key, value in review.items()}
    for condition in policy["spec"]["matchConditions"]:
        if not evaluate(condition["expression"], activation):
            return [NOT_MATCHED]
    variables: dict[Any, Any] = {}
    for variable in policy["spec"]["variables"]:
        activation["variables"] = celtypes.MapType(variables)
        variables[celtypes.StringType(variable["name"])] = evaluate(variable["expression"], activation)
    activation["variables"] = celtypes.MapType(variables)
    denied = []
    for validation in policy["spec"]["validations"]:
        result = evaluate(validation["expression"], activation)
        assert isinstance(result, celtypes.BoolType), f"{validation['expression']} gave {result!r}"
        if not result:
            message = validation.get("message") or str(evaluate(validation["messageExpression"], activation))
            denied.append(" ".join(message.split()))
    return denied
