"""Signing keys of a JWT issuer: a static key or secret, or a JWKS fetched over HTTP(S).

A fetched key set is cached for ``jwks_max_age`` (or less, when the server's ``Cache-Control:
max-age`` says so) and fetched again when it is stale or a token names an unknown ``kid``, at
most once per ``jwks_min_refresh`` seconds. A failed fetch is logged once (until a fetch works
again); the keys last fetched stay in use, and with none, tokens are refused until one arrives.
A fetch gets `FETCH_TIMEOUT` seconds and `MAX_JWKS_BYTES`, follows no redirect, and a set
holding a private key is refused whole (as is a configured one).
"""

from __future__ import annotations

import base64
import json
import logging
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

import anyio
import httpx2
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509 import load_pem_x509_certificate
from jwt import PyJWK
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm
from jwt.exceptions import PyJWTError

from gateway.config.jwt import HMAC_MIN_BYTES, JwtIssuerConfig, resolve_value

__all__ = [
    "JwksKeys",
    "KeyRing",
    "SigningKeys",
    "StaticKeys",
    "key_problem",
    "signing_keys",
    "static_ring",
]

logger = logging.getLogger(__name__)

KTY_OF: Final = {"RS": "RSA", "PS": "RSA", "ES": "EC", "Ed": "OKP", "HS": "oct"}
"""Key type by algorithm family (the first two letters of ``alg``)."""
PRIVATE_MEMBERS: Final = frozenset({"d", "p", "q", "dp", "dq", "qi", "oth"})
"""Members only a private RSA, EC or OKP JWK has (RFC 7518 section 6)."""
MAX_JWKS_BYTES: Final = 1 << 20
FETCH_TIMEOUT: Final = 5.0


class KeyRing:
    """Public keys (or an HMAC secret) as JWK dicts, each usable with the algorithms it fits;
    each key is parsed once per algorithm."""

    def __init__(self, keys: tuple[Mapping[str, Any], ...]) -> None:
        self.keys = keys
        self._prepared: dict[tuple[int, str], PyJWK | None] = {}

    @classmethod
    def from_jwks(cls, document: Any) -> KeyRing:
        """The signing keys of a JWK set document (``{"keys": [...]}``).

        Raises:
            ValueError: it is not a JWK set, holds no signing key, or holds a private key (a
                leaked key signs anyone's tokens, and cannot verify one).
        """
        if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
            raise ValueError('not a JWK set (expected {"keys": [...]})')
        keys = tuple(
            k
            for k in document["keys"]
            if isinstance(k, dict) and k.get("use", "sig") == "sig" and "kty" in k
        )
        if not keys:
            raise ValueError("the JWK set holds no signing keys")
        if any(k["kty"] != "oct" and PRIVATE_MEMBERS & k.keys() for k in keys):
            raise ValueError("it holds a private key: give only the public half")
        return cls(keys)

    def knows(self, kid: str | None) -> bool:
        """Whether a key with ``kid`` is here (any key when ``kid`` is None)."""
        return bool(self.keys) if kid is None else any(k.get("kid") == kid for k in self.keys)

    def candidates(self, kid: str | None, alg: str) -> list[PyJWK]:
        """The keys a token with ``kid`` and ``alg`` may be verified with.

        A key without ``kid`` fits any token's; a token without ``kid`` is tried with every key.
        """
        found = []
        for index, jwk in enumerate(self.keys):
            if kid is not None and jwk.get("kid") not in (kid, None):
                continue
            if (prepared := self._prepare(index, jwk, alg)) is not None:
                found.append(prepared)
        return found

    def _prepare(self, index: int, jwk: Mapping[str, Any], alg: str) -> PyJWK | None:
        if (index, alg) not in self._prepared:
            fits = jwk.get("kty") == KTY_OF.get(alg[:2]) and jwk.get("alg", alg) == alg
            try:
                self._prepared[index, alg] = PyJWK(dict(jwk), alg) if fits else None
            except PyJWTError:  # a curve that does not fit ES384, an unusable key...
                self._prepared[index, alg] = None
        return self._prepared[index, alg]


class SigningKeys(Protocol):
    """Where an issuer's keys come from."""

    @property
    def available(self) -> bool:
        """Whether any key is known (else every token of the issuer is refused)."""
        ...

    async def keys_for(self, kid: str | None, alg: str) -> list[PyJWK]:
        """The keys to verify a token with ``kid`` and ``alg`` (fetching when due)."""
        ...

    async def refresh(self) -> str | None:
        """Fetch the keys now, if they are fetched; why that failed, or None."""
        ...


@dataclass(frozen=True)
class StaticKeys:
    """Keys given in the config: nothing to fetch."""

    ring: KeyRing
    available: bool = True

    async def keys_for(self, kid: str | None, alg: str) -> list[PyJWK]:
        return self.ring.candidates(kid, alg)

    async def refresh(self) -> str | None:
        return None


class JwksKeys:
    """A JWKS URL, fetched when due and cached."""

    def __init__(self, url: str, *, max_age: float, min_refresh: float) -> None:
        self.url, self.max_age, self.min_refresh = url, max_age, min_refresh
        self._ring: KeyRing | None = None
        self._expires = 0.0
        self._tried: float | None = None
        self._problem: str | None = None
        self._lock = anyio.Lock()

    @property
    def available(self) -> bool:
        return self._ring is not None

    async def keys_for(self, kid: str | None, alg: str) -> list[PyJWK]:
        if self._due(kid):
            await self.refresh()
        elif self._ring is None and self._lock.locked():
            async with self._lock:  # the first fetch (the gateway's prefetch) is under way
                pass
        return [] if self._ring is None else self._ring.candidates(kid, alg)

    def _due(self, kid: str | None) -> bool:
        now = time.monotonic()
        throttled = self._tried is not None and now - self._tried < self.min_refresh
        stale = self._ring is None or now >= self._expires or not self._ring.knows(kid)
        return stale and not throttled

    async def refresh(self) -> str | None:
        before = self._tried
        async with self._lock:
            if self._tried != before:  # fetched (or tried) by another request meanwhile
                return self._problem
            self._tried = time.monotonic()
            try:
                ring, max_age = await self._fetch()
            except Exception as exc:  # whatever the failure, tokens fail closed; never a crash
                return self._failed(exc)
            if self._problem is not None:
                logger.info("JWKS %s: keys fetched again", self.url)
            self._ring, self._expires, self._problem = ring, self._tried + max_age, None
            return None

    async def _fetch(self) -> tuple[KeyRing, float]:
        headers = {"Accept": "application/json"}
        with anyio.fail_after(FETCH_TIMEOUT):  # the whole fetch, however slowly bytes trickle
            async with (
                httpx2.AsyncClient(timeout=FETCH_TIMEOUT) as client,
                client.stream("GET", self.url, headers=headers) as response,
            ):
                if response.status_code != 200:
                    raise ValueError(f"HTTP {response.status_code}")
                body = await _capped_body(response)
        return KeyRing.from_jwks(json.loads(body)), self._max_age(response.headers)

    def _max_age(self, headers: Mapping[str, str]) -> float:
        """The configured max age, shortened by the server's ``Cache-Control: max-age``."""
        found = re.search(r"max-age=(\d+)", headers.get("cache-control", ""))
        server = float(found.group(1)) if found else self.max_age
        return max(min(self.max_age, server), self.min_refresh)

    def _failed(self, exc: BaseException) -> str:
        problem = f"JWKS {self.url} cannot be fetched: {str(exc) or type(exc).__name__}"
        if self._problem is None:  # once, until a fetch works again
            retry = f"retrying at most every {self.min_refresh:g} s"
            kept = "keeping the keys fetched before" if self._ring else "its tokens are refused"
            logger.warning("%s; %s, %s", problem, kept, retry)
        self._problem = problem
        return problem


async def _capped_body(response: httpx2.Response) -> bytes:
    """The body, read no further than `MAX_JWKS_BYTES` (a huge answer is never buffered)."""
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > MAX_JWKS_BYTES:
            raise ValueError(f"larger than {MAX_JWKS_BYTES} bytes")
    return bytes(body)


def signing_keys(config: JwtIssuerConfig) -> SigningKeys:
    """The key source of an issuer.

    Raises:
        ValueError: a static key or secret that cannot be read.
    """
    if config.jwks_url is not None:
        return JwksKeys(
            config.jwks_url, max_age=config.jwks_max_age, min_refresh=config.jwks_min_refresh
        )
    return StaticKeys(static_ring(config))


def key_problem(config: JwtIssuerConfig) -> tuple[str, str] | None:
    """Why the configured ``key`` or ``secret`` cannot be used: the field and the reason."""
    if config.jwks_url is not None:
        return None
    try:
        static_ring(config)
    except ValueError as exc:
        return ("secret" if config.secret is not None else "key"), str(exc)
    return None


def static_ring(config: JwtIssuerConfig) -> KeyRing:
    """The configured ``key`` or ``secret`` as a key ring.

    Raises:
        ValueError: saying what is wrong with it.
    """
    if config.secret is not None:
        secret = resolve_value(config.secret).encode()
        need, alg = max((HMAC_MIN_BYTES[a], a) for a in config.accepted_algorithms)
        if len(secret) < need:
            raise ValueError(f"at least {need} bytes are needed for HMAC ({alg})")
        k = base64.urlsafe_b64encode(secret).rstrip(b"=").decode()
        return KeyRing(({"kty": "oct", "k": k},))
    value = config.key if isinstance(config.key, dict) else resolve_value(config.key or "")
    if isinstance(value, str) and value.lstrip().startswith("{"):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not valid JWK JSON ({exc.msg})") from None
    if isinstance(value, dict):
        return KeyRing.from_jwks(value if "keys" in value else {"keys": [value]})
    return KeyRing((_pem_jwk(value),))


def _pem_jwk(pem: str) -> Mapping[str, Any]:
    """A PEM public key or certificate as a JWK dict."""
    data = pem.strip().encode()
    try:
        if b"CERTIFICATE" in data.split(b"\n", 1)[0]:
            key: Any = load_pem_x509_certificate(data).public_key()
        else:
            key = serialization.load_pem_public_key(data)
    except ValueError:
        raise ValueError("not a PEM public key or certificate, nor a JWK") from None
    converters: Sequence[tuple[type, Any]] = (
        (rsa.RSAPublicKey, RSAAlgorithm),
        (ec.EllipticCurvePublicKey, ECAlgorithm),
        (ed25519.Ed25519PublicKey, OKPAlgorithm),
    )
    for kind, algorithm in converters:
        if isinstance(key, kind):
            jwk: Mapping[str, Any] = algorithm.to_jwk(key, as_dict=True)
            return jwk
    raise ValueError(f"a {type(key).__name__} cannot verify JWTs (use RSA, EC or Ed25519)")
