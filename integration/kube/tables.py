"""kubectl's Table form (``Accept: ...;as=Table``) in the test API server.

The column definitions and row functions of each kind (as kubectl's server-side
printers give them) and ``table()``, which builds a meta.k8s.io/v1 Table.
"""

import datetime
import json
import re
import time

from kcommon import label_selector_string, parse_time


def human_duration(seconds):
    """apimachinery util/duration.HumanDuration."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return "%ds" % s
    minutes = s // 60
    if minutes < 10:
        return "%dm" % minutes if s % 60 == 0 else "%dm%ds" % (minutes, s % 60)
    if minutes < 180:
        return "%dm" % minutes
    hours = s // 3600
    if hours < 8:
        return "%dh" % hours if minutes % 60 == 0 else "%dh%dm" % (hours, minutes % 60)
    if hours < 48:
        return "%dh" % hours
    if hours < 24 * 8:
        return "%dd" % (hours // 24) if hours % 24 == 0 else "%dd%dh" % (hours // 24, hours % 24)
    if hours < 24 * 365 * 2:
        return "%dd" % (hours // 24)
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        return "%dy" % (hours // 24 // 365) if dy == 0 else "%dy%dd" % (hours // 24 // 365, dy)
    return "%dy" % (hours // 24 // 365)


def _age(obj):
    ts = obj.get("metadata", {}).get("creationTimestamp")
    if not ts:
        return "<unknown>"
    return human_duration(time.time() - parse_time(ts))


def _col(name, typ="string", fmt="", priority=0, desc=""):
    return {"name": name, "type": typ, "format": fmt, "description": desc, "priority": priority}


def _pod_row(p):
    spec, st = p.get("spec", {}), p.get("status", {})
    statuses = st.get("containerStatuses") or []
    ready = sum(1 for c in statuses if c.get("ready"))
    restarts = sum(int(c.get("restartCount", 0)) for c in statuses)
    reason = st.get("reason") or st.get("phase") or ""
    for c in reversed(statuses):  # as kubectl's printPod: a container's state wins
        state = c.get("state") or {}
        if (state.get("waiting") or {}).get("reason"):
            reason = state["waiting"]["reason"]
        elif "terminated" in state:
            t = state["terminated"] or {}
            reason = t.get("reason") or ("Signal:%s" % t["signal"] if t.get("signal")
                                         else "ExitCode:%s" % t.get("exitCode", 0))
    if p.get("metadata", {}).get("deletionTimestamp"):
        reason = "Terminating"
    elif spec.get("schedulingGates"):
        reason = "SchedulingGated"
    return [p["metadata"]["name"], "%d/%d" % (ready, len(spec.get("containers") or [])), reason,
            restarts, _age(p), st.get("podIP") or "<none>", spec.get("nodeName") or "<none>",
            st.get("nominatedNodeName") or "<none>", "<none>"]


POD_TABLE = ([_col("Name", fmt="name"), _col("Ready"), _col("Status"),
              _col("Restarts", "string"), _col("Age"), _col("IP", priority=1),
              _col("Node", priority=1), _col("Nominated Node", priority=1),
              _col("Readiness Gates", priority=1)], _pod_row)


def _job_row(j):
    spec, st = j.get("spec", {}), j.get("status", {})
    conds = {c.get("type"): c.get("status") for c in st.get("conditions") or []}
    if conds.get("Complete") == "True":
        status = "Complete"
    elif conds.get("Failed") == "True":
        status = "Failed"
    elif conds.get("FailureTarget") == "True":
        status = "FailureTarget"
    elif conds.get("SuccessCriteriaMet") == "True":
        status = "SuccessCriteriaMet"
    elif spec.get("suspend") or conds.get("Suspended") == "True":
        status = "Suspended"
    else:
        status = "Running"
    comp = spec.get("completions")
    completions = "%d/%s" % (st.get("succeeded", 0), comp if comp is not None else "1")
    duration = ""
    if st.get("startTime"):
        end = parse_time(st["completionTime"]) if st.get("completionTime") else time.time()
        duration = human_duration(end - parse_time(st["startTime"]))
    containers = spec.get("template", {}).get("spec", {}).get("containers") or []
    sel = (spec.get("selector") or {}).get("matchLabels") or {}
    return [j["metadata"]["name"], status, completions, duration, _age(j),
            ",".join(c.get("name", "") for c in containers),
            ",".join(c.get("image", "") for c in containers),
            ",".join("%s=%s" % kv for kv in sorted(sel.items()))]


JOB_TABLE = ([_col("Name", fmt="name"), _col("Status"), _col("Completions"), _col("Duration"),
              _col("Age"), _col("Containers", priority=1), _col("Images", priority=1),
              _col("Selector", priority=1)], _job_row)

def format_label_selector(sel):
    """metav1.FormatLabelSelector: the selector string (sorted by key), ``<none>`` when empty."""
    return label_selector_string(sel) or "<none>"


def _containers_images(obj):
    containers = (((obj.get("spec") or {}).get("template") or {}).get("spec") or {}).get(
        "containers") or []
    return (",".join(c.get("name", "") for c in containers),
            ",".join(c.get("image", "") for c in containers))


def _replicas(obj):
    r = (obj.get("spec") or {}).get("replicas")
    return 1 if r is None else int(r)


def _deployment_row(d):
    st = d.get("status") or {}
    names, images = _containers_images(d)
    return [d["metadata"]["name"], "%d/%d" % (st.get("readyReplicas", 0), _replicas(d)),
            st.get("updatedReplicas", 0), st.get("availableReplicas", 0), _age(d), names, images,
            format_label_selector((d.get("spec") or {}).get("selector"))]


DEPLOYMENT_TABLE = ([_col("Name", fmt="name"), _col("Ready"), _col("Up-to-date", "integer"),
                     _col("Available", "integer"), _col("Age"), _col("Containers", priority=1),
                     _col("Images", priority=1), _col("Selector", priority=1)], _deployment_row)


def _replicaset_row(rs):
    st = rs.get("status") or {}
    names, images = _containers_images(rs)
    return [rs["metadata"]["name"], _replicas(rs), st.get("replicas", 0),
            st.get("readyReplicas", 0), _age(rs), names, images,
            format_label_selector((rs.get("spec") or {}).get("selector"))]


REPLICASET_TABLE = ([_col("Name", fmt="name"), _col("Desired", "integer"),
                     _col("Current", "integer"), _col("Ready", "integer"), _col("Age"),
                     _col("Containers", priority=1), _col("Images", priority=1),
                     _col("Selector", priority=1)], _replicaset_row)


def _statefulset_row(sts):
    st = sts.get("status") or {}
    names, images = _containers_images(sts)
    return [sts["metadata"]["name"], "%d/%d" % (st.get("readyReplicas", 0), _replicas(sts)),
            _age(sts), names, images]


STATEFULSET_TABLE = ([_col("Name", fmt="name"), _col("Ready"), _col("Age"),
                      _col("Containers", priority=1), _col("Images", priority=1)],
                     _statefulset_row)

# The scale subresource's Scale (``kubectl get deploy x --subresource=scale``).
SCALE_TABLE = ([_col("Name", fmt="name"),
                _col("Desired Replicas", "integer", desc="The replicas asked for."),
                _col("Available Replicas", "integer", desc="The replicas there are.")],
               lambda o: [o["metadata"]["name"], (o.get("spec") or {}).get("replicas") or 0,
                          (o.get("status") or {}).get("replicas") or 0])

NAMESPACE_TABLE = ([_col("Name", fmt="name"), _col("Status"), _col("Age")],
                   lambda n: [n["metadata"]["name"], n.get("status", {}).get("phase", ""), _age(n)])

LEASE_TABLE = ([_col("Name", fmt="name"), _col("Holder"), _col("Age")],
               lambda l: [l["metadata"]["name"], l.get("spec", {}).get("holderIdentity", ""),
                          _age(l)])


def _event_row(e):
    inv = e.get("involvedObject") or {}
    last = e.get("lastTimestamp") or e.get("eventTime") or e["metadata"].get("creationTimestamp")
    return [human_duration(time.time() - parse_time(last)) if last else "<unknown>",
            e.get("type", ""), e.get("reason", ""),
            "%s/%s" % ((inv.get("kind") or "").lower(), inv.get("name", "")), e.get("message", "")]


EVENT_TABLE = ([_col("Last Seen"), _col("Type"), _col("Reason"), _col("Object"),
                _col("Message")], _event_row)

def _node_row(n):
    spec, st = n.get("spec", {}), n.get("status", {})
    ready = {c.get("type"): c.get("status") for c in st.get("conditions") or []}.get("Ready")
    status = "Ready" if ready == "True" else "NotReady" if ready else "Unknown"
    if spec.get("unschedulable"):
        status += ",SchedulingDisabled"
    labels = n["metadata"].get("labels") or {}
    roles = sorted(k.split("/", 1)[1] for k in labels
                   if k.startswith("node-role.kubernetes.io/")) or ["<none>"]
    return [n["metadata"]["name"], status, ",".join(roles), _age(n),
            (st.get("nodeInfo") or {}).get("kubeletVersion", "")]


NODE_TABLE = ([_col("Name", fmt="name"), _col("Status"), _col("Roles"), _col("Age"),
               _col("Version")], _node_row)

DEFAULT_TABLE = ([_col("Name", fmt="name"), _col("Created At", "date")],
                 lambda o: [o["metadata"]["name"], o["metadata"].get("creationTimestamp")])


# ------------------------------------------------ custom resources' printer columns

class JSONPathError(ValueError):
    pass


def _jsonpath_tokens(path):
    """Split a simple JSONPath (``.a.b[0].c``, ``[*]``, ``[-1:]``, ``['k']``,
    ``[?(@.x=='v')]``)."""
    out, i, n = [], 0, len(path)
    while i < n:
        ch = path[i]
        if ch == ".":
            i += 1
            name = ""
            while i < n and path[i] not in ".[":
                if path[i] == "\\" and i + 1 < n:
                    i += 1
                name += path[i]
                i += 1
            if name:
                out.append(("field", name))
        elif ch == "[":
            depth, j = 0, i
            while j < n:
                if path[j] == "[":
                    depth += 1
                elif path[j] == "]":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            if j >= n:
                raise JSONPathError("unterminated [")
            inner = path[i + 1:j].strip()
            i = j + 1
            if inner == "*":
                out.append(("all", None))
            elif inner.startswith("?(") and inner.endswith(")"):
                out.append(("filter", _parse_filter(inner[2:-1].strip())))
            elif inner[:1] in "'\"" and inner[-1:] == inner[:1]:
                out.append(("field", inner[1:-1]))
            elif _SLICE.match(inner):
                a, b = inner.split(":", 1)
                out.append(("slice", (int(a) if a.strip() else None,
                                      int(b) if b.strip() else None)))
            else:
                try:
                    out.append(("index", int(inner)))
                except ValueError:
                    raise JSONPathError("unsupported subscript [%s]" % inner)
        else:
            raise JSONPathError("unexpected %r" % ch)
    return out


_SLICE = re.compile(r"^\s*-?\d*\s*:\s*-?\d*\s*$")
_FILTER = re.compile(r"^@((?:\.[^.=!<> ]+)+)\s*(==|!=)\s*(.+)$")


def _parse_filter(text):
    m = _FILTER.match(text)
    if not m:
        raise JSONPathError("unsupported filter %s" % text)
    fields = [f for f in m.group(1).split(".") if f]
    raw = m.group(3).strip()
    if raw[:1] in "'\"" and raw[-1:] == raw[:1]:
        value = raw[1:-1]
    else:
        try:
            value = json.loads(raw)
        except ValueError:
            raise JSONPathError("unsupported filter value %s" % raw)
    return fields, m.group(2), value


def jsonpath(obj, path):
    """The values ``path`` finds in ``obj`` (the simple JSONPath forms of printer columns)."""
    values = [obj]
    for kind, arg in _jsonpath_tokens(path):
        nxt = []
        for v in values:
            if kind == "field" and isinstance(v, dict) and arg in v:
                nxt.append(v[arg])
            elif kind == "index" and isinstance(v, list) and -len(v) <= arg < len(v):
                nxt.append(v[arg])
            elif kind == "slice" and isinstance(v, list):
                nxt.extend(v[arg[0]:arg[1]])
            elif kind == "all":
                nxt.extend(v if isinstance(v, list) else list(v.values())
                           if isinstance(v, dict) else [])
            elif kind == "filter" and isinstance(v, list):
                fields, op, want = arg
                for item in v:
                    cur = item
                    for f in fields:
                        cur = cur.get(f) if isinstance(cur, dict) else None
                    if (cur == want) == (op == "=="):
                        nxt.append(item)
        values = nxt
    return values


def _go_text(value):
    """A value as the jsonpath printer writes it (Go's fmt; maps and lists as JSON)."""
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"), sort_keys=isinstance(value, dict))
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e21 else repr(value)
    return str(value)


def _cell(col, obj):
    try:
        found = jsonpath(obj, col.get("jsonPath") or "")
    except JSONPathError:
        return None
    if not found or found[0] is None:
        return None
    value, typ = found[0], col.get("type")
    if typ == "string":
        return _go_text(value)
    if typ == "integer" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value)
    if typ == "number" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if typ == "boolean" and isinstance(value, bool):
        return value
    if typ == "date" and isinstance(value, str):
        try:
            datetime.datetime.strptime(value.rstrip("Z").split(".")[0], "%Y-%m-%dT%H:%M:%S")
        except ValueError:
            return "<invalid>"
        return human_duration(time.time() - parse_time(value))
    return None


def crd_table(columns):
    """The Table columns and row function of a CRD version's ``additionalPrinterColumns``
    (``Age`` from creationTimestamp when it declares none), as apiextensions' table convertor."""
    columns = [c for c in columns if isinstance(c, dict)] or [
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp",
         "description": "CreationTimestamp is a timestamp representing the server time when "
                        "this object was created."}]
    defs = [_col("Name", fmt="name", desc="Name must be unique within a namespace.")]
    for c in columns:
        defs.append(_col(c.get("name", ""), c.get("type", "string"), c.get("format", ""),
                         int(c.get("priority") or 0), c.get("description") or
                         "Custom resource definition column (in JSONPath format): %s"
                         % c.get("jsonPath", "")))
    return defs, lambda o: [o["metadata"]["name"]] + [_cell(c, o) for c in columns]


def table(res, items, rv, include_object, cont=None, headers=True):
    """A meta.k8s.io/v1 Table of ``items``; ``include_object`` is the includeObject parameter."""
    cols, row_fn = res.table or DEFAULT_TABLE
    rows = []
    for o in items:
        row = {"cells": row_fn(o)}
        if include_object == "Object":
            row["object"] = o
        elif include_object != "None":
            row["object"] = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                             "metadata": o["metadata"]}
        rows.append(row)
    meta = {"resourceVersion": str(rv)}
    if cont:
        meta["continue"] = cont
    out = {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta,
           "columnDefinitions": cols if headers else None, "rows": rows}
    if not headers:
        del out["columnDefinitions"]
    return out
