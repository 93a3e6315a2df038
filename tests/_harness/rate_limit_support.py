"""Helpers for the rate-limit tests: the policy step, the rate-limit step and local tools wired
as `gateway.wiring.compose` wires them, over a clock the test moves.

Imported by module name (``import rate_limit_support``): pytest puts this directory on
``sys.path``. Everything is real: the policy engine on the fixture files, the in-memory counter,
the event bus (the step's observer is the gateway's `BusObserver`) and the metrics it feeds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from policy_support import FIXTURES
from support import call

from gateway.approvals.refusals import Refusals
from gateway.events.bus import EventBus
from gateway.events.calls import BusObserver
from gateway.events.model import Event
from gateway.events.recorder import Recorder
from gateway.memory.rate_counter import MemoryRateCounter
from gateway.memory.sessions import MemorySessionStore
from gateway.metrics import Metrics
from gateway.sessions.book import SessionBook
from policies import PolicyDecider, PolicyHolder
from policies.session import SessionState
from toolsets.abstract import Toolset
from toolsets.context import CallContext, Principal
from toolsets.events import EventsToolset
from toolsets.functions.toolset import FunctionToolset
from toolsets.policy import PolicyToolset
from toolsets.prefixed import PrefixedToolset
from toolsets.rate_limited import RateLimitedToolset
from toolsets.result import ToolResult

LIMITS = FIXTURES / "limits" / "limits.yaml"
START = 1_800_000_000.0
"""Where the test clock starts (seconds since the epoch)."""
CRM_TOOLS = ("search", "export", "get_record", "get_contact", "ping", "update", "note")


class Clock:
    """Wall time as the test says: it moves only when `advance` is called."""

    def __init__(self, now: float = START) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class Limited:
    """A chain ``Policy -> RateLimited -> Events -> crm__* tools``, and what it did.

    Attributes:
        root: The top of the chain.
        clock: The rate-limit step's clock.
        runs: The tools that ran, in order (what the "upstream" saw).
        events: Every event published, in order.
        metrics: Metrics tracking the bus.
        sessions: Session states, as the policy reads them.
    """

    root: Toolset
    clock: Clock
    runs: list[str]
    sessions: SessionBook
    metrics: Metrics
    events: list[Event] = field(default_factory=list)

    async def call(
        self,
        tool: str,
        principal: str = "agent:a",
        *,
        session: str | None = None,
        args: Mapping[str, Any] | None = None,
    ) -> ToolResult:
        """Call ``crm__{tool}`` as ``principal`` in ``session``."""
        ctx = CallContext(principal=Principal(id=principal), session_id=session)
        await self.sessions.ensure(ctx)
        return await call(self.root, f"crm__{tool}", args or {}, ctx)

    def session(self, principal: str = "agent:a", session: str | None = None) -> SessionState:
        """The state of ``principal``'s ``session``."""
        ctx = CallContext(principal=Principal(id=principal), session_id=session)
        return self.sessions.get(ctx)

    def of_type(self, kind: str) -> list[Event]:
        """The events of type ``kind``."""
        return [event for event in self.events if event.type == kind]

    def limited(self, rule: str, mode: str = "enforce") -> float:
        """``lockgate_rate_limited_calls_total{rule, mode}``."""
        sample = self.metrics.registry.get_sample_value(
            "lockgate_rate_limited_calls_total", {"rule": rule, "mode": mode}
        )
        return sample or 0.0


def _tools(runs: list[str]) -> FunctionToolset:
    def tool(name: str) -> Any:
        def run(count: int = 0) -> str:
            runs.append(name)
            return f"{name} ran"

        run.__doc__ = f"The {name} tool."
        run.__name__ = name
        return run

    return FunctionToolset([tool(name) for name in CRM_TOOLS], server="crm")


def limited_chain(counter: MemoryRateCounter | None = None) -> Limited:
    """The limits fixture's policy over the crm tools, in the order of `gateway.wiring.compose`."""
    runs: list[str] = []
    bus = EventBus("test")
    observer = BusObserver(bus)
    sessions = SessionBook(MemorySessionStore())
    decider = PolicyDecider(PolicyHolder.load([LIMITS]), sessions)
    clock = Clock()
    chain: Toolset = EventsToolset(PrefixedToolset(_tools(runs), "crm"), observer)
    chain = RateLimitedToolset(chain, counter or MemoryRateCounter(), observer, clock=clock)
    root = PolicyToolset(chain, decider, Refusals(Recorder(bus, None).record))
    limited = Limited(root=root, clock=clock, runs=runs, sessions=sessions, metrics=Metrics())
    bus.add_listener(limited.events.append)
    limited.metrics.track(bus)
    return limited
