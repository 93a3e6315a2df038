"""The REST API under ``/api``: approvals, external results, grants and pins, the event stream
and who may watch it, and its one map of errors to HTTP statuses."""
