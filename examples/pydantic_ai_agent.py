"""A pydantic-ai agent using the gateway's tools, with approvals as deferred tool calls.

Run (offline, no API key): ``python examples/pydantic_ai_agent.py``.

A scripted `FunctionModel` plays the model. In its first turn it writes a README (allowed), a
``.env`` file and a ``deploy.key`` (both held by the ``secrets`` rule for security's approval) and
tries a delete (denied by the ``no-deletes`` rule; the model reads the rule's message).

The run ends with ``DeferredToolRequests``. The host, holding an approver credential, approves
the ``.env`` write with edited content and denies the key. ``toolset.apply_decisions`` posts
those decisions to the gateway; resuming the run re-issues the approved call, which the gateway
executes exactly once with the edited arguments. The model then reads ``.env`` back.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from gateway import Gateway
from gateway.adapters.pydantic_ai import GatewayToolset
from toolsets.context import Principal

HERE = Path(__file__).resolve().parent
AGENT = Principal(id="agent:example")
ALICE = Principal(id="user:alice", roles=frozenset({"security"}))


def _returns(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    return [
        part for message in messages for part in message.parts if isinstance(part, ToolReturnPart)
    ]


def scripted_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The "model": set up the project, then check the secrets file, then summarise."""
    returns = _returns(messages)
    if not returns:
        calls = [
            ("files__write_file", {"path": "README.md", "content": "# demo\n"}),
            ("files__write_file", {"path": ".env", "content": "API_KEY=sk-live-123\n"}),
            ("files__write_file", {"path": "deploy.key", "content": "-----BEGIN KEY-----\n"}),
            ("files__delete_file", {"path": "old-notes.txt"}),
        ]
        return ModelResponse(
            parts=[
                ToolCallPart(name, args, tool_call_id=f"call_{i}")
                for i, (name, args) in enumerate(calls)
            ]
        )
    if not any(r.tool_name == "files__read_file" for r in returns):
        return ModelResponse(
            parts=[ToolCallPart("files__read_file", {"path": ".env"}, tool_call_id="call_read")]
        )
    lines = [
        f"{r.tool_call_id} {r.tool_name} [{r.outcome}]: {str(r.content).strip()}" for r in returns
    ]
    return ModelResponse(parts=[TextPart("\n".join(lines))])


def host_decisions(requests: DeferredToolRequests) -> DeferredToolResults:
    """What the person at the host decides about each held call."""
    results = DeferredToolResults()
    for call in requests.approvals:
        meta = requests.metadata[call.tool_call_id]
        print(
            f"held: {call.tool_name} {json.dumps(call.args_as_dict())} "
            f"(approval {meta['approval_id']}, rule {meta['rule_id']}: {meta['reason']})"
        )
        if call.args_as_dict()["path"] == ".env":
            edited = {"path": ".env", "content": "API_KEY=<set in the vault>\n"}
            results.approvals[call.tool_call_id] = ToolApproved(override_args=edited)
        else:
            results.approvals[call.tool_call_id] = ToolDenied(
                "Never write private keys; ask the user."
            )
    return results


async def main() -> None:
    async with Gateway.from_config(HERE / "gateway.yaml") as gateway:
        toolset = GatewayToolset.from_gateway(gateway, principal=AGENT, approver=ALICE)
        agent = Agent(
            FunctionModel(scripted_model),
            toolsets=[toolset],
            output_type=[str, DeferredToolRequests],
        )
        first = await agent.run("Set up the project.")
        assert isinstance(first.output, DeferredToolRequests)
        results = await toolset.apply_decisions(first.output, host_decisions(first.output))
        second = await agent.run(
            message_history=first.all_messages(), deferred_tool_results=results
        )
        print("model:")
        print(second.output)
        for call in await gateway.store.list():
            print(
                f"gateway record: {call.tool} {call.args['path']} -> {call.state} ({call.decision})"
            )


if __name__ == "__main__":
    anyio.run(main)
