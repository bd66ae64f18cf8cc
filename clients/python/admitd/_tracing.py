"""W3C trace context for admitd calls: the ``traceparent`` of the current OpenTelemetry span when
``opentelemetry-api`` is importable (admitd then records its spans under the caller's trace);
nothing otherwise."""

from __future__ import annotations

from typing import List, Tuple

try:  # optional
    from opentelemetry import propagate as _propagate
except ImportError:  # pragma: no cover - depends on the environment
    _propagate = None


def metadata() -> List[Tuple[str, str]]:
    """The call metadata carrying the current trace context, or ``[]``."""
    if _propagate is None:
        return []
    carrier = {}
    _propagate.inject(carrier)
    return [(k, v) for k, v in carrier.items() if k in ("traceparent", "tracestate")]
