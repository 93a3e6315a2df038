"""`Query`: the one filter shape every backend answers (newest first)."""

from __future__ import annotations

from dataclasses import dataclass

from gateway.approvals.pending import Kind, PendingCall, State


@dataclass(frozen=True, slots=True, kw_only=True)
class Query:
    """Which pending calls to return; ``None`` means "any".

    Attributes:
        states: Allowed states.
        kind: Required kind.
        principal: Required principal id.
        session_id: Required session id.
        tool: Required exposed tool name.
        args_sha256: Required argument hash.
        delivered: Required ``delivered`` flag.
        due_by: Only calls with ``expires_at <= due_by``.
        created_since: Only calls with ``created_at >= created_since``.
        limit: At most this many, newest first.
    """

    states: frozenset[State] | None = None
    kind: Kind | None = None
    principal: str | None = None
    session_id: str | None = None
    tool: str | None = None
    args_sha256: str | None = None
    delivered: bool | None = None
    due_by: float | None = None
    created_since: float | None = None
    limit: int | None = None

    def equalities(self) -> dict[str, str | bool]:
        """The column filters that are plain equality tests."""
        candidates = {
            "kind": self.kind,
            "principal": self.principal,
            "session_id": self.session_id,
            "tool": self.tool,
            "args_sha256": self.args_sha256,
            "delivered": self.delivered,
        }
        return {k: v for k, v in candidates.items() if v is not None}

    def matches(self, call: PendingCall) -> bool:
        """True when ``call`` passes every filter (``limit`` aside)."""
        if self.states is not None and call.state not in self.states:
            return False
        if self.due_by is not None and call.expires_at > self.due_by:
            return False
        if self.created_since is not None and call.created_at < self.created_since:
            return False
        return all(getattr(call, k) == v for k, v in self.equalities().items())
