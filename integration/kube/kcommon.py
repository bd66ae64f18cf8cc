"""Small helpers shared by the test API server's modules.

This module is the bottom layer: it imports only the standard library, never
another module of the server, so every module can use it. It holds:
* ``MATCH_ALL``, a label or field selector that matches every object (for the
  lists the server and its controllers make through ``Store.list``), and
  ``label_selector_string``, a metav1.LabelSelector written as a selector
  string (``app=web,tier in (a,b)``);
* ``random_suffix``, the five characters ``generateName`` appends;
* timestamps: ``now_rfc3339`` (as metadata and conditions write them) and
  ``parse_time``;
* resource quantities with Kubernetes' semantics: ``parse_quantity`` (exact,
  as a ``Fraction``), ``format_quantity`` (the canonical form) and
  ``quantity_float``;
* objects' status: ``get_condition``, ``set_condition`` (conditions),
  ``pod_terminal``, ``pod_ready``, ``pod_running_ready`` and
  ``pod_removal_order`` (which pods a controller deletes first);
* ``controller_ref``, the controller ownerReference of an object, and
  ``owner_reference``, one naming an owner;
* ``short_hash``, the short stable hash of a pod template (the
  ``pod-template-hash`` and ``controller-revision-hash`` labels);
* ``to_int``, a lenient ``int()`` for the fields of custom resources.
"""

import datetime
import hashlib
import json
import random
import re
import time
from fractions import Fraction


# ------------------------------------------------------------------ selectors

class MatchAll:
    """A label or field selector that matches every object."""

    @staticmethod
    def matches(_):
        return True


MATCH_ALL = MatchAll()

_SET_OPERATORS = {"In": " in ", "NotIn": " notin "}


def label_selector_string(sel):
    """A metav1.LabelSelector as labels.Selector's String(): "" when it selects everything.

    Each matchLabels pair is ``key=value``; each matchExpression ``key in (a,b)``,
    ``key notin (a,b)`` (values sorted), ``key`` (Exists) or ``!key``
    (DoesNotExist); the terms are sorted by key (stably: matchLabels first). An
    expression Kubernetes would refuse to convert (an unknown operator, In or
    NotIn without values, Exists or DoesNotExist with some) is left out.
    """
    sel = sel if isinstance(sel, dict) else {}
    terms = [(str(k), "%s=%s" % (k, v)) for k, v in (sel.get("matchLabels") or {}).items()]
    for e in sel.get("matchExpressions") or []:
        if not isinstance(e, dict):
            continue
        key, op, values = str(e.get("key", "")), e.get("operator"), e.get("values") or []
        if op in _SET_OPERATORS and values:
            terms.append((key, "%s%s(%s)" % (key, _SET_OPERATORS[op],
                                             ",".join(sorted(str(v) for v in values)))))
        elif op == "Exists" and not values:
            terms.append((key, key))
        elif op == "DoesNotExist" and not values:
            terms.append((key, "!" + key))
    terms.sort(key=lambda t: t[0])
    return ",".join(t[1] for t in terms)


# ---------------------------------------------------------------------- names

NAME_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def random_suffix(n=5):
    """``n`` random characters, as ``generateName`` appends them (no vowels, no 0, 1, 3)."""
    return "".join(random.choice(NAME_SUFFIX_ALPHABET) for _ in range(n))


def short_hash(value, n=10):
    """A stable ``n``-character hash of a JSON value, in the ``generateName`` alphabet."""
    digest = hashlib.sha256(json.dumps(value, sort_keys=True,
                                       separators=(",", ":")).encode()).digest()
    number = int.from_bytes(digest[:16], "big")
    out = []
    for _ in range(n):
        number, i = divmod(number, len(NAME_SUFFIX_ALPHABET))
        out.append(NAME_SUFFIX_ALPHABET[i])
    return "".join(out)


# ---------------------------------------------------------------------- times

def now_rfc3339(offset=0.0):
    """The current UTC time plus ``offset`` seconds, as metadata timestamps are written."""
    t = datetime.datetime.fromtimestamp(time.time() + offset, datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(s):
    """Seconds since the epoch of an RFC 3339 UTC time (now if it does not parse)."""
    s = s.rstrip("Z")
    fmt = "%Y-%m-%dT%H:%M:%S.%f" if "." in s else "%Y-%m-%dT%H:%M:%S"
    try:
        return datetime.datetime.strptime(s, fmt).replace(
            tzinfo=datetime.timezone.utc).timestamp()
    except ValueError:
        return time.time()


# ----------------------------------------------------------------- quantities

_SUFFIXES = {"Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "Pi": 2 ** 50,
             "Ei": 2 ** 60, "n": Fraction(1, 10 ** 9), "u": Fraction(1, 10 ** 6),
             "m": Fraction(1, 1000), "k": 10 ** 3, "M": 10 ** 6, "G": 10 ** 9, "T": 10 ** 12,
             "P": 10 ** 15, "E": 10 ** 18}
_BINARY_SUFFIXES = ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki")
_DECIMAL_SUFFIXES = ((18, "E"), (15, "P"), (12, "T"), (9, "G"), (6, "M"), (3, "k"), (0, ""),
                     (-3, "m"), (-6, "u"), (-9, "n"))
# resource.Quantity's grammar: a signed decimal number, then a decimal exponent
# ("e3", "E-2") or an SI suffix (an "E" without digits is exa).
_QUANTITY = re.compile(r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
                       r"(?:[eE]([+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?")


def parse_quantity(q):
    """A resource.Quantity -> (its exact value as a Fraction, whether the suffix is binary).

    ``q`` is a string ("500m", "1.5", "4Gi", "1e3", "2E") or a JSON number;
    surrounding blanks are ignored. The suffixes are n, u, m, k, M, G, T, P, E
    and Ki to Ei; a decimal exponent (``e`` or ``E`` and digits) is read
    exactly. Raises ValueError when ``q`` is not a quantity.
    """
    s = str(q).strip()
    m = _QUANTITY.fullmatch(s)
    if m is None:
        raise ValueError("quantities must match the regular expression "
                         "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': %r" % s)
    number, exponent, suffix = m.groups()
    value = Fraction(number)
    if exponent is not None:
        return value * Fraction(10) ** int(exponent), False
    if suffix is not None:
        return value * _SUFFIXES[suffix], suffix.endswith("i")
    return value, False


def format_quantity(value, binary):
    """resource.Quantity's canonical String() of a value (a Fraction) in the given format."""
    if value == 0:
        return "0"
    if binary and value.denominator == 1 and abs(value) >= 1024:
        for suf in _BINARY_SUFFIXES:
            if value % _SUFFIXES[suf] == 0:
                return "%d%s" % (value // _SUFFIXES[suf], suf)
        return str(value.numerator)
    for exp, suf in _DECIMAL_SUFFIXES:
        scaled = value / Fraction(10) ** exp
        if scaled.denominator == 1:
            return "%d%s" % (scaled.numerator, suf)
    scaled = value * 10 ** 9  # below 1n: rounded up, as Quantity does
    return "%dn" % -(-scaled.numerator // scaled.denominator)


def quantity_float(q):
    """A quantity as a float; 0.0 when it is absent (None) or not a quantity."""
    if q is None:
        return 0.0
    if isinstance(q, (int, float)):
        return float(q)
    try:
        return float(parse_quantity(q)[0])
    except ValueError:
        return 0.0


def to_int(v, default=0):
    """``int(v)``, or ``default`` when that fails (a field left unset or not a number)."""
    try:
        return int(v)
    except (TypeError, ValueError):
        return default


# ----------------------------------------------------------------- conditions

def get_condition(obj, ctype):
    """The condition of type ``ctype`` in ``obj``'s ``status.conditions``, or None."""
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return c
    return None


def set_condition(conds, ctype, status, reason="", message="", now=None, probe=False):
    """Set a condition in ``conds`` (a list); lastTransitionTime changes only with status."""
    for c in conds:
        if c.get("type") == ctype:
            if c.get("status") != status:
                c["lastTransitionTime"] = now
                if probe:
                    c["lastProbeTime"] = now
            c["status"] = status
            for k, v in (("reason", reason), ("message", message)):
                if v:
                    c[k] = v
                else:
                    c.pop(k, None)
            return conds
    c = {"type": ctype, "status": status}
    if probe:
        c["lastProbeTime"] = now
    c["lastTransitionTime"] = now
    if reason:
        c["reason"] = reason
    if message:
        c["message"] = message
    conds.append(c)
    return conds


def pod_terminal(pod):
    """Whether the pod has finished (phase Succeeded or Failed)."""
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def pod_ready(pod):
    """Whether the pod's Ready condition is True."""
    c = get_condition(pod, "Ready")
    return c is not None and c.get("status") == "True"


def pod_running_ready(pod):
    """Running and Ready (podutil.IsPodReady on a running pod), and not being deleted."""
    return ((pod.get("status") or {}).get("phase") == "Running" and pod_ready(pod)
            and not pod["metadata"].get("deletionTimestamp"))


def pod_removal_order(pod):
    """Sort key: pods earlier in this order are deleted first (controller.ActivePods).

    Unscheduled before scheduled, Pending before Unknown before Running, not
    ready before ready, ready for less time first, more container restarts
    first, newer first.
    """
    st = pod.get("status") or {}
    phase_rank = {"Pending": 0, "Unknown": 1, "Running": 2}.get(st.get("phase"), 0)
    restarts = sum(int(c.get("restartCount", 0)) for c in st.get("containerStatuses") or [])
    ready_cond = get_condition(pod, "Ready") or {}
    ready = pod_ready(pod)
    ready_since = parse_time(ready_cond["lastTransitionTime"]) \
        if ready and ready_cond.get("lastTransitionTime") else 0
    created = parse_time(pod["metadata"].get("creationTimestamp", ""))
    return (1 if (pod.get("spec") or {}).get("nodeName") else 0, phase_rank, 1 if ready else 0,
            -ready_since, -restarts, -created, [-ord(ch) for ch in pod["metadata"]["name"]])


# -------------------------------------------------------------------- owners

def controller_ref(obj):
    """The ownerReference of ``obj`` marked ``controller: true``, or None."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref
    return None


def owner_reference(owner, block=True):
    """A controller ownerReference to ``owner`` (as controllers set it on what they create)."""
    m = owner["metadata"]
    ref = {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": m["name"],
           "uid": m["uid"], "controller": True}
    if block:
        ref["blockOwnerDeletion"] = True
    return ref
