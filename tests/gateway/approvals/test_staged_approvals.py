"""Staged (M-of-N) approvals and break-glass, through the approval service of a real gateway:
votes recorded on the held call, stages decided in order, one vote per person, separation of
duties in every stage, denial by any stage member, and break-glass with a reason on record."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from decision_support import BOB, CTO, ONCALL, SECURITY, as_, held, local_gateway, of_type, ran

from gateway.approvals.access import may_see
from gateway.approvals.errors import DecisionInvalid, NotAnApprover, PendingConflict
from gateway.approvals.grants import GrantRequest
from gateway.gateway import Gateway
from toolsets import Principal

SEC1, SEC2, SEC3 = SECURITY[:3]


async def _vote(gateway: Gateway, id: str, who: Principal) -> str:
    call = await gateway.approvals.decide(id, "approve", by=who, channel="api")
    return call.state


async def test_two_of_security_then_the_cto_approve_a_staged_call_in_order(
    tmp_path: Path,
) -> None:
    async with (
        local_gateway(tmp_path) as gateway,
        gateway.events.subscribe(["tool.approval.*"]) as approvals,
    ):
        call = await held(gateway, "local__purge", "logs")
        with pytest.raises(NotAnApprover):  # the CTO decides the second stage, not the first
            await _vote(gateway, call.id, CTO)
        assert await _vote(gateway, call.id, SEC1) == "pending"
        with pytest.raises(PendingConflict, match="second vote by user:sec1"):
            await _vote(gateway, call.id, SEC1)
        assert await _vote(gateway, call.id, SEC2) == "pending"
        with pytest.raises(NotAnApprover):  # the first stage is done
            await _vote(gateway, call.id, SEC3)
        assert await _vote(gateway, call.id, CTO) == "approved"
        result = await ran(gateway, "local__purge", "logs", as_(BOB))  # re-issued: runs once
        approvals.close()
        events = [event async for event in approvals]
        decided = await gateway.store.get(call.id)
    assert decided is not None
    assert [(v.stage, v.by, v.channel) for v in decided.votes] == [
        (0, "user:sec1", "api"),
        (0, "user:sec2", "api"),
        (1, "user:cto", "api"),
    ]
    assert (decided.state, decided.stage, decided.decided_by) == ("done", 2, "user:cto")
    assert result.first_text() == "purge logs"
    votes = of_type(events, "tool.approval.vote")
    assert [(v["by"], v["stage"], v["votes"], v["needed"], v["stages"]) for v in votes] == [
        ("user:sec1", 0, 1, 2, 2),
        ("user:sec2", 0, 2, 2, 2),
    ]
    (resolved,) = of_type(events, "tool.approval.resolved")
    assert (resolved["decision"], resolved["decided_by"]) == ("approve", "user:cto")


async def test_the_caller_votes_on_its_own_call_only_where_the_stage_names_caller(
    tmp_path: Path,
) -> None:
    async with local_gateway(tmp_path) as gateway:
        purge = await held(gateway, "local__purge", "a", who=SEC1)
        with pytest.raises(NotAnApprover):  # separation of duties: not on its own call
            await _vote(gateway, purge.id, SEC1)
        assert not may_see(purge, SEC1)
        own = await held(gateway, "local__purge_own", "b", who=SEC1)
        assert await _vote(gateway, own.id, SEC1) == "pending"  # the stage lists caller
        assert await _vote(gateway, own.id, SEC2) == "approved"


async def test_a_deny_by_anyone_in_the_current_stage_denies_the_call(tmp_path: Path) -> None:
    async with local_gateway(tmp_path) as gateway:
        call = await held(gateway, "local__purge", "cache")
        await _vote(gateway, call.id, SEC1)
        with pytest.raises(NotAnApprover):
            await gateway.approvals.decide(call.id, "deny", by=CTO, channel="api")
        denied = await gateway.approvals.decide(
            call.id, "deny", by=SEC2, channel="api", message="not during the audit"
        )
        again = await gateway.call_tool("local__purge", {"target": "cache"}, as_(BOB))
    assert (denied.state, denied.decided_by, len(denied.votes)) == ("denied", "user:sec2", 1)
    assert again.is_error
    assert again.first_text() == "not during the audit"
    assert "edit" not in denied.decisions  # votes approve the arguments as held


async def test_who_sees_a_staged_call_follows_its_current_stage(tmp_path: Path) -> None:
    async with local_gateway(tmp_path) as gateway:
        call = await held(gateway, "local__purge", "db")
        first = [may_see(call, who) for who in (SEC1, SEC3, CTO, ONCALL)]
        await _vote(gateway, call.id, SEC1)
        await _vote(gateway, call.id, SEC2)
        second = await gateway.store.get(call.id)
        assert second is not None
        later = [may_see(second, who) for who in (SEC1, SEC3, CTO, ONCALL)]
        await _vote(gateway, call.id, CTO)
        done = await gateway.store.get(call.id)
        assert done is not None
    assert first == [True, True, False, True]  # stage 1 and break-glass see it
    assert later == [True, False, True, True]  # a voter still sees what it voted on
    assert [may_see(done, who) for who in (SEC3, CTO, BOB)] == [True, True, False]


async def test_twenty_concurrent_votes_on_two_gateways_leave_one_consistent_record(
    tmp_path: Path,
) -> None:
    refused: list[str] = []

    async def vote(gateway: Gateway, id: str, who: Principal) -> None:
        try:
            await _vote(gateway, id, who)
        except NotAnApprover:  # the first stage filled up before this vote came in
            refused.append(who.id)

    async with (
        local_gateway(tmp_path, store="sqlite") as one,
        local_gateway(tmp_path, store="sqlite") as two,  # a second process on the same file
        one.events.subscribe(["tool.approval.vote"]) as votes_one,
        two.events.subscribe(["tool.approval.vote"]) as votes_two,
    ):
        call = await held(one, "local__crowd", "x")
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                for i, who in enumerate(SECURITY):
                    tg.start_soon(vote, one if i % 2 else two, call.id, who)
        votes_one.close()
        votes_two.close()
        events = [e async for e in votes_one] + [e async for e in votes_two]
        record = await one.store.get(call.id)
    assert record is not None
    voters = [vote.by for vote in record.votes]
    assert len(voters) == len(set(voters)) == 12
    assert sorted([*voters, *refused]) == sorted(who.id for who in SECURITY)
    assert (record.state, record.stage) == ("pending", 1)
    # One event per counted vote (none for a vote worked out again), counting up to 12.
    assert sorted(event.data["votes"] for event in events) == list(range(1, 13))
    assert sorted(event.data["by"] for event in events) == sorted(voters)


async def test_break_glass_needs_its_role_and_a_reason_and_approves_at_once(
    tmp_path: Path,
) -> None:
    async with (
        local_gateway(tmp_path, audit=True) as gateway,
        gateway.events.subscribe(["tool.approval.*"]) as approvals,
    ):
        call = await held(gateway, "local__purge", "disk")
        await _vote(gateway, call.id, SEC1)

        async def glass(who: Principal, reason: str | None, **extra: object) -> object:
            return await gateway.approvals.decide(
                call.id, "approve", by=who, channel="cli", break_glass=True, reason=reason, **extra
            )

        with pytest.raises(NotAnApprover, match="may not break glass"):
            await glass(SEC2, "urgent")
        for reason in (None, "", "   "):
            with pytest.raises(DecisionInvalid, match="needs a reason"):
                await glass(ONCALL, reason)
        with pytest.raises(DecisionInvalid, match="makes no grant"):
            await glass(ONCALL, "urgent", grant=GrantRequest(scope="tool"))
        approved = await glass(ONCALL, "disk full, prod is down")
        approvals.close()
        events = [event async for event in approvals]
    assert approved == await _stored(gateway, call.id)
    assert (approved.state, approved.decided_by, approved.stage) == ("approved", ONCALL.id, 2)
    assert approved.message == "disk full, prod is down"
    types = [e.type for e in events]
    assert types == [
        "tool.approval.requested",
        "tool.approval.vote",
        "tool.approval.break_glass",
        "tool.approval.resolved",
    ]
    (glassed,) = of_type(events, "tool.approval.break_glass")
    assert glassed["reason"] == "disk full, prod is down"
    assert (glassed["by"], glassed["skipped_stages"], glassed["channel"]) == (ONCALL.id, 2, "cli")


async def _stored(gateway: Gateway, id: str) -> object:
    return await gateway.store.get(id)
