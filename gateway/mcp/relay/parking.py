"""`Parking`: 2026-07-28 calls kept running while their client answers an upstream's question.

A 2026-07-28 client is never sent requests: it is asked by answering its ``tools/call`` with
an ``InputRequiredResult`` and re-sends the call with the answers. An upstream's question,
though, comes in the middle of the call (a 2025-11-25 server waits for the answer inside its
tool). So a call from a 2026-07-28 client that declared elicitation, sampling or roots runs in
a task the parking owns, and each request of the client waits for whichever comes first: the
outcome, or questions. Questions answer the request with an ``InputRequiredResult`` whose
``request_state`` is a single-use token naming the parked call (random, bound to the
principal); the re-sent call hands the answers to the waiting upstream and waits again.

A call its client does not come back to within `ANSWER_TTL` is cancelled; a client leaving
while its request waits cancels the call (structural cancellation). Parked calls live in this
process: the re-sent call must reach the same gateway replica.
"""

from __future__ import annotations

import itertools
import logging
import math
import secrets
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Any

import anyio
import anyio.lowlevel
import mcp_types as types
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, REQUEST_TIMEOUT, ErrorData
from pydantic import BaseModel, ValidationError

from gateway.background.owner import TaskOwner
from toolsets.context import CallContext, ProgressCallback
from toolsets.errors import RelayRefused
from toolsets.result import ToolResult
from toolsets.upstream.peer import ClientPeer, method_of, result_type_of

__all__ = ["ANSWER_TTL", "MAX_WAITING", "STATE_PREFIX", "Outcome", "Parking"]

log = logging.getLogger("lockgate.relay")
STATE_PREFIX = "lockgate-relay."
"""How the ``request_state`` of a relayed question starts (approval states never do)."""
KEY_PREFIX = "lockgate_relay_"
"""How the ``input_requests`` keys of relayed questions start."""
ANSWER_TTL = 600.0
"""Seconds a parked call waits for its client to come back with the answers."""
MAX_WAITING = 50
"""Parked calls of one principal that may wait for answers at once; more questions are refused."""

Outcome = ToolResult | types.InputRequiredResult | ErrorData
"""What a ``tools/call`` is answered with (as `gateway.mcp.calls.CallOutcome`)."""
Run = Callable[[CallContext], Awaitable[Outcome]]


class _Question:
    """One upstream request waiting for the client's answer."""

    __slots__ = ("answer", "answered", "error", "key", "request")

    def __init__(self, key: str, request: types.InputRequest) -> None:
        self.key = key
        self.request = request
        self.answered = anyio.Event()
        self.answer: types.InputResponse | None = None
        self.error: Exception | None = None

    def fail(self, reason: str) -> None:
        self.error = RelayRefused("", method_of(self.request), reason)
        self.answered.set()

    def settle(self, response: Any) -> None:
        """Take the client's answer, checked against what was asked."""
        if response is None:
            self.fail("the client re-sent the call without answering this request")
            return
        kind = result_type_of(self.request)
        try:
            if isinstance(response, BaseModel):
                response = response.model_dump(by_alias=True, exclude_none=True)
            self.answer = kind.model_validate(response, by_name=False)
        except ValidationError:
            self.fail(f"the client's answer is not a valid {kind.__name__}")
            return
        self.answered.set()


class _Parked:
    """One parked call: the `ClientPeer` its upstream reaches, attached to one request of the
    client at a time."""

    def __init__(self, principal: str, tool: str) -> None:
        self.principal = principal
        self.tool = tool
        self.scope = anyio.CancelScope()
        self.changed = anyio.Event()
        self.pending: list[_Question] = []  # asked by the upstream, not yet put to the client
        self.asked: list[_Question] = []  # put to the client, waiting for its re-sent call
        self.outcome: Outcome | None = None
        self.expires = math.inf
        self._peer: ClientPeer | None = None
        self._progress: ProgressCallback | None = None
        self._keys = itertools.count(1)

    def attach(self, peer: ClientPeer | None, progress: ProgressCallback | None) -> None:
        """The client's request now waiting: where log messages and progress go."""
        self._peer, self._progress = peer, progress

    @property
    def log_level(self) -> types.LoggingLevel | None:
        return self._peer.log_level if self._peer is not None else None

    async def request(self, request: types.InputRequest) -> types.InputResponse:
        question = _Question(f"{KEY_PREFIX}{next(self._keys)}", request)
        self.pending.append(question)
        self.changed.set()
        await question.answered.wait()
        if question.error is not None:
            raise question.error
        assert question.answer is not None  # set with `answered`
        return question.answer

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        if self._peer is not None:
            await self._peer.log(params)

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        if self._progress is not None:
            await self._progress(progress, total, message)

    def finish(self, outcome: Outcome) -> None:
        self.outcome = outcome
        for question in [*self.pending, *self.asked]:
            question.fail("the call ended")
        self.changed.set()


class Parking(TaskOwner):
    """Parked 2026-07-28 calls (see the module docstring); an async context manager owning
    their tasks.

    Args:
        ttl: Seconds a call waits for its client's answers before it is cancelled.
        max_waiting: Calls of one principal that may wait for answers at once.
    """

    def __init__(self, *, ttl: float = ANSWER_TTL, max_waiting: int = MAX_WAITING) -> None:
        self.ttl = ttl
        self.max_waiting = max_waiting
        self._waiting: dict[str, _Parked] = {}

    @staticmethod
    def owns(state: str | None) -> bool:
        """Whether ``state`` is the ``request_state`` of a relayed question."""
        return state is not None and state.startswith(STATE_PREFIX)

    def wanted(self, ctx: CallContext) -> bool:
        """Whether ``ctx``'s call is parked: a 2026-07-28 client that an upstream may ask."""
        return self._tg is not None and ctx.client.era == "modern" and ctx.client.relays

    async def run(self, run: Run, tool: str, ctx: CallContext) -> Outcome:
        """Run the call ``run(ctx)`` parked: its outcome, or the questions for its client."""
        assert self._tg is not None  # see `wanted`
        parked = _Parked(ctx.principal.id, tool)
        parked.attach(ctx.peer, ctx.progress)
        progress = parked.progress if ctx.progress is not None else None
        self._tg.start_soon(self._drive, parked, run, replace(ctx, peer=parked, progress=progress))
        return await self._attend(parked)

    async def resume(
        self, state: str, responses: Mapping[str, Any] | None, tool: str, ctx: CallContext
    ) -> Outcome:
        """The re-sent call with the client's answers: they go to the waiting upstream, and the
        call's next outcome or questions come back."""
        parked = self._waiting.get(state)
        if parked is None or parked.principal != ctx.principal.id or parked.tool != tool:
            message = (
                "Invalid request_state: no call of yours to this tool waits for these answers "
                f"(answered already, or abandoned after {self.ttl:g} s); call the tool again."
            )
            return ErrorData(code=INVALID_PARAMS, message=message)
        del self._waiting[state]
        parked.scope.deadline = math.inf
        for question in parked.asked:
            question.settle((responses or {}).get(question.key))
        parked.asked = []
        parked.attach(ctx.peer, ctx.progress)
        return await self._attend(parked)

    async def _drive(self, parked: _Parked, run: Run, ctx: CallContext) -> None:
        outcome: Outcome | None = None
        try:
            with parked.scope:
                try:
                    outcome = await run(ctx)
                except Exception:
                    log.exception("a parked call to %s failed", parked.tool)
                    outcome = ErrorData(code=INTERNAL_ERROR, message="Internal server error")
        finally:  # also when the gateway stops: whoever waits for it hears
            if outcome is None:  # cancelled: its client left, or did not come back in time
                message = f"The call was abandoned: its client did not answer in {self.ttl:g} s."
                outcome = ErrorData(code=REQUEST_TIMEOUT, message=message)
            parked.finish(outcome)

    async def _attend(self, parked: _Parked) -> Outcome:
        """Wait, on behalf of the client's request, for the outcome or questions to put to it."""
        try:
            while True:
                while parked.outcome is None and not parked.pending:
                    changed = parked.changed
                    await changed.wait()
                    parked.changed = anyio.Event()
                # Questions asked together (concurrently) are put to the client together.
                await anyio.lowlevel.checkpoint()
                if parked.outcome is not None:
                    return parked.outcome
                if not self._refused(parked):
                    return self._ask(parked)
        except BaseException:  # the client left: structural cancellation
            parked.scope.cancel()
            raise
        finally:
            parked.attach(None, None)

    def _refused(self, parked: _Parked) -> bool:
        """Refuse the pending questions when too many of the principal's calls wait already."""
        now = anyio.current_time()
        for token, waiting in list(self._waiting.items()):
            if waiting.expires <= now:  # its task was cancelled at that deadline
                del self._waiting[token]
        count = sum(
            1 for waiting in self._waiting.values() if waiting.principal == parked.principal
        )
        if count < self.max_waiting:
            return False
        questions, parked.pending = parked.pending, []
        for question in questions:
            question.fail(f"{count} calls of this principal already wait for their answers")
        return True

    def _ask(self, parked: _Parked) -> types.InputRequiredResult:
        """Put the pending questions to the client; the call waits for it to come back."""
        questions, parked.pending = parked.pending, []
        parked.asked = questions
        parked.expires = anyio.current_time() + self.ttl
        parked.scope.deadline = parked.expires
        token = STATE_PREFIX + secrets.token_urlsafe(24)
        self._waiting[token] = parked
        requests = {question.key: question.request for question in questions}
        return types.InputRequiredResult(input_requests=requests, request_state=token)

    def _stopping(self) -> None:
        self._waiting.clear()
