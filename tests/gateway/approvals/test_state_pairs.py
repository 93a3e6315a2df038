"""Every (state, next state) pair of the pending-call state machine, for every kind: exactly the
transitions the gateway takes are allowed, every other one is refused."""

from __future__ import annotations

import time
from dataclasses import replace
from itertools import product
from typing import get_args

import pytest
from pending_support import new_call

from gateway.approvals._transitions import transition
from gateway.approvals.pending import Kind, State

STATES: tuple[State, ...] = get_args(State)
TAKEN: dict[Kind, set[tuple[State, State]]] = {
    "approval": {
        ("pending", "approved"),  # approve, edit (service.decide)
        ("pending", "denied"),  # deny
        ("pending", "done"),  # respond: the human's text is the result
        ("pending", "cancelled"),  # the client withdrew the call (holding)
        ("pending", "failed"),  # the tool changed, or the request was not put on record
        ("approved", "executing"),  # claimed, exactly once (holding._claim)
        ("approved", "failed"),  # the tool changed after the approval
        ("executing", "done"),  # the call ran
        ("executing", "failed"),  # the call raised, or the gateway stopped meanwhile
    },
    "external": {
        ("pending", "done"),  # a worker's value
        ("pending", "failed"),  # a worker's error
        ("pending", "cancelled"),  # the client withdrew the call
    },
    "connect": {
        ("pending", "approved"),  # the caller connected (gateway.connect)
        ("pending", "cancelled"),  # the client withdrew the held call
        ("pending", "failed"),  # the connect flow failed
        ("approved", "executing"),  # the held or re-issued call claimed it, exactly once
        ("approved", "failed"),  # the claim found the call could not run
        ("executing", "done"),  # the call ran
        ("executing", "failed"),  # the call raised, or the gateway stopped meanwhile
    },
}
"""Expiry is not a step anyone takes: only a passed deadline expires a call (tested below)."""


@pytest.mark.parametrize("kind", get_args(Kind))
@pytest.mark.parametrize(("state", "to"), list(product(STATES, STATES)))
def test_exactly_the_transitions_the_gateway_takes_are_allowed(
    kind: Kind, state: State, to: State
) -> None:
    call = replace(new_call(kind=kind), state=state)
    step = transition({state}, to, {}, time.time())(call)
    allowed = (state, to) in TAKEN[kind]
    assert (step.error is None) == allowed, f"{kind}: {state} -> {to}"
    assert step.changed == allowed
    if allowed:
        assert step.call.state == to


@pytest.mark.parametrize("kind", get_args(Kind))
def test_only_a_passed_deadline_expires_a_pending_call(kind: Kind) -> None:
    call = new_call(kind=kind)
    early = transition({"pending"}, "expired", {}, time.time())(call)
    late = transition({"pending"}, "expired", {}, call.expires_at + 1)(call)
    assert early.error is not None
    assert late.error is None
    assert late.call.state == "expired"
