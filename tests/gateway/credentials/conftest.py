"""Fixtures of the credentials suite: the OAuth-protected upstream, trusting the ``provider``
fixture each OAuth module defines (its redirect URIs and token lifetimes are its own)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from oauth import Provider, Upstream, protected_upstream


@pytest.fixture(scope="module")
async def upstream(provider: Provider) -> AsyncIterator[Upstream]:
    """The MCP SDK's protected test server, validating the module provider's tokens."""
    async with protected_upstream(provider.issuer) as running:
        yield running
