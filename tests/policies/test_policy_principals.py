"""Principal ids, id globs, roles and negation."""

from __future__ import annotations

import pytest
from policy_support import engine, tool, who

from toolsets.context import Principal

PRINCIPALS = engine("principals.yaml")

ALICE = who("user:alice")
BOB_OPS = who("user:bob", "ops")
CAROL_OPS = who("user:carol", "ops")
INTERN = who("user:ivy", "intern", "ops")
AGENT = who("agent:ci-bot")
ADMIN = who("user:root", "admin")


@pytest.mark.parametrize(
    ("name", "principal", "effect", "rule"),
    [
        pytest.param("p__alice", ALICE, "allow", "alice-only", id="id-matches"),
        pytest.param("p__alice", BOB_OPS, "deny", None, id="other-id-does-not-match"),
        pytest.param("p__ops", CAROL_OPS, "allow", "ops-role", id="role-matches"),
        pytest.param("p__ops", ALICE, "deny", None, id="missing-role-does-not-match"),
        pytest.param("p__no_interns", ALICE, "allow", "anyone-but-interns", id="negation-only"),
        pytest.param("p__no_interns", INTERN, "deny", None, id="negated-role-excludes"),
        pytest.param("p__ops_not_bob", CAROL_OPS, "allow", "ops-but-not-bob", id="role-not-id"),
        pytest.param("p__ops_not_bob", BOB_OPS, "deny", None, id="negated-id-excludes"),
        pytest.param("p__agents", AGENT, "allow", "any-agent", id="id-glob-matches"),
        pytest.param("p__agents", ALICE, "deny", None, id="id-glob-does-not-match"),
        pytest.param("p__alice_or_admins", ALICE, "allow", "alice-or-admins", id="any-of-id"),
        pytest.param("p__alice_or_admins", ADMIN, "allow", "alice-or-admins", id="any-of-role"),
        pytest.param("p__alice_or_admins", AGENT, "deny", None, id="none-of"),
    ],
)
def test_principal_entries_select_who_a_rule_applies_to(
    name: str, principal: Principal, effect: str, rule: str | None
) -> None:
    call = PRINCIPALS.evaluate_call(tool(name), {}, principal, None)
    listing = PRINCIPALS.evaluate_visibility(tool(name), principal)
    assert (call.effect, call.rule_id) == (effect, rule)
    assert (listing.effect, listing.rule_id) == (effect, rule)
