"""Background work that survives failures, such as a store outage: `until_done` tries one piece
of work until it succeeds, `keep_going` repeats a step for ever. Either catches a failure, logs it
once (until the work succeeds again, then says it resumed), backs off (capped, with jitter) and
tries again; only cancellation ends them. A failed background task never tears down the task
group that runs it (and with it the gateway)."""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable
from typing import Final, NoReturn, TypeVar

import anyio

from toolsets.errors import StoreUnavailable

__all__ = ["FIRST_PAUSE", "MAX_PAUSE", "keep_going", "until_done"]

T = TypeVar("T")
log = logging.getLogger("lockgate")

FIRST_PAUSE: Final = 0.1
"""Seconds before the first retry; each further failure doubles it, up to `MAX_PAUSE`."""
MAX_PAUSE: Final = 2.0
"""The longest pause between tries, in seconds (so work resumes soon after a store returns)."""


async def until_done(
    work: Callable[[], Awaitable[T]], *, what: str, logger: logging.Logger = log
) -> T:
    """``work()``'s result, tried again after each failure until it succeeds.

    Args:
        work: What to do; it must be safe to do again after it failed.
        what: Names the work in the log ("expiry sweep").
        logger: Where the failure (once) and the resumption are logged.
    """
    pause, failures = FIRST_PAUSE, 0
    while True:
        try:
            result = await work()
        except Exception as exc:
            failures += 1
            if failures == 1:
                expected = isinstance(exc, StoreUnavailable)  # an outage needs no traceback
                logger.warning(
                    "%s failed (%s); retrying", what, exc or repr(exc), exc_info=not expected
                )
            await anyio.sleep(pause * random.uniform(0.8, 1.2))
            pause = min(pause * 2, MAX_PAUSE)
            continue
        if failures:
            logger.info("%s resumed after %d failed tries", what, failures)
        return result


async def keep_going(
    step: Callable[[], Awaitable[object]],
    *,
    what: str,
    every: float = 0.0,
    logger: logging.Logger = log,
) -> NoReturn:
    """Run ``step`` for ever, ``every`` seconds apart; a failed step is tried again (`until_done`).

    Args:
        step: One round of the work (a sweep, one read).
        what: Names the work in the log.
        every: Seconds between the end of one successful step and the next.
        logger: Where failures and resumptions are logged.
    """
    while True:
        await until_done(step, what=what, logger=logger)
        await anyio.sleep(every)
