"""What a caller's request to a server reached with their own account needs first, whatever the
request (a tool call, a resource read, a prompt get): an ``oauth`` grant usable and its token
fresh (`granted`), a ``token_exchange`` caller's token exchanged (`exchanged`).

Each raises `NotConnected` with the ``not_connected`` refusal the caller reads (naming how to
connect, or that nothing here can), or `UpstreamError` when the provider cannot be reached; the
guards (`gateway.credentials.guard`, `gateway.credentials.token_exchange_guard`) turn them into a
call's result, `gateway.resources.callers` into a JSON-RPC error.
"""

from __future__ import annotations

from typing import Any, Literal

from gateway.credentials.errors import NeedsReconnect
from gateway.credentials.oauth import OAuthProvider
from gateway.credentials.oauth_tokens import AuthServerDown
from gateway.credentials.token_exchange import (
    ExchangeFailed,
    ExchangeUnavailable,
    TokenExchangeProvider,
)
from toolsets.context import CallContext
from toolsets.errors import UpstreamError
from toolsets.refusal import Refusal, Unblock
from toolsets.upstream.per_principal import NotConnected, principal_key

__all__ = ["Verb", "exchanged", "granted", "refusal"]

Verb = Literal["call", "ask"]
"""What the caller did, in the refusal's words: called a tool, or asked for something else."""


async def granted(
    provider: OAuthProvider, principal: str, *, verb: Verb, held_if_none: bool = False
) -> None:
    """``principal``'s grant usable and its token fresh; with ``held_if_none``, having no grant
    at all passes (the connect gate holds the call until they connect).

    Raises:
        NotConnected: no grant (unless ``held_if_none``), or one marked for reconnect.
        UpstreamError: the authorization server is down while refreshing.
        LockgateError: the vault is unreadable (its error names the key and the fix).
    """
    server = provider.server
    url = f"/api/connections/{server}/connect"
    try:
        held = await provider.grants.current(principal)
        if held is not None:
            await provider.prepare(principal, held)
        elif not held_if_none:
            never = (
                f"{server!r} is reached with each caller's own account and you have not "
                f"connected yours: run `lockgate connections connect {server}`, then {verb} again"
            )
            raise NotConnected(refusal(server, never, url))
    except NeedsReconnect as exc:
        raise NotConnected(refusal(server, str(exc), url, reason=exc.reason)) from None
    except AuthServerDown as exc:
        raise UpstreamError(str(exc), server=server) from None


async def exchanged(provider: TokenExchangeProvider, ctx: CallContext, *, verb: Verb) -> None:
    """The caller's identity-provider token exchanged for one of the server's.

    A request carrying no token of its own (a call approved before a restart, which the
    restarted gateway runs for its task) uses the one its principal brought on a later call or
    listing, so it runs as that caller, exchanged afresh; with none, it is refused: lockgate
    keeps no caller token across a restart, and never runs it as anyone else or without one.

    Raises:
        NotConnected: the caller has no such token (a static one, or none since a restart), or
            the exchange was refused.
        UpstreamError: the provider cannot be reached, or failed.
    """
    server, principal = provider.server, principal_key(ctx.principal)
    bearer = ctx.principal.bearer or provider.subject(principal)
    if bearer is None:
        raise NotConnected(refusal(server, _no_token(server, verb), mode=provider.mode))
    try:
        await provider.prepare(principal, bearer)
    except (ExchangeFailed, ExchangeUnavailable) as exc:
        failure = provider.take_failure(principal)
        message = failure.message if failure is not None else str(exc)
        if isinstance(exc, ExchangeFailed):
            raise NotConnected(refusal(server, message, mode=provider.mode)) from None
        raise UpstreamError(message, server=server) from None


def _no_token(server: str, verb: Verb) -> str:
    """What a request to ``server`` carrying no identity-provider token is told."""
    said = (
        f"{server!r} is reached with each caller's own identity-provider token (token "
        "exchange), and this request carries none: "
    )
    if verb == "call":
        said += (
            "if it is a call approved after the gateway restarted, lockgate keeps no caller "
            f"token for token_exchange server {server!r} across a restart: the caller must call "
            "again with its JWT; otherwise "
        )
    return said + (
        f"{verb} with a JWT from the identity provider the gateway trusts (auth.jwt), not a "
        "static token"
    )


def refusal(server: str, message: str, url: str | None = None, **details: Any) -> Refusal:
    """The ``not_connected`` refusal of a request to ``server``: connect at ``url``, or (none)
    nothing the caller can do here."""
    unblock = Unblock(action="connect", url=url) if url else Unblock(action="none")
    facts = {"server": server, **{k: v for k, v in details.items() if v}}
    return Refusal(kind="not_connected", message=message, unblock=unblock, details=facts)
