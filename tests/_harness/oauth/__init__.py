"""The OAuth test harness: a real authorization server (``oidc-provider`` from npm), an
OAuth-protected upstream MCP server built with the MCP SDK, and Playwright through the
provider's login and consent pages.

Imported by package name (``from oauth import ...``): pytest puts ``tests/_harness`` on
``sys.path``. Typical use::

    async with oidc_provider(tmp_path_factory, redirect_uris=[callback]) as provider:
        async with protected_upstream(provider.issuer) as upstream:
            token = await provider.user_token("alice", upstream.url)
"""

from oauth.browser import browser_login, chromium, new_page
from oauth.provider import (
    ACCESS_TOKEN_TYPE,
    CLIENT_ID,
    CLIENT_SECRET,
    SCOPES,
    TOKEN_EXCHANGE,
    USERS,
    Provider,
    oidc_provider,
    provider_package,
)
from oauth.upstream import NOTES, Seen, Upstream, protected_upstream

__all__ = [
    "ACCESS_TOKEN_TYPE",
    "CLIENT_ID",
    "CLIENT_SECRET",
    "NOTES",
    "SCOPES",
    "TOKEN_EXCHANGE",
    "USERS",
    "Provider",
    "Seen",
    "Upstream",
    "browser_login",
    "chromium",
    "new_page",
    "oidc_provider",
    "protected_upstream",
    "provider_package",
]
