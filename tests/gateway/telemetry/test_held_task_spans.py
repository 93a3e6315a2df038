"""A held call answered as a task, in traces: the call that answers with the task holds (its hold
span under its approval step); when an approver approves, the call the task runs is a trace of
its own whose server span links to the approval step that held it, as a re-issued held call's
does, and the task's result (its ``task.completed`` event) names the trace that held it."""

from __future__ import annotations

import uuid
from pathlib import Path

import anyio
import pytest
from approvals_e2e_support import api_client, decide
from gateway_faces import Face
from otlp_receiver import OTLPReceiver, SpanDict
from support import serve_asgi
from tasks_client import call_as_task, open_tasks_client, until_ended
from trace_tree_support import approvals_traced_config

from gateway.events.model import Event
from gateway.gateway import Gateway
from gateway.http.app import build_app
from tests.gateway.telemetry.test_held_call_spans import (
    AGENT_TOKEN,
    ALICE_TOKEN,
    AUTH,
    POLICY,
    SERVER_SPAN,
)


def _links(span: SpanDict) -> list[tuple[str, str]]:
    return [(link["trace_id"], link["span_id"]) for link in span["links"]]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_call_a_held_task_runs_links_to_the_hold_and_its_result_names_it(
    mode: str, tmp_path: Path
) -> None:
    value = f"held-task-{uuid.uuid4().hex}"
    events: list[Event] = []
    async with OTLPReceiver() as receiver:
        config = approvals_traced_config(tmp_path, receiver.endpoint, AUTH, POLICY)
        gateway = Gateway.from_config(config)
        gateway.parts.events.bus.add_listener(events.append)
        with anyio.fail_after(90):
            async with serve_asgi(build_app(gateway)) as base:
                face = Face("http", mode)
                async with (
                    open_tasks_client(
                        face, config=config, url=f"{base}/mcp", token=AGENT_TOKEN
                    ) as client,
                    api_client(base, ALICE_TOKEN) as api,
                ):
                    created = await call_as_task(client, "echo__echo", {"text": value})
                    approval_id = created["_meta"]["lockgate/pending"]["id"]
                    assert (await decide(api, approval_id, "approve")).status_code == 200
                    ended = await until_ended(client, created["taskId"])
                    assert ended["status"] == "completed", ended
            hold = await receiver.wait_for_span(lambda s: s["name"] == "lockgate.hold")
            ran = await receiver.wait_for_span(lambda s: s["name"] == SERVER_SPAN and s["links"])
    spans = receiver.spans
    first = next(s for s in spans if s["name"] == SERVER_SPAN and not s["links"])
    approval_step = next(
        s for s in spans if s["trace_id"] == first["trace_id"] and s["name"] == "lockgate.approval"
    )
    # The call that answered with the task held: its hold span hangs under its approval step.
    assert hold["trace_id"] == first["trace_id"]
    assert hold["parent_span_id"] == approval_step["span_id"]
    assert hold["attributes"]["lockgate.approval.id"] == approval_id
    # The call the task ran: a trace of its own, linked to where it was held; it ran upstream.
    assert ran["trace_id"] != first["trace_id"]
    assert ran["parent_span_id"] == ""
    assert (first["trace_id"], approval_step["span_id"]) in _links(ran)
    assert ran["attributes"]["lockgate.approval.id"] == approval_id
    assert ran["attributes"]["lockgate.approver"] == "user:alice"
    assert any(s["trace_id"] == ran["trace_id"] and s["kind"] == "CLIENT" for s in spans)
    # The task's result names the trace that held the call.
    completed = next(e for e in events if e.type == "task.completed")
    assert first["trace_id"] in completed.traceparent
    assert value.encode() not in receiver.payload
