"""Errors of admitd calls: the gRPC status code, admitd's reason and its field violations."""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Tuple

import grpc

_DETAILS_KEY = "grpc-status-details-bin"
_ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
_BAD_REQUEST = "type.googleapis.com/google.rpc.BadRequest"
_RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"


@dataclass
class FieldViolation:
    """One invalid request field: its path (``spec.podSets[0].count``) and why."""

    field: str
    description: str


class AdmitdError(Exception):
    """A call admitd refused or could not answer.

    Attributes:
        code: the gRPC status code (``grpc.StatusCode.INVALID_ARGUMENT``, ...).
        message: admitd's message.
        reason: admitd's reason (``google.rpc.ErrorInfo``), e.g. ``"WORKLOAD_OWNED"``; ``""`` when
            it gave none.
        field_violations: the invalid fields (``google.rpc.BadRequest``), for INVALID_ARGUMENT:
            ``spec.podSets[0].count``; for a manifest, ``documents[1].spec.queueName``.
        retry_delay: seconds admitd advised waiting before a retry (``google.rpc.RetryInfo``).
    """

    def __init__(self, code: grpc.StatusCode, message: str, reason: str = "",
                 field_violations: Optional[List[FieldViolation]] = None,
                 retry_delay: Optional[float] = None):
        self.code = code
        self.message = message
        self.reason = reason
        self.field_violations = list(field_violations or [])
        self.retry_delay = retry_delay
        text = "%s: %s" % (code.name, message)
        if reason:
            text += " (%s)" % reason
        super().__init__(text)

    @classmethod
    def from_rpc_error(cls, error: grpc.RpcError) -> "AdmitdError":
        """The error a failed call raised, with the details admitd attached to it."""
        code = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
        message = error.details() if hasattr(error, "details") else str(error)
        trailing = error.trailing_metadata() if hasattr(error, "trailing_metadata") else None
        reason, violations, delay = _details(trailing)
        return cls(code, message or "", reason, violations, delay)


class WaitTimeout(AdmitdError, TimeoutError):
    """``wait_admitted`` ran out of time: the workload is not admitted (yet).

    ``state``, ``pending_reason`` and ``pending_message`` say where it stands (the QuotaReserved
    condition's reason and message while it is pending)."""

    def __init__(self, name: str, state: str, pending_reason: str, pending_message: str):
        self.state = state
        self.pending_reason = pending_reason
        self.pending_message = pending_message
        what = "workload %s is %s" % (name, state)
        if pending_message:
            what += ": " + pending_message
        super().__init__(grpc.StatusCode.DEADLINE_EXCEEDED, what, pending_reason)


def _details(trailing) -> Tuple[str, List[FieldViolation], Optional[float]]:
    raw = None
    for key, value in trailing or ():
        if key == _DETAILS_KEY:
            raw = value
    if not raw:
        return "", [], None
    from admitd._rpc import error_details_pb2, status_pb2  # generated at build time

    status = status_pb2.Status()
    status.ParseFromString(raw)
    reason, violations, delay = "", [], None
    for any_ in status.details:
        if any_.type_url == _ERROR_INFO:
            info = error_details_pb2.ErrorInfo()
            info.ParseFromString(any_.value)
            reason = info.reason
        elif any_.type_url == _BAD_REQUEST:
            bad = error_details_pb2.BadRequest()
            bad.ParseFromString(any_.value)
            violations += [FieldViolation(v.field, v.description) for v in bad.field_violations]
        elif any_.type_url == _RETRY_INFO:
            retry = error_details_pb2.RetryInfo()
            retry.ParseFromString(any_.value)
            delay = retry.retry_delay.seconds + retry.retry_delay.nanos / 1e9
    return reason, violations, delay


__all__ = ["AdmitdError", "FieldViolation", "WaitTimeout"]
