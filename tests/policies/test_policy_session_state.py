"""`SessionState`: successes, history, groups, variables, its JSON form and its gate key."""

from __future__ import annotations

import json
import math

import pytest

from policies import SessionState
from policies.session import HISTORY_LIMIT
from toolsets.canonical import sha256_hex


def session(*calls: str | tuple[str, bool], groups: tuple[str, ...] = ()) -> SessionState:
    """A session where each call succeeded, or not when given as ``(name, False)``."""
    state = SessionState("s-1")
    for call in calls:
        name, ok = call if isinstance(call, tuple) else (call, True)
        state.record(name, {}, ok=ok)
    for group in groups:
        state.load_group(group)
    return state


def test_record_counts_successes_apart_from_answered_calls() -> None:
    state = session("a", ("a", False), "b")
    assert (state.calls, state.tool_calls, state.succeeded) == (
        3,
        {"a": 2, "b": 1},
        {"a": 1, "b": 1},
    )
    assert state.cel_value()["succeeded"] == {"a": 1, "b": 1}
    assert [entry["ok"] for entry in state.history] == [True, False, True]


def test_history_keeps_the_last_calls_with_argument_hashes() -> None:
    state = SessionState("s")
    for index in range(HISTORY_LIMIT + 5):
        state.record("t", {"i": index}, ok=index % 2 == 0)
    assert len(state.history) == HISTORY_LIMIT
    assert state.history[0] == {"tool": "t", "args_sha256": sha256_hex({"i": 5}), "ok": False}
    state.record("t", {"x": math.nan})
    assert state.history[-1]["args_sha256"] is None


def test_variables_hold_copies_of_json_values() -> None:
    state = SessionState("s")
    value = {"items": [1, 2]}
    state.set_variable("cart", value)
    value["items"].append(3)
    got = state.get_variable("cart")
    got["items"].append(4)
    assert state.get_variable("cart") == {"items": [1, 2]}
    assert state.get_variable("missing", 0) == 0
    with pytest.raises(ValueError, match="variable 'bad' is not a JSON value"):
        state.set_variable("bad", {1, 2})
    assert (state.remove_variable("cart"), state.remove_variable("cart")) == (True, False)


def test_groups_load_once_and_show_sorted_to_cel() -> None:
    state = SessionState("s")
    assert (state.load_group("text"), state.load_group("math"), state.load_group("math")) == (
        True,
        True,
        False,
    )
    assert state.cel_value()["groups"] == ["math", "text"]


def test_to_json_round_trips_through_json_text() -> None:
    state = session("a", ("b", False), groups=("math",))
    state.record("c", {"path": "x", "n": [1]})
    state.set_variable("v", {"k": [True, None]})
    text = json.dumps(state.to_json())
    again = SessionState.from_json(json.loads(text))
    assert again.to_json() == state.to_json()
    assert again.cel_value() == state.cel_value()
    assert again.gate_key() == state.gate_key()


def test_from_json_refuses_what_is_not_a_session() -> None:
    with pytest.raises(ValueError, match="calls"):
        SessionState.from_json({"id": "s", "calls": "many"})


def test_equal_gate_keys_mean_the_same_successes_and_groups() -> None:
    first = session("a", "b", "a", ("c", False), groups=("math",))
    second = session("b", "a", groups=("math",))
    assert first.gate_key() == second.gate_key()
    assert hash(first.gate_key()) == hash(second.gate_key())
    assert session("a", groups=("math",)).gate_key() != second.gate_key()
    assert session("a", "b").gate_key() != second.gate_key()
