"""Grants through a real gateway's approval service: an approval "for this session" or "for
this tool" lets later calls the rule would hold run without asking, and their events name the
grant; a grant is refused when the rule does not offer it; it expires and can be revoked."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from decision_support import BOB, SECURITY, as_, held, local_gateway, of_type, ran

from gateway.approvals.errors import DecisionInvalid, GrantConflict, GrantNotFound
from gateway.approvals.grants import GrantRequest
from gateway.audit.log import read_entries
from toolsets import Principal

ALICE, CAROL = SECURITY[:2]
EVE = Principal(id="agent:eve")


async def test_a_session_grant_lets_the_sessions_later_calls_run_and_names_itself(
    tmp_path: Path,
) -> None:
    async with (
        local_gateway(tmp_path, audit=True) as gateway,
        gateway.events.subscribe(["tool.*"]) as bus,
    ):
        call = await held(gateway, "local__write", "a.txt")
        approved = await gateway.approvals.decide(
            call.id, "approve", by=ALICE, channel="api", grant=GrantRequest(scope="session")
        )
        later = await ran(gateway, "local__write", "b.txt", as_(BOB))
        elsewhere = await held(gateway, "local__write", "c.txt", session="s-2")
        other = await held(gateway, "local__write", "d.txt", who=EVE)
        bus.close()
        events = [event async for event in bus]
    grant_id = approved.grant_id
    assert grant_id is not None
    assert grant_id.startswith("gr_")
    assert later.first_text() == "write b.txt"
    assert (elsewhere.state, other.state) == ("pending", "pending")
    (created,) = of_type(events, "tool.grant.created")
    assert created | {"created_at": 0, "expires_at": 0} == {
        "id": grant_id,
        "scope": "session",
        "tool": "local__write",
        "server": "local",
        "rule_id": "session-grants",
        "principal": BOB.id,
        "session_id": "s-1",
        "created_by": ALICE.id,
        "created_at": 0,
        "expires_at": 0,
        "revoked_by": None,
        "revoked_at": None,
        "approval_id": call.id,
        "tenant": None,
    }
    assert created["expires_at"] - created["created_at"] == 3600  # the rule's grant_max
    (resolved,) = of_type(events, "tool.approval.resolved")
    assert resolved["grant"] == grant_id
    (run, result) = [e for e in events if e.type in {"tool.call", "tool.result"}]
    assert run.data["decision"] == {"effect": "ask", "rule_id": "session-grants", "grant": grant_id}
    assert result.data["decision"]["grant"] == grant_id
    logged = {entry.kind for entry in read_entries(tmp_path / "audit.db")}
    assert {"tool.grant.created", "tool.call", "tool.approval.resolved"} <= logged


async def test_a_tool_grant_for_one_caller_covers_its_other_sessions_only(
    tmp_path: Path,
) -> None:
    async with local_gateway(tmp_path) as gateway:
        call = await held(gateway, "local__deploy", "staging")
        grant = GrantRequest(scope="tool", duration=600, principal=True)
        approved = await gateway.approvals.decide(
            call.id, "approve", by=ALICE, channel="api", grant=grant
        )
        await ran(gateway, "local__deploy", "prod", as_(BOB, session="s-9"))
        refused = await held(gateway, "local__deploy", "prod", who=EVE)
        (listed,) = await gateway.approvals.grants.visible(CAROL, everything=False)
    assert (listed.id, listed.principal, listed.session_id) == (approved.grant_id, BOB.id, None)
    assert listed.expires_at - listed.created_at == 600
    assert refused.state == "pending"


async def test_a_tool_grant_expires_after_its_duration(tmp_path: Path) -> None:
    async with local_gateway(tmp_path) as gateway:
        call = await held(gateway, "local__deploy", "qa")
        grant = GrantRequest(scope="tool", duration=0.3)
        await gateway.approvals.decide(call.id, "approve", by=ALICE, channel="api", grant=grant)
        await ran(gateway, "local__deploy", "qa-2", as_(EVE))  # anyone's call, meanwhile
        with anyio.fail_after(30):  # a grant's end is its expiry time: watch it pass
            while await gateway.approvals.grants.visible(ALICE, everything=False):
                await anyio.sleep(0.05)
        after = await held(gateway, "local__deploy", "qa-3", who=EVE)
        (expired,) = await gateway.approvals.grants.visible(ALICE, everything=True)
    assert after.state == "pending"
    assert expired.revoked_at is None


async def test_a_revoked_grant_stops_covering_calls_and_cannot_be_revoked_twice(
    tmp_path: Path,
) -> None:
    async with (
        local_gateway(tmp_path) as gateway,
        gateway.events.subscribe(["tool.grant.*"]) as bus,
    ):
        call = await held(gateway, "local__deploy", "eu")
        approved = await gateway.approvals.decide(
            call.id, "approve", by=ALICE, channel="api", grant=GrantRequest(scope="tool")
        )
        assert approved.grant_id is not None
        await ran(gateway, "local__deploy", "eu-2", as_(BOB))
        with pytest.raises(GrantNotFound):  # a caller is not an approver of the call
            await gateway.approvals.grants.revoke(approved.grant_id, by=EVE)
        revoked = await gateway.approvals.grants.revoke(approved.grant_id, by=CAROL)
        with pytest.raises(GrantConflict, match="revoked already by user:sec2"):
            await gateway.approvals.grants.revoke(approved.grant_id, by=ALICE)
        again = await held(gateway, "local__deploy", "eu-3")
        bus.close()
        events = [event async for event in bus]
    assert (revoked.revoked_by, again.state) == (CAROL.id, "pending")
    assert [e.type for e in events] == ["tool.grant.created", "tool.grant.revoked"]
    assert events[1].data["revoked_by"] == CAROL.id


async def test_on_a_staged_call_only_the_vote_that_approves_it_makes_a_grant(
    tmp_path: Path,
) -> None:
    async with local_gateway(tmp_path) as gateway:
        call = await held(gateway, "local__purge_own", "tmp")
        tool = GrantRequest(scope="tool")
        with pytest.raises(DecisionInvalid, match="this one is vote 1 of 2 in stage 1 of 1"):
            await gateway.approvals.decide(call.id, "approve", by=ALICE, channel="api", grant=tool)
        await gateway.approvals.decide(call.id, "approve", by=ALICE, channel="api")
        approved = await gateway.approvals.decide(
            call.id, "approve", by=CAROL, channel="web", grant=tool
        )
        (grant,) = await gateway.approvals.grants.visible(ALICE, everything=False)
        await ran(gateway, "local__purge_own", "tmp-2", as_(BOB))
    assert (approved.state, approved.grant_id) == ("approved", grant.id)
    assert grant.created_by == CAROL.id


@pytest.mark.parametrize(
    ("tool", "decision", "grant", "refusal"),
    [
        pytest.param(
            "local__write",
            "approve",
            GrantRequest(scope="tool"),
            r"rule session-grants does not offer 'tool' grants \(it offers once, session\)",
            id="scope-not-offered",
        ),
        pytest.param(
            "local__deploy",
            "approve",
            GrantRequest(scope="tool", duration=7200),
            r"a grant for 2h is not allowed: rule tool-grants grants up to 30m "
            r"\(approval.grant_max\)",
            id="longer-than-grant-max",
        ),
        pytest.param(
            "local__deploy",
            "deny",
            GrantRequest(scope="tool"),
            "a grant comes with 'approve' only, not 'deny'",
            id="with-a-deny",
        ),
        pytest.param(
            "local__purge",
            "approve",
            GrantRequest(scope="session"),
            r"rule two-stage does not offer 'session' grants \(it offers once\)",
            id="rule-offers-none",
        ),
    ],
)
async def test_a_grant_the_rule_does_not_allow_is_refused_and_changes_nothing(
    tmp_path: Path, tool: str, decision: str, grant: GrantRequest, refusal: str
) -> None:
    async with local_gateway(tmp_path) as gateway:
        call = await held(gateway, tool, "x")
        with pytest.raises(DecisionInvalid, match=refusal):
            await gateway.approvals.decide(call.id, decision, by=ALICE, channel="api", grant=grant)
        after = await gateway.store.get(call.id)
        grants = await gateway.approvals.grants.visible(ALICE, everything=True)
    assert after == call
    assert grants == []
