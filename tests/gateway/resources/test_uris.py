"""The gateway URI scheme is reversible: ``lockgate://{prefix}/{original}`` splits back into the
prefix and the original, verbatim, and only URIs of that form are gateway URIs."""

from __future__ import annotations

from typing import Any

import pytest

from toolsets.resource_uris import gateway_uri, rewrite_blocks, split_gateway_uri

ORIGINALS = [
    pytest.param("file:///tmp/a.txt", id="file"),
    pytest.param("file:///{path}", id="template"),
    pytest.param("https://example.com/a/b?q=1&r=/x#frag", id="query-and-fragment"),
    pytest.param("lockgate://other/echo://x", id="a-gateway-uri-behind-another"),
    pytest.param("notes/relative name with spaces\nand a newline", id="not-a-uri-at-all"),
]


@pytest.mark.parametrize("original", ORIGINALS)
@pytest.mark.parametrize("prefix", ["files", "web-2", "0"])
def test_a_gateway_uri_splits_back_into_its_prefix_and_original(prefix: str, original: str) -> None:
    served = gateway_uri(prefix, original)

    assert served == f"lockgate://{prefix}/{original}"
    assert split_gateway_uri(served) == (prefix, original)


@pytest.mark.parametrize(
    "uri",
    [
        pytest.param("file:///tmp/a.txt", id="another-scheme"),
        pytest.param("lockgate://files", id="no-slash-after-the-prefix"),
        pytest.param("lockgate://files/", id="nothing-after-the-prefix"),
        pytest.param("lockgate:///file:///a", id="empty-prefix"),
        pytest.param("lockgate://Files/file:///a", id="upper-case-prefix"),
        pytest.param("lockgate://my_files/file:///a", id="underscore-in-prefix"),
        pytest.param("LOCKGATE://files/file:///a", id="upper-case-scheme"),
    ],
)
def test_anything_else_is_not_a_gateway_uri(uri: str) -> None:
    assert split_gateway_uri(uri) is None


def test_resource_links_and_embedded_resources_are_rewritten_and_nothing_else() -> None:
    blocks: list[Any] = [
        {"type": "text", "text": "file:///not/a/link"},
        {"type": "resource_link", "uri": "file:///a", "name": "a"},
        {"type": "resource", "resource": {"uri": "file:///b", "text": "b"}},
        {"type": "resource_link", "name": "no uri"},
    ]

    rewritten = rewrite_blocks(blocks, "files")

    assert rewritten == [
        blocks[0],
        {"type": "resource_link", "uri": "lockgate://files/file:///a", "name": "a"},
        {"type": "resource", "resource": {"uri": "lockgate://files/file:///b", "text": "b"}},
        blocks[3],
    ]
    assert blocks[1]["uri"] == "file:///a"  # a copy: the upstream's result is not changed


def test_content_without_resources_is_not_copied() -> None:
    assert rewrite_blocks([{"type": "text", "text": "hi"}], "files") is None
