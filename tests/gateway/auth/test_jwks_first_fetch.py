"""A token verified while the gateway's first JWKS fetch (its prefetch at start) is under way
waits for that fetch instead of being refused "not available yet": a caller coming back right
after a restart is let in (against a real JWKS server on 127.0.0.1 that answers when told)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from auth_support import rsa_key
from jwt import PyJWK
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from support import serve_asgi

from gateway.auth.jwks import JwksKeys


class SlowJwks:
    """A JWKS endpoint that answers each fetch only once `release` is set."""

    def __init__(self) -> None:
        self.asked, self.release = anyio.Event(), anyio.Event()
        self.fetches = 0

    @asynccontextmanager
    async def serve(self) -> AsyncIterator[str]:
        async def certs(request: Request) -> Response:
            self.fetches += 1
            self.asked.set()
            await self.release.wait()
            return JSONResponse({"keys": [rsa_key("rsa-1").jwk()]})

        async with serve_asgi(Starlette(routes=[Route("/certs", certs)])) as base:
            yield f"{base}/certs"


async def test_a_lookup_during_the_first_fetch_waits_for_its_keys() -> None:
    jwks, found = SlowJwks(), list[Any]()

    async def look_up(keys: JwksKeys) -> None:
        found.extend(await keys.keys_for("rsa-1", "RS256"))

    async with jwks.serve() as url:
        keys = JwksKeys(url, max_age=600, min_refresh=60)
        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                tg.start_soon(keys.refresh)  # the prefetch at start
                await jwks.asked.wait()  # under way: the server holds its answer
                tg.start_soon(look_up, keys)  # a caller's token arrives meanwhile
                await anyio.wait_all_tasks_blocked()
                jwks.release.set()

    assert [k.key_id for k in found if isinstance(k, PyJWK)] == ["rsa-1"]
    assert jwks.fetches == 1
