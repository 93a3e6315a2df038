"""A function tool that logs while it runs (``logging_functions:noisy``): the record is written
inside the call, where the call's span is current, so a JSON log line must carry its ids."""

from __future__ import annotations

import logging

SECRET = "sk-ant-api03-" + "L" * 40
"""Logged by `noisy` (as an ``api_key`` field and inside the message): no log line may show it."""
log = logging.getLogger("lockgate.test.noisy")


async def noisy(text: str) -> str:
    """Log one warning, then echo the text."""
    log.warning("noisy called with key %s", SECRET, extra={"api_key": SECRET, "chars": len(text)})
    return text
