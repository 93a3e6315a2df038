"""`ToolResult.from_wire`: an upstream's result is kept as it came, once its shape is checked;
anything malformed is refused up front, never later on the way out."""

from __future__ import annotations

from typing import Any

import pytest
from mcp_types import ImageContent, TextContent

from toolsets.result import ToolResult


def test_a_text_result_is_kept_as_it_came() -> None:
    wire = {"content": [{"type": "text", "text": "hi"}], "isError": False, "extra": 1}
    result = ToolResult.from_wire(wire)

    assert result.wire == {"content": [{"type": "text", "text": "hi"}], "isError": False}
    assert result.wire["content"] is wire["content"]  # not copied
    assert result.content == (TextContent(type="text", text="hi"),)
    assert not result.is_error


def test_other_blocks_are_validated_as_mcp_content() -> None:
    image = {"type": "image", "data": "aGk=", "mimeType": "image/png"}
    result = ToolResult.from_wire({"content": [image], "structuredContent": {"a": 1}})

    assert result.content == (ImageContent(type="image", data="aGk=", mime_type="image/png"),)
    assert result.structured_content == {"a": 1}


@pytest.mark.parametrize(
    "wire",
    [
        pytest.param({"content": "hi"}, id="content-not-a-list"),
        pytest.param({"content": [{"type": "text"}]}, id="text-without-text"),
        pytest.param({"content": [{"type": "text", "text": 1}]}, id="text-not-a-string"),
        pytest.param({"content": [{"type": "image"}]}, id="image-without-data"),
        pytest.param({"content": [], "_meta": "x"}, id="meta-not-an-object"),
        pytest.param({"content": [], "structuredContent": [1]}, id="structured-not-an-object"),
        pytest.param({"content": [], "isError": "false"}, id="is-error-not-a-boolean"),
    ],
)
def test_a_malformed_result_is_refused(wire: dict[str, Any]) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - pydantic's messages vary; the type is the contract
        ToolResult.from_wire(wire)


def test_with_meta_replaces_only_meta() -> None:
    result = ToolResult.text("ok", meta={"a": 1}).with_meta({"b": 2})

    assert result.meta == {"b": 2}
    assert result.first_text() == "ok"
    assert result.with_meta(None).meta is None
