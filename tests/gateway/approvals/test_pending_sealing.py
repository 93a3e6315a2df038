"""Sealed request state: opaque, principal-bound, expiring and single-use."""

from __future__ import annotations

import base64
import time

import pytest

from gateway.approvals import PendingStore, RequestStateSealer, SealedStateError
from toolsets.errors import LockgateError

pytestmark = pytest.mark.anyio

KEY = b"k" * 32


def sealed(sealer: RequestStateSealer, *, ttl: float = 60.0) -> str:
    return sealer.seal(pending_id="ap_123", principal="agent:ci", expires_at=time.time() + ttl)


def flip_one_byte(token: str) -> str:
    prefix, body = token.split(".", 1)
    raw = bytearray(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    raw[-1] ^= 0x01
    return prefix + "." + base64.urlsafe_b64encode(bytes(raw)).decode().rstrip("=")


def test_a_sealed_state_opens_for_its_principal() -> None:
    sealer = RequestStateSealer(KEY)
    token = sealed(sealer)
    assert "ap_123" not in token
    assert "agent:ci" not in token
    payload = sealer.unseal(token, principal="agent:ci")
    assert (payload.pending_id, payload.principal) == ("ap_123", "agent:ci")
    assert payload.nonce != sealer.unseal(sealed(sealer), principal="agent:ci").nonce


@pytest.mark.parametrize(
    "token",
    [
        pytest.param("", id="empty"),
        pytest.param("garbage", id="garbage"),
        pytest.param("v1.AAAA", id="short"),
        pytest.param("v1.ünïcode", id="non-ascii"),
    ],
)
def test_garbage_is_refused_as_malformed(token: str) -> None:
    with pytest.raises(SealedStateError, match="malformed") as caught:
        RequestStateSealer(KEY).unseal(token, principal="agent:ci")
    assert isinstance(caught.value, LockgateError)


def test_a_tampered_byte_is_refused() -> None:
    sealer = RequestStateSealer(KEY)
    with pytest.raises(SealedStateError, match="malformed"):
        sealer.unseal(flip_one_byte(sealed(sealer)), principal="agent:ci")


def test_a_state_sealed_under_another_key_is_refused() -> None:
    token = sealed(RequestStateSealer(b"o" * 32))
    with pytest.raises(SealedStateError, match="malformed"):
        RequestStateSealer(KEY).unseal(token, principal="agent:ci")


def test_a_state_sealed_by_the_sdk_codec_for_another_purpose_is_refused() -> None:
    from mcp.server.request_state import AESGCMRequestStateCodec

    token = AESGCMRequestStateCodec([KEY]).seal(b'{"pending_id": "ap_123"}')
    with pytest.raises(SealedStateError, match="malformed"):
        RequestStateSealer(KEY).unseal(token, principal="agent:ci")


def test_another_principal_is_refused() -> None:
    sealer = RequestStateSealer(KEY)
    with pytest.raises(SealedStateError, match="principal"):
        sealer.unseal(sealed(sealer), principal="agent:intruder")


def test_an_expired_state_is_refused() -> None:
    sealer = RequestStateSealer(KEY)
    token = sealed(sealer, ttl=60)
    with pytest.raises(SealedStateError, match="expired"):
        sealer.unseal(token, principal="agent:ci", now=time.time() + 61)
    with pytest.raises(SealedStateError, match="expired"):
        sealer.unseal(sealed(sealer, ttl=-1), principal="agent:ci")


def test_a_per_process_key_does_not_open_another_process_state() -> None:
    token = sealed(RequestStateSealer())
    with pytest.raises(SealedStateError, match="malformed"):
        RequestStateSealer().unseal(token, principal="agent:ci")


def test_a_short_key_is_rejected() -> None:
    with pytest.raises(ValueError, match="32 bytes"):
        RequestStateSealer(b"short")


async def test_a_replayed_state_is_refused(store: PendingStore) -> None:
    sealer = RequestStateSealer(KEY)
    token = sealed(sealer)
    payload = await sealer.redeem(token, principal="agent:ci", nonces=store)
    assert payload.pending_id == "ap_123"
    with pytest.raises(SealedStateError, match="replayed"):
        await sealer.redeem(token, principal="agent:ci", nonces=store)


async def test_a_refused_state_does_not_burn_its_nonce(store: PendingStore) -> None:
    sealer = RequestStateSealer(KEY)
    token = sealed(sealer)
    with pytest.raises(SealedStateError, match="principal"):
        await sealer.redeem(token, principal="agent:intruder", nonces=store)
    assert (await sealer.redeem(token, principal="agent:ci", nonces=store)).pending_id == "ap_123"
