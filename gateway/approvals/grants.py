"""`Grant`: an approval that reaches beyond one call, for a session or a tool, for a while."""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Final, Literal

from gateway.approvals.errors import GrantConflict

__all__ = ["Grant", "GrantRequest", "GrantedScope", "Match"]

GrantedScope = Literal["session", "tool"]
"""The scopes a grant can have (``once`` makes no grant: it is a plain approval)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class GrantRequest:
    """What an approver asked for along with an approval.

    Attributes:
        scope: ``session`` (later calls in the caller's session) or ``tool`` (later calls of
            the tool).
        duration: Seconds the grant lasts; None: the rule's ``grant_max``.
        principal: For ``tool``: only calls by the same caller (a session grant always is).
    """

    scope: GrantedScope
    duration: float | None = None
    principal: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Match:
    """A later call a grant may answer: what the policy decided for it, and who makes it.

    Attributes:
        tool: The exposed tool.
        server: The tool's server (a held resource read's tool, ``resources/read``, is every
            server's: the server tells them apart).
        rule_id: The rule whose ``ask`` the call got (None: the policy's default).
        principal: The caller's id.
        session_id: The caller's session, when known.
        tenant: The caller's tenant.
        scopes: The scopes the rule offers now (a grant whose scope it no longer offers is
            not used).
        now: Unix seconds.
    """

    tool: str
    server: str
    rule_id: str | None
    principal: str
    session_id: str | None
    tenant: str | None
    scopes: tuple[str, ...]
    now: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Grant:
    """A standing approval: later calls it covers are allowed without asking, until it
    expires or is revoked.

    Attributes:
        id: Unguessable id (``gr_...``).
        scope: ``session`` or ``tool``.
        tool: The exposed tool it covers.
        server: The tool's server.
        rule_id: The rule whose ``ask`` it answers.
        principal: The only caller it covers (always set for ``session``), or None: anyone of
            the tenant.
        session_id: For ``session``: the session it covers.
        created_by: The approver who made it.
        created_at: Unix seconds.
        expires_at: Unix seconds.
        revoked_by: Who revoked it, once revoked.
        revoked_at: When it was revoked.
        approval_id: The approved call that made it.
        tenant: The tenant of that call (a grant never reaches across tenants).
    """

    id: str
    scope: GrantedScope
    tool: str
    server: str
    rule_id: str | None
    principal: str | None
    session_id: str | None
    created_by: str
    created_at: float
    expires_at: float
    approval_id: str
    tenant: str | None = None
    revoked_by: str | None = None
    revoked_at: float | None = None

    @staticmethod
    def new_id() -> str:
        """A fresh grant id."""
        return "gr_" + secrets.token_urlsafe(12)

    def active(self, now: float) -> bool:
        """Neither revoked nor expired at ``now``."""
        return self.revoked_at is None and now < self.expires_at

    def revoked(self, *, by: str, at: float) -> Grant:
        """This grant revoked by ``by`` at ``at``: the compare-and-set every store applies.

        Raises:
            GrantConflict: it was revoked already, or it expired.
        """
        if self.revoked_at is not None:
            raise GrantConflict(self, f"was revoked already by {self.revoked_by}")
        if at >= self.expires_at:
            raise GrantConflict(self, "expired")
        return replace(self, revoked_by=by, revoked_at=at)

    def covers(self, match: Match) -> bool:
        """Whether this grant answers the call ``match`` describes."""
        if not self.active(match.now) or self.scope not in match.scopes:
            return False
        mine = (self.tool, self.server, self.rule_id, self.tenant)
        if mine != (match.tool, match.server, match.rule_id, match.tenant):
            return False
        if self.principal is not None and self.principal != match.principal:
            return False
        return self.scope == "tool" or self.session_id == match.session_id

    def to_json(self) -> dict[str, Any]:
        """The grant as the API serves it (and the stores keep it)."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Grant:
        """Rebuild a grant from `to_json` output.

        Raises:
            ValueError: a key is missing or unknown, or the scope is not known.
        """
        if unknown := set(data) - _NAMES:
            raise ValueError(f"Unknown grant keys: {sorted(unknown)}")
        if data.get("scope") not in {"session", "tool"}:
            raise ValueError(f"Invalid grant scope {data.get('scope')!r}")
        try:
            return cls(**data)
        except TypeError as exc:
            raise ValueError(f"Invalid grant record: {exc}") from None


_NAMES: Final = frozenset(f.name for f in fields(Grant))
