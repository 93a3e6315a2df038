"""`BrowserSignin`: a browser signs in at the configured OpenID Connect provider (authorization
code flow with PKCE S256, ``state`` bound to the browser by a cookie, ``nonce`` checked in the
ID token) before a connect link or the Connections page does anything.

The signed-in principal is ``connect.signin.id_prefix`` + the ID token's ``sub`` (give it the
prefix the agents' ``auth.jwt`` issuer uses, so that the browser's user is the agents' principal).
With ``connect.signin.tenant_claim``, the ID token's claim of that name is the principal's tenant,
and the session names the tenant-qualified principal (`principal_key`), as the vault keys it.
The session is a cookie the gateway signs (HMAC-SHA256 with ``connect.signin.session_key``, or a
key derived from the vault's current key: every replica accepts it and a restart keeps it),
``HttpOnly``, ``SameSite=Lax``, ``Secure`` (and ``__Host-``) when the gateway is served
over HTTPS; it never holds a token of the provider.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import html
import secrets
import time
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlencode

import anyio
import httpx2
import jwt
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from gateway.auth.jwks import JwksKeys
from gateway.config.connect import SigninConfig
from gateway.config.jwt import resolve_value
from gateway.connect.page import HEADERS, page
from gateway.vault.cipher import Keyring
from toolsets.context import Principal
from toolsets.upstream.per_principal import principal_key

__all__ = ["CALLBACK", "BrowserSignin", "session_key"]

CALLBACK: Final = "/connect/signin/callback"
SESSION_TTL: Final = 8 * 3600.0
PENDING_TTL: Final = 600.0
_FETCH_TIMEOUT: Final = 10.0


@dataclass(frozen=True, slots=True)
class _Pending:
    verifier: str
    nonce: str
    back_to: str
    expires_at: float


class BrowserSignin:
    """OpenID Connect sign-in of the browser, for connect links and the Connections page.

    Args:
        config: ``connect.signin``.
        base_url: The gateway's URL as browsers reach it.
        key: The key sessions are signed with (shared by replicas).
    """

    def __init__(self, config: SigninConfig, base_url: str, key: bytes) -> None:
        self.config, self.base_url = config, base_url.rstrip("/")
        self.redirect_uri = self.base_url + CALLBACK
        secure = self.base_url.startswith("https://")
        self.cookie = "__Host-lockgate_session" if secure else "lockgate_session"
        self.state_cookie = "__Host-lockgate_signin" if secure else "lockgate_signin"
        self.secure = secure
        self._key = key
        self._pending: dict[str, _Pending] = {}
        self._metadata: dict[str, Any] | None = None
        self._keys: JwksKeys | None = None
        self._lock = anyio.Lock()

    def routes(self) -> list[BaseRoute]:
        return [Route(CALLBACK, self.callback, methods=["GET"])]

    def subject(self, request: Request) -> str | None:
        """The principal signed in on this browser, or None."""
        raw = request.cookies.get(self.cookie, "")
        body, _, mac = raw.rpartition(".")
        if not body or not hmac.compare_digest(mac, self._mac(body)):
            return None
        encoded, _, expires = body.rpartition(".")
        if not expires.isdigit() or int(expires) < time.time():
            return None
        return base64.urlsafe_b64decode(encoded.encode()).decode()

    async def start(self, request: Request) -> Response:
        """Send the browser to the provider, to come back to this request's URL."""
        try:
            metadata = await self._discovered()
        except (httpx2.HTTPError, KeyError, ValueError) as exc:
            text = f"the identity provider {self.config.issuer} cannot be reached ({exc})"
            return page("Not signed in", f'<p id="error">{html.escape(text)}</p>', 502)
        now = time.time()
        self._pending = {k: v for k, v in self._pending.items() if v.expires_at > now}
        state, nonce = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        verifier = secrets.token_urlsafe(48)  # RFC 7636: 43 to 128 characters
        path = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        self._pending[state] = _Pending(verifier, nonce, path, now + PENDING_TTL)
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
        query = {
            "response_type": "code",
            "client_id": self.config.client_id,
            "redirect_uri": self.redirect_uri,
            "scope": " ".join(self.config.scopes),
            "state": state,
            "nonce": nonce,
            "code_challenge": challenge.decode().rstrip("="),
            "code_challenge_method": "S256",
        }
        target = f"{metadata['authorization_endpoint']}?{urlencode(query)}"
        response = RedirectResponse(target, status_code=303, headers=HEADERS)
        self._set(response, self.state_cookie, state, PENDING_TTL)
        return response

    async def callback(self, request: Request) -> Response:
        """The provider's redirect back: the code exchanged, the session cookie set."""
        params = request.query_params
        state = params.get("state", "")
        pending = self._pending.pop(state, None)
        bound = request.cookies.get(self.state_cookie, "")
        if pending is None or not hmac.compare_digest(bound, state) or "code" not in params:
            error = params.get("error", "the sign-in was not started here, or it expired")
            return page("Not signed in", f'<p id="error">{html.escape(error)}</p>', 400)
        try:
            subject = await self._subject(params["code"], pending)
        except (httpx2.HTTPError, jwt.PyJWTError, KeyError, ValueError) as exc:
            text = f"the sign-in at {self.config.issuer} failed: {type(exc).__name__} {exc}"
            return page("Not signed in", f'<p id="error">{html.escape(text)}</p>', 502)
        response = RedirectResponse(self.base_url + pending.back_to, 303, headers=HEADERS)
        expires = int(time.time() + SESSION_TTL)
        body = f"{base64.urlsafe_b64encode(subject.encode()).decode()}.{expires}"
        self._set(response, self.cookie, f"{body}.{self._mac(body)}", SESSION_TTL)
        response.delete_cookie(self.state_cookie, path="/")
        return response

    async def _subject(self, code: str, pending: _Pending) -> str:
        """The principal of the ID token the code is exchanged for (signature, issuer,
        audience, expiry and nonce checked)."""
        metadata = await self._discovered()
        form = {"grant_type": "authorization_code", "code": code}
        form |= {"redirect_uri": self.redirect_uri, "code_verifier": pending.verifier}
        secret = self.config.client_secret
        async with httpx2.AsyncClient(timeout=_FETCH_TIMEOUT) as http:
            if secret:  # client_secret_basic
                auth = httpx2.BasicAuth(self.config.client_id, resolve_value(secret))
                answer = await http.post(metadata["token_endpoint"], data=form, auth=auth)
            else:  # a public client names itself
                form["client_id"] = self.config.client_id
                answer = await http.post(metadata["token_endpoint"], data=form)
        if answer.status_code != 200:  # the provider's error code and text (never a token)
            found = answer.json() if "json" in answer.headers.get("content-type", "") else {}
            raise ValueError(f"{found.get('error')}: {found.get('error_description')}")
        id_token = str(answer.json()["id_token"])
        header = jwt.get_unverified_header(id_token)
        assert self._keys is not None
        keys = await self._keys.keys_for(header.get("kid"), str(header.get("alg")))
        if not keys:
            raise ValueError("no key verifies the ID token")
        claims = jwt.decode(
            id_token,
            key=keys[0],
            algorithms=[str(header.get("alg"))],
            audience=self.config.client_id,
            issuer=self.config.issuer,
        )
        if not hmac.compare_digest(str(claims.get("nonce", "")), pending.nonce):
            raise ValueError("the ID token's nonce is not this sign-in's")
        principal = self.config.id_prefix + str(claims["sub"])
        claim = self.config.tenant_claim
        if claim is None:
            return principal
        tenant = claims.get(claim)
        if not isinstance(tenant, str) or not tenant:
            raise ValueError(f"the ID token has no {claim!r} claim (connect.signin.tenant_claim)")
        return principal_key(Principal(id=principal, tenant=tenant))

    async def _discovered(self) -> dict[str, Any]:
        async with self._lock:
            if self._metadata is None:
                url = self.config.issuer.rstrip("/") + "/.well-known/openid-configuration"
                async with httpx2.AsyncClient(timeout=_FETCH_TIMEOUT) as http:
                    found = await http.get(url)
                    found.raise_for_status()
                metadata: dict[str, Any] = found.json()
                self._keys = JwksKeys(metadata["jwks_uri"], max_age=3600, min_refresh=5)
                self._metadata = metadata
            return self._metadata

    def _mac(self, body: str) -> str:
        return hmac.new(self._key, body.encode(), hashlib.sha256).hexdigest()

    def _set(self, response: Response, name: str, value: str, max_age: float) -> None:
        response.set_cookie(
            name,
            value,
            max_age=int(max_age),
            path="/",
            secure=self.secure,
            httponly=True,
            samesite="lax",
        )


_SESSION_PURPOSE: Final = b"lockgate/connect-session/v1"


def session_key(config: SigninConfig, keyring: Keyring) -> bytes:
    """The key browser sessions are signed with: derived from ``connect.signin.session_key``
    when set, else from the vault's current key (``keyring``); never either key itself.

    Raises:
        ValueError: the variable is not set, or the secret is shorter than 32 characters.
    """
    if config.session_key is None:
        return keyring.derived(_SESSION_PURPOSE)
    value = resolve_value(config.session_key)
    if len(value) < 32:
        raise ValueError(
            "connect.signin.session_key is shorter than 32 characters: give a longer secret "
            "(e.g. `openssl rand -hex 32`)"
        )
    return hmac.new(value.encode(), _SESSION_PURPOSE, hashlib.sha256).digest()
