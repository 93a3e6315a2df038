"""Shadow rules (``mode: shadow``) are evaluated like any rule but never change a decision:
what each would have decided rides on the decision, its events and the audit log."""

from __future__ import annotations

import argparse
import dataclasses
import json
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest
from policy_support import FIXTURES, tool, who
from support import write_config

from gateway.audit.log import read_entries
from gateway.cli.policy import register
from gateway.events.model import Event
from gateway.gateway import Gateway
from policies import PolicyEngine
from toolsets.context import CallContext, Principal
from toolsets.decision import ShadowMatch

SHADOW = FIXTURES / "shadow.yaml"
NO_DELETES = ShadowMatch(rule_id="try-no-deletes", effect="deny", reason="deletes are going away")


@pytest.fixture(scope="module")
def engine() -> PolicyEngine:
    return PolicyEngine.load([SHADOW])


def test_a_shadow_deny_never_refuses_and_is_recorded_on_the_decision(
    engine: PolicyEngine,
) -> None:
    decision = engine.evaluate_call(tool("crm__delete_record"), {"count": 1}, who(), None)
    assert (decision.effect, decision.rule_id, decision.matched) == ("allow", None, ())
    assert decision.message is None
    assert decision.shadow == (NO_DELETES,)


def test_every_matching_shadow_rule_is_recorded_in_load_order(engine: PolicyEngine) -> None:
    decision = engine.evaluate_call(tool("crm__delete_record"), {"count": 50}, who(), None)
    assert decision.effect == "allow"
    assert decision.shadow == (
        NO_DELETES,
        ShadowMatch(
            rule_id="try-ask-bulk-deletes", effect="ask", reason="bulk deletes need a person"
        ),
    )


def test_a_failing_shadow_condition_is_recorded_as_deny_without_failing_the_call_closed(
    engine: PolicyEngine,
) -> None:
    decision = engine.evaluate_call(tool("crm__delete_record"), {}, who(), None)
    assert (decision.effect, decision.rule_id) == ("allow", None)
    failed = decision.shadow[1]
    assert (failed.rule_id, failed.effect) == ("try-ask-bulk-deletes", "deny")
    assert failed.reason.startswith("policy condition of rule 'try-ask-bulk-deletes' failed: ")


def test_a_shadow_allow_does_not_lift_an_enforced_deny(engine: PolicyEngine) -> None:
    decision = engine.evaluate_call(tool("crm__purge"), {}, who(), None)
    assert (decision.effect, decision.rule_id, decision.message) == (
        "deny",
        "no-purge",
        "Purging is off.",
    )
    assert decision.shadow == (
        ShadowMatch(rule_id="try-allow-purge", effect="allow", reason="purges may be fine"),
    )


def test_a_shadow_hide_neither_hides_the_listing_nor_the_call(engine: PolicyEngine) -> None:
    admin = tool("crm__admin_reset")
    listing = engine.evaluate_visibility(admin, who())
    assert (listing.effect, listing.shadow) == ("allow", ())
    call = engine.evaluate_call(admin, {}, who(), None)
    assert call.effect == "allow"
    assert [(m.rule_id, m.effect) for m in call.shadow] == [("try-hide-admin", "hide")]


def test_a_shadow_rule_accepts_no_flags(engine: PolicyEngine) -> None:
    flagged = dataclasses.replace(tool("crm__flagged"), flags=("injection-marker",))
    assert engine.evaluate_visibility(flagged, who()).effect == "hide"
    decision = engine.evaluate_call(flagged, {}, who(), None)
    assert (decision.effect, decision.rule_id) == ("hide", None)
    assert [m.rule_id for m in decision.shadow] == ["try-accept-marker"]


def test_a_shadow_rules_redact_paths_still_mask_events(engine: PolicyEngine) -> None:
    decision = engine.evaluate_call(tool("crm__login"), {"password": "pw"}, who(), None)
    assert (decision.effect, decision.redact) == ("allow", ("args.password",))


def explain(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    parser = argparse.ArgumentParser(prog="lockgate")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["policy", "explain", *argv, str(SHADOW)])
    assert args.func(args) == 0
    return capsys.readouterr().out


def test_explain_shows_shadow_matches_apart_from_the_matched_rules(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = explain(capsys, "--tool", "crm__delete_record", "--args", '{"count": 50}')
    lines = out.splitlines()
    assert lines[:4] == [
        "effect:   allow",
        "rule:     (defaults)",
        "reason:   no rule matched; default effect 'allow'",
        "matched:  (no rule)",
    ]
    assert lines[4:7] == [
        "shadow:   (not enforced)",
        f"  try-no-deletes        deny   {SHADOW}:9   deletes are going away",
        f"  try-ask-bulk-deletes  ask    {SHADOW}:16  bulk deletes need a person",
    ]
    data = json.loads(explain(capsys, "--tool", "crm__purge", "--json"))
    assert (data["effect"], data["rule"]) == ("deny", "no-purge")
    assert [m["id"] for m in data["matched"]] == ["no-purge"]
    assert data["shadow"] == [
        {
            "id": "try-allow-purge",
            "effect": "allow",
            "file": str(SHADOW),
            "line": 35,
            "reason": "purges may be fine",
        }
    ]


CRM = '''
def delete_record(record_id: str, count: int = 1) -> str:
    """Delete records."""
    return f"deleted {count} from {record_id}"


def admin_reset() -> str:
    """Reset everything."""
    return "reset"


def purge() -> str:
    """Purge."""
    return "purged"
'''


def shadow_gateway(tmp_path: Path) -> Path:
    (tmp_path / "shadow_crm.py").write_text(textwrap.dedent(CRM), encoding="utf-8")
    functions = ["shadow_crm:delete_record", "shadow_crm:admin_reset", "shadow_crm:purge"]
    crm = {"name": "crm", "transport": "python", "functions": functions}
    return write_config(
        tmp_path,
        [crm],
        policies={"files": [str(SHADOW)]},
        events={"audit": {"enabled": True, "path": "audit.db"}},
    )


async def next_of(events: Any, kind: str) -> Event:
    async for event in events:
        if event.type == kind:
            return event  # type: ignore[no-any-return]
    raise AssertionError(f"no {kind} event")


async def test_tool_call_and_denied_events_and_the_audit_log_carry_shadow_matches(
    tmp_path: Path,
) -> None:
    ctx = CallContext(principal=Principal(id="agent:shadow"), session_id="s1")
    with anyio.fail_after(30):
        async with Gateway.from_config(shadow_gateway(tmp_path)) as gateway:
            listed = {t.name for t in await gateway.list_tools(ctx)}
            async with gateway.events.subscribe(["tool.*"]) as events:
                deleted = await gateway.call_tool("crm__delete_record", {"record_id": "R1"}, ctx)
                call = await next_of(events, "tool.call")
                purged = await gateway.call_tool("crm__purge", {}, ctx)
                denied = await next_of(events, "tool.denied")
    assert "crm__admin_reset" in listed  # a shadow hide hides nothing
    assert (deleted.is_error, deleted.first_text()) == (False, "deleted 1 from R1")
    failed_reason = (
        "policy condition of rule 'try-ask-bulk-deletes' failed: no such key 'count' "
        "(guard it with has())"
    )
    assert call.data["decision"] == {
        "effect": "allow",
        "rule_id": None,
        "shadow": [
            {"rule_id": "try-no-deletes", "effect": "deny", "reason": "deletes are going away"},
            {"rule_id": "try-ask-bulk-deletes", "effect": "deny", "reason": failed_reason},
        ],
    }
    assert (purged.is_error, purged.first_text()) == (True, "Purging is off.")
    assert denied.data["decision"] == {
        "effect": "deny",
        "rule_id": "no-purge",
        "shadow": [
            {"rule_id": "try-allow-purge", "effect": "allow", "reason": "purges may be fine"}
        ],
    }

    logged = {e.kind: e.body["data"] for e in read_entries(tmp_path / "audit.db")}
    assert logged["tool.call"]["decision"] == call.data["decision"]
    assert logged["tool.result"]["decision"] == call.data["decision"]
    assert logged["tool.denied"]["decision"] == denied.data["decision"]
