"""JWT identity end to end: agents call tools over MCP (both eras), approvers decide over REST,
each credential class holds only what its token earns, and every refusal says why."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from approvals_e2e_support import (
    agent_client,
    api_client,
    decide,
    pending_meta,
    text_of,
)
from auth_support import (
    HMAC_ISSUER,
    HMAC_SECRET,
    JWK_ISSUER,
    MAPPED_ISSUER,
    STATIC_ISSUER,
    Rig,
    SigningKey,
    ec_key,
    ed_key,
    mint,
    rsa_key,
    scoped,
    static_issuers,
    suite_config,
)
from support import MODES

from gateway.gateway import Gateway
from gateway.mcp.stdio import TOKEN_ENV, stdio_principal
from toolsets.errors import ConfigError

ACME = {"org": "acme"}
WELL_KNOWN = "/.well-known/oauth-protected-resource"


def agent_token(rig: Rig, **claims: Any) -> str:
    """An agent's JWT from the suite's identity provider (RSA key), tenant ``acme``."""
    return mint(rsa_key("rsa-1"), rig.issuer, scope=scoped("agent"), **(ACME | claims))


def approver_token(rig: Rig, **claims: Any) -> str:
    """Bob's approver JWT (EC key) with the ``ops`` role the policy's approvals need."""
    roles = {"realm_access": {"roles": ["ops"]}, "scope": scoped("approver")}
    return mint(ec_key("ec-1"), rig.issuer, **(ACME | {"sub": "bob"} | roles | claims))


async def call(rig: Rig, token: str, tool: str, mode: str = "auto") -> types.CallToolResult:
    """One call of ``tool`` over MCP as the holder of ``token``."""
    async with agent_client(rig.mcp_url, mode, token=token) as client:
        with anyio.fail_after(20):
            return await client.call_tool(tool, {"note": "hi"})


async def post_mcp(rig: Rig, token: str | None) -> httpx2.Response:
    """A POST on ``/mcp`` holding ``token`` (refused at the edge, before any MCP is read)."""
    async with api_client(rig.base, token) as http:
        return await http.post("/mcp", json={})


@pytest.mark.parametrize("mode", MODES)
async def test_an_agent_jwt_lists_and_calls_tools_over_mcp(rig: Rig, mode: str) -> None:
    async with agent_client(rig.mcp_url, mode, token=agent_token(rig)) as client:
        with anyio.fail_after(20):
            listed = await client.list_tools()
            result = await client.call_tool("local__free", {"note": f"hello {mode}"})

    assert "local__free" in {t.name for t in listed.tools}
    assert (result.is_error, text_of(result)) == (False, f"hello {mode}")


@pytest.mark.parametrize(
    "token",
    [
        pytest.param(lambda rig: mint(rsa_key("rsa-1"), rig.issuer, **ACME), id="rsa-jwks"),
        pytest.param(lambda rig: mint(ec_key("ec-1"), rig.issuer, **ACME), id="ec-jwks"),
        pytest.param(lambda rig: mint(ec_key("ci"), STATIC_ISSUER), id="ec-static-pem"),
        pytest.param(lambda rig: mint(ed_key("ed"), JWK_ISSUER), id="ed25519-static-jwk"),
    ],
)
async def test_jwts_signed_with_each_kind_of_configured_key_are_accepted(
    rig: Rig, token: Callable[[Rig], str]
) -> None:
    async with api_client(rig.base, token(rig)) as http:
        response = await http.get("/api/approvals")

    # Valid, so the question is only the class: none of these tokens is an approver's.
    assert response.status_code == 403


async def test_a_static_key_issuers_jwt_is_an_agent_over_mcp(rig: Rig) -> None:
    result = await call(rig, mint(ec_key("ci"), STATIC_ISSUER, sub="runner-7"), "local__free")

    assert (result.is_error, text_of(result)) == (False, "hi")


async def test_an_approver_jwt_approves_over_rest_and_an_agent_jwt_cannot(rig: Rig) -> None:
    agent = agent_token(rig, sub="carol")
    held = await call(rig, agent, "local__held")
    id = pending_meta(held)["id"]

    async with api_client(rig.base, agent) as intruder:
        refused = await decide(intruder, id, "approve")
    async with api_client(rig.base, approver_token(rig)) as bob:
        approved = await decide(bob, id, "approve")
    again = await call(rig, agent, "local__held")

    assert refused.status_code == 403
    assert refused.json()["detail"] == "this token is not an approver token"
    assert 'scope="lockgate:approve"' in refused.headers["www-authenticate"]
    assert approved.status_code == 200
    assert (approved.json()["principal"], approved.json()["decided_by"]) == (
        "acme:carol",
        "acme:bob",
    )
    assert (again.is_error, text_of(again)) == (False, "hi")


async def test_a_token_with_the_agent_scope_never_approves_whatever_else_it_holds(
    rig: Rig,
) -> None:
    held = await call(rig, agent_token(rig, sub="carol"), "local__held")
    both = approver_token(rig, scope=scoped("agent", "approver"))  # bob, with the ops role

    async with api_client(rig.base, both) as agent:
        refused = await decide(agent, pending_meta(held)["id"], "approve")
    result = await call(rig, both, "local__free")

    assert (refused.status_code, refused.json()["detail"]) == (
        403,
        "this token is not an approver token",
    )
    assert (result.is_error, text_of(result)) == (False, "hi")


async def test_roles_from_a_nested_claim_reach_the_policy(rig: Rig) -> None:
    finance = agent_token(rig, realm_access={"roles": ["finance", "staff"]})
    paid = await call(rig, finance, "local__pay")
    refused = await call(rig, agent_token(rig, realm_access={"roles": ["staff"]}), "local__pay")

    assert (paid.is_error, text_of(paid)) == (False, "hi")
    assert (refused.is_error, text_of(refused)) == (True, "Only finance may pay.")


async def test_role_map_renames_token_roles_and_drops_unmapped_ones(rig: Rig) -> None:
    mapped = await call(
        rig, mint(ec_key("mapped"), MAPPED_ISSUER, groups=["payments"]), "local__pay"
    )
    raw = mint(ec_key("mapped"), MAPPED_ISSUER, groups=["finance", "staff"])
    unmapped = await call(rig, raw, "local__pay")

    assert (mapped.is_error, text_of(mapped)) == (False, "hi")
    assert (unmapped.is_error, text_of(unmapped)) == (True, "Only finance may pay.")


async def test_policies_see_only_the_claims_the_issuer_lists(rig: Rig) -> None:
    listed = await call(rig, mint(ec_key("mapped"), MAPPED_ISSUER, dept="frozen"), "local__free")
    unlisted = await call(rig, agent_token(rig, dept="frozen"), "local__free")

    assert (listed.is_error, text_of(listed)) == (True, "The frozen department may not call.")
    assert (unlisted.is_error, text_of(unlisted)) == (False, "hi")


async def test_a_fixed_tenant_holds_for_every_token_of_its_issuer(rig: Rig) -> None:
    token = mint(ec_key("mapped"), MAPPED_ISSUER, sub="erin", org="globex")  # org is not read
    held = await call(rig, token, "local__held")

    async with api_client(rig.base, approver_token(rig)) as acme:
        shown = await acme.get(f"/api/approvals/{pending_meta(held)['id']}")

    assert shown.status_code == 200
    assert (shown.json()["principal"], shown.json()["tenant"]) == ("mapped:erin", "acme")


async def test_the_tenant_comes_from_a_claim_and_partitions_approvals(rig: Rig) -> None:
    held = await call(rig, agent_token(rig), "local__held")
    id = pending_meta(held)["id"]

    async with api_client(rig.base, approver_token(rig, org="globex")) as foreign:
        shown = await foreign.get(f"/api/approvals/{id}")
    async with api_client(rig.base, approver_token(rig)) as own:
        mine = await own.get(f"/api/approvals/{id}")

    assert shown.status_code == 404
    assert (mine.status_code, mine.json()["tenant"]) == (200, "acme")


async def test_each_class_is_earned_by_its_own_scope_and_nothing_more(rig: Rig) -> None:
    worker = mint(rsa_key("rsa-1"), rig.issuer, scope=scoped("worker"), **ACME)
    async with (
        api_client(rig.base, worker) as w,
        api_client(rig.base, mint(HMAC_SECRET, HMAC_ISSUER)) as h,
    ):
        calls, hmac_calls = await w.get("/api/calls"), await h.get("/api/calls")
        approvals = await w.get("/api/approvals")
    not_an_agent = await post_mcp(rig, worker)

    assert (calls.status_code, hmac_calls.status_code, approvals.status_code) == (200, 200, 403)
    # A valid JWT that a scope would make an agent's: 403 naming the scope to ask for.
    assert not_an_agent.status_code == 403
    assert not_an_agent.json()["error"] == "insufficient_scope"
    challenge = not_an_agent.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in challenge
    assert 'scope="lockgate:call"' in challenge


async def test_a_subscriber_jwt_streams_events_and_a_worker_jwt_does_not(rig: Rig) -> None:
    subscriber = mint(rsa_key("rsa-1"), rig.issuer, scope=scoped("subscriber"), **ACME)
    worker = mint(rsa_key("rsa-1"), rig.issuer, scope=scoped("worker"), **ACME)
    async with api_client(rig.base, subscriber) as http, http.stream("GET", "/api/events") as sse:
        streamed = (sse.status_code, sse.headers["content-type"].split(";")[0])
    async with api_client(rig.base, worker) as http:
        refused = await http.get("/api/events")

    assert streamed == (200, "text/event-stream")
    assert refused.status_code == 403


def _expired(rig: Rig) -> str:
    now = int(time.time())
    return agent_token(rig, iat=now - 600, exp=now - 120)  # the leeway is 30 s


REFUSED = [
    pytest.param(_expired, "token expired", id="expired"),
    pytest.param(
        lambda rig: agent_token(rig, aud="https://elsewhere.test"),
        "wrong audience (this gateway accepts https://lockgate.test/mcp)",
        id="wrong-audience",
    ),
    pytest.param(
        lambda rig: mint(rsa_key("rsa-1"), "https://evil.test", **ACME),
        "wrong issuer (no auth.jwt entry has this token's 'iss')",
        id="wrong-issuer",
    ),
    pytest.param(
        lambda rig: mint(SigningKey("rsa-1", "RS256", rsa_key("impostor").private), rig.issuer),
        "bad signature (not signed by the issuer's key)",
        id="wrong-key",
    ),
    pytest.param(
        lambda rig: mint(rsa_key("never-published"), rig.issuer),
        "unknown signing key (no key of the issuer has this kid)",
        id="unknown-kid",
    ),
    pytest.param(
        lambda rig: mint(None, rig.issuer),
        "unsigned tokens (alg 'none') are never accepted",
        id="alg-none",
    ),
    pytest.param(
        lambda rig: mint(HMAC_SECRET, rig.issuer),
        "algorithm not accepted for this issuer (accepted: RS256, ES256, EdDSA)",
        id="hs256-not-configured",
    ),
    pytest.param(
        lambda rig: mint("another secret, also long enough......", HMAC_ISSUER),
        "bad signature (not signed by the issuer's key)",
        id="hs256-wrong-secret",
    ),
    pytest.param(
        lambda rig: agent_token(rig, nbf=int(time.time()) + 600),
        "token not valid yet (nbf or iat in the future)",
        id="not-yet-valid",
    ),
    pytest.param(
        lambda rig: agent_token(rig, exp=None), "token lacks the 'exp' claim", id="no-exp"
    ),
    pytest.param(
        lambda rig: agent_token(rig, org=None),
        "token lacks the 'org' claim (tenant)",
        id="no-tenant",
    ),
    pytest.param(
        lambda rig: agent_token(rig, sub="mallory\nacme:bob"),
        "the token's 'sub' claim is not a usable name",
        id="control-character-in-subject",
    ),
    pytest.param(lambda rig: "abc.def.ghi", "malformed token (not a signed JWT)", id="malformed"),
    pytest.param(lambda rig: "not-a-known-token", "unknown token", id="unknown-static"),
]


@pytest.mark.parametrize(("token", "reason"), REFUSED)
@pytest.mark.parametrize("path", ["/mcp", "/api/approvals"])
async def test_a_refused_token_gets_401_saying_why(
    rig: Rig, token: Callable[[Rig], str], reason: str, path: str
) -> None:
    if path == "/mcp":
        response = await post_mcp(rig, token(rig))
    else:
        async with api_client(rig.base, token(rig)) as http:
            response = await http.get(path)

    suffix = "/mcp" if path == "/mcp" else ""
    assert response.status_code == 401
    assert (response.json()["error"], response.json()["error_description"]) == (
        "invalid_token",
        reason,
    )
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith("Bearer ")
    assert 'error="invalid_token"' in challenge
    assert f'error_description="{reason}"' in challenge
    assert f'resource_metadata="{rig.base}{WELL_KNOWN}{suffix}"' in challenge


async def test_a_token_expired_within_the_leeway_is_still_accepted(rig: Rig) -> None:
    now = int(time.time())
    result = await call(rig, agent_token(rig, iat=now - 600, exp=now - 10), "local__free")

    assert (result.is_error, text_of(result)) == (False, "hi")


async def test_a_rotated_signing_key_is_fetched_on_its_first_token(rig: Rig) -> None:
    fetched = rig.idp.fetches
    rig.idp.keys.append(rsa_key("rsa-2"))  # the provider rotates; the gateway has not seen it
    token = mint(rsa_key("rsa-2"), rig.issuer, scope=scoped("agent"), **ACME)

    result = await call(rig, token, "local__free")

    assert (result.is_error, text_of(result)) == (False, "hi")
    assert rig.idp.fetches == fetched + 1


async def test_tokens_fail_closed_while_the_jwks_is_down_and_work_once_it_is_up(rig: Rig) -> None:
    token = mint(rsa_key("late-1"), rig.late_issuer, sub="dave", **ACME)

    while_down = await post_mcp(rig, token)
    async with rig.late.serve(rig.late_port):
        result = await call(rig, token, "local__free")

    assert while_down.status_code == 401
    assert while_down.json()["error_description"] == (
        "the issuer's signing keys are not available yet (its JWKS cannot be fetched); "
        "try again shortly"
    )
    assert (result.is_error, text_of(result)) == (False, "hi")


async def test_tokens_never_appear_in_the_logs(rig: Rig, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    tokens = [agent_token(rig), _expired(rig), mint(rsa_key("never-published"), rig.issuer)]
    tokens.append(approver_token(rig))

    await call(rig, tokens[0], "local__free", mode="legacy")
    refused = [await post_mcp(rig, t) for t in tokens[1:3]]
    async with api_client(rig.base, tokens[3]) as bob:
        listed = await bob.get("/api/approvals")

    assert [r.status_code for r in refused] == [401, 401]
    assert listed.status_code == 200
    logged = caplog.text + "".join(str(r.args) for r in caplog.records)
    assert caplog.records  # the requests were logged about, but never with a token
    for token in tokens:
        assert token not in logged
        assert token.rsplit(".", 1)[1] not in logged  # not even the signature


async def test_a_stdio_agent_may_present_a_jwt_in_its_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gateway = Gateway.from_config(suite_config(tmp_path, static_issuers()))

    monkeypatch.setenv(TOKEN_ENV, mint(ec_key("ci"), STATIC_ISSUER, sub="desk"))
    principal = await stdio_principal(gateway)
    monkeypatch.setenv(TOKEN_ENV, mint(ec_key("ci"), STATIC_ISSUER, exp=int(time.time()) - 600))
    with pytest.raises(
        ConfigError, match=r"set \$LOCKGATE_TOKEN to an agent token \(token expired\)"
    ):
        await stdio_principal(gateway)

    assert principal.id == "ci:desk"
