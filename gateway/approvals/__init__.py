"""Pending calls (approvals and deferred execution): the record, its durable stores and the
sealed request state that lets a 2026-07-28 client answer one."""

from gateway.approvals._transitions import INTERRUPTED
from gateway.approvals.errors import (
    PendingConflict,
    PendingNotFound,
    PendingStoreError,
    SealedStateError,
)
from gateway.approvals.memory import MemoryPendingStore
from gateway.approvals.pending import (
    TERMINAL_STATES,
    CallBinding,
    Decision,
    HumanDecision,
    Kind,
    PendingCall,
    State,
)
from gateway.approvals.sealing import NonceLedger, RequestStatePayload, RequestStateSealer
from gateway.approvals.sqlite import SQLitePendingStore
from gateway.approvals.store import REUSABLE_STATES, PendingListener, PendingStore, RecoveryReport

__all__ = [
    "INTERRUPTED",
    "REUSABLE_STATES",
    "TERMINAL_STATES",
    "CallBinding",
    "Decision",
    "HumanDecision",
    "Kind",
    "MemoryPendingStore",
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
    "SQLitePendingStore",
    "SealedStateError",
    "State",
]
