"""The adapter examples run offline in one command and do what their docstrings say."""

from __future__ import annotations

import subprocess
import sys

from paths import REPO

EXAMPLES = REPO / "examples"


def run_example(name: str) -> list[str]:
    """Run ``python examples/{name}`` (warnings are errors) and return its output lines."""
    done = subprocess.run(
        [sys.executable, "-W", "error", str(EXAMPLES / name)],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_the_pydantic_ai_example_edits_one_approval_and_denies_another() -> None:
    lines = run_example("pydantic_ai_agent.py")
    held = [line for line in lines if line.startswith("held: files__write_file")]
    assert len(held) == 2
    assert all("rule secrets: writing a secrets file" in line for line in held)
    assert "call_0 files__write_file [success]: wrote 7 bytes to README.md" in lines
    assert "call_1 files__write_file [success]: wrote 27 bytes to .env" in lines
    assert "call_2 files__write_file [denied]: Never write private keys; ask the user." in lines
    assert any(
        line.startswith("call_3 files__delete_file [failed]: Deleting files") for line in lines
    )
    assert "call_read files__read_file [success]: API_KEY=<set in the vault>" in lines
    assert "gateway record: files__write_file .env -> done (edit)" in lines
    assert "gateway record: files__write_file deploy.key -> denied (deny)" in lines


def test_the_langgraph_example_pauses_and_resumes_with_an_edit() -> None:
    lines = run_example("langgraph_agent.py")
    assert lines[0] == (
        'paused: {"action": "files__write_file", '
        '"args": {"content": "API_KEY=sk-live-123\\n", "path": ".env"}}'
    )
    assert lines[1].startswith("  writing a secrets file (approval ap_")
    assert "call_write_file_0 files__write_file [success]: wrote 7 bytes to README.md" in lines
    assert "call_write_file_1 files__write_file [success]: wrote 27 bytes to .env" in lines
    assert "call_read_file_0 files__read_file [success]: API_KEY=<set in the vault>" in lines
    assert "gateway record: files__write_file .env -> done (edit)" in lines


def test_the_openai_example_pauses_for_an_approval_with_the_real_client() -> None:
    lines = run_example("openai_chat_loop.py")
    assert any(
        line.startswith("held: files__write_file") and "rule secrets" in line for line in lines
    )
    assert "tool call_0: wrote 23 bytes to config/.env" in lines
    assert "tool call_1: wrote 14 bytes to config/app.toml" in lines
    assert any(
        line.startswith("tool call_2: Error: Deleting files is not allowed") for line in lines
    )
    roles = "[['user'], ['user', 'assistant', 'tool', 'tool', 'tool']]"
    assert f"requests seen by the model server: {roles}" in lines
    edited = "{'path': 'config/.env', 'content': 'TOKEN=<from the vault>\\n'}"
    assert f"gateway record: files__write_file {edited} -> done (edit)" in lines
