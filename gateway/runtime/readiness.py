"""`Readiness`: when a gateway's upstreams are ready enough to serve its first listing or call."""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping

import anyio

from policies import PolicyHolder
from toolsets.abstract import Toolset
from toolsets.context import CallContext
from toolsets.errors import LockgateError
from toolsets.upstream.server import MCPServerToolset

__all__ = ["Readiness"]

log = logging.getLogger("lockgate")


class Readiness:
    """The first listing, call or decision waits (until ``startup_wait`` after start) for
    upstreams still making their first connection; later ones join with list_changed.

    Args:
        upstreams: The upstream toolsets by server name.
        startup_wait: How long after `start` the first use waits for them, in seconds.
        served: The served catalogue (its names are checked against the policy once warm).
        policy: The policy in force.
    """

    def __init__(
        self,
        upstreams: Mapping[str, MCPServerToolset],
        *,
        startup_wait: float,
        served: Toolset,
        policy: PolicyHolder,
    ) -> None:
        self._upstreams = upstreams
        self._startup_wait = startup_wait
        self._served = served
        self._policy = policy
        self._warm = False
        self._warm_by = 0.0

    @property
    def warm(self) -> bool:
        """Whether the first use has waited (until then nobody has listed)."""
        return self._warm

    def start(self) -> None:
        """The upstreams started connecting: ``startup_wait`` counts from now."""
        self._warm_by = anyio.current_time() + self._startup_wait

    async def wait_ready(self, timeout: float | None = None) -> bool:
        """Wait until every upstream made its first connection attempt (at most ``timeout``
        seconds; default: the longest ``connect_timeout``); True when all are up."""
        upstreams = self._upstreams.values()
        longest = max((u.connect_timeout for u in upstreams), default=0.0)
        with anyio.move_on_after(longest + 1 if timeout is None else timeout):
            async with anyio.create_task_group() as tg:
                for upstream in upstreams:
                    tg.start_soon(upstream.wait_ready, math.inf)
        return all(u.status == "up" for u in upstreams)

    async def warm_up(self) -> None:
        """The first time, wait for upstreams still connecting (see the class docstring)."""
        if not self._warm:
            await self.wait_ready(max(self._warm_by - anyio.current_time(), 0.0))
            self._warm = True
            await self.check_policy_names()

    async def check_policy_names(self) -> None:
        """Tool names the policy's session options name must exist (logged with their place
        in the policy file; a gate on a missing tool never opens)."""
        try:
            names = (await self._served.get_tools(CallContext())).keys()
        except LockgateError:  # a colliding catalogue: listings say so
            return
        for issue in self._policy.current.check_tool_names(names):
            log.error("policy: %s (is its server down?)", issue)
