"""Lists and watches of the test API server: the HTTP side of ``GET`` on a collection.

``ListWatchMixin`` is part of apiserver.py's request ``Handler``: list bodies
with ``limit`` and ``continue`` (pagination at a consistent resourceVersion,
410 when the continue token is older than the history), waiting for or
refusing a resourceVersion the server has not reached (504
``ResourceVersionTooLarge``), kubectl's Table form, and watches: chunked
newline-delimited JSON from a resourceVersion or with synthetic ``ADDED``
events, ``sendInitialEvents``, bookmarks, ``timeoutSeconds``, ``410 Expired``
as an ``ERROR`` event, objects that stop or start matching the selectors sent
as ``DELETED`` or ``ADDED``.
"""

import base64
import copy
import json
import random
import time

import tables
from errors import ApiError, bad_request, expired


class ListWatchMixin:
    """Lists, the Table form and watches of a request handler (``self.server.app``, ``_send``,
    ``_wants_table`` and ``_send_warnings`` come from apiserver.Handler)."""

    # ------------------------------------------------------------------ list
    def _list_body(self, res, items, rv, cont, remaining=None):
        out = []
        for o in items:
            o = dict(o)
            o.pop("apiVersion", None)
            o.pop("kind", None)
            out.append(o)
        meta = {"resourceVersion": str(rv)}
        if cont:
            meta["continue"] = cont
            if remaining:
                meta["remainingItemCount"] = remaining
        return {"kind": res.list_kind, "apiVersion": res.api_version, "metadata": meta,
                "items": out}

    def _list(self, res, ns, lsel, fsel, q):
        store = self.server.app.store
        rv_param = q.get("resourceVersion", "")
        if rv_param not in ("", "0"):
            self._wait_for_rv(rv_param)
        items, rv = store.list(res, ns, lsel, fsel)
        cont = q.get("continue")
        if cont:
            try:
                tok = json.loads(base64.b64decode(cont))
                rv, start = int(tok["rv"]), tuple(tok["start"])
            except (ValueError, KeyError, TypeError):
                raise bad_request("continue key is not valid: incorrect encoded start "
                                  "resourceVersion (version meta.k8s.io/v1)")
            if rv < store.compacted_rv:
                raise expired("The provided continue parameter is too old to display a "
                              "consistent list result. You can start a new list without the "
                              "continue parameter.")
            items = [o for o in items
                     if (o["metadata"].get("namespace", ""), o["metadata"]["name"]) > start]
        next_tok, remaining = None, None
        limit = int(q.get("limit") or 0)
        if limit > 0 and len(items) > limit:
            last = items[limit - 1]["metadata"]
            next_tok = base64.b64encode(json.dumps({"rv": rv, "start": [
                last.get("namespace", ""), last["name"]]}).encode()).decode()
            remaining = len(items) - limit
            items = items[:limit]
        if self._wants_table():
            return self._send_table(res, items, rv, q, next_tok)
        self._send(200, self._list_body(res, items, rv, next_tok, remaining))

    def _wait_for_rv(self, rv_param):
        """A resourceVersion the server has not reached: wait, then 504 as Kubernetes."""
        try:
            want = int(rv_param)
        except ValueError:
            raise bad_request("invalid resource version: %s" % rv_param)
        store = self.server.app.store
        deadline = time.time() + 3
        with store.lock:
            while store.rv < want and time.time() < deadline:
                store.cond.wait(deadline - time.time())
            if store.rv < want:
                raise ApiError(504, "Timeout", "Too large resource version: %d, current: %d"
                               % (want, store.rv), {"causes": [{
                                   "reason": "ResourceVersionTooLarge",
                                   "message": "Too large resource version"}],
                                   "retryAfterSeconds": 1})
        return want

    # ----------------------------------------------------------------- table
    def _send_table(self, res, items, rv, q, cont=None):
        self._send(200, tables.table(res, items, rv, q.get("includeObject", "Metadata"), cont),
                   "application/json;as=Table;v=v1;g=meta.k8s.io")

    # ----------------------------------------------------------------- watch
    def _watch(self, res, ns, lsel, fsel, q):
        app = self.server.app
        store = app.store
        rv_param = q.get("resourceVersion", "")
        bookmarks = q.get("allowWatchBookmarks") in ("1", "true", "True")
        send_initial = q.get("sendInitialEvents") in ("1", "true", "True")
        table = self._wants_table()
        if "timeoutSeconds" in q:
            try:
                timeout = float(q["timeoutSeconds"])
            except ValueError:
                raise bad_request("invalid timeoutSeconds")
        else:
            timeout = app.min_request_timeout * (1 + random.random())
        deadline = time.time() + timeout
        if rv_param not in ("", "0"):
            self._wait_for_rv(rv_param)
        initial, error = [], None
        with store.lock:
            if rv_param in ("", "0") or send_initial:
                items, _ = store.list(res, ns, lsel, fsel)
                initial = [("ADDED", o) for o in items]
                last = store.rv
            else:
                last = int(rv_param)
                if last < store.compacted_rv:
                    error = expired("too old resource version: %d (%d)"
                                    % (last, store.compacted_rv))
        self.send_response(200)
        self.send_header("Content-Type", "application/json;stream=watch"
                         if not table else "application/json;as=Table;v=v1;g=meta.k8s.io")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        self._send_warnings()
        self.end_headers()
        self.close_connection = True
        first = [True]

        def emit(typ, obj):
            if table and typ in ("ADDED", "MODIFIED", "DELETED"):
                obj = tables.table(res, [obj], obj["metadata"]["resourceVersion"],
                                   q.get("includeObject", "Metadata"), headers=first[0])
                first[0] = False
            data = (json.dumps({"type": typ, "object": obj}) + "\n").encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        def bookmark(rv, initial_end=False):
            meta = {"resourceVersion": str(rv)}
            if initial_end:
                meta["annotations"] = {"k8s.io/initial-events-end": "true"}
            emit("BOOKMARK", {"kind": res.kind, "apiVersion": res.api_version, "metadata": meta})

        try:
            if error is not None:
                emit("ERROR", error.status())
                return self._end_chunks()
            for typ, obj in initial:
                emit(typ, obj)
            if send_initial and bookmarks:
                bookmark(last, initial_end=True)
            next_bookmark = time.time() + app.bookmark_interval
            while True:
                now = time.time()
                if now >= deadline:
                    break
                if store.registry.find(res.group, res.version, res.plural) is None:
                    break  # the CRD (or this version of it) is gone: the stream ends
                res = store.registry.find(res.group, res.version, res.plural)
                with store.lock:
                    if store.rv == last:
                        store.cond.wait(min(deadline, next_bookmark if bookmarks else deadline,
                                            now + 1.0) - now)
                    events = store.events_since(last)
                    current = store.rv
                if events is None:
                    emit("ERROR", expired("too old resource version: %d (%d)"
                                          % (last, store.compacted_rv)).status())
                    break
                for ev in events:
                    if ev.res.key == res.key and ev.res.crd == res.crd:
                        out = self._filter_event(ev, ns, lsel, fsel)
                        if out is not None:
                            emit(out[0], res.present(out[1]))
                    last = ev.rv
                last = max(last, current) if not events else last
                if bookmarks and time.time() >= next_bookmark:
                    bookmark(last)
                    next_bookmark = time.time() + app.bookmark_interval
            self._end_chunks()
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass

    def _end_chunks(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    @staticmethod
    def _filter_event(ev, ns, lsel, fsel):
        def match(o):
            return (o is not None and (ns is None or o["metadata"].get("namespace") == ns)
                    and lsel.matches(o["metadata"].get("labels")) and fsel.matches(o))

        if ev.type == "ADDED":
            return ("ADDED", ev.obj) if match(ev.obj) else None
        if ev.type == "DELETED":
            return ("DELETED", ev.obj) if match(ev.obj) else None
        new_m, old_m = match(ev.obj), match(ev.prev)
        if new_m and old_m:
            return ("MODIFIED", ev.obj)
        if new_m:
            return ("ADDED", ev.obj)
        if old_m:
            prev = copy.deepcopy(ev.prev)
            prev["metadata"]["resourceVersion"] = str(ev.rv)
            return ("DELETED", prev)
        return None
