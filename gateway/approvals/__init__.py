"""Pending calls (approvals and deferred execution): the record, the contract of its durable
stores and the sealed request state that lets a 2026-07-28 client answer one; grants (standing
approvals) and the contract of their stores. The backends are in `gateway.memory`,
`gateway.sqlite` and `gateway.postgres`."""

from gateway.approvals._transitions import INTERRUPTED
from gateway.approvals.errors import (
    DecisionInvalid,
    GrantConflict,
    GrantNotFound,
    PendingConflict,
    PendingNotFound,
    PendingStoreError,
    SealedStateError,
)
from gateway.approvals.grant_store import GrantStore
from gateway.approvals.grants import Grant, GrantRequest, Match
from gateway.approvals.pending import (
    TERMINAL_STATES,
    CallBinding,
    Decision,
    HumanDecision,
    Kind,
    PendingCall,
    State,
    Vote,
)
from gateway.approvals.sealing import NonceLedger, RequestStatePayload, RequestStateSealer
from gateway.approvals.store import REUSABLE_STATES, PendingListener, PendingStore, RecoveryReport

__all__ = [
    "INTERRUPTED",
    "REUSABLE_STATES",
    "TERMINAL_STATES",
    "CallBinding",
    "Decision",
    "DecisionInvalid",
    "Grant",
    "GrantConflict",
    "GrantNotFound",
    "GrantRequest",
    "GrantStore",
    "HumanDecision",
    "Kind",
    "Match",
    "NonceLedger",
    "PendingCall",
    "PendingConflict",
    "PendingListener",
    "PendingNotFound",
    "PendingStore",
    "PendingStoreError",
    "RecoveryReport",
    "RequestStatePayload",
    "RequestStateSealer",
    "SealedStateError",
    "State",
    "Vote",
]
