"""The policy over resources and prompts, end to end: a served gateway, the echo server over
stdio, agents over streamable HTTP in both eras, an approver on the REST API, the audit log.

One gateway serves the module; each test reads only the events it caused (by URI, prompt and
principal) and parametrizes over both protocol eras.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from support import MODES, echo_upstream, mcp_http_client, write_config
from surface_support import next_event, read_text, refused, serve_surface, uri

from gateway.audit.log import read_entries
from gateway.audit.replay import replay
from gateway.events.bus import Subscription
from gateway.events.model import Event
from gateway.gateway import Gateway
from gateway.mcp.errors import REFUSED

POLICY = Path(__file__).parent / "fixtures" / "surface_policy.yaml"
AGENT, AGENT_TOKEN = "agent:reader", "surface-agent-token"
INTERN, INTERN_TOKEN = "agent:intern", "surface-intern-token"
APPROVER_TOKEN = "surface-approver-token"
README = uri("echo", "echo://readme")
SUMMARIZE = "echo__summarize"

T = TypeVar("T")


@dataclass(frozen=True)
class Rig:
    """The served gateway and where it writes its audit log."""

    gateway: Gateway
    base: str
    audit: Path

    def agent(
        self, mode: str, token: str = AGENT_TOKEN
    ) -> contextlib.AbstractAsyncContextManager[Client]:
        return mcp_http_client(f"{self.base}/mcp", mode, token)

    def events(self, *patterns: str) -> contextlib.AbstractAsyncContextManager[Subscription]:
        return self.gateway.events.subscribe(patterns, name="surface-test")

    def on_record(self, event: Event) -> dict[str, Any]:
        """The audit log's copy of ``event``."""
        (entry,) = [e for e in read_entries(self.audit) if e.event_id == event.id]
        return dict(entry.body)


@pytest.fixture(scope="module")
async def rig(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Rig]:
    directory = tmp_path_factory.mktemp("surface-policy")
    echo = echo_upstream("echo")
    echo["args"] = [*echo["args"], "--resources", "4"]
    config = write_config(
        directory,
        [echo],
        policies={"files": [str(POLICY)]},
        approvals={"store": "sqlite", "path": "pending.db"},
        events={"audit": {"enabled": True, "path": "audit.db"}},
        auth={
            "agents": [
                {"id": AGENT, "token": AGENT_TOKEN},
                {"id": INTERN, "token": INTERN_TOKEN, "roles": ["intern"]},
            ],
            "approvers": [{"id": "user:alice", "token": APPROVER_TOKEN, "roles": ["security"]}],
        },
    )
    async with serve_surface(config) as served:
        with anyio.fail_after(30):
            assert await served.gateway.wait_ready()
        yield Rig(served.gateway, served.url.removesuffix("/mcp"), directory / "audit.db")


async def approve(rig: Rig, requested: Event) -> None:
    """Approve the held read announced by ``requested`` as the approver, over the REST API."""
    headers = {"Authorization": f"Bearer {APPROVER_TOKEN}"}
    async with httpx2.AsyncClient(base_url=rig.base, headers=headers, timeout=30) as api:
        id = requested.data["approval_id"]
        response = await api.post(f"/api/approvals/{id}/decision", json={"decision": "approve"})
    assert response.status_code == 200, response.text


async def meanwhile(first: Callable[[], Awaitable[T]], then: Callable[[], Awaitable[None]]) -> T:
    """Run ``first`` while ``then`` runs; ``first``'s result once both are done."""
    results: list[T] = []

    async def run() -> None:
        results.append(await first())

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await then()
    return results[0]


def item(number: int) -> str:
    """The gateway URI of the echo server's ``echo://items/NNN``."""
    return uri("echo", f"echo://items/{number:03d}")


@pytest.mark.parametrize("mode", MODES)
async def test_a_hidden_resource_is_not_listed_and_reads_as_unknown(rig: Rig, mode: str) -> None:
    async with rig.agent(mode) as agent:
        listed = {str(r.uri) for r in (await agent.list_resources()).resources}
        error = await refused(agent.read_resource(item(1)))
    assert {item(0), item(2), item(3), README} <= listed
    assert item(1) not in listed
    assert (error.code, error.message) == (types.INVALID_PARAMS, f"Unknown resource: {item(1)}")
    assert error.data == {"uri": item(1)}  # the gateway URI, as for one no upstream has


@pytest.mark.parametrize("mode", MODES)
async def test_a_denied_resource_is_listed_and_its_read_refused_on_record(
    rig: Rig, mode: str
) -> None:
    async with rig.events("resource.*") as events, rig.agent(mode) as agent:
        listed = {str(r.uri) for r in (await agent.list_resources()).resources}
        error = await refused(agent.read_resource(README))
        denied = await next_event(events, uri="echo://readme", principal=AGENT)
        on_record = rig.on_record(denied)  # written through before the client was answered
    assert README in listed
    assert (error.code, error.message) == (REFUSED, "The readme is for people, not agents.")
    assert error.data == {
        "lockgate/decision": {
            "effect": "deny",
            "rule_id": "readme-denied",
            "reason": "matched rule 'readme-denied'",
            "policy_version": rig.gateway.policy.current.version,
        }
    }
    assert denied.type == "resource.denied"
    assert denied.data["server"] == "echo"
    assert denied.data["decision"] == {"effect": "deny", "rule_id": "readme-denied"}
    assert denied.data["message"] == "The readme is for people, not agents."
    assert on_record == json.loads(denied.json_bytes)


@pytest.mark.parametrize("mode", MODES)
async def test_a_prompt_hidden_from_a_role_is_not_listed_and_gets_as_unknown(
    rig: Rig, mode: str
) -> None:
    async with rig.agent(mode, INTERN_TOKEN) as intern, rig.agent(mode) as agent:
        hidden = [p.name for p in (await intern.list_prompts()).prompts]
        error = await refused(intern.get_prompt(SUMMARIZE, {"note": "welcome"}))
        shown = [p.name for p in (await agent.list_prompts()).prompts]
    assert SUMMARIZE not in hidden
    assert (error.code, error.message) == (types.INVALID_PARAMS, f"Unknown prompt: {SUMMARIZE}")
    assert SUMMARIZE in shown


@pytest.mark.parametrize("mode", MODES)
async def test_a_denied_prompt_get_is_refused_with_the_rule_message_its_arguments_redacted(
    rig: Rig, mode: str
) -> None:
    arguments = {"note": "welcome", "style": "long"}
    async with rig.events("prompt.*") as events, rig.agent(mode) as agent:
        error = await refused(agent.get_prompt(SUMMARIZE, arguments))
        denied = await next_event(events, prompt=SUMMARIZE, principal=AGENT)
        on_record = rig.on_record(denied)
    assert error.code == REFUSED
    assert error.message == "Long summaries of <redacted args.note> are not allowed."
    assert denied.type == "prompt.denied"
    assert denied.data["args"] == {"note": "[REDACTED]", "style": "long"}
    assert denied.data["decision"] == {"effect": "deny", "rule_id": "no-long-summaries"}
    assert on_record == json.loads(denied.json_bytes)


@pytest.mark.parametrize("mode", MODES)
async def test_allowed_reads_and_gets_are_published_and_audited_without_their_content(
    rig: Rig, mode: str
) -> None:
    async with rig.events("resource.*", "prompt.*") as events, rig.agent(mode) as agent:
        read = await read_text(agent, item(0))
        got = await agent.get_prompt(SUMMARIZE, {"note": "welcome"})
        await refused(agent.read_resource(README))  # written through: flushes the two before it
        was_read = await next_event(events, uri="echo://items/000", principal=AGENT)
        was_got = await next_event(events, prompt=SUMMARIZE, principal=AGENT)
        await next_event(events, uri="echo://readme", principal=AGENT)
        on_record = [rig.on_record(was_read), rig.on_record(was_got)]
    assert read == "item 0"
    assert len(got.messages) == 3
    assert (was_read.type, was_got.type) == ("resource.read", "prompt.get")
    assert {k: was_read.data[k] for k in ("server", "ok", "contents", "bytes", "mime_types")} == {
        "server": "echo",
        "ok": True,
        "contents": 1,
        "bytes": len("item 0"),
        "mime_types": ["text/plain"],
    }
    assert was_read.data["decision"] == {"effect": "allow", "rule_id": None}
    assert was_got.data["args"] == {"note": "[REDACTED]"}
    assert (was_got.data["ok"], was_got.data["messages"]) == (True, 3)
    assert was_got.data["decision"] == {"effect": "allow", "rule_id": "notes-are-private"}
    assert "Welcome to echo." not in json.dumps([was_read.data, was_got.data])
    assert on_record == [json.loads(was_read.json_bytes), json.loads(was_got.json_bytes)]


@pytest.mark.parametrize("mode", MODES)
async def test_a_held_read_runs_once_an_approver_approves_it_over_the_rest_api(
    rig: Rig, mode: str
) -> None:
    async with rig.events("tool.approval.*", "resource.*") as events, rig.agent(mode) as agent:

        async def approver() -> None:
            requested = await next_event(events, tool="resources/read", principal=AGENT)
            assert requested.type == "tool.approval.requested"
            assert requested.data["args"] == {"server": "echo", "uri": "echo://items/002"}
            assert requested.data["reason"] == "item two is sensitive"
            await approve(rig, requested)

        read = await meanwhile(lambda: read_text(agent, item(2)), approver)
        resolved = await next_event(events, tool="resources/read", principal=AGENT)
        was_read = await next_event(events, uri="echo://items/002", principal=AGENT)
    assert read == "item 2"
    assert (resolved.type, resolved.data["decision"]) == ("tool.approval.resolved", "approve")
    assert was_read.type == "resource.read"
    assert was_read.data["decision"] == {"effect": "ask", "rule_id": "item-two-held"}
    assert was_read.data["ok"] is True


@pytest.mark.parametrize("mode", MODES)
async def test_a_read_not_approved_within_its_hold_names_the_approval_and_runs_when_read_again(
    rig: Rig, mode: str
) -> None:
    async with rig.events("tool.approval.requested") as events, rig.agent(mode) as agent:
        error = await refused(agent.read_resource(item(3)))
        requested = await next_event(events, tool="resources/read", principal=AGENT)
        await approve(rig, requested)
        again = await read_text(agent, item(3))
    id = requested.data["approval_id"]
    assert error.code == REFUSED
    assert error.message == (
        f"Not read yet: reading echo://items/003 waits for an approver's decision (approval id "
        f"{id}). Read it again later: once approved, it is read."
    )
    assert error.data == {"lockgate/pending": {"id": id, "kind": "approval", "state": "pending"}}
    assert again == "item 3"


async def test_policy_replay_leaves_held_resource_reads_to_the_resource_rules(rig: Rig) -> None:
    async with (
        rig.events("tool.approval.requested") as events,
        rig.agent("auto", INTERN_TOKEN) as intern,
    ):
        await refused(intern.read_resource(item(3)))  # held; its request is on record
        await next_event(events, tool="resources/read", principal=INTERN)
    report = replay(read_entries(rig.audit), rig.gateway.policy.current)
    assert (report.rows, report.calls, report.skipped) == ((), 0, 0)
