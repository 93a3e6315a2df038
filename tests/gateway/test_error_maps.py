"""Each face maps an error outward once, in a table looked up along the exception's MRO: the
REST API's status, the CLI's exit code and the MCP answer of each error, a subclass answering as
its nearest mapped base."""

from __future__ import annotations

import json

import pytest
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, ErrorData

from gateway.api.errors import BadRequest, error_response
from gateway.approvals.errors import (
    DecisionInvalid,
    DecisionRefused,
    NotAnApprover,
    PendingNotFound,
    SealedStateError,
)
from gateway.cli.errors import ApiError, UsageError, exit_code_for
from gateway.mcp.errors import REFUSED, mcp_error
from policies.errors import ConditionError
from toolsets.errors import (
    ApprovalConflict,
    AuditUnavailable,
    LockgateError,
    PolicyError,
    PromptDenied,
    StoreUnavailable,
    ToolNotFoundError,
    ToolQuarantined,
    UpstreamError,
    UpstreamRequestError,
)
from toolsets.result import ToolResult


def _upstream_request() -> UpstreamRequestError:
    return UpstreamRequestError("boom", server="files", code=-32001, data={"x": 1})


@pytest.mark.parametrize(
    ("exc", "status", "error"),
    [
        pytest.param(BadRequest("body too large", 413), 413, "bad_request", id="own-status"),
        pytest.param(DecisionInvalid("no scope"), 400, "bad_request", id="decision-invalid"),
        pytest.param(NotAnApprover("not yours"), 403, "forbidden", id="subclass-first"),
        pytest.param(DecisionRefused("not offered"), 422, "refused", id="decision-refused"),
        pytest.param(PendingNotFound("ap_1"), 404, "not_found", id="pending-not-found"),
        pytest.param(ToolNotFoundError("a__b"), 404, "error", id="unknown-tool"),
        pytest.param(ApprovalConflict("decided"), 409, "error", id="conflict"),
        pytest.param(_upstream_request(), 502, "error", id="upstream-subclass"),
        pytest.param(StoreUnavailable("postgres"), 503, "error", id="store"),
        pytest.param(PolicyError([]), 400, "error", id="config-subclass"),
        pytest.param(ConditionError("no key"), 400, "error", id="any-other-error"),
    ],
)
def test_the_rest_api_answers_each_error_with_one_status(
    exc: LockgateError, status: int, error: str
) -> None:
    response = error_response(exc)

    assert response.status_code == status
    assert json.loads(bytes(response.body))["error"] == error


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        pytest.param(PolicyError([]), 2, id="config-subclass"),
        pytest.param(UsageError("--args is not JSON"), 2, id="usage"),
        pytest.param(ToolQuarantined("a__b", ["description"]), 3, id="quarantined"),
        pytest.param(_upstream_request(), 4, id="upstream-subclass"),
        pytest.param(ApprovalConflict("decided"), 5, id="conflict"),
        pytest.param(StoreUnavailable("postgres"), 6, id="store"),
        pytest.param(ApiError("401 unauthorized"), 1, id="api"),
        pytest.param(AuditUnavailable("disk full"), 1, id="any-other-error"),
    ],
)
def test_the_cli_exits_with_one_code_per_error(exc: LockgateError, code: int) -> None:
    assert exit_code_for(exc) == code


def test_the_mcp_face_answers_an_upstream_failure_as_a_result_the_model_reads() -> None:
    outcome = mcp_error(UpstreamError("server 'files' is down", server="files"))

    assert isinstance(outcome, ToolResult)
    assert outcome.is_error
    assert outcome.first_text() == "server 'files' is down"


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        pytest.param(ToolNotFoundError("a__b"), INVALID_PARAMS, id="unknown-tool"),
        pytest.param(SealedStateError("expired"), INVALID_PARAMS, id="request-state"),
        pytest.param(PromptDenied("review", "not here"), REFUSED, id="refused"),
        pytest.param(_upstream_request(), -32001, id="upstream-subclass-relayed"),
    ],
)
def test_the_mcp_face_answers_other_errors_with_one_json_rpc_code(
    exc: LockgateError, code: int
) -> None:
    outcome = mcp_error(exc)

    assert isinstance(outcome, ErrorData)
    assert outcome.code == code


def test_the_mcp_face_answers_an_unknown_failure_as_an_internal_error() -> None:
    outcome = mcp_error(RuntimeError("bug"))

    assert outcome == ErrorData(code=INTERNAL_ERROR, message="Internal server error")
