"""Admission webhook configurations in the test API server: their defaults and validation.

What admissionregistration.k8s.io/v1 does to a MutatingWebhookConfiguration or
ValidatingWebhookConfiguration on create and update (objects.py calls these):
``default_configuration`` sets the v1 defaults of each webhook and
``validate_configuration`` makes a few of kube-apiserver's checks. Calling the
webhooks is webhooks.py's part.
"""

from errors import FieldError


def default_configuration(obj, mutating):
    """The defaults admissionregistration/v1 sets on each webhook of a configuration."""
    for wh in obj.get("webhooks") or []:
        if not isinstance(wh, dict):
            continue
        wh.setdefault("failurePolicy", "Fail")
        wh.setdefault("matchPolicy", "Equivalent")
        wh.setdefault("namespaceSelector", {})
        wh.setdefault("objectSelector", {})
        wh.setdefault("timeoutSeconds", 10)
        if mutating:
            wh.setdefault("reinvocationPolicy", "Never")
        svc = (wh.get("clientConfig") or {}).get("service")
        if isinstance(svc, dict):
            svc.setdefault("port", 443)
        for rule in wh.get("rules") or []:
            if isinstance(rule, dict):
                rule.setdefault("scope", "*")


def validate_configuration(obj):
    """A few of ValidateMutating/ValidatingWebhookConfiguration's checks."""
    errs, seen = [], set()
    for i, wh in enumerate(obj.get("webhooks") or []):
        p = "webhooks[%d]" % i
        if not isinstance(wh, dict):
            errs.append(FieldError("Invalid", p, "must be an object"))
            continue
        name = wh.get("name") or ""
        if not name:
            errs.append(FieldError("Required", p + ".name", ""))
        elif name in seen:
            errs.append(FieldError("Duplicate", p + ".name", "", name, True))
        seen.add(name)
        cc = wh.get("clientConfig") or {}
        if bool(cc.get("url")) == bool(cc.get("service")):
            errs.append(FieldError("Required", p + ".clientConfig",
                                   "exactly one of url or service is required"))
        if wh.get("sideEffects") not in ("None", "NoneOnDryRun"):
            errs.append(FieldError("NotSupported", p + ".sideEffects",
                                   'supported values: "None", "NoneOnDryRun"',
                                   wh.get("sideEffects") or "", True))
        if not wh.get("admissionReviewVersions"):
            errs.append(FieldError("Required", p + ".admissionReviewVersions",
                                   "must specify one of v1, v1beta1"))
        elif "v1" not in wh["admissionReviewVersions"]:
            errs.append(FieldError("Invalid", p + ".admissionReviewVersions",
                                   "this server only speaks v1", wh["admissionReviewVersions"],
                                   True))
        if wh.get("failurePolicy") not in ("Fail", "Ignore"):
            errs.append(FieldError("NotSupported", p + ".failurePolicy",
                                   'supported values: "Fail", "Ignore"',
                                   wh.get("failurePolicy"), True))
        t = wh.get("timeoutSeconds")
        if not isinstance(t, int) or not 1 <= t <= 30:
            errs.append(FieldError("Invalid", p + ".timeoutSeconds",
                                   "the timeout value must be between 1 and 30 seconds", t, True))
    return errs
