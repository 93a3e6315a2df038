"""Who is calling and through what: the context every toolset method receives."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from toolsets.decision import Decision
from toolsets.upstream.peer import Capability, ClientPeer

if TYPE_CHECKING:
    from toolsets.upstream.tasks import TaskAsk

__all__ = [
    "ANONYMOUS",
    "Bearer",
    "CallContext",
    "ClientInfo",
    "ElicitCallback",
    "Principal",
    "ProgressCallback",
]


class ElicitCallback(Protocol):
    """Asks the calling user through MCP elicitation; returns ``(action, content)``.

    ``action`` is ``accept``, ``decline`` or ``cancel``; ``content`` the form's answers.
    """

    async def __call__(
        self, message: str, schema: Mapping[str, Any]
    ) -> tuple[str, Mapping[str, Any] | None]: ...


class ProgressCallback(Protocol):
    """Receives progress of a running call (forwarded to the client when it asked for progress)."""

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None: ...


class Bearer:
    """The bearer token a caller presented at the edge (a JWT ``auth.jwt`` accepted), held only
    for the token exchange (``credentials.mode: token_exchange``): it never prints, compares,
    copies or pickles as its value; `reveal` is the one way to read it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        """The token itself: for the token endpoint's request body, nowhere else."""
        return self._value

    def __repr__(self) -> str:
        return "Bearer(<redacted>)"

    __str__ = __repr__

    def __copy__(self) -> Bearer:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Bearer:
        return self

    def __reduce__(self) -> Any:
        raise TypeError("a caller's bearer token is never serialized")


@dataclass(frozen=True, slots=True, kw_only=True)
class Principal:
    """An authenticated caller (agent or user) as resolved at the edge.

    Attributes:
        id: Stable identifier, for example ``agent:ci-bot``.
        roles: Roles granted by configuration.
        claims: Extra attributes (token claims) visible to policy conditions.
        tenant: The partition the principal belongs to, if any: its calls and events are seen
            only by approvers and subscribers of the same tenant (none sees none's).
        scopes: The OAuth scopes its token holds (a JWT's ``scope``/``scp``); empty for a
            static token, stdio and in-process callers. A policy rule's ``scopes`` reads them.
        connections: The servers with per-caller credentials it has connected, as the chain
            learned them for this call (`gateway.connect`); policies read
            ``principal.connections``.
        bearer: The JWT it presented (`Bearer`), for a ``token_exchange`` upstream; None for a
            static token, stdio and in-process callers. Never in an event, log or record.
    """

    id: str
    roles: frozenset[str] = frozenset()
    claims: Mapping[str, Any] = field(default_factory=dict)
    tenant: str | None = None
    scopes: frozenset[str] = frozenset()
    connections: frozenset[str] = frozenset()
    bearer: Bearer | None = field(default=None, repr=False, compare=False)


ANONYMOUS = Principal(id="anonymous")


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientInfo:
    """What the downstream client speaks and declared.

    Attributes:
        era: ``legacy`` for handshake-era clients (2025-11-25 and before); ``modern``: 2026-07-28.
        protocol_version: The negotiated protocol version, when known.
        elicitation: True when the client declared the elicitation capability.
        elicitation_url: True when it declared URL-mode elicitation (``elicitation.url``):
            it can be sent a link to open (a connect link, `gateway.connect`).
        transport: ``http``, ``stdio`` or ``inprocess``.
        sampling: True when the client declared the sampling capability.
        roots: True when the client declared the roots capability.
        name: The client's own name (its ``clientInfo``), when it gave one: what approvers are
            told is asking (it is the client's claim, not an identity).
        version: The client's version, likewise.
    """

    era: Literal["legacy", "modern"] = "legacy"
    protocol_version: str | None = None
    elicitation: bool = False
    elicitation_url: bool = False
    transport: Literal["http", "stdio", "inprocess"] = "inprocess"
    sampling: bool = False
    roots: bool = False
    name: str | None = None
    version: str | None = None

    def declares(self, capability: Capability) -> bool:
        """Whether the client declared ``capability``."""
        return bool(getattr(self, capability))

    @property
    def relays(self) -> bool:
        """Whether an upstream's request may be relayed to this client (it declared
        elicitation, sampling or roots)."""
        return self.elicitation or self.sampling or self.roots


def new_call_id() -> str:
    """A fresh, unique call id."""
    return uuid.uuid4().hex


@dataclass(frozen=True, slots=True, kw_only=True)
class CallContext:
    """The context of one listing or one call.

    Attributes:
        principal: The caller.
        session_id: The downstream session (MCP session id, or a per-connection id).
        call_id: Unique id of this call; events and pending calls carry it.
        client: The downstream client's protocol facts.
        progress: Where to send progress for this call, when the client asked for it.
        elicit: Asks the calling user a question (MCP elicitation), when the client can answer.
        decision: The policy decision for this call, set by `PolicyToolset` (the wrappers below it
            and the events read it); None above it and for calls no policy saw.
        max_hold: The most seconds the caller will wait for a held call's decision before it is
            answered "pending" (None: the rule's ``hold``). A LangGraph tool asks for 0: it
            pauses the graph with ``interrupt()`` instead of waiting.
        parent_call_id: For a call a script made (``tools.NAME(...)``), the script's call id.
        peer: The downstream client that made the call, as its upstream may reach it
            (requests to the client, log messages); None for in-process callers.
        task: The caller asks for the call to run as a task (`toolsets.upstream.tasks`); an
            upstream tool that supports tasks creates one and records it there.
        inspect_only: A listing made for someone other than the caller (the operator console's
            catalogue "as" a principal): nothing is opened, exchanged or refreshed in the
            principal's name; servers reached over each caller's own connection answer their
            last-known catalogues only.
    """

    principal: Principal = ANONYMOUS
    session_id: str | None = None
    call_id: str = field(default_factory=new_call_id)
    client: ClientInfo = field(default_factory=ClientInfo)
    progress: ProgressCallback | None = None
    elicit: ElicitCallback | None = None
    decision: Decision | None = None
    max_hold: float | None = None
    parent_call_id: str | None = None
    peer: ClientPeer | None = None
    task: TaskAsk | None = None
    inspect_only: bool = False

    def hold_for(self, hold: float) -> float:
        """A rule's ``hold``, capped by the caller's ``max_hold``."""
        return hold if self.max_hold is None else min(hold, self.max_hold)
