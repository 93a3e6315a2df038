"""Reloads swap the engine atomically and keep the last good policy on any error."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import anyio
import pytest
from policy_support import FIXTURES, tool, who

from policies import PolicyHolder

ALLOW_READS = """\
version: 1
defaults: {effect: deny}
rules:
  - id: reads
    tools: [files__read_file]
    effect: allow
"""
ASK_READS = ALLOW_READS.replace("effect: allow", "effect: ask").replace("id: reads", "id: asks")
BROKEN = ALLOW_READS.replace("effect: allow", "effect: maybe")


def policy_file(tmp_path: Path, text: str = ALLOW_READS) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def read_decision(holder: PolicyHolder) -> tuple[str, str | None]:
    decision = holder.current.evaluate_call(tool("files__read_file"), {}, who(), None)
    return decision.effect, decision.rule_id


def test_a_successful_reload_swaps_in_the_new_version(tmp_path: Path) -> None:
    path = policy_file(tmp_path)
    holder = PolicyHolder.load([path])
    old = holder.current
    path.write_text(ASK_READS, encoding="utf-8")
    assert holder.reload() == []
    assert holder.current is not old
    assert holder.current.version != old.version
    assert read_decision(holder) == ("ask", "asks")


def test_a_failed_reload_keeps_the_last_good_policy_and_reports_the_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = policy_file(tmp_path)
    holder = PolicyHolder.load([path])
    good = holder.current
    path.write_text(BROKEN, encoding="utf-8")
    with caplog.at_level(logging.ERROR, logger="lockgate.policy"):
        issues = holder.reload()
    assert [(i.line, i.key) for i in issues] == [(6, "rules.0.effect")]
    assert holder.current is good
    assert read_decision(holder) == ("allow", "reads")
    assert [r.name for r in caplog.records] == ["lockgate.policy"]
    assert "keeping version" in caplog.records[0].getMessage()


def test_a_deleted_file_keeps_the_last_good_policy(tmp_path: Path) -> None:
    path = policy_file(tmp_path)
    holder = PolicyHolder.load([path])
    path.unlink()
    issues = holder.reload()
    assert [i.message for i in issues] == ["cannot read: No such file or directory"]
    assert read_decision(holder) == ("allow", "reads")


def test_an_unchanged_reload_keeps_the_same_engine(tmp_path: Path) -> None:
    holder = PolicyHolder.load([policy_file(tmp_path)])
    engine = holder.current
    assert holder.reload() == []
    assert holder.current is engine


def test_a_holder_over_an_empty_engine_has_nothing_to_reload() -> None:
    from policies import PolicyEngine

    holder = PolicyHolder(PolicyEngine.empty("ask"))
    assert holder.paths == ()
    assert holder.reload() == []
    assert read_decision(holder) == ("ask", None)


async def test_watch_reloads_when_a_file_changes_and_survives_a_broken_edit(
    tmp_path: Path,
) -> None:
    path = policy_file(tmp_path)
    holder = PolicyHolder.load([path])
    async with anyio.create_task_group() as tg:
        tg.start_soon(holder.watch, 0.01)
        with anyio.fail_after(30):
            path.write_text(ASK_READS, encoding="utf-8")
            assert await holder.wait_reload() == []
            assert read_decision(holder) == ("ask", "asks")

            path.write_text(BROKEN, encoding="utf-8")
            issues = await holder.wait_reload()
            assert [i.key for i in issues] == ["rules.0.effect"]
            assert read_decision(holder) == ("ask", "asks")

            shutil.copy(FIXTURES / "effects.yaml", path)
            assert await holder.wait_reload() == []
            assert holder.current.rules[0].id == "allow-notes-read"
        tg.cancel_scope.cancel()
