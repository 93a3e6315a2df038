"""Data-flow labels in the policy: which labels a tool carries (MCP annotations, a server's
settings, ``labels``/``sink_labels`` rules), what CEL reads, how a decision names the calls that
brought the session's labels in, shadow label rules, located load errors, and the explanation."""

from __future__ import annotations

import argparse
import json
from typing import Any

import pytest
from policy_support import FIXTURES

from gateway.cli.policy import register
from policies import PolicyEngine, SessionState
from policies.cases import run_case_file
from policies.session_labels import LabelSource
from policies.tool_labels import ServerLabels, ToolLabels, annotation_labels
from toolsets.context import Principal
from toolsets.errors import PolicyError
from toolsets.tooldef import ToolDef

LABELS = FIXTURES / "labels"
TRIFECTA = LABELS / "trifecta.yaml"
ENGINE = PolicyEngine.load([TRIFECTA])
WHO = Principal(id="agent:bot")
OPEN = {"openWorldHint": True}
OPEN_READ = {"openWorldHint": True, "readOnlyHint": True}


def _tool(name: str, annotations: dict[str, Any] | None = None) -> ToolDef:
    return ToolDef(name=name, server=name.partition("__")[0], annotations=annotations)


def _session(*labels: tuple[str, str]) -> SessionState:
    state = SessionState("s")
    for n, (label, tool) in enumerate(labels):
        state.add_labels({label}, LabelSource(call_id=f"c{n}", tool=tool, at=float(n)))
    return state


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        pytest.param(None, ToolLabels(), id="no-annotations"),
        pytest.param({}, ToolLabels(), id="no-hints-derive-nothing"),
        pytest.param({"openWorldHint": False}, ToolLabels(), id="closed-world"),
        pytest.param(OPEN_READ, ToolLabels(frozenset({"untrusted"})), id="open-read-only-source"),
        pytest.param(
            OPEN,
            ToolLabels(frozenset({"untrusted"}), frozenset({"egress"})),
            id="open-not-read-only-source-and-sink",
        ),
        pytest.param({"readOnlyHint": True}, ToolLabels(), id="read-only-closed"),
    ],
)
def test_annotations_derive_labels_only_from_hints_set_explicitly(
    annotations: dict[str, Any] | None, expected: ToolLabels
) -> None:
    assert annotation_labels(annotations) == expected


def test_rules_add_labels_to_the_tools_they_select_and_a_server_can_distrust_annotations() -> None:
    assert ENGINE.tool_labels(_tool("web__read_file")) == ToolLabels(frozenset({"private"}))
    assert ENGINE.tool_labels(_tool("mail__draft")).sinks == {"egress"}
    distrusted = ServerLabels(annotations=False, sources=frozenset({"vendor"}))
    assert ENGINE.tool_labels(_tool("web__fetch", OPEN), distrusted) == ToolLabels(
        frozenset({"vendor"})
    )


@pytest.mark.parametrize(
    ("session", "effect"),
    [
        pytest.param(_session(), "allow", id="fresh"),
        pytest.param(_session(("untrusted", "web__fetch")), "allow", id="untrusted-only"),
        pytest.param(_session(("private", "web__read_file")), "allow", id="private-only"),
        pytest.param(
            _session(("untrusted", "web__fetch"), ("private", "web__read_file")), "ask", id="both"
        ),
    ],
)
def test_an_egress_tool_asks_only_once_the_session_carries_both_labels(
    session: SessionState, effect: str
) -> None:
    decision = ENGINE.evaluate_call(_tool("web__send", OPEN), {}, WHO, session)
    assert decision.effect == effect


def test_the_reason_names_the_calls_that_brought_the_labels_the_rule_reads() -> None:
    session = _session(
        ("untrusted", "web__fetch"), ("private", "web__read_file"), ("other", "x__y")
    )
    decision = ENGINE.evaluate_call(_tool("mail__send"), {}, WHO, session)
    assert (decision.effect, decision.rule_id) == ("ask", "no-exfiltration")
    assert decision.reason == (
        "private data may leave after untrusted content (session labels: private via "
        "web__read_file and untrusted via web__fetch)"
    )
    assert decision.labels is not None
    assert decision.labels.tool == ("egress",)
    assert decision.labels.session == ("other", "private", "untrusted")


def test_a_shadow_label_rule_is_recorded_on_the_decision_never_enforced() -> None:
    session = _session(("private", "web__read_file"))
    decision = ENGINE.evaluate_call(_tool("mail__send"), {}, WHO, session)
    assert decision.effect == "allow"
    assert [(m.rule_id, m.effect) for m in decision.shadow] == [("watch-any-label", "deny")]


def test_a_tool_without_labels_in_a_fresh_session_carries_none() -> None:
    decision = ENGINE.evaluate_call(_tool("calc__add"), {}, WHO, SessionState("s"))
    assert decision.labels is None


def test_label_mistakes_are_located() -> None:
    broken = LABELS / "broken.yaml"
    with pytest.raises(PolicyError) as caught:
        PolicyEngine.load([broken])
    assert [(i.line, i.key) for i in caught.value.issues] == [
        (5, "rules.0.labels.0"),
        (6, "rules.1"),
        (10, "rules.2"),
        (14, "rules.3.effect"),
        (16, "rules.3.lables"),
    ]
    messages = [i.message for i in caught.value.issues]
    assert "invalid label 'Private Data'" in messages[0]
    assert "tool rules only" in messages[1]
    assert "yet this one has when" in messages[2]
    assert messages[4] == "unknown key"


def _explain(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    parser = argparse.ArgumentParser(prog="lockgate")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["policy", "explain", str(TRIFECTA), *argv])
    assert args.func(args) == 0
    return capsys.readouterr().out


SESSION = json.dumps(
    {
        "calls": [
            {"tool": "web__fetch_page", "annotations": OPEN_READ},
            {"tool": "web__read_file"},
        ]
    }
)


def test_explain_with_a_session_shows_the_labels_and_the_calls_that_brought_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = _explain(
        capsys, "--tool", "web__send", "--annotations", json.dumps(OPEN), "--session", SESSION
    )
    assert "effect:   ask\n" in out
    assert out.endswith(
        "labels:   tool sources untrusted; sinks egress\n"
        "  from annotations: sources untrusted; sinks egress\n"
        "  session: private via web__read_file (call earlier-2)\n"
        "  session: untrusted via web__fetch_page (call earlier-1)\n"
    )


def test_explain_json_carries_the_labels(capsys: pytest.CaptureFixture[str]) -> None:
    out = _explain(capsys, "--tool", "web__read_file", "--session", SESSION, "--json")
    labels = json.loads(out)["labels"]
    assert labels["tool"] == {"sources": ["private"], "sinks": []}
    assert labels["rules"] == ["workspace-is-private"]
    assert [s["tool"] for s in labels["session"]["untrusted"]] == ["web__fetch_page"]


def test_check_counts_the_labelling_rules_and_lists_their_labels(
    capsys: pytest.CaptureFixture[str],
) -> None:
    parser = argparse.ArgumentParser(prog="lockgate")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["policy", "check", str(TRIFECTA)])
    assert args.func(args) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("ok: 1 file, 2 rules, 2 labelling, version ")
    assert lines[1:] == [
        f"labels: workspace-is-private: sources ['private'], sinks [] ({TRIFECTA}:4)",
        f"labels: mail-is-egress: sources [], sinks ['egress'] ({TRIFECTA}:7)",
    ]


def test_case_files_know_session_labels_and_inspector_findings() -> None:
    _, results = run_case_file(LABELS / "trifecta.cases.yaml")

    assert [(r.case.name, r.decision.effect, r.failures) for r in results] == [
        ("the third call of the trifecta asks", "ask", ()),
        ("labels the session already carries count the same", "ask", ()),
        ("one label alone lets the mail go", "allow", ()),
        ("a deny finding of an inspector refuses an allowed call", "deny", ()),
        ("an ask finding holds it", "ask", ()),
        ("a redact finding changes no decision", "allow", ()),
    ]
    assert results[0].decision.reason.endswith(
        "(session labels: private via web__read_file and untrusted via web__fetch)"
    )
    assert results[3].decision.findings[0].kind == "credential"
