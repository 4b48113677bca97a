"""AlterConfigs (33), v0-1, the non-incremental form kafka-python's admin and Sarama use: each
topic resource's ``configs`` REPLACE all of its overrides (keys left out go back to their
defaults). Forwarded to the active controller (:mod:`config_alteration`)."""

from __future__ import annotations

from typing import Any

from data_plane.broker.apis import KafkaApis, Request
from data_plane.broker.handlers.config_alteration import Expected, alter, refused


def handle(apis: KafkaApis, request: Request) -> Any:
    changes: dict[str, dict[str, str]] = {}
    expected: Expected = {}
    for res in request.body.get("resources") or ():
        if refused(res) is not None:
            continue
        values = {c["name"]: c["value"] for c in res.get("configs") or () if c["value"] is not None}
        changes[res["resource_name"]] = values
        expected[res["resource_name"]] = dict(values)
    return alter(apis, request, "alter_configs", changes, expected)
