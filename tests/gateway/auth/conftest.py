"""Fixtures of the JWT identity suite: one identity provider and one gateway per module.

The gateway trusts the provider's JWKS (RSA and EC keys, every credential class for its
scope), a static EC key (agents), an Ed25519 JWK (subscribers), an HMAC secret (workers), an
EC JWK whose roles are mapped (agents of tenant ``acme``) and a provider whose JWKS is down
when the gateway starts. Module-scoped async fixtures rely on the session-scoped
``anyio_backend`` of ``tests/conftest.py``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from auth_support import (
    Idp,
    Rig,
    ec_key,
    idp_issuer,
    mapped_issuer,
    rsa_key,
    static_issuers,
    suite_config,
)
from support import free_port, serve_asgi

from gateway.gateway import Gateway
from gateway.http.app import build_app


@pytest.fixture(scope="module")
async def rig(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Rig]:
    """The module's gateway under uvicorn on 127.0.0.1, trusting the suite's issuers."""
    idp = Idp(keys=[rsa_key("rsa-1"), ec_key("ec-1")])
    late, late_port = Idp(keys=[rsa_key("late-1")]), free_port()
    late_issuer = f"http://127.0.0.1:{late_port}/realms/acme"
    async with idp.serve() as issuer:
        issuers = [
            idp_issuer(issuer),
            idp_issuer(late_issuer, id_prefix="late:", **{"as": ["agent"], "require": {}}),
            *static_issuers(),
            mapped_issuer(),
        ]
        config = suite_config(tmp_path_factory.mktemp("jwt-auth"), issuers)
        async with serve_asgi(build_app(Gateway.from_config(config))) as base:
            yield Rig(base, idp, issuer, late, late_port, late_issuer)
