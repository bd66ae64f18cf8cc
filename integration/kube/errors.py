"""Kubernetes-shaped errors of the test API server: ``ApiError`` and its builders.

``ApiError`` is answered as a metav1.Status object; the builders here give the
reasons, messages and details of apimachinery's api/errors package (NotFound,
AlreadyExists, Conflict, Invalid with field causes, BadRequest, ...).
"""

import json


class ApiError(Exception):
    """An error answered as a metav1.Status (apimachinery api/errors shapes)."""

    def __init__(self, code, reason, message, details=None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self):
        st = {"kind": "Status", "apiVersion": "v1", "metadata": {},
              "status": "Failure", "message": self.message}
        if self.reason:
            st["reason"] = self.reason
        if self.details is not None:
            st["details"] = self.details
        st["code"] = self.code
        return st


def status_details(res, name):
    """The ``details`` of a Status about the object ``name`` of ``res``."""
    d = {"name": name}
    if res.group:
        d["group"] = res.group
    d["kind"] = res.plural
    return d


def not_found(res, name):
    return ApiError(404, "NotFound", '%s "%s" not found' % (res.qualified, name),
                    status_details(res, name))


def already_exists(res, name):
    return ApiError(409, "AlreadyExists", '%s "%s" already exists' % (res.qualified, name),
                    status_details(res, name))


def conflict(res, name, why=None):
    if why is None:
        why = ("the object has been modified; please apply your changes to the "
               "latest version and try again")
    return ApiError(409, "Conflict", 'Operation cannot be fulfilled on %s "%s": %s'
                    % (res.qualified, name, why), status_details(res, name))


def bad_request(message):
    return ApiError(400, "BadRequest", message)


def forbidden(res, name, why):
    return ApiError(403, "Forbidden", '%s "%s" is forbidden: %s' % (res.qualified, name, why),
                    status_details(res, name))


def expired(message):
    return ApiError(410, "Expired", message)


class FieldError:
    """One field.Error: ``kind`` is its ErrorType (Forbidden, Required, ...)."""

    TYPES = {
        "Forbidden": ("FieldValueForbidden", "Forbidden"),
        "Required": ("FieldValueRequired", "Required value"),
        "Invalid": ("FieldValueInvalid", "Invalid value"),
        "NotSupported": ("FieldValueNotSupported", "Unsupported value"),
        "Duplicate": ("FieldValueDuplicate", "Duplicate value"),
    }

    def __init__(self, kind, field, detail, value=None, has_value=False):
        self.kind, self.field, self.detail = kind, field, detail
        self.value, self.has_value = value, has_value

    def body(self):
        text = self.TYPES[self.kind][1]
        if self.has_value:
            text += ": " + (json.dumps(self.value) if isinstance(self.value, str)
                            else _go_value(self.value))
        if self.detail:
            text += ": " + self.detail
        return text

    def error(self):
        return "%s: %s" % (self.field, self.body())


def _go_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    return str(v)


def invalid(res, name, errors):
    """422 Invalid as errors.NewInvalid(qualifiedKind, name, errs)."""
    msgs = []
    for e in errors:  # ErrorList.ToAggregate drops repeated messages
        if e.error() not in msgs:
            msgs.append(e.error())
    agg = msgs[0] if len(msgs) == 1 else "[" + ", ".join(msgs) + "]"
    qkind = res.kind + ("." + res.group if res.group else "")
    details = {"name": name}
    if res.group:
        details["group"] = res.group
    details["kind"] = res.kind
    details["causes"] = [{"reason": FieldError.TYPES[e.kind][0], "message": e.body(),
                          "field": e.field} for e in errors]
    return ApiError(422, "Invalid", '%s "%s" is invalid: %s' % (qkind, name, agg), details)


PATCH_TYPES = ["application/json-patch+json", "application/merge-patch+json",
               "application/apply-patch+yaml", "application/strategic-merge-patch+json"]


def unsupported_media_type(ctype, strategic=True):
    """415 for a PATCH content type the resource does not take (custom resources: no strategic
    merge patch, as kube-apiserver lists them)."""
    accepted = PATCH_TYPES if strategic else PATCH_TYPES[:3]
    return ApiError(415, "UnsupportedMediaType",
                    "the body of the request was in an unknown format - accepted media types "
                    "include: " + ", ".join(accepted), {})


def method_not_allowed():
    return ApiError(405, "MethodNotAllowed",
                    "the server does not allow this method on the requested resource", {})
