"""The credential scan's pre-check (a pattern runs only on text holding every character its matches
need) skips work, never a credential: big texts, every credential kind, and random text compared
with the patterns run unconditionally."""

from __future__ import annotations

import random

import pytest

from gateway.events.redact import _CREDENTIALS, MASK, mask_credentials, redact

KIB_256 = 256 * 1024

CREDENTIALS = [
    pytest.param("Bearer abcdefgh.ijk-lmn", f"Bearer {MASK}", id="bearer"),
    pytest.param("bearer abcdefgh.ijk-lmn", f"bearer {MASK}", id="bearer-lower"),
    pytest.param("sk-abcdefghijklmnopqrstuvwxyz", MASK, id="openai"),
    pytest.param("sk-ant-api03-abcdefghijklmnopqrstu", MASK, id="anthropic"),
    pytest.param("ghp_abcdefghijklmnopqrstuvwxyz0123456789", MASK, id="github"),
    pytest.param("ghs_abcdefghijklmnopqrstuvwxyz0123456789", MASK, id="github-server"),
    pytest.param("github_pat_11ABCDEFG0123456789_abcdefghijkl", MASK, id="github-pat"),
    pytest.param("AKIAIOSFODNN7EXAMPLE", MASK, id="aws"),
    pytest.param("ASIAIOSFODNN7EXAMPLE", MASK, id="aws-session"),
    pytest.param("xoxb-1234567890-abcdefghij", MASK, id="slack"),
    pytest.param("AIzaSyA1234567890abcdefghijklmnopqrstuv", MASK, id="google"),
    pytest.param(
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0",
        MASK,
        id="jwt",
    ),
    pytest.param(
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----", MASK, id="pem"
    ),
    pytest.param("-----BEGIN PRIVATE KEY-----\nMIIEow unterminated", MASK, id="pem-unterminated"),
]


@pytest.mark.parametrize(("credential", "masked"), CREDENTIALS)
def test_a_credential_in_a_256_kib_text_of_other_characters_is_masked(
    credential: str, masked: str
) -> None:
    padding = "x" * KIB_256  # holds none of the characters any credential needs but 'x'
    text = f"{padding} {credential}\n{padding}"
    result = mask_credentials(text)
    assert result == _reference(text)
    assert result.startswith(f"{padding} {masked}")  # an unterminated PEM key masks to the end
    assert credential not in result
    response = {"content": [{"type": "text", "text": text}], "structuredContent": {"r": text}}
    redacted = redact(response)
    assert credential not in redacted["content"][0]["text"]
    assert credential not in redacted["structuredContent"]["r"]


def _reference(text: str) -> str:
    """What `mask_credentials` must answer: every pattern run, no pre-check."""
    for pattern, replacement, _needs in _CREDENTIALS:
        text = pattern.sub(replacement, text)
    return text


def test_the_pre_check_masks_exactly_what_the_patterns_alone_mask() -> None:
    rng = random.Random(32)
    pieces = [str(p.values[0]) for p in CREDENTIALS] + [
        "Bearer ", "sk-", "gh", "_", "-", ".", "eyJ", "AIza", "xox", "A", "K", "S", "I",
        "-----BEGIN ", "PRIVATE KEY-----", "=", " ", "\n", "abcdefghij", "0123456789",
    ]  # fmt: skip
    masked = 0
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 12)))
        expected = _reference(text)
        assert mask_credentials(text) == expected, text
        masked += expected != text
    assert masked > 1000  # the corpus exercises the masking, not only the skipping


def test_a_text_without_candidate_characters_is_returned_as_is() -> None:
    text = "x" * KIB_256
    assert mask_credentials(text) is text
