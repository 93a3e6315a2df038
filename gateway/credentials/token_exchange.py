"""`TokenExchangeProvider`: the ``token_exchange`` mode of one upstream (RFC 8693; see
docs/credentials.md).

The caller's identity-provider token (the JWT ``auth.jwt`` accepted, carried on its principal as
a `Bearer`) is exchanged at the provider's token endpoint, by the gateway's own client, for a
token whose audience is the upstream; that token, never the caller's, authenticates the caller's
connection (`GrantAuth` asks `request_token` on every request, so a renewed token is used without
reopening it). Exchanged tokens are kept in memory per principal until ``renew_before`` seconds
before they expire. Neither token is ever logged, put in an event or an error message: a
failure is kept per principal (`take_failure`) for `TokenExchangeGuard` to tell the caller, and
put on record as ``credential.failed`` with the server, the principal and the reason only.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Literal

import anyio
import httpx2
from mcp.client.auth.utils import (
    build_oauth_authorization_server_metadata_discovery_urls,
    create_oauth_metadata_request,
    handle_auth_metadata_response,
    validate_metadata_issuer,
)
from mcp.shared.auth import OAuthToken
from pydantic import ValidationError

from gateway.config.token_exchange import TokenExchangeConfig
from gateway.credentials.oauth_auth import GrantAuth
from gateway.events.model import Event
from gateway.vault.vault import Record
from toolsets.context import Bearer
from toolsets.errors import LockgateError

__all__ = [
    "GRANT_TYPE",
    "ExchangeFailed",
    "ExchangeUnavailable",
    "Failure",
    "TokenExchangeProvider",
]

log = logging.getLogger("lockgate.credentials")
GRANT_TYPE = "urn:ietf:params:oauth:grant-type:token-exchange"
TOKEN_TYPE = "urn:ietf:params:oauth:token-type:"
HTTP_TIMEOUT = 30.0
MAX_DESCRIPTION = 200


class ExchangeFailed(LockgateError):
    """The identity provider refused to exchange the caller's token (expired, not allowed)."""

    def __init__(self, server: str, error: str) -> None:
        super().__init__(
            f"the identity provider refused to exchange your token for {server!r} ({error}): "
            "sign in to it again for a fresh token and call again; if it keeps refusing, ask an "
            f"operator to allow the gateway's client to exchange tokens for {server!r}"
        )
        self.server, self.error = server, error


class ExchangeUnavailable(LockgateError):
    """The identity provider's token endpoint could not be reached or failed."""

    def __init__(self, server: str, problem: str) -> None:
        super().__init__(
            f"the identity provider could not exchange your token for {server!r} now "
            f"({problem}): try again later"
        )
        self.server = server


@dataclass(frozen=True, slots=True)
class Failure:
    """Why a principal's call could not be authenticated: the exchange was ``refused``, the
    provider ``unavailable``, or the upstream ``rejected`` the exchanged token."""

    kind: Literal["refused", "unavailable", "rejected"]
    message: str


@dataclass(frozen=True, slots=True)
class _Exchanged:
    token: str = field(repr=False)
    expires_at: float
    """`anyio.current_time` when it expires (infinity: the provider gave no lifetime)."""


class TokenExchangeProvider:
    """The ``token_exchange`` credentials of one server.

    Args:
        server: The upstream's name.
        url: Its MCP URL (the default resource indicator).
        settings: Its ``credentials.exchange``.
        secret: The gateway's client secret (read from ``settings.client.secret``'s variable).
        record: Puts an event on record (``credential.failed``).
    """

    mode = "token_exchange"

    def __init__(
        self, server: str, url: str, settings: TokenExchangeConfig, secret: str, record: Record
    ) -> None:
        self.server, self.settings, self.record = server, settings, record
        self.resource = settings.resource or url
        self._secret = secret
        self._endpoint = settings.token_endpoint
        self._subjects: dict[str, Bearer] = {}
        self._tokens: dict[str, _Exchanged] = {}
        self._locks: dict[str, anyio.Lock] = {}
        self._failures: dict[str, Failure] = {}

    async def connected(self, principal: str) -> bool:
        """``principal`` has an exchanged token that has not expired."""
        return self.ready(principal)

    def ready(self, principal: str) -> bool:
        """`connected`, without waiting."""
        return self._valid(principal) is not None

    async def secret(self, principal: str) -> str | None:
        """What `PerPrincipalToolset` keys ``principal``'s connection by: the mode, while an
        exchanged token is held (never the token: a renewed one keeps the connection)."""
        return f"{self.mode}:{principal}" if principal in self._tokens else None

    async def principals(self) -> list[str]:
        """None at start: nobody's token is known until they call."""
        return []

    def auth(self, principal: str) -> httpx2.Auth:
        """``principal``'s connection's auth: the exchanged token on every request."""
        return GrantAuth(self, principal)

    def subject(self, principal: str) -> Bearer | None:
        """The identity-provider token ``principal`` brought on its latest call or listing
        since the gateway started (kept in memory only), or None."""
        return self._subjects.get(principal)

    def _valid(self, principal: str) -> str | None:
        held = self._tokens.get(principal)
        if held is None or anyio.current_time() >= held.expires_at:
            return None
        return held.token

    def _fresh(self, principal: str) -> bool:
        held = self._tokens.get(principal)
        renew_at = None if held is None else held.expires_at - self.settings.renew_before
        return renew_at is not None and anyio.current_time() < renew_at

    async def prepare(self, principal: str, subject: Bearer) -> None:
        """Before a call: ``principal``'s exchanged token, exchanged now from ``subject`` (the
        token they called with) unless one is held that is not about to expire.

        Raises:
            ExchangeFailed: the provider refused the exchange.
            ExchangeUnavailable: the provider could not be reached or failed.
        """
        self._failures.pop(principal, None)
        self._subjects[principal] = subject
        if not self._fresh(principal):
            await self._renew(principal)

    async def _renew(self, principal: str, stale: str | None = None) -> str:
        """Exchange ``principal``'s latest subject token (once at a time per principal)."""
        lock = self._locks.setdefault(principal, anyio.Lock())
        async with lock:
            held = self._tokens.get(principal)
            if held is not None and held.token != stale and self._fresh(principal):
                return held.token  # exchanged meanwhile
            subject = self._subjects[principal]
            try:
                exchanged = await self._exchange(subject.reveal())
            except (ExchangeFailed, ExchangeUnavailable) as exc:
                self._tokens.pop(principal, None)
                await self._fail(principal, exc)
                raise
            self._tokens[principal] = exchanged
            return exchanged.token

    async def _exchange(self, subject: str) -> _Exchanged:
        async with httpx2.AsyncClient(timeout=HTTP_TIMEOUT, follow_redirects=False) as http:
            try:
                endpoint = await self._token_endpoint(http)
                response = await http.post(endpoint, data=self._form(subject), auth=self._auth())
            except httpx2.HTTPError as exc:
                raise ExchangeUnavailable(self.server, type(exc).__name__) from None
        if response.status_code >= 500:
            raise ExchangeUnavailable(self.server, f"HTTP {response.status_code}")
        if response.status_code != 200:
            raise ExchangeFailed(self.server, _error_of(response, subject))
        try:
            token = OAuthToken.model_validate_json(response.content)
        except ValidationError:
            raise ExchangeUnavailable(self.server, "the token response is malformed") from None
        lifetime = float("inf") if token.expires_in is None else float(token.expires_in)
        return _Exchanged(token.access_token, anyio.current_time() + lifetime)

    def _form(self, subject: str) -> dict[str, str]:
        settings = self.settings
        form = {
            "grant_type": GRANT_TYPE,
            "subject_token": subject,
            "subject_token_type": TOKEN_TYPE + settings.subject_token_type,
            "requested_token_type": TOKEN_TYPE + "access_token",
            "resource": self.resource,
        }
        if settings.audience is not None:
            form["audience"] = settings.audience
        if settings.scopes:
            form["scope"] = " ".join(settings.scopes)
        if settings.client.auth_method == "client_secret_post":
            form |= {"client_id": settings.client.id, "client_secret": self._secret}
        return form

    def _auth(self) -> httpx2.Auth:
        """``client_secret_basic``: the client's id and secret in ``Authorization`` (``_post``:
        in the form, and nothing here)."""
        if self.settings.client.auth_method == "client_secret_basic":
            return httpx2.BasicAuth(self.settings.client.id, self._secret)
        return httpx2.Auth()

    async def _token_endpoint(self, http: httpx2.AsyncClient) -> str:
        """The configured token endpoint, or the one the issuer's metadata names (once)."""
        if self._endpoint is not None:
            return self._endpoint
        issuer = self.settings.issuer
        assert issuer is not None  # one of the two is set (checked at load)
        for url in build_oauth_authorization_server_metadata_discovery_urls(issuer, issuer):
            response = await http.send(create_oauth_metadata_request(url))
            go_on, metadata = await handle_auth_metadata_response(response)
            if metadata is not None:
                validate_metadata_issuer(metadata, issuer)
                self._endpoint = str(metadata.token_endpoint)
                return self._endpoint
            if not go_on:
                break
        raise ExchangeUnavailable(self.server, f"no token endpoint found for issuer {issuer}")

    async def _fail(self, principal: str, exc: LockgateError) -> None:
        kind: Literal["refused", "unavailable"] = (
            "refused" if isinstance(exc, ExchangeFailed) else "unavailable"
        )
        self._failures[principal] = Failure(kind, str(exc))
        await self._record(principal, str(exc))

    async def _record(self, principal: str, reason: str) -> None:
        log.warning("%s: credentials of %s failed: %s", self.server, principal, reason)
        data = {"server": self.server, "principal": principal, "mode": self.mode, "reason": reason}
        await self.record(Event(type="credential.failed", data=data))

    def take_failure(self, principal: str) -> Failure | None:
        """What went wrong in ``principal``'s last exchange or upstream request, once."""
        return self._failures.pop(principal, None)

    def forget(self, principal: str) -> None:
        """Drop ``principal``'s exchanged token (the next call exchanges anew)."""
        self._tokens.pop(principal, None)

    # `TokenSource` (what `GrantAuth` asks on each of the connection's requests): never raises.

    async def request_token(self, principal: str) -> str | None:
        if self._fresh(principal) or principal not in self._subjects:
            return self._valid(principal)
        try:
            return await self._renew(principal)
        except (ExchangeFailed, ExchangeUnavailable):
            return None

    async def unauthorized(self, principal: str, used: str) -> str | None:
        if principal not in self._subjects:
            return None
        try:
            return await self._renew(principal, stale=used)
        except (ExchangeFailed, ExchangeUnavailable):
            return None

    async def _rejected(self, principal: str, reason: str) -> None:
        self._tokens.pop(principal, None)
        message = (
            f"{self.server!r} refused the token the identity provider exchanged for you "
            f"({reason}): ask an operator to check that {self.server!r} accepts the provider's "
            "tokens and the scopes in its credentials.exchange"
        )
        self._failures[principal] = Failure("rejected", message)
        await self._record(principal, reason)

    async def rejected(self, principal: str) -> None:
        await self._rejected(principal, "401")

    async def step_up(self, principal: str, scope: str | None) -> None:
        wanted = f"the scope {scope!r}" if scope else "a larger scope"
        await self._rejected(principal, f"403 insufficient_scope: it needs {wanted}")


def _error_of(response: httpx2.Response, subject: str) -> str:
    """The provider's ``error`` (and a short description) of a refused exchange; never any
    part of the subject token."""
    try:
        body = response.json()
    except ValueError:
        return f"HTTP {response.status_code}"
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, str) or not error.isprintable():
        return f"HTTP {response.status_code}"
    described = body.get("error_description")
    if isinstance(described, str) and described.isprintable() and subject not in described:
        return f"{error}: {described[:MAX_DESCRIPTION]}"
    return error[:MAX_DESCRIPTION]
