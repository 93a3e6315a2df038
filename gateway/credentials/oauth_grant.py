"""`Grant`: what the vault keeps of one principal's OAuth connection to one server (sealed as one
JSON line): the tokens, when the access token expires, the client that obtained them and the
authorization server's endpoints, so any replica can use, refresh and revoke it.

Only `Grant.public` (the connection's scopes, expiry and status) is ever shown or published.
"""

from __future__ import annotations

import time
from typing import Any, Literal

from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import BaseModel, ConfigDict

__all__ = ["EXPIRY_MARGIN", "Grant"]

EXPIRY_MARGIN = 30.0
"""An access token this close to its expiry (seconds) is refreshed before use."""


class Grant(BaseModel):
    """One principal's tokens for one server, and how to refresh and revoke them.

    Attributes:
        token: The token response (access and refresh tokens, scope).
        expires_at: When the access token expires (unix time), None when the server gave no
            ``expires_in``.
        connected_at: When the user connected (kept across refreshes: a new connect makes a new
            upstream connection, a refresh does not).
        client: The client the tokens were issued to (its secret, if any, stays sealed here).
        issuer: The authorization server's issuer.
        token_endpoint: Where the tokens are refreshed.
        revocation_endpoint: Where they are revoked (RFC 7009), when the server has one.
        resource: The RFC 8707 resource indicator the tokens are bound to.
        status: ``ok``, or ``reconnect`` once they can no longer be used (`reason` says why).
        reason: Why the user has to connect again (no token value).
        wanted_scope: The scope the next connect adds (an ``insufficient_scope`` named it).
        stepped_up: An ``insufficient_scope`` asked for more: the next connect adds
            ``wanted_scope`` or, the challenge naming none, the scopes the upstream's resource
            metadata lists (the MCP scope selection).
    """

    model_config = ConfigDict(extra="ignore", hide_input_in_errors=True)

    token: OAuthToken
    expires_at: float | None = None
    connected_at: float = 0.0
    client: OAuthClientInformationFull
    issuer: str
    token_endpoint: str
    revocation_endpoint: str | None = None
    resource: str | None = None
    status: Literal["ok", "reconnect"] = "ok"
    reason: str | None = None
    wanted_scope: str | None = None
    stepped_up: bool = False

    def __repr__(self) -> str:
        return f"Grant(issuer={self.issuer!r}, status={self.status!r})"

    __str__ = __repr__

    @classmethod
    def issued(cls, token: OAuthToken, **rest: Any) -> Grant:
        """A grant of ``token`` just received (its expiry counted from now)."""
        now = time.time()
        expires = None if token.expires_in is None else now + token.expires_in
        return cls(token=token, expires_at=expires, connected_at=now, **rest)

    def refreshed(self, token: OAuthToken) -> Grant:
        """This grant with ``token``, a refresh response (which may leave out the scope and
        the refresh token: they stay, RFC 6749 section 6)."""
        kept = token.model_copy(
            update={
                "scope": token.scope or self.token.scope,
                "refresh_token": token.refresh_token or self.token.refresh_token,
            }
        )
        expires = None if kept.expires_in is None else time.time() + kept.expires_in
        return self.model_copy(update={"token": kept, "expires_at": expires})

    def broken(
        self, reason: str, *, stepped_up: bool = False, wanted_scope: str | None = None
    ) -> Grant:
        """This grant marked unusable: the user has to connect again (``stepped_up``: with
        a larger scope, ``wanted_scope`` when the upstream named it)."""
        return self.model_copy(
            update={
                "status": "reconnect",
                "reason": reason,
                "stepped_up": stepped_up or self.stepped_up,
                "wanted_scope": wanted_scope or self.wanted_scope,
            }
        )

    def fresh(self, *, margin: float = EXPIRY_MARGIN) -> bool:
        """The access token can be used now (not within ``margin`` seconds of its expiry)."""
        return self.expires_at is None or time.time() + margin < self.expires_at

    @property
    def usable(self) -> bool:
        return self.status == "ok"

    def public(self) -> dict[str, object]:
        """What may be shown of it: scopes, expiry, status (never a token)."""
        data: dict[str, object] = {"scopes": (self.token.scope or "").split()}
        data["expires_at"] = self.expires_at
        data["status"] = self.status
        if self.reason is not None:
            data["reason"] = self.reason
        return data

    def dump(self) -> str:
        """One JSON line, for the vault."""
        return self.model_dump_json(exclude_none=True)

    @classmethod
    def load(cls, sealed: str) -> Grant:
        return cls.model_validate_json(sealed)
