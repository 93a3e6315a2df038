"""JWT identity: a bearer JWT checked against the issuers of ``auth.jwt`` becomes a principal.

Checks, in order: the token is a signed JWT whose ``alg`` the issuer accepts (never ``none``),
its ``iss`` is configured, a key of that issuer (by ``kid``) verifies the signature, and
``aud``, ``exp``, ``nbf`` and ``iat`` hold (with the issuer's ``leeway``). Each refusal is a
`TokenRefused` whose message is safe to show the caller; the token itself is never logged.
The principal's id, roles, tenant and credential classes come from the claims the issuer's
config names, its scopes from ``scope``/``scp`` (what a policy rule's ``scopes`` reads); a
class not listed in ``as`` (or not earned as ``require`` says) is never granted,
and a token that earns ``agent`` holds no other class: an MCP client's token never approves,
watches events or posts results, whatever else it was issued for.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import anyio
import jwt
from jwt.exceptions import (
    DecodeError,
    ExpiredSignatureError,
    ImmatureSignatureError,
    InvalidAlgorithmError,
    InvalidAudienceError,
    InvalidIssuerError,
    InvalidKeyError,
    InvalidSignatureError,
    MissingRequiredClaimError,
    PyJWTError,
)

from gateway.auth.jwks import key_problem, signing_keys
from gateway.config.events import EventFilter
from gateway.config.jwt import CLASSES, CredentialClass, JwtIssuerConfig, claim_at
from gateway.config.model import GatewayConfig
from toolsets.context import Bearer, Principal
from toolsets.errors import LockgateError

__all__ = ["JwtIdentity", "JwtVerifier", "TokenRefused", "check_identity", "looks_like_jwt"]

REQUIRED_CLAIMS: Final = ["exp", "iss", "aud"]
MAX_NAME: Final = 200
"""The longest principal id part or tenant a token may name (as ``CredentialConfig.id``)."""


class TokenRefused(LockgateError):
    """A bearer token was refused; the message says why and is safe to show (no token in it)."""


@dataclass(frozen=True, slots=True)
class JwtIdentity:
    """Who a valid JWT names, and the credential classes it holds (in `CLASSES` order)."""

    principal: Principal
    classes: tuple[CredentialClass, ...]
    events: EventFilter | None = None


def looks_like_jwt(token: str) -> bool:
    """Three dot-separated parts: worth checking as a JWT (static tokens rarely are)."""
    return token.count(".") == 2


_REASONS: Final[tuple[tuple[type[PyJWTError], Callable[[Any], str]], ...]] = (
    (ExpiredSignatureError, lambda _: "token expired"),
    (ImmatureSignatureError, lambda _: "token not valid yet (nbf or iat in the future)"),
    (MissingRequiredClaimError, lambda exc: f"token lacks the {exc.claim!r} claim"),
    (InvalidIssuerError, lambda _: "wrong issuer"),
    (InvalidAlgorithmError, lambda _: "the token's algorithm does not fit its signing key"),
    (InvalidSignatureError, lambda _: "bad signature (not signed by the issuer's key)"),
    (InvalidKeyError, lambda _: "unusable signing key"),
    (DecodeError, lambda _: "malformed token"),
)


def _reason(exc: PyJWTError, issuer: JwtIssuerConfig) -> str:
    if isinstance(exc, InvalidAudienceError):
        return f"wrong audience (this gateway accepts {', '.join(issuer.audience)})"
    for kind, reason in _REASONS:
        if isinstance(exc, kind):
            return reason(exc)
    return "invalid token"


def _name(claims: dict[str, Any], path: str) -> str:
    """The id or tenant a claim holds: a string (or an integer), 1 to `MAX_NAME` printable
    characters (no newline or control character reaches a log line, record or page).

    Raises:
        TokenRefused: the claim is absent or holds no usable name.
    """
    value = claim_at(claims, path)
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value:
        raise TokenRefused(f"token lacks the {path!r} claim")
    if len(value) > MAX_NAME or not value.isprintable():
        raise TokenRefused(f"the token's {path!r} claim is not a usable name")
    return value


def _strings(value: Any) -> list[str]:
    """A claim holding names: a list of strings, or one space-separated string."""
    if isinstance(value, str):
        return value.split()
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []


class _Issuer:
    """One configured issuer: its keys, and how its claims become a principal."""

    def __init__(self, config: JwtIssuerConfig) -> None:
        self.config, self.keys = config, signing_keys(config)
        self.algorithms = config.accepted_algorithms

    async def verify(self, token: str, alg: str, kid: str | None) -> dict[str, Any]:
        keys = await self.keys.keys_for(kid, alg)
        if not keys:
            if not self.keys.available:
                raise TokenRefused(
                    "the issuer's signing keys are not available yet (its JWKS cannot be "
                    "fetched); try again shortly"
                )
            raise TokenRefused("unknown signing key (no key of the issuer has this kid)")
        problem: PyJWTError = InvalidSignatureError()
        for key in keys:
            try:
                return jwt.decode(
                    token,
                    key,
                    algorithms=[alg],
                    audience=self.config.audience,
                    issuer=self.config.issuer,
                    leeway=self.config.leeway,
                    options={"require": REQUIRED_CLAIMS, "enforce_minimum_key_length": True},
                )
            except InvalidSignatureError as exc:  # a token without kid: try the next key
                problem = exc
            except PyJWTError as exc:
                raise TokenRefused(_reason(exc, self.config)) from None
        raise TokenRefused(_reason(problem, self.config))

    def identity(self, claims: dict[str, Any], token: str) -> JwtIdentity:
        config = self.config
        subject = _name(claims, config.subject_claim)
        roles = self._roles(claims)
        scopes = frozenset(_strings(claims.get("scope"))) | frozenset(_strings(claims.get("scp")))
        principal = Principal(
            id=f"{config.id_prefix}{subject}",
            roles=frozenset(roles),
            claims=self._claims(claims),
            tenant=self._tenant(claims),
            scopes=scopes,
            bearer=Bearer(token),  # for a token_exchange upstream, never printed
        )
        return JwtIdentity(principal, self._classes(scopes, roles), config.events)

    def _roles(self, claims: dict[str, Any]) -> list[str]:
        if self.config.roles_claim is None:
            return []
        roles = _strings(claim_at(claims, self.config.roles_claim))
        mapping = self.config.role_map
        return roles if mapping is None else [mapping[r] for r in roles if r in mapping]

    def _classes(self, scopes: frozenset[str], roles: list[str]) -> tuple[CredentialClass, ...]:
        earned: list[CredentialClass] = []
        for cls in CLASSES:
            if cls not in self.config.as_:
                continue
            kind, _, name = self.config.require.get(cls, ":").partition(":")
            if not kind or name in (scopes if kind == "scope" else roles):
                earned.append(cls)
        # Approvers authenticate apart from MCP clients (no agent approves a held call), so an
        # agent's token is only that, even when a client asked for every scope there is.
        return ("agent",) if "agent" in earned else tuple(earned)

    def _tenant(self, claims: dict[str, Any]) -> str | None:
        if self.config.tenant_claim is None:
            return self.config.tenant
        try:
            return _name(claims, self.config.tenant_claim)
        except TokenRefused as exc:
            raise TokenRefused(f"{exc} (tenant)") from None

    def _claims(self, claims: dict[str, Any]) -> dict[str, Any]:
        found = {path: claim_at(claims, path) for path in self.config.claims}
        return {"iss": self.config.issuer} | {k: v for k, v in found.items() if v is not None}


class JwtVerifier:
    """Checks bearer JWTs against every configured issuer."""

    def __init__(self, issuers: Sequence[JwtIssuerConfig]) -> None:
        self._issuers = {config.issuer: _Issuer(config) for config in issuers}

    @property
    def enabled(self) -> bool:
        """Whether any issuer is configured."""
        return bool(self._issuers)

    def grants(self, cls: CredentialClass) -> bool:
        """Whether some issuer may grant ``cls``."""
        return any(cls in i.config.as_ for i in self._issuers.values())

    async def verify(self, token: str) -> JwtIdentity:
        """The identity a valid token names.

        Raises:
            TokenRefused: saying why the token is not accepted.
        """
        try:
            header = jwt.get_unverified_header(token)
            unverified = jwt.decode(token, options={"verify_signature": False})
        except PyJWTError:
            raise TokenRefused("malformed token (not a signed JWT)") from None
        alg, kid = header.get("alg"), header.get("kid")
        if not isinstance(alg, str) or alg.lower() == "none":
            raise TokenRefused("unsigned tokens (alg 'none') are never accepted")
        iss = unverified.get("iss")
        issuer = self._issuers.get(iss) if isinstance(iss, str) else None
        if issuer is None:
            raise TokenRefused("wrong issuer (no auth.jwt entry has this token's 'iss')")
        if alg not in issuer.algorithms:
            accepted = ", ".join(issuer.algorithms)
            raise TokenRefused(f"algorithm not accepted for this issuer (accepted: {accepted})")
        if kid is not None and not isinstance(kid, str):
            raise TokenRefused("malformed token ('kid' is not a string)")
        return issuer.identity(await issuer.verify(token, alg, kid), token)

    async def prefetch(self) -> None:
        """Fetch every issuer's JWKS once, concurrently (failures are logged, not raised)."""
        async with anyio.create_task_group() as tg:
            for issuer in self._issuers.values():
                tg.start_soon(issuer.keys.refresh)


async def check_identity(config: GatewayConfig) -> list[str]:
    """Problems with the identity settings, for ``lockgate doctor``: each issuer's key is
    read or its JWKS fetched once, and must hold a key for an accepted algorithm.

    Returns:
        One sentence per problem, naming the ``auth.jwt`` entry; empty when all is well.
    """
    problems: list[str] = []
    for index, issuer in enumerate(config.auth.jwt):
        where = f"auth.jwt[{index}] (issuer {issuer.issuer!r})"
        if (bad := key_problem(issuer)) is not None:
            problems.append(f"{where}: {bad[0]}: {bad[1]}")
            continue
        keys = signing_keys(issuer)
        if (problem := await keys.refresh()) is not None:
            problems.append(f"{where}: {problem}")
        elif not any([await keys.keys_for(None, alg) for alg in issuer.accepted_algorithms]):
            accepted = ", ".join(issuer.accepted_algorithms)
            problems.append(f"{where}: no key fits the accepted algorithms ({accepted})")
    if not config.auth.jwt and config.auth.public_url is not None:
        problems.append("auth.public_url is set but no auth.jwt issuer is configured")
    return problems
