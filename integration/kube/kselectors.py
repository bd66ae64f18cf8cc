"""Label and field selectors (``labelSelector``, ``fieldSelector``) of the test API server.

Named ``kselectors`` because a module named ``selectors`` would shadow the
standard library module that ``socketserver`` (and so ``http.server``) imports.
"""

import json
import re

from errors import bad_request
from objects import valid_label_key, valid_label_value


class LabelSelector:
    """labels.Parse: =, ==, !=, in, notin, exists, !key, >, <."""

    _SET = re.compile(r"^\s*([^\s!=<>(),]+)\s+(in|notin)\s*\(([^()]*)\)\s*$")

    def __init__(self, text):
        self.reqs = []
        for term in self._split(text or ""):
            term = term.strip()
            if not term:
                continue
            self.reqs.append(self._parse(term))

    @staticmethod
    def _split(text):
        depth, cur, out = 0, "", []
        for ch in text:
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
            if ch == "," and depth == 0:
                out.append(cur)
                cur = ""
            else:
                cur += ch
        out.append(cur)
        if depth != 0:
            raise bad_request("unable to parse requirement: found '(', expected: ')'")
        if len(out) > 1 and any(not t.strip() for t in out):
            raise bad_request("unable to parse requirement: found ',', expected: identifier")
        return out

    def _check_key(self, key):
        if not valid_label_key(key):
            raise bad_request("unable to parse requirement: key: Invalid value: %s: name part "
                              "must consist of alphanumeric characters, '-', '_' or '.', and must "
                              "start and end with an alphanumeric character" % json.dumps(key))

    def _check_values(self, key, values):
        for v in values:
            if not valid_label_value(v):
                raise bad_request("unable to parse requirement: values[0][%s]: Invalid value: %s: "
                                  "a valid label must be an empty string or consist of "
                                  "alphanumeric characters, '-', '_' or '.', and must start and "
                                  "end with an alphanumeric character" % (key, json.dumps(v)))

    def _parse(self, term):
        m = self._SET.match(term)
        if m:
            key, op = m.group(1), m.group(2)
            values = [v.strip() for v in m.group(3).split(",")]
            values = [v for v in values if v != ""] if m.group(3).strip() else []
            self._check_key(key)
            if not values:
                raise bad_request("unable to parse requirement: values: Invalid value: null: "
                                  "for 'in', 'notin' operators, values set can't be empty")
            self._check_values(key, values)
            return (key, op, set(values))
        if term.startswith("!"):
            key = term[1:].strip()
            self._check_key(key)
            return (key, "!", None)
        for op in ("==", "!=", "=", ">", "<"):
            if op in term:
                key, value = term.split(op, 1)
                key, value = key.strip(), value.strip()
                self._check_key(key)
                if op in (">", "<"):
                    try:
                        value = int(value)
                    except ValueError:
                        raise bad_request("unable to parse requirement: for 'Gt', 'Lt' operators, "
                                          "the value must be an integer")
                else:
                    self._check_values(key, [value])
                return (key, {"==": "=", "=": "="}.get(op, op), value)
        key = term.strip()
        self._check_key(key)
        return (key, "exists", None)

    def matches(self, labels):
        labels = labels or {}
        for key, op, value in self.reqs:
            has = key in labels
            v = labels.get(key)
            if op == "=" and not (has and v == value):
                return False
            if op == "!=" and has and v == value:
                return False
            if op == "in" and not (has and v in value):
                return False
            if op == "notin" and has and v in value:
                return False
            if op == "exists" and not has:
                return False
            if op == "!" and has:
                return False
            if op in (">", "<"):
                try:
                    n = int(v)
                except (TypeError, ValueError):
                    return False
                if (op == ">" and not n > value) or (op == "<" and not n < value):
                    return False
        return True


class FieldSelector:
    """fields.Parse with =, ==, != over the resource's supported field labels."""

    def __init__(self, text, res):
        self.reqs = []
        for term in (text or "").split(","):
            term = term.strip()
            if not term:
                continue
            for op in ("!=", "==", "="):
                if op in term:
                    key, value = term.split(op, 1)
                    break
            else:
                raise bad_request("invalid selector: '%s'; can't understand '%s'" % (text, term))
            key = key.strip()
            if key not in res.field_labels:
                raise bad_request("field label not supported: %s" % key)
            self.reqs.append((key, "!=" if op == "!=" else "=", value.strip()))

    def matches(self, obj):
        for key, op, value in self.reqs:
            cur = obj
            for part in key.split("."):
                cur = cur.get(part) if isinstance(cur, dict) else None
            if isinstance(cur, bool):
                cur = "true" if cur else "false"
            elif cur is None:
                cur = ""
            elif not isinstance(cur, str):
                cur = str(cur)
            if (op == "=") != (cur == value):
                return False
        return True
