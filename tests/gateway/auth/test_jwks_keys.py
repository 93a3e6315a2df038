"""The JWKS cache against a real JWKS server on 127.0.0.1: it fetches when due and no more
often than configured, keeps working keys through an outage, logs a failure once, and
``check_identity`` reports what ``lockgate doctor`` should."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from auth_support import (
    HMAC_SECRET,
    Idp,
    ec_key,
    idp_issuer,
    rsa_key,
    static_issuers,
    suite_config,
)
from jwt.algorithms import RSAAlgorithm
from support import free_port

from gateway import load_config
from gateway.auth.jwks import MAX_JWKS_BYTES, JwksKeys
from gateway.auth.jwt import check_identity


async def test_an_unknown_kid_is_fetched_for_at_most_once_per_min_refresh() -> None:
    idp = Idp(keys=[rsa_key("rsa-1")])
    async with idp.serve() as issuer:
        keys = JwksKeys(f"{issuer}/certs", max_age=600, min_refresh=60)
        known = await keys.keys_for("rsa-1", "RS256")
        idp.keys.append(rsa_key("rsa-2"))
        unknown = [await keys.keys_for("rsa-2", "RS256") for _ in range(5)]

    assert [k.key_id for k in known] == ["rsa-1"]
    assert unknown == [[]] * 5  # the new key waits for the next allowed fetch
    assert idp.fetches == 1


async def test_a_known_kid_is_served_from_the_cache_until_it_is_stale() -> None:
    idp = Idp(keys=[rsa_key("rsa-1"), ec_key("ec-1")])
    async with idp.serve() as issuer:
        keys = JwksKeys(f"{issuer}/certs", max_age=600, min_refresh=0)
        found = [await keys.keys_for(kid, alg) for kid, alg in [("rsa-1", "RS256")] * 3]
        mismatched = await keys.keys_for("ec-1", "RS256")
        idp.max_age = 0  # the server now says: do not cache
        await keys.refresh()
        await keys.keys_for("rsa-1", "RS256")

    assert all(len(f) == 1 for f in found)
    assert mismatched == []  # an EC key never verifies an RS256 token
    assert idp.fetches == 3  # the first lookup, the refresh, the lookup after max-age=0


async def test_a_jwks_outage_keeps_the_keys_and_is_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="gateway.auth.jwks")
    idp = Idp(keys=[rsa_key("rsa-1")], max_age=0)
    async with idp.serve() as issuer:
        keys = JwksKeys(f"{issuer}/certs", max_age=600, min_refresh=0)
        await keys.keys_for("rsa-1", "RS256")
        idp.failing = True
        during = [await keys.keys_for("rsa-1", "RS256") for _ in range(3)]
        idp.failing = False
        after = await keys.keys_for("rsa-1", "RS256")

    messages = [r.getMessage() for r in caplog.records if r.name == "gateway.auth.jwks"]
    assert all(len(found) == 1 for found in [*during, after])
    assert idp.fetches == 5
    assert len([m for m in messages if "cannot be fetched: HTTP 503" in m]) == 1
    assert "keeping the keys fetched before" in messages[0]
    assert messages[-1].endswith("keys fetched again")


def _private_jwk() -> dict[str, Any]:
    jwk: dict[str, Any] = RSAAlgorithm.to_jwk(rsa_key("rsa-1").private, as_dict=True)
    return jwk | {"kid": "rsa-1"}


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        pytest.param(
            {"keys": [rsa_key("rsa-1").jwk()], "padding": "x" * MAX_JWKS_BYTES},
            f"larger than {MAX_JWKS_BYTES} bytes",
            id="too-large",
        ),
        pytest.param(
            {"keys": [_private_jwk()]},
            "it holds a private key: give only the public half",
            id="private-key",
        ),
    ],
)
async def test_a_hostile_jwks_is_refused_and_no_key_of_it_is_used(
    document: dict[str, Any], problem: str
) -> None:
    idp = Idp(document=document)
    async with idp.serve() as issuer:
        keys = JwksKeys(f"{issuer}/certs", max_age=600, min_refresh=60)
        found = await keys.keys_for("rsa-1", "RS256")
        why = await keys.refresh()

    assert (found, keys.available) == ([], False)
    assert why == f"JWKS {issuer}/certs cannot be fetched: {problem}"


async def test_check_identity_fetches_each_jwks_and_names_the_broken_issuers(
    tmp_path: Path,
) -> None:
    idp = Idp(keys=[rsa_key("rsa-1")])
    down = f"http://127.0.0.1:{free_port()}/realms/acme"
    async with idp.serve() as issuer:
        ec_only = {
            **idp_issuer(issuer, id_prefix="ec:", algorithms=["ES256"]),
            "issuer": issuer + "/ec",
        }
        issuers = [idp_issuer(issuer), idp_issuer(down, id_prefix="down:"), ec_only]
        config = load_config(suite_config(tmp_path, [*issuers, *static_issuers()]))
        problems = await check_identity(config)

    assert problems == [
        f"auth.jwt[1] (issuer {down!r}): JWKS {down}/certs cannot be fetched: "
        "All connection attempts failed",
        f"auth.jwt[2] (issuer '{issuer}/ec'): no key fits the accepted algorithms (ES256)",
    ]
    assert idp.fetches == 2
    assert HMAC_SECRET not in repr(config)  # a literal secret never reaches a log line
