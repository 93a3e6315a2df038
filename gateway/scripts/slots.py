"""`RunSlots`: how many runs of scripts and hooks go on at once, gateway-wide, per principal and
per top-level call, and (`CallTree`) how many sub-calls the runs of one top-level call make.

A script keeps its sandbox worker while it waits for a sub-call, so runs nested through
sub-calls that waited for a worker would wait for workers their own ancestors hold: scripts
fanning out through each other would take every worker for good. So a run a sub-call started
never waits: past a bound it fails at once, its callers read the error and end, and their workers
return to the pool. A top-level call's run holds nothing yet: it waits for a slot, at most
``sandbox.checkout_timeout``. Every refusal names the bound and its config key.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio

from gateway.config.scripts import SandboxConfig
from gateway.scripts.runtime import ScriptFailed

__all__ = ["CallTree", "RunSlots"]


@dataclass
class CallTree:
    """The runs of one top-level call: the script or hook it started and every run its
    sub-calls reached, with what they use together."""

    principal: str
    max_sub_calls: int
    tenant: str | None = None
    runs: int = 0
    sub_calls: int = 0

    def take_sub_call(self) -> str | None:
        """Count one sub-call; the limit it went over, if it did."""
        self.sub_calls += 1
        if self.sub_calls <= self.max_sub_calls:
            return None
        limit = f"{self.max_sub_calls}, sandbox.sub_calls_per_call"
        return f"the sub-call limit of its top-level call ({limit})"


class RunSlots:
    """The run slots of one gateway (one per worker of its sandbox)."""

    def __init__(self, config: SandboxConfig) -> None:
        self._config = config
        self._running = 0
        self._by_principal: Counter[tuple[str | None, str]] = Counter()
        """Runs by (tenant, principal): the same id in two tenants is two principals."""
        self._freed = anyio.Event()

    def tree(self, principal: str, tenant: str | None = None) -> CallTree:
        """A new top-level call's tree of runs, made by ``principal`` of ``tenant``."""
        return CallTree(principal, self._config.sub_calls_per_call, tenant)

    @asynccontextmanager
    async def slot(self, name: str, tree: CallTree, *, nested: bool) -> AsyncIterator[None]:
        """Hold a slot for a run of ``name`` in ``tree`` while the block runs; ``nested``: a
        sub-call started it (its ancestors hold slots), so it does not wait.

        Raises:
            ScriptFailed: a bound is reached (and, for a top-level run, stayed so for
                ``checkout_timeout`` seconds).
        """
        refusal = self._refusal(tree)
        if refusal is not None and nested:
            raise ScriptFailed(f"{name} was refused: {refusal}", limit="sandbox")
        if refusal is not None:
            with anyio.move_on_after(self._config.checkout_timeout):
                while refusal is not None:
                    await self._freed.wait()
                    refusal = self._refusal(tree)
            if refusal is not None:
                waited = f"{self._config.checkout_timeout:g} s, sandbox.checkout_timeout"
                message = f"{name} was refused: {refusal}; none was free in {waited}"
                raise ScriptFailed(message, limit="sandbox")
        self._running += 1
        who = (tree.tenant, tree.principal)
        self._by_principal[who] += 1
        tree.runs += 1
        try:
            yield
        finally:
            self._running -= 1
            self._by_principal[who] -= 1
            if not self._by_principal[who]:
                del self._by_principal[who]
            tree.runs -= 1
            self._freed.set()
            self._freed = anyio.Event()

    def _refusal(self, tree: CallTree) -> str | None:
        """The bound a new run in ``tree`` would go over, if any."""
        config = self._config
        if tree.runs >= config.runs_per_call:
            return (
                f"one call runs at most {config.runs_per_call} scripts and hooks at once "
                "(sandbox.runs_per_call)"
            )
        if self._by_principal[tree.tenant, tree.principal] >= config.runs_per_principal:
            return (
                f"principal {tree.principal!r} runs at most {config.runs_per_principal} "
                "scripts and hooks at once (sandbox.runs_per_principal)"
            )
        if self._running >= config.max_workers:
            return (
                f"the gateway runs at most {config.max_workers} scripts and hooks at once "
                "(sandbox.max_workers)"
            )
        return None
