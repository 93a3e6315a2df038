"""Per-caller upstream credentials: one provider per non-shared ``credentials.mode``
(``secret``, ``oauth``; ``token_exchange`` next), gathered by server in `Credentials` (see
docs/credentials.md).

``Gateway.parts.credentials.start_connect(server, principal, call_ref=..., return_to=...)`` gives
the URL at which a user connects an ``oauth`` server; the gateway's ``/oauth/callback`` finishes
the flow, stores the tokens in the vault, fires the vault's listeners and publishes
``credential.connected``.
"""

from gateway.credentials.errors import ConnectError, NeedsReconnect, NoConnectFlow
from gateway.credentials.provider import (
    ConnectFlow,
    CredentialProvider,
    Credentials,
    TokenAuthProvider,
)

__all__ = [
    "ConnectError",
    "ConnectFlow",
    "CredentialProvider",
    "Credentials",
    "NeedsReconnect",
    "NoConnectFlow",
    "TokenAuthProvider",
]
