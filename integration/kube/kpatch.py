"""Patch algorithms of the test Kubernetes API server (standard library only).

* JSON merge patch, RFC 7386 (``application/merge-patch+json``).
* JSON patch, RFC 6902 (``application/json-patch+json``).
* Strategic merge patch (``application/strategic-merge-patch+json``) for the
  built-in kinds this server serves (pods, Jobs, namespaces, Deployments,
  ReplicaSets, StatefulSets), driven by a table of the ``patchStrategy``
  / ``patchMergeKey`` struct tags of ``k8s.io/api`` (only the fields listed in
  ``_POD_SPEC_KEYS`` and friends; every other list is replaced, every map is
  merged, as the strategic merge patch does for fields without a strategy).

Errors are raised as ``PatchError``; the server turns them into Status objects.
"""

import copy

_DELETE = object()


class PatchError(Exception):
    """A patch that cannot be applied; ``code`` is the HTTP status to answer."""

    def __init__(self, message, code=422):
        super().__init__(message)
        self.code = code


# ---------------------------------------------------------------- merge patch

def merge_patch(target, patch):
    """RFC 7386: objects merge recursively, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if not isinstance(target, dict):
        target = {}
    result = dict(target)
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


# ----------------------------------------------------------------- JSON patch

def _unescape(token):
    return token.replace("~1", "/").replace("~0", "~")


def _split_pointer(path):
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError("invalid JSON pointer %r" % path)
    return [_unescape(t) for t in path[1:].split("/")]


def _resolve_parent(doc, tokens, path):
    cur = doc
    for tok in tokens[:-1]:
        if isinstance(cur, dict):
            if tok not in cur:
                raise PatchError("doc is missing path: \"%s\": missing value" % path)
            cur = cur[tok]
        elif isinstance(cur, list):
            try:
                idx = int(tok)
            except ValueError:
                raise PatchError("doc is missing path: \"%s\": missing value" % path)
            if idx < 0 or idx >= len(cur):
                raise PatchError("doc is missing path: \"%s\": missing value" % path)
            cur = cur[idx]
        else:
            raise PatchError("doc is missing path: \"%s\": missing value" % path)
    return cur


def _list_index(container, tok, path, allow_end):
    if tok == "-" and allow_end:
        return len(container)
    try:
        idx = int(tok)
    except ValueError:
        raise PatchError("unable to access invalid index: %s: invalid index referenced" % tok)
    limit = len(container) if allow_end else len(container) - 1
    if idx < 0 or idx > limit:
        raise PatchError("unable to access invalid index: %d: invalid index referenced" % idx)
    return idx


def _get(doc, path):
    tokens = _split_pointer(path)
    if not tokens:
        return doc
    parent = _resolve_parent(doc, tokens, path)
    tok = tokens[-1]
    if isinstance(parent, dict):
        if tok not in parent:
            raise PatchError("doc is missing path: \"%s\": missing value" % path)
        return parent[tok]
    if isinstance(parent, list):
        return parent[_list_index(parent, tok, path, False)]
    raise PatchError("doc is missing path: \"%s\": missing value" % path)


def _add(doc, path, value):
    tokens = _split_pointer(path)
    if not tokens:
        return value
    parent = _resolve_parent(doc, tokens, path)
    tok = tokens[-1]
    if isinstance(parent, dict):
        parent[tok] = value
    elif isinstance(parent, list):
        parent.insert(_list_index(parent, tok, path, True), value)
    else:
        raise PatchError("doc is missing path: \"%s\": missing value" % path)
    return doc


def _remove(doc, path):
    tokens = _split_pointer(path)
    parent = _resolve_parent(doc, tokens, path)
    tok = tokens[-1]
    if isinstance(parent, dict):
        if tok not in parent:
            raise PatchError("unable to remove nonexistent key: %s: missing value" % tok)
        return parent.pop(tok)
    if isinstance(parent, list):
        return parent.pop(_list_index(parent, tok, path, False))
    raise PatchError("doc is missing path: \"%s\": missing value" % path)


def json_patch(doc, ops):
    """RFC 6902. ``ops`` is the decoded patch (a list)."""
    if not isinstance(ops, list):
        raise PatchError("json: cannot unmarshal object into Go value of type jsonpatch.Patch", 400)
    doc = copy.deepcopy(doc)
    for op in ops:
        if not isinstance(op, dict) or "op" not in op:
            raise PatchError("invalid operation %s" % (op,), 400)
        kind = op["op"]
        path = op.get("path")
        if path is None:
            raise PatchError("operation missing path", 400)
        if kind == "add":
            doc = _add(doc, path, copy.deepcopy(op.get("value")))
        elif kind == "remove":
            _remove(doc, path)
        elif kind == "replace":
            _get(doc, path)  # must exist
            tokens = _split_pointer(path)
            if not tokens:
                doc = copy.deepcopy(op.get("value"))
            else:
                parent = _resolve_parent(doc, tokens, path)
                if isinstance(parent, dict):
                    parent[tokens[-1]] = copy.deepcopy(op.get("value"))
                else:
                    parent[_list_index(parent, tokens[-1], path, False)] = copy.deepcopy(op.get("value"))
        elif kind == "move":
            value = _remove(doc, op.get("from", ""))
            doc = _add(doc, path, value)
        elif kind == "copy":
            value = copy.deepcopy(_get(doc, op.get("from", "")))
            doc = _add(doc, path, value)
        elif kind == "test":
            try:
                current = _get(doc, path)
            except PatchError:
                current = _DELETE
            if current is _DELETE or current != op.get("value"):
                raise PatchError("testing value %s failed: test failed" % path)
        else:
            raise PatchError("Unexpected kind: %s" % kind, 400)
    return doc


# ------------------------------------------------------- strategic merge patch

# Strategies of the pod spec (k8s.io/api/core/v1 PodSpec, Container, ...).
# Key: path relative to a PodSpec; value: ("merge", key) for a list merged by
# key, ("merge", None) for a primitive list merged as a set.
_POD_SPEC_KEYS = {
    ("containers",): ("merge", "name"),
    ("initContainers",): ("merge", "name"),
    ("ephemeralContainers",): ("merge", "name"),
    ("volumes",): ("merge", "name"),
    ("schedulingGates",): ("merge", "name"),
    ("imagePullSecrets",): ("merge", "name"),
    ("hostAliases",): ("merge", "ip"),
    ("resourceClaims",): ("merge", "name"),
}
_CONTAINER_KEYS = {
    ("env",): ("merge", "name"),
    ("ports",): ("merge", "containerPort"),
    ("volumeMounts",): ("merge", "mountPath"),
    ("volumeDevices",): ("merge", "devicePath"),
}
_META_KEYS = {
    ("metadata", "finalizers"): ("merge", None),
    ("metadata", "ownerReferences"): ("merge", "uid"),
}


def _pod_spec_table(prefix):
    table = {}
    for path, strategy in _POD_SPEC_KEYS.items():
        table[prefix + path] = strategy
    for containers in ("containers", "initContainers", "ephemeralContainers"):
        for path, strategy in _CONTAINER_KEYS.items():
            table[prefix + (containers,) + path] = strategy
    return table


def _build_tables():
    pod = dict(_META_KEYS)
    pod.update(_pod_spec_table(("spec",)))
    pod[("status", "conditions")] = ("merge", "type")
    pod[("status", "podIPs")] = ("merge", "ip")
    pod[("status", "hostIPs")] = ("merge", "ip")
    job = dict(_META_KEYS)
    job.update(_pod_spec_table(("spec", "template", "spec")))
    job[("spec", "template", "metadata", "finalizers")] = ("merge", None)
    job[("spec", "template", "metadata", "ownerReferences")] = ("merge", "uid")
    job[("status", "conditions")] = ("merge", "type")
    namespace = dict(_META_KEYS)
    namespace[("status", "conditions")] = ("merge", "type")
    apps = dict(job)  # apps/v1 kinds: the pod template at spec.template, conditions by type
    return {"Pod": pod, "Job": job, "Namespace": namespace, "Deployment": apps,
            "ReplicaSet": apps, "StatefulSet": apps}


STRATEGIES = _build_tables()


def strategic_merge_patch(original, patch, kind):
    """Apply a strategic merge patch to ``original`` for the built-in ``kind``."""
    if not isinstance(patch, dict):
        raise PatchError("the body of the request was in an unknown format", 400)
    table = STRATEGIES.get(kind, _META_KEYS)
    result = _smp_map(copy.deepcopy(original), patch, (), table)
    if result is _DELETE:
        return {}
    return result


def _smp_map(orig, patch, path, table):
    if not isinstance(orig, dict):
        orig = {}
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return _DELETE
    if directive not in (None, "merge"):
        raise PatchError("Unknown patch type: %s in map: %s" % (directive, patch), 400)
    retain = patch.get("$retainKeys")
    if retain is not None:
        orig = {k: v for k, v in orig.items() if k in retain}
    orders = {}
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys"):
            continue
        if key.startswith("$setElementOrder/"):
            orders[key[len("$setElementOrder/"):]] = value
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key[len("$deleteFromPrimitiveList/"):]
            if isinstance(orig.get(field), list) and isinstance(value, list):
                orig[field] = [v for v in orig[field] if v not in value]
            continue
        sub = path + (key,)
        if value is None:
            orig.pop(key, None)
        elif isinstance(value, dict):
            merged = _smp_map(orig.get(key), value, sub, table)
            if merged is _DELETE:
                orig.pop(key, None)
            else:
                orig[key] = merged
        elif isinstance(value, list) and sub in table:
            orig[key] = _smp_list(orig.get(key), value, sub, table)
        else:
            orig[key] = _strip_directives(copy.deepcopy(value))
    for field, order in orders.items():
        if isinstance(orig.get(field), list) and isinstance(order, list):
            orig[field] = _reorder(orig[field], order, table.get(path + (field,)))
    return orig


def _strip_directives(value):
    if isinstance(value, dict):
        return {k: _strip_directives(v) for k, v in value.items()
                if not (isinstance(k, str) and k.startswith("$"))}
    if isinstance(value, list):
        return [_strip_directives(v) for v in value
                if not (isinstance(v, dict) and v.get("$patch") in ("delete",))]
    return value


def _smp_list(orig, patch, path, table):
    _, key = table[path]
    orig = list(orig) if isinstance(orig, list) else []
    for item in patch:
        if isinstance(item, dict) and item.get("$patch") == "replace":
            return [_strip_directives(copy.deepcopy(i)) for i in patch
                    if not (isinstance(i, dict) and "$patch" in i)]
    if key is None:  # primitive list merged as a set
        for item in patch:
            if isinstance(item, dict):
                continue
            if item not in orig:
                orig.append(copy.deepcopy(item))
        return orig
    for item in patch:
        if not isinstance(item, dict):
            raise PatchError("merging an object in json but data type is not map", 400)
        if key not in item:
            raise PatchError("map: %s does not contain declared merge key: %s" % (item, key), 400)
        idx = next((i for i, o in enumerate(orig)
                    if isinstance(o, dict) and o.get(key) == item[key]), None)
        if item.get("$patch") == "delete":
            if idx is not None:
                orig.pop(idx)
            continue
        if idx is None:
            orig.append(_strip_directives(copy.deepcopy(item)))
        else:
            merged = _smp_map(orig[idx], item, path, table)
            if merged is _DELETE:
                orig.pop(idx)
            else:
                orig[idx] = merged
    return orig


def _reorder(items, order, strategy):
    key = strategy[1] if strategy else None

    def ident(item):
        if key is not None and isinstance(item, dict):
            return item.get(key)
        return item

    wanted = [o.get(key) if (key is not None and isinstance(o, dict)) else o for o in order]
    ranked = []
    rest = []
    for item in items:
        k = ident(item)
        if k in wanted:
            ranked.append((wanted.index(k), item))
        else:
            rest.append(item)
    ranked.sort(key=lambda p: p[0])
    return [item for _, item in ranked] + rest
