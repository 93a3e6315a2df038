"""`toolsets.refusal`: the one error shape, read back as any face delivers it."""

from __future__ import annotations

from typing import Any

import pytest

from toolsets.refusal import (
    Refusal,
    Unblock,
    failure_of,
    failure_result,
    refusal_of,
    refusal_result,
)
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef

SCHEMA: dict[str, Any] = {"type": "object"}
PLAIN = ToolDef(name="t", input_schema=SCHEMA)
TYPED = ToolDef(name="t", input_schema=SCHEMA, output_schema={"type": "object"})
LIMITED = Refusal(
    kind="rate_limited",
    message="Slow down.",
    rule="r",
    retry_after=12,
    unblock=Unblock(action="retry_after"),
    details={"limit": {"rate": "1/h"}},
)


@pytest.mark.parametrize(
    ("tool", "structured"),
    [
        pytest.param(PLAIN, True, id="no-output-schema"),
        pytest.param(TYPED, False, id="output-schema"),
        pytest.param(None, False, id="tool-unknown"),
    ],
)
def test_structured_content_is_added_only_where_no_output_schema_demands_another(
    tool: ToolDef | None, structured: bool
) -> None:
    result = refusal_result(LIMITED, tool=tool, meta={"lockgate/decision": {"rule_id": "r"}})

    wire = LIMITED.to_json()
    assert result.wire["content"] == [{"type": "text", "text": "Slow down."}]
    assert result.is_error
    assert result.meta == {"lockgate/decision": {"rule_id": "r"}, "lockgate/refusal": wire}
    assert result.structured_content == ({"lockgate/refusal": wire} if structured else None)


def test_the_wire_form_is_camel_case_with_every_key_of_the_contract() -> None:
    assert LIMITED.to_json() == {
        "kind": "rate_limited",
        "message": "Slow down.",
        "rule": "r",
        "retryAfter": 12,
        "unblock": {"action": "retry_after"},
        "details": {"limit": {"rate": "1/h"}},
    }
    bare = Refusal(kind="hook", message="No.", approval="ap_1", unblock={"action": "none"})
    assert bare.to_json() == {
        "kind": "hook",
        "message": "No.",
        "rule": None,
        "retryAfter": None,
        "unblock": {"action": "none"},
        "approvalId": "ap_1",
    }


def test_a_refusal_reads_back_from_its_wire_form_and_nothing_else_does() -> None:
    delivered = ToolResult.from_wire(dict(refusal_result(LIMITED, tool=PLAIN).wire))
    failed = failure_result("Server 'x' is down.", "upstream_unavailable", server="x")

    assert refusal_of(delivered) == Refusal(
        kind="rate_limited",
        message="Slow down.",
        rule="r",
        retry_after=12,
        unblock={"action": "retry_after"},
        details={"limit": {"rate": "1/h"}},
    )
    assert refusal_of(failed) is None
    assert refusal_of(ToolResult.error("plain")) is None
    assert refusal_of(ToolResult.text("ok", meta={"lockgate/refusal": {"kind": "denied"}})) is None
    assert failure_of(failed) == {"kind": "upstream_unavailable", "retryable": True, "server": "x"}
    assert failure_of(delivered) is None
