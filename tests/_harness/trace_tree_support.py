"""Helpers for the gateway's own telemetry tests: a config that traces to an `OTLPReceiver`, and
reading a call's span tree from what the receiver decoded.

Imported by module name (``import trace_tree_support``): pytest puts this directory on ``sys.path``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from otlp_receiver import OTLPReceiver, SpanDict
from support import echo_upstream, write_config

CHAIN_STEPS = ("lockgate.validation", "lockgate.policy")
"""The step spans of an allowed call, outermost first (no hooks configured; the rate limit and
the approval gate hand it on untouched, so they have no span)."""


def traced_config(
    directory: Path,
    endpoint: str,
    servers: Sequence[dict[str, Any]] | None = None,
    **sections: Any,
) -> Path:
    """A gateway config exporting every span at once (batches every 50 ms) to ``endpoint``."""
    telemetry = {"endpoint": endpoint, "service_name": "lockgate-test", "schedule_delay": 0.05}
    servers = [echo_upstream()] if servers is None else servers
    sections.setdefault("startup_wait", 30)  # a loaded machine: the upstream connects late
    return write_config(directory, servers, telemetry=telemetry, **sections)


def approvals_traced_config(
    directory: Path, endpoint: str, auth: dict[str, Any], policy: str
) -> Path:
    """A `traced_config` with ``auth``, the policy file ``policy`` and SQLite approvals (held
    calls, decided over the REST API)."""
    return traced_config(
        directory,
        endpoint,
        auth=auth,
        policies={"files": [policy]},
        approvals={"store": "sqlite", "path": str(directory / "pending.db")},
    )


def children(spans: Sequence[SpanDict], parent: SpanDict) -> list[SpanDict]:
    """The spans whose parent is ``parent``."""
    return [s for s in spans if s["parent_span_id"] == parent["span_id"]]


def chain_below(spans: Sequence[SpanDict], root: SpanDict) -> list[str]:
    """The names on the single-child path below ``root`` (the chain's nesting), outermost first."""
    names: list[str] = []
    node = root
    while below := children(spans, node):
        assert len(below) == 1, f"{node['name']} has {len(below)} children"
        node = below[0]
        names.append(node["name"])
    return names


async def call_tree(receiver: OTLPReceiver, server_span: str) -> tuple[SpanDict, list[SpanDict]]:
    """The first server span named ``server_span`` and every span of its trace (the server span
    ends last, so its children arrived with it or before)."""
    root = await receiver.wait_for_span(
        lambda s: s["name"] == server_span and s["kind"] == "SERVER"
    )
    return root, [s for s in receiver.spans if s["trace_id"] == root["trace_id"]]
