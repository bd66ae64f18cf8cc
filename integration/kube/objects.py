"""Per-kind rules of the test API server: defaulting and validation of objects.

What the registry strategies of namespaces, pods, jobs and the apps/v1 kinds
(Deployments, ReplicaSets, StatefulSets) do on create and update (status
reset, spec defaults, the QoS class, a Job's selector, an apps/v1 object's
selector that must match its template), object
name and label syntax, and the validation errors answered as 422 Invalid (the
pod and Job update rules are in updaterules.py; CustomResourceDefinitions and
custom resources are handled by crds.py, webhook configurations by
webhookconfig.py).
"""

import json
import re

import crds
import updaterules
import webhookconfig
from errors import FieldError
from updaterules import GoValue, go_string_map

APPS_KINDS = ("Deployment", "ReplicaSet", "StatefulSet")

_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")


def name_errors(res, name):
    """metadata.name errors: a DNS-1123 label for namespaces, a subdomain otherwise."""
    if res.kind == "Namespace" and res.crd is None:
        if len(name) > 63 or not _DNS1123_LABEL.match(name):
            return [FieldError("Invalid", "metadata.name", (
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
                "or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  "
                "or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"),
                name, True)]
        return []
    if len(name) > 253 or not _DNS1123_SUBDOMAIN.match(name):
        return [FieldError("Invalid", "metadata.name", (
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
            "'-' or '.', and must start and end with an alphanumeric character (e.g. "
            "'example.com', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"), name, True)]
    return []


def valid_label_key(key):
    """A label key: an optional DNS-1123 subdomain prefix and '/', then a name part."""
    if "/" in key:
        prefix, name = key.split("/", 1)
        if not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN.match(prefix):
            return False
    else:
        name = key
    return 0 < len(name) <= 63 and bool(_LABEL_NAME.match(name))


def valid_label_value(v):
    """A label value: empty, or up to 63 alphanumerics, '-', '_' and '.'."""
    return v == "" or (len(v) <= 63 and bool(_LABEL_NAME.match(v)))


def _pod_qos(spec):
    """status.qosClass of a pod with this spec."""
    containers = list(spec.get("containers") or []) + list(spec.get("initContainers") or [])
    any_set = False
    guaranteed = True
    for c in containers:
        r = c.get("resources") or {}
        req, lim = r.get("requests") or {}, r.get("limits") or {}
        if req or lim:
            any_set = True
        for name in ("cpu", "memory"):
            if name not in lim:
                guaranteed = False
            elif name in req and str(req[name]) != str(lim[name]):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def prepare_for_create(res, obj):
    """Status reset and defaulting that the kind's registry strategy performs."""
    meta = obj["metadata"]
    if res.crd is not None:
        crds.prepare_create(res, obj)
    elif res.kind == "CustomResourceDefinition":
        crds.prepare_crd_create(obj)
    elif res.kind == "Namespace":
        meta.setdefault("labels", {})["kubernetes.io/metadata.name"] = meta["name"]
        spec = obj.setdefault("spec", {})
        spec["finalizers"] = ["kubernetes"]
        obj["status"] = {"phase": "Active"}
    elif res.kind == "Pod":
        spec = obj.setdefault("spec", {})
        default_pod_spec(spec)
        obj["status"] = {"phase": "Pending", "qosClass": _pod_qos(spec)}
    elif res.kind == "Job":
        obj["status"] = {}
        default_job(obj)
    elif res.kind in APPS_KINDS:
        # The fields without omitempty are written even when zero.
        obj["status"] = {"ReplicaSet": {"replicas": 0},
                         "StatefulSet": {"replicas": 0, "availableReplicas": 0}}.get(res.kind, {})
        default_apps_spec(res.kind, obj.setdefault("spec", {}))
    elif res.kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        webhookconfig.default_configuration(obj, res.kind.startswith("Mutating"))


def prepare_for_update(res, new, old):
    """Defaulting of the new object (kube-apiserver defaults every decoded body)."""
    if res.crd is not None:
        crds.prepare_update(res, new)
        return
    if res.kind == "CustomResourceDefinition":
        crds.prepare_crd_update(new, old)
    if res.kind == "Pod" and isinstance(new.get("spec"), dict):
        spec, ospec = new["spec"], old.get("spec") or {}
        # The Priority admission plugin keeps the priority it set on create.
        for key in ("priority", "preemptionPolicy"):
            if spec.get(key) is None and ospec.get(key) is not None:
                spec[key] = ospec[key]
        default_pod_spec(spec)
    if res.kind == "Job" and isinstance(new.get("spec"), dict):
        default_job_spec(new["spec"])
    if res.kind in APPS_KINDS and isinstance(new.get("spec"), dict):
        default_apps_spec(res.kind, new["spec"])
    if res.kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        webhookconfig.default_configuration(new, res.kind.startswith("Mutating"))
    if res.kind == "Namespace":
        new.setdefault("spec", {})["finalizers"] = list(
            (old.get("spec") or {}).get("finalizers") or [])
        if not new["spec"]["finalizers"]:
            del new["spec"]["finalizers"]
        new.setdefault("metadata", {}).setdefault("labels", {})[
            "kubernetes.io/metadata.name"] = old["metadata"]["name"]


def default_pod_spec(spec):
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("securityContext", {})
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    spec.setdefault("priority", 0)
    for c in list(spec.get("containers") or []) + list(spec.get("initContainers") or []):
        if not isinstance(c, dict):
            continue
        c.setdefault("terminationMessagePath", "/dev/termination-log")
        c.setdefault("terminationMessagePolicy", "File")
        c.setdefault("resources", {})
        image = c.get("image", "")
        tag = image.rsplit("/", 1)[-1]
        latest = "@" not in image and (":" not in tag or tag.endswith(":latest"))
        c.setdefault("imagePullPolicy", "Always" if latest else "IfNotPresent")


def default_job(job):
    spec = job.setdefault("spec", {})
    default_job_spec(spec)
    if spec.get("manualSelector") is None:
        spec.pop("manualSelector", None)
        uid = job["metadata"]["uid"]
        name = job["metadata"]["name"]
        labels = {"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": name,
                  "controller-uid": uid, "job-name": name}
        spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
        tmpl_meta = spec.setdefault("template", {}).setdefault("metadata", {})
        tmpl_meta.setdefault("labels", {}).update(labels)


def default_job_spec(spec):
    """The batch/v1 defaults of a Job spec and of its pod template."""
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    spec.setdefault("parallelism", 1)
    spec.setdefault("backoffLimit", 6)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    spec.setdefault("podReplacementPolicy", "TerminatingOrFailed")
    default_pod_template(spec)


def default_pod_template(spec):
    """The defaults of the pod template in ``spec.template`` (those of a pod spec, less what
    only a pod's admission sets)."""
    tmpl = spec.setdefault("template", {})
    if not isinstance(tmpl, dict):
        return
    tspec = tmpl.setdefault("spec", {})
    if not isinstance(tspec, dict):
        return
    default_pod_spec(tspec)
    tspec.pop("priority", None)
    tspec.pop("preemptionPolicy", None)
    tspec.pop("enableServiceLinks", None)


def default_apps_spec(kind, spec):
    """The apps/v1 defaults of a Deployment, ReplicaSet or StatefulSet spec."""
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    if kind == "Deployment":
        strategy = spec.setdefault("strategy", {})
        if isinstance(strategy, dict):
            strategy.setdefault("type", "RollingUpdate")
            if strategy["type"] == "RollingUpdate":
                ru = strategy.setdefault("rollingUpdate", {})
                if isinstance(ru, dict):
                    ru.setdefault("maxUnavailable", "25%")
                    ru.setdefault("maxSurge", "25%")
        spec.setdefault("revisionHistoryLimit", 10)
        spec.setdefault("progressDeadlineSeconds", 600)
    elif kind == "StatefulSet":
        spec.setdefault("podManagementPolicy", "OrderedReady")
        strategy = spec.setdefault("updateStrategy", {})
        if isinstance(strategy, dict):
            strategy.setdefault("type", "RollingUpdate")
            if strategy["type"] == "RollingUpdate":
                ru = strategy.setdefault("rollingUpdate", {})
                if isinstance(ru, dict):
                    ru.setdefault("partition", 0)
        spec.setdefault("revisionHistoryLimit", 10)
        policy = spec.setdefault("persistentVolumeClaimRetentionPolicy", {})
        if isinstance(policy, dict):
            policy.setdefault("whenDeleted", "Retain")
            policy.setdefault("whenScaled", "Retain")
    default_pod_template(spec)


def selector_matches(sel, labels):
    """Whether a metav1.LabelSelector (matchLabels, matchExpressions) selects ``labels``."""
    labels = labels or {}
    for k, v in ((sel or {}).get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in (sel or {}).get("matchExpressions") or []:
        key, op, vals = e.get("key"), e.get("operator"), e.get("values") or []
        if (op == "In" and labels.get(key) not in vals) or \
                (op == "NotIn" and key in labels and labels[key] in vals) or \
                (op == "Exists" and key not in labels) or \
                (op == "DoesNotExist" and key in labels):
            return False
    return True


def apps_spec_errors(kind, obj):
    """What apps/v1 validation refuses in every write: a missing or empty selector, a
    template whose labels it does not select, a template without containers."""
    errs = []
    spec = obj.get("spec") or {}
    sel = spec.get("selector")
    tmpl = spec.get("template") or {}
    if not isinstance(sel, dict):
        errs.append(FieldError("Required", "spec.selector", ""))
    elif not (sel.get("matchLabels") or sel.get("matchExpressions")):
        errs.append(FieldError("Invalid", "spec.selector", "empty selector is invalid for %s"
                               % kind.lower(), GoValue("&v1.LabelSelector{}"), True))
    elif not selector_matches(sel, (tmpl.get("metadata") or {}).get("labels")):
        errs.append(FieldError("Invalid", "spec.template.metadata.labels",
                               "`selector` does not match template `labels`",
                               GoValue(go_string_map((tmpl.get("metadata") or {}).get(
                                   "labels"))), True))
    if not (tmpl.get("spec") or {}).get("containers"):
        errs.append(FieldError("Required", "spec.template.spec.containers", ""))
    return errs


def validate_create(res, obj):
    errs = []
    builtin = res.crd is None  # a custom resource may have a built-in kind's name
    if builtin and res.kind == "Pod":
        if not (obj.get("spec") or {}).get("containers"):
            errs.append(FieldError("Required", "spec.containers", ""))
    if builtin and res.kind == "Job":
        tmpl = (obj.get("spec") or {}).get("template") or {}
        if not (tmpl.get("spec") or {}).get("containers"):
            errs.append(FieldError("Required", "spec.template.spec.containers", ""))
    if builtin and res.kind in APPS_KINDS:
        errs.extend(apps_spec_errors(res.kind, obj))
    if builtin and res.kind in ("MutatingWebhookConfiguration",
                                "ValidatingWebhookConfiguration"):
        errs.extend(webhookconfig.validate_configuration(obj))
    if res.kind == "CustomResourceDefinition" and res.crd is None:
        errs.extend(crds.validate_crd(obj))
    for k, v in ((obj.get("metadata") or {}).get("labels") or {}).items():
        if not valid_label_key(k):
            errs.append(FieldError("Invalid", "metadata.labels", "name part must consist of "
                                   "alphanumeric characters, '-', '_' or '.'", k, True))
        elif not isinstance(v, str) or not valid_label_value(v):
            errs.append(FieldError("Invalid", "metadata.labels", "a valid label must be an empty "
                                   "string or consist of alphanumeric characters, '-', '_' or "
                                   "'.', and must start and end with an alphanumeric character",
                                   v, True))
    return errs


def validate_update(res, new, old, sub="", features=None):
    """Update validation; ``sub`` is the subresource written ("status": spec rules skipped).

    ``features`` holds the feature gates (``updaterules.feature_gates``).
    """
    errs = []
    om, nm = old["metadata"], new["metadata"]
    if om.get("deletionTimestamp"):
        added = [f for f in (nm.get("finalizers") or []) if f not in (om.get("finalizers") or [])]
        if added:
            errs.append(FieldError("Forbidden", "metadata.finalizers",
                                   "no new finalizers can be added if the object is being "
                                   "deleted, found new finalizers []string{%s}"
                                   % ", ".join(json.dumps(f) for f in added)))
    builtin = res.crd is None
    if builtin and res.kind in ("MutatingWebhookConfiguration",
                                "ValidatingWebhookConfiguration"):
        errs.extend(webhookconfig.validate_configuration(new))
    if res.kind == "CustomResourceDefinition" and res.crd is None and sub != "status":
        errs.extend(crds.validate_crd(new, old))
    for k, v in (nm.get("labels") or {}).items():
        if not valid_label_key(k) or not isinstance(v, str) or not valid_label_value(v):
            errs.append(FieldError("Invalid", "metadata.labels", "a valid label must be an empty "
                                   "string or consist of alphanumeric characters, '-', '_' or "
                                   "'.', and must start and end with an alphanumeric character",
                                   v, True))
    if sub != "status" and builtin:
        if res.kind in APPS_KINDS:
            errs.extend(apps_spec_errors(res.kind, new))
            if not updaterules.semantic_equal((new.get("spec") or {}).get("selector"),
                                              (old.get("spec") or {}).get("selector")):
                errs.append(FieldError("Invalid", "spec.selector", "field is immutable",
                                       GoValue(updaterules.go_struct(
                                           "v1.LabelSelector",
                                           (new.get("spec") or {}).get("selector"))), True))
        if res.kind == "Pod":
            errs.extend(updaterules.pod_update_errors(new, old))
        elif res.kind == "Job":
            errs.extend(updaterules.job_update_errors(new, old, features))
    return errs

