"""Retries of the calls that are safe to repeat (reads, Submit and Apply: a repeated Submit of the
same workload makes no second one) while admitd cannot be reached (UNAVAILABLE: restarting,
failing over), within the call's own time budget."""

from __future__ import annotations

import time
from typing import Optional

import grpc

SAFE_TO_REPEAT = {"Get", "List", "Ping", "ParseManifests", "Admit", "Submit", "Apply"}


class Retry:
    """The budget of one call: ``remaining()`` seconds for the next attempt; ``again(error)`` the
    delay before another, or None when the error is final."""

    def __init__(self, method: str, timeout: float):
        # Safe calls also wait for a connection (wait_for_ready) rather than fail at once.
        self.safe = method in SAFE_TO_REPEAT
        self._deadline = time.monotonic() + timeout
        self._backoff = 0.05

    def remaining(self) -> float:
        return max(0.001, self._deadline - time.monotonic())

    def again(self, error: grpc.RpcError) -> Optional[float]:
        code = error.code() if hasattr(error, "code") else None
        if not self.safe or code != grpc.StatusCode.UNAVAILABLE:
            return None
        delay = self._backoff
        if time.monotonic() + delay >= self._deadline:
            return None
        self._backoff = min(self._backoff * 2, 1.0)
        return delay
