"""Admission webhooks of the test API server, called as kube-apiserver calls them.

``WebhookAdmission`` is a ``Store.admission`` hook. On every create, update
and delete it reads the stored MutatingWebhookConfigurations and
ValidatingWebhookConfigurations (admissionregistration.k8s.io/v1), picks the
webhooks whose rules, namespaceSelector and objectSelector match, and POSTs an
AdmissionReview v1 to each over HTTPS, verifying the server certificate
against ``clientConfig.caBundle``. Mutating webhooks run first (configurations
in name order, then webhook order) and their JSON patches are applied; the
patched object is validated again; then the validating webhooks run. A write of
the scale subresource (scale.py) is reviewed as kube-apiserver reviews it: kind
autoscaling/v1 Scale, the parent's resource, subresource ``scale``, Scale
objects.

Errors follow k8s.io/apiserver's webhook admission plugin:
* a denial is ``ToStatusErr``: the webhook's status with code 403 when it has
  none, reason ``Forbidden`` when empty and the message
  ``admission webhook "<name>" denied the request: <message>``;
* a call failure (connection, TLS, timeout, invalid response) with
  failurePolicy Fail (the default) is a 500 InternalError
  ``Internal error occurred: failed calling webhook "<name>": <detail>``;
  with Ignore the webhook is skipped.

There is no cluster DNS: ``clientConfig.service`` is resolved through the
``--service-address NAMESPACE/NAME=HOST:PORT`` mapping, while TLS still checks
the certificate against the service's DNS name ``NAME.NAMESPACE.svc``.

The configurations' own defaulting and validation are in webhookconfig.py.
"""

import base64
import copy
import json
import socket
import ssl
import urllib.error
import urllib.parse
import urllib.request
import uuid

import kpatch
import scale
from errors import ApiError, bad_request, invalid
from kcommon import MATCH_ALL
from objects import validate_create, validate_update
from resources import RES_BY_KEY, SCALE_GVK

GROUP = "admissionregistration.k8s.io"
CONFIG_KEYS = ("mutatingwebhookconfigurations." + GROUP,
               "validatingwebhookconfigurations." + GROUP)

# The user every request is attributed to: this server has no authentication
# (kube-apiserver's old insecure port used the same identity).
USER_INFO = {"username": "system:unsecured",
             "groups": ["system:masters", "system:authenticated"]}


class CallError(Exception):
    """webhookutil.ErrCallingWebhook: the call failed; failurePolicy decides."""


# ------------------------------------------------------------------- matching
def selector_matches(sel, labels):
    """metav1.LabelSelector (matchLabels, matchExpressions) against ``labels``."""
    labels = labels or {}
    for k, v in ((sel or {}).get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in (sel or {}).get("matchExpressions") or []:
        key, op, vals = e.get("key"), e.get("operator"), e.get("values") or []
        if op == "In" and labels.get(key) not in vals:
            return False
        if op == "NotIn" and key in labels and labels[key] in vals:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def _resource_matches(patterns, plural, sub):
    for p in patterns or []:
        if p == "*/*":
            return True
        r, _, s = p.partition("/")
        if r not in ("*", plural):
            continue
        if s == sub or s == "*" and sub:
            return True
    return False


def rule_matches(rule, op, res, sub):
    if op not in (rule.get("operations") or []) and "*" not in (rule.get("operations") or []):
        return False
    groups, versions = rule.get("apiGroups") or [], rule.get("apiVersions") or []
    if res.group not in groups and "*" not in groups:
        return False
    if res.version not in versions and "*" not in versions:
        return False
    if not _resource_matches(rule.get("resources"), res.plural, sub):
        return False
    scope = rule.get("scope") or "*"
    return (scope == "*" or (scope == "Namespaced") == res.namespaced)


def _labels(obj):
    return ((obj or {}).get("metadata") or {}).get("labels") or {}


# ---------------------------------------------------------------------- hook
class WebhookAdmission:
    """The ``Store.admission`` hook that calls the registered webhooks."""

    def __init__(self, store, service_addresses=None, forbidden_prefix=False):
        self.store = store
        self.service_addresses = dict(service_addresses or {})
        self.forbidden_prefix = forbidden_prefix

    def __call__(self, req):
        if req.res.key in CONFIG_KEYS:
            return  # webhooks are never called for their own configurations
        mutating = self._webhooks(RES_BY_KEY[CONFIG_KEYS[0]], req)
        validating = self._webhooks(RES_BY_KEY[CONFIG_KEYS[1]], req)
        if not mutating and not validating:
            return
        before = copy.deepcopy(req.object)
        for wh in mutating:
            self._call(wh, req, True)
        if req.object != before and req.object is not None:
            self._revalidate(req)
        for wh in validating:
            self._call(wh, req, False)

    def _webhooks(self, cres, req):
        items, _ = self.store.list(cres, None, MATCH_ALL, MATCH_ALL)
        out = []
        for cfg in items:  # sorted by name
            for wh in cfg.get("webhooks") or []:
                if self._matches(wh, req):
                    out.append(wh)
        return out

    def _matches(self, wh, req):
        if not any(rule_matches(r, req.operation, req.res, req.subresource)
                   for r in wh.get("rules") or []):
            return False
        nsel = wh.get("namespaceSelector") or {}
        if req.res.kind == "Namespace" and req.res.crd is None:
            if not (selector_matches(nsel, _labels(req.object))
                    or (req.old_object is not None
                        and selector_matches(nsel, _labels(req.old_object)))):
                return False
        elif req.res.namespaced and nsel:
            ns = self.store.objects["namespaces"].get(("", req.namespace))
            if not selector_matches(nsel, _labels(ns)):
                return False
        osel = wh.get("objectSelector") or {}
        if osel:
            objs = [o for o in (req.object, req.old_object) if o is not None]
            if not any(selector_matches(osel, _labels(o)) for o in objs):
                return False
        return True

    def _revalidate(self, req):
        obj = req.object
        if req.subresource == "scale":  # a Scale: decoded and validated again (ScaleREST)
            req.object = scale.decode(obj, req.namespace, req.name)
            errs = scale.validate(req.object)
            if errs:
                raise invalid(scale.SCALE, req.name, errs)
            return
        meta = obj.setdefault("metadata", {})
        # What a patch may not change here (the registry would reject or reset it).
        obj["apiVersion"], obj["kind"] = req.res.api_version, req.res.kind
        meta["name"] = req.name
        if req.res.namespaced:
            meta["namespace"] = req.namespace
        if req.operation == "CREATE" and not req.subresource:
            errs = validate_create(req.res, obj)
        elif req.operation == "UPDATE":
            errs = validate_update(req.res, obj, req.old_object, req.subresource,
                                   self.store.features)
        else:
            errs = []
        if errs:
            raise invalid(req.res, req.name, errs)

    # ------------------------------------------------------------- one call
    def _call(self, wh, req, mutating):
        name = wh.get("name") or ""
        if req.dry_run and wh.get("sideEffects") not in ("None", "NoneOnDryRun"):
            raise bad_request('admission webhook "%s" does not support dry run' % name)
        try:
            resp = self._post(wh, req)
        except CallError as e:
            if wh.get("failurePolicy", "Fail") == "Ignore":
                return
            msg = 'failed calling webhook "%s": %s' % (name, e)
            raise ApiError(500, "InternalError", "Internal error occurred: " + msg,
                           {"causes": [{"message": msg}]})
        if not resp.get("allowed"):
            raise self._denied(name, resp.get("status"), req)
        if mutating and resp.get("patch"):
            try:
                ops = json.loads(base64.b64decode(resp["patch"]))
                req.object = kpatch.json_patch(req.object, ops)
            except (ValueError, TypeError, kpatch.PatchError) as e:
                raise ApiError(500, "InternalError", "Internal error occurred: %s" % e,
                               {"causes": [{"message": str(e)}]})

    def _denied(self, name, status, req):
        """webhookerrors.ToStatusErr."""
        st = dict(status) if isinstance(status, dict) else {}
        code = st.get("code") or 403
        reason = st.get("reason") or ""
        msg = st.get("message") or ""
        denied = 'admission webhook "%s" denied the request' % name
        if msg:
            msg = "%s: %s" % (denied, msg)
        elif reason:
            msg = "%s: %s" % (denied, reason)
        else:
            msg = denied + " without explanation"
        details = st.get("details")
        if self.forbidden_prefix:
            obj_name = req.name or "Unknown"
            if details is None:
                details = ({"causes": [{"message": msg}]} if code == 500 else
                           dict({"group": req.res.group} if req.res.group else {},
                                kind=req.res.plural, name=obj_name))
            msg = "%s: %s" % ("Internal error occurred" if code == 500 else
                              '%s "%s" is forbidden' % (req.res.qualified, obj_name), msg)
        if not reason:
            reason = "InternalError" if code == 500 else "Forbidden"
        return ApiError(code, reason, msg, details)

    def _endpoint(self, wh):
        cc = wh.get("clientConfig") or {}
        if cc.get("url"):
            url = cc["url"]
            return url, url, None
        svc = cc.get("service") or {}
        ns, sname = svc.get("namespace", ""), svc.get("name", "")
        host = "%s.%s.svc" % (sname, ns)
        port = svc.get("port", 443)
        path = svc.get("path") or ""
        shown = "https://%s:%s%s" % (host, port, path)
        addr = self.service_addresses.get("%s/%s" % (ns, sname))
        if addr is None:
            return shown, None, host
        return shown, "https://%s%s" % (addr, path), host

    def _post(self, wh, req):
        timeout = wh.get("timeoutSeconds") or 10
        shown, url, server_name = self._endpoint(wh)
        sep = "&" if "?" in shown else "?"
        where = 'Post "%s%stimeout=%ds"' % (shown, sep, timeout)
        if url is None:
            raise CallError("failed to call webhook: %s: dial tcp: lookup %s: no such host"
                            % (where, server_name))
        review = self._review(req)
        uid = review["request"]["uid"]
        ca = (wh.get("clientConfig") or {}).get("caBundle")
        try:
            ctx = ssl.create_default_context(
                cadata=base64.b64decode(ca).decode() if ca else None)
        except (ValueError, ssl.SSLError) as e:
            raise CallError("failed to call webhook: %s: x509: %s" % (where, e))
        if server_name:
            ctx = _ServerNameContext(ctx, server_name)
        body = json.dumps(review).encode()
        http_req = urllib.request.Request(url + sep + "timeout=%ds" % timeout, data=body,
                                          method="POST",
                                          headers={"Content-Type": "application/json",
                                                   "Accept": "application/json"})
        try:
            opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=ctx))
            with opener.open(http_req, timeout=timeout) as r:
                raw = r.read()
        except urllib.error.HTTPError as e:
            raise CallError("failed to call webhook: an error on the server (%r) has prevented "
                            "the request from succeeding" % e.read().decode(errors="replace"))
        except (urllib.error.URLError, OSError) as e:
            raise CallError("failed to call webhook: %s: %s"
                            % (where, _go_error(e, urllib.parse.urlsplit(url).netloc)))
        try:
            out = json.loads(raw)
        except ValueError as e:
            raise CallError("failed to call webhook: %s" % e)
        return self._verify(out, uid)

    @staticmethod
    def _verify(out, uid):
        """webhookrequest.VerifyAdmissionResponse for v1."""
        pre = "received invalid webhook response: "
        if not isinstance(out, dict):
            raise CallError(pre + "expected an AdmissionReview object")
        if out.get("apiVersion") != "admission.k8s.io/v1" or out.get("kind") != "AdmissionReview":
            raise CallError(pre + "expected webhook response of admission.k8s.io/v1, "
                            "Kind=AdmissionReview, got %s, Kind=%s"
                            % (out.get("apiVersion", ""), out.get("kind", "")))
        resp = out.get("response")
        if not isinstance(resp, dict):
            raise CallError(pre + "webhook response was absent")
        if resp.get("uid") != uid:
            raise CallError(pre + "expected response.uid=%s, got %s"
                            % (json.dumps(uid), json.dumps(resp.get("uid") or "")))
        if resp.get("patch"):
            if resp.get("patchType") is None:
                raise CallError(pre + "webhook returned response.patch but not "
                                "response.patchType")
            if resp["patchType"] != "JSONPatch":
                raise CallError(pre + "webhook returned invalid response.patchType of %s"
                                % json.dumps(resp["patchType"]))
        elif resp.get("patchType") is not None:
            raise CallError(pre + "webhook returned response.patchType but not response.patch")
        return resp

    def _review(self, req):
        res = req.res
        kind = {"group": res.group, "version": res.version, "kind": res.kind}
        resource = {"group": res.group, "version": res.version, "resource": res.plural}
        if req.subresource == "binding":
            kind = {"group": "", "version": "v1", "kind": "Binding"}
        elif req.subresource == "scale":
            kind = dict(SCALE_GVK)
        opts_kind = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions",
                     "DELETE": "DeleteOptions"}[req.operation]
        options = {"kind": opts_kind, "apiVersion": "meta.k8s.io/v1"}
        if req.dry_run:
            options["dryRun"] = ["All"]
        r = {"uid": str(uuid.uuid4()), "kind": kind, "resource": resource,
             "requestKind": kind, "requestResource": resource,
             "name": req.name, "namespace": req.namespace or "",
             "operation": req.operation, "userInfo": USER_INFO,
             "object": req.object, "oldObject": req.old_object,
             "dryRun": bool(req.dry_run), "options": options}
        if req.subresource:
            r["subResource"] = r["requestSubResource"] = req.subresource
        if not r["namespace"]:
            del r["namespace"]
        return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": r}


class _ServerNameContext:
    """An SSLContext whose sockets verify the certificate for ``server_name``.

    Used for ``clientConfig.service``: the connection goes to the mapped
    address, but the certificate must be valid for ``NAME.NAMESPACE.svc``.
    """

    def __init__(self, ctx, server_name):
        self._ctx, self._name = ctx, server_name

    def wrap_socket(self, sock, server_hostname=None, **kw):
        return self._ctx.wrap_socket(sock, server_hostname=self._name, **kw)

    def __getattr__(self, attr):
        return getattr(self._ctx, attr)


def _go_error(e, addr):
    """Roughly how Go's net/http client words a transport error."""
    reason = getattr(e, "reason", e)
    if isinstance(reason, ssl.SSLCertVerificationError):
        why = reason.verify_message or str(reason)
        if "unable to get local issuer" in why or "self-signed" in why or "self signed" in why:
            return ("tls: failed to verify certificate: x509: certificate signed by unknown "
                    "authority")
        if "hostname" in why.lower() or "IP address mismatch" in why:
            return "tls: failed to verify certificate: x509: certificate is not valid: " + why
        return "tls: failed to verify certificate: x509: " + why
    if isinstance(reason, (socket.timeout, TimeoutError)):
        return "context deadline exceeded"
    if isinstance(reason, ConnectionRefusedError):
        return "dial tcp %s: connect: connection refused" % addr
    return str(reason)
