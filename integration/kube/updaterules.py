"""Update rules of pods and Jobs: the spec changes kube-apiserver refuses (422 Invalid).

* Pods, as ``ValidatePodUpdate`` (pkg/apis/core/validation): containers may
  not be added or removed; images may change (not to empty);
  ``activeDeadlineSeconds`` may go from unset to a value or decrease;
  tolerations may only be added (an existing one may change only its
  ``tolerationSeconds``); scheduling gates may only be removed; while the OLD
  pod is gated, ``nodeSelector`` may gain keys (no change or removal) and the
  required node affinity may only be narrowed; any other spec change is
  ``spec: Forbidden: pod updates may not change fields other than ...``.
* Jobs, as ``ValidateJobSpecUpdate`` (pkg/apis/batch/validation) with the
  options of the Job registry strategy: ``completions`` immutable (Indexed
  Jobs may change it when it equals the new ``parallelism``), ``selector``,
  ``template``, ``completionMode``, ``podFailurePolicy``,
  ``backoffLimitPerIndex``, ``managedBy`` and ``successPolicy`` immutable;
  while the OLD Job is suspended and has no ``status.startTime``, the
  template's node affinity, nodeSelector, tolerations, labels, annotations and
  scheduling gates may change.

Kubernetes 1.36 relaxes the Job rules with two beta feature gates, on by
default from 1.36 (``feature_gates``; the server's ``--server-version`` picks
the defaults, ``--feature-gates`` overrides them):
* ``MutableSchedulingDirectivesForSuspendedJobs``: the scheduling directives
  are mutable while the OLD Job is suspended and either never started or
  ``JobSuspended=True`` with ``status.active == 0``; the Job controller clears
  ``status.startTime`` when it marks a Job suspended;
* ``MutablePodResourcesForSuspendedJobs``: under the same condition the
  containers' and init containers' ``resources`` are mutable too (the template
  is then compared as ``spec.template.spec``).

Values in messages are printed as Go's ``field.Error`` prints them (``%#v``
of the internal types, the protobuf ``String()`` of a LabelSelector). Where
kube-apiserver prints a whole Go struct (the Job's template, a PodFailurePolicy)
or a go-cmp diff (the pod spec), the text here keeps the same prefix and
suffix but the part in between is a compact JSON rendering (see README.md).
"""

import copy
import json
import re

from errors import FieldError
from kcommon import parse_quantity

FIELD_IMMUTABLE = "field is immutable"
MAX_INT32 = 2 ** 31 - 1

UPDATABLE_POD_SPEC_FIELDS = [
    "`spec.containers[*].image`",
    "`spec.initContainers[*].image`",
    "`spec.activeDeadlineSeconds`",
    "`spec.tolerations` (only additions to existing tolerations)",
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
]


# Feature gates this server knows, with the minor version whose default is on.
FEATURE_GATES = {
    "MutableSchedulingDirectivesForSuspendedJobs": 36,
    "MutablePodResourcesForSuspendedJobs": 36,
}


def feature_gates(server_version, overrides=""):
    """The gates' values: defaults for ``server_version`` ("v1.36.0"), then ``overrides``.

    ``overrides`` is kube-apiserver's ``--feature-gates`` form, ``Name=true,Other=false``;
    raises ValueError on an unknown gate or value.
    """
    m = re.match(r"v?1\.(\d+)", server_version or "")
    minor = int(m.group(1)) if m else 0
    gates = {name: minor >= since for name, since in FEATURE_GATES.items()}
    for item in (overrides or "").split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, value = item.partition("=")
        name, value = name.strip(), value.strip().lower()
        if name not in FEATURE_GATES:
            raise ValueError("unrecognized feature gate: %s" % name)
        if not sep or value not in ("true", "false"):
            raise ValueError("invalid value of %s=%s, err: strconv.ParseBool: parsing %s: "
                             "invalid syntax" % (name, value, json.dumps(value)))
        gates[name] = value == "true"
    return gates


class GoValue:
    """A bad value already printed the way Go prints it (no quoting added)."""

    def __init__(self, text):
        self.text = text

    def __str__(self):
        return self.text


# ------------------------------------------------------------- equality

def _quantity_key(v):
    """A canonical form of a resource.Quantity, so "1" equals "1000m"."""
    try:
        return ("q", parse_quantity(v)[0])
    except ValueError:
        return ("s", str(v))


_QUANTITY_MAPS = ("requests", "limits", "overhead", "capacity", "allocatable")


def normalize(v, parent_key=None):
    """The value as apimachinery's semantic equality sees it.

    null, empty lists and empty maps are the same as absent (``Semantic.DeepEqual``
    treats nil and empty slices and maps alike); quantities compare by value.
    """
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            if parent_key in _QUANTITY_MAPS and x is not None and not isinstance(x, (dict, list)):
                out[k] = _quantity_key(x)
                continue
            n = normalize(x, k)
            if n is None or n == {} or n == []:
                continue
            out[k] = n
        return out
    if isinstance(v, list):
        out = [normalize(x) for x in v]
        return [{} if x is None else x for x in out]
    return v


def semantic_equal(a, b):
    return normalize({"v": a}) == normalize({"v": b})


# ------------------------------------------------------------ Go printing

def go_quote(s):
    """strconv.Quote, as far as JSON strings differ from it only in rare escapes."""
    return json.dumps(s, ensure_ascii=False)


def go_string_map(m):
    """%#v of a map[string]string (keys sorted, as fmt prints maps)."""
    if m is None:
        return "map[string]string(nil)"
    return "map[string]string{%s}" % ", ".join(
        "%s:%s" % (go_quote(k), go_quote(str(m[k]))) for k in sorted(m))


def _go_strings(values):
    if values is None:
        return "[]string(nil)"
    return "[]string{%s}" % ", ".join(go_quote(str(x)) for x in values)


def _go_requirements(reqs):
    if reqs is None:
        return "[]core.NodeSelectorRequirement(nil)"
    return "[]core.NodeSelectorRequirement{%s}" % ", ".join(
        "core.NodeSelectorRequirement{Key:%s, Operator:%s, Values:%s}"
        % (go_quote(r.get("key") or ""), go_quote(r.get("operator") or ""),
           _go_strings(r.get("values"))) for r in reqs)


def go_node_selector_term(t):
    """%#v of a core.NodeSelectorTerm."""
    t = t or {}
    return "core.NodeSelectorTerm{MatchExpressions:%s, MatchFields:%s}" % (
        _go_requirements(t.get("matchExpressions")), _go_requirements(t.get("matchFields")))


def go_node_selector_terms(terms):
    if terms is None:
        return "[]core.NodeSelectorTerm(nil)"
    return "[]core.NodeSelectorTerm{%s}" % ", ".join(go_node_selector_term(t) for t in terms)


def label_selector_string(sel):
    """The protobuf-generated String() of a *metav1.LabelSelector."""
    if sel is None:
        return "nil"
    labels = sel.get("matchLabels") or {}
    exprs = "".join("LabelSelectorRequirement{Key:%s,Operator:%s,Values:[%s],}," % (
        e.get("key") or "", e.get("operator") or "", " ".join(e.get("values") or []))
        for e in sel.get("matchExpressions") or [])
    return ("&LabelSelector{MatchLabels:map[string]string{%s},MatchExpressions:"
            "[]LabelSelectorRequirement{%s},}"
            % ("".join("%s: %s," % (k, labels[k]) for k in sorted(labels)), exprs))


def _compact(v):
    return json.dumps(v, separators=(",", ":"), sort_keys=True)


def go_struct(type_name, v):
    """A stand-in for %#v of a large struct: the type name around compact JSON."""
    return "%s{%s}" % (type_name, _compact(v)[1:-1] if isinstance(v, dict) else _compact(v))


def _ptr_value(v, render=None):
    """The bad value of a field.Invalid on a pointer field: "null" when nil."""
    if v is None:
        return "null"
    return render(v) if render else v


def spec_diff(old, new, type_name="core.PodSpec"):
    """A simplified go-cmp diff: one -/+ pair per top-level field that differs."""
    lines = ["  %s{" % type_name]
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if semantic_equal(a, b):
            continue
        name = key[:1].upper() + key[1:]
        if normalize({"v": a}):
            lines.append("- \t%s: %s," % (name, _compact(a)))
        if normalize({"v": b}):
            lines.append("+ \t%s: %s," % (name, _compact(b)))
    lines.append("  }")
    return "\n".join(lines) + "\n"


# -------------------------------------------------------------------- pods

def only_deleted_gates(new_gates, old_gates, path):
    """validateOnlyDeletedSchedulingGates."""
    old_names = {g.get("name") for g in old_gates or [] if isinstance(g, dict)}
    additional = {}
    for i, g in enumerate(new_gates or []):
        if isinstance(g, dict):
            additional[g.get("name")] = i
    errs = []
    for gate, i in sorted(additional.items(), key=lambda kv: kv[1]):
        if gate not in old_names:
            errs.append(FieldError("Forbidden", "%s[%d].name" % (path, i),
                                   "only deletion is allowed, but found new scheduling gate '%s'"
                                   % gate))
    return errs


def _toleration_sans_seconds(t):
    """A toleration's fields but tolerationSeconds, unset strings as "" (reflect.DeepEqual)."""
    t = t if isinstance(t, dict) else {}
    return tuple(t.get(k) or "" for k in ("key", "operator", "value", "effect"))


def only_added_tolerations(new, old, path):
    """validateOnlyAddedTolerations: every old toleration is still there (seconds aside)."""
    new_keys = [_toleration_sans_seconds(t) for t in new or []]
    for t in old or []:
        if _toleration_sans_seconds(t) not in new_keys:
            return [FieldError("Forbidden", path, "existing toleration can not be modified "
                                                  "except its tolerationSeconds")]
    return []


def node_selector_mutation(path, new, old):
    """validateNodeSelectorMutation: only additions."""
    new_map = new or {}
    for k, v in (old or {}).items():
        if k not in new_map or new_map[k] != v:
            return [FieldError("Invalid", path, "only additions to spec.nodeSelector are allowed "
                                                "(no mutations or deletions)",
                               GoValue(go_string_map(new)), True)]
    return []


def _term_has_only_additions(new, old):
    new, old = new or {}, old or {}
    old_me, old_mf = old.get("matchExpressions") or [], old.get("matchFields") or []
    new_me, new_mf = new.get("matchExpressions") or [], new.get("matchFields") or []
    if not old_me and not old_mf and (new_me or new_mf):
        return False
    for o, n in ((old_me, new_me), (old_mf, new_mf)):
        if o:
            if len(n) < len(o) or not semantic_equal(n[:len(o)], o):
                return False
    return True


def node_affinity_mutation(path, new, old):
    """validateNodeAffinityMutation: required terms may only be narrowed."""
    old_req = (old or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    if old is None or old_req is None:
        return []
    old_terms = old_req.get("nodeSelectorTerms") or []
    new_req = (new or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    new_terms = (new_req or {}).get("nodeSelectorTerms") if new_req is not None else None
    terms_path = path + ".requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
    if old_terms and len(old_terms) != len(new_terms or []):
        return [FieldError("Invalid", terms_path, "no additions/deletions to non-empty "
                           "NodeSelectorTerms list are allowed",
                           GoValue(go_node_selector_terms(new_terms)), True)]
    errs = []
    for i, old_term in enumerate(old_terms):
        if not _term_has_only_additions(new_terms[i], old_term):
            errs.append(FieldError("Invalid", "%s[%d]" % (terms_path, i),
                                   "only additions are allowed (no mutations or deletions)",
                                   GoValue(go_node_selector_term(new_terms[i])), True))
    return errs


def _set(d, key, value):
    if value is None:
        d.pop(key, None)
    else:
        d[key] = copy.deepcopy(value)


def _spec(obj):
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def pod_update_errors(new, old):
    """The spec part of ValidatePodUpdate, in its order."""
    ns, os_ = _spec(new), _spec(old)
    errs = []
    # From ValidatePodSpec, which runs on the new pod first.
    ad = ns.get("activeDeadlineSeconds")
    if isinstance(ad, int) and not isinstance(ad, bool) and (ad < 1 or ad > MAX_INT32):
        errs.append(FieldError("Invalid", "spec.activeDeadlineSeconds",
                               "must be between 1 and %d, inclusive" % MAX_INT32, ad, True))
    for key in ("containers", "initContainers"):
        nc, oc = ns.get(key) or [], os_.get(key) or []
        if len(nc) != len(oc):
            errs.append(FieldError("Forbidden", "spec." + key,
                                   "pod updates may not add or remove containers"))
            return errs
        for i, c in enumerate(nc):
            image = (c.get("image") or "") if isinstance(c, dict) else ""
            if not image:
                errs.append(FieldError("Required", "spec.%s[%d].image" % (key, i), ""))
            if image.strip() != image:
                errs.append(FieldError("Invalid", "spec.%s[%d].image" % (key, i),
                                       "must not have leading or trailing whitespace", image,
                                       True))
    old_ad = os_.get("activeDeadlineSeconds")
    if ad is not None:
        if not isinstance(ad, int) or ad < 0 or ad > MAX_INT32:
            errs.append(FieldError("Invalid", "spec.activeDeadlineSeconds",
                                   "must be between 0 and %d, inclusive" % MAX_INT32, ad, True))
            return errs
        if old_ad is not None and old_ad < ad:
            errs.append(FieldError("Invalid", "spec.activeDeadlineSeconds",
                                   "must be less than or equal to previous value", ad, True))
            return errs
    elif old_ad is not None:
        errs.append(FieldError("Invalid", "spec.activeDeadlineSeconds",
                               "must not update from a positive integer to nil value", "null",
                               True))
    errs.extend(only_added_tolerations(ns.get("tolerations"), os_.get("tolerations"),
                                       "spec.tolerations"))
    errs.extend(only_deleted_gates(ns.get("schedulingGates"), os_.get("schedulingGates"),
                                   "spec.schedulingGates"))
    if semantic_equal(ns, os_):
        return errs

    munged = copy.deepcopy(ns)
    for key in ("containers", "initContainers"):
        for c, oc in zip(munged.get(key) or [], os_.get(key) or []):
            if isinstance(c, dict):
                _set(c, "image", (oc or {}).get("image") if isinstance(oc, dict) else None)
    _set(munged, "activeDeadlineSeconds", old_ad)
    _set(munged, "schedulingGates", os_.get("schedulingGates"))
    _set(munged, "tolerations", os_.get("tolerations"))
    old_grace = os_.get("terminationGracePeriodSeconds")
    if isinstance(old_grace, int) and old_grace < 0 and munged.get(
            "terminationGracePeriodSeconds") == 1:
        munged["terminationGracePeriodSeconds"] = old_grace

    if os_.get("schedulingGates"):
        # Gated pods: nodeSelector additions and narrower node affinity.
        if not semantic_equal(munged.get("nodeSelector"), os_.get("nodeSelector")):
            errs.extend(node_selector_mutation("spec.nodeSelector", munged.get("nodeSelector"),
                                               os_.get("nodeSelector")))
            _set(munged, "nodeSelector", os_.get("nodeSelector"))
        old_aff = os_.get("affinity")
        old_na = (old_aff or {}).get("nodeAffinity") if old_aff is not None else None
        new_aff = munged.get("affinity")
        new_na = (new_aff or {}).get("nodeAffinity") if new_aff is not None else None
        if not semantic_equal(old_na, new_na):
            errs.extend(node_affinity_mutation("spec.affinity.nodeAffinity", new_na, old_na))
            if new_aff is None and old_na is None:
                pass
            elif new_aff is None:
                munged["affinity"] = {"nodeAffinity": copy.deepcopy(old_na)}
            elif old_aff is None and not new_aff.get("podAffinity") \
                    and not new_aff.get("podAntiAffinity"):
                munged.pop("affinity", None)
            else:
                _set(munged["affinity"], "nodeAffinity", old_na)

    if not semantic_equal(munged, os_):
        errs.append(FieldError("Forbidden", "spec", "pod updates may not change fields other "
                               "than %s\n%s" % (",".join(UPDATABLE_POD_SPEC_FIELDS),
                                                spec_diff(os_, munged))))
    return errs


# -------------------------------------------------------------------- jobs

def _immutable(path, new, old, render=None):
    if semantic_equal(new, old):
        return []
    return [FieldError("Invalid", path, FIELD_IMMUTABLE, _ptr_value(new, render), True)]


def job_update_errors(new, old, features=None):
    """ValidateJobSpecUpdate with the options the Job registry strategy passes."""
    features = features or {}
    ns, os_ = _spec(new), _spec(old)
    errs = []
    # completions (ElasticIndexedJob is GA: Indexed Jobs may scale in tandem).
    if ns.get("completionMode") == "Indexed":
        comp = ns.get("completions")
        if comp != os_.get("completions") and comp is not None \
                and comp != ns.get("parallelism"):
            errs.append(FieldError("Invalid", "spec.completions",
                                   "can only be modified in tandem with spec.parallelism",
                                   comp, True))
    else:
        errs.extend(_immutable("spec.completions", ns.get("completions"),
                               os_.get("completions")))
    errs.extend(_immutable("spec.selector", ns.get("selector"), os_.get("selector"),
                           lambda v: GoValue(label_selector_string(v))))
    errs.extend(_template_errors(ns, os_, old, features))
    errs.extend(_immutable("spec.completionMode", ns.get("completionMode"),
                           os_.get("completionMode")))
    errs.extend(_immutable("spec.podFailurePolicy", ns.get("podFailurePolicy"),
                           os_.get("podFailurePolicy"),
                           lambda v: GoValue(go_struct("batch.PodFailurePolicy", v))))
    errs.extend(_immutable("spec.backoffLimitPerIndex", ns.get("backoffLimitPerIndex"),
                           os_.get("backoffLimitPerIndex")))
    errs.extend(_immutable("spec.managedBy", ns.get("managedBy"), os_.get("managedBy")))
    errs.extend(_immutable("spec.successPolicy", ns.get("successPolicy"),
                           os_.get("successPolicy"),
                           lambda v: GoValue(go_struct("batch.SuccessPolicy", v))))
    return errs


def _condition_true(job, ctype):
    return any(c.get("type") == ctype and c.get("status") == "True"
               for c in (job.get("status") or {}).get("conditions") or [] if isinstance(c, dict))


def safely_suspended(old):
    """The 1.36 strategy's condition on the OLD Job for the relaxed template rules.

    Suspended, and either never started (no ``status.startTime``) or marked
    ``Suspended=True`` by the Job controller with no active pods.
    """
    status = old.get("status") or {}
    if not (old.get("spec") or {}).get("suspend"):
        return False
    return not status.get("startTime") or (
        _condition_true(old, "Suspended") and not status.get("active"))


def scheduling_directives_mutable(old, features=None):
    """AllowMutableSchedulingDirectives."""
    features = features or {}
    spec, status = old.get("spec") or {}, old.get("status") or {}
    if features.get("MutableSchedulingDirectivesForSuspendedJobs"):
        return safely_suspended(old)
    return bool(spec.get("suspend")) and not status.get("startTime")


def pod_resources_mutable(old, features=None):
    """AllowMutablePodResources (MutablePodResourcesForSuspendedJobs)."""
    features = features or {}
    return bool(features.get("MutablePodResourcesForSuspendedJobs")) and \
        safely_suspended(old)


def _resources_from_new(new_spec, old_spec):
    """validatePodResourceUpdatesOnly's munge: the new resources, container by container."""
    for key in ("containers", "initContainers"):
        new_cs, old_cs = new_spec.get(key) or [], old_spec.get(key) or []
        if len(new_cs) != len(old_cs):
            continue
        for n, o in zip(new_cs, old_cs):
            if isinstance(n, dict) and isinstance(o, dict) and n.get("name") == o.get("name"):
                _set(o, "resources", n.get("resources"))


def _template_errors(ns, os_, old, features):
    tmpl = ns.get("template") if isinstance(ns.get("template"), dict) else {}
    old_tmpl = os_.get("template") if isinstance(os_.get("template"), dict) else {}
    if scheduling_directives_mutable(old, features):
        old_tmpl = copy.deepcopy(old_tmpl)
        tspec = _spec(tmpl)
        ospec = old_tmpl["spec"] = _spec(old_tmpl)
        new_aff, old_aff = tspec.get("affinity"), ospec.get("affinity")
        if not isinstance(new_aff, (dict, type(None))) or \
                not isinstance(old_aff, (dict, type(None))):
            pass  # not an Affinity: left to the comparison below
        elif new_aff is None and old_aff is not None:
            old_aff.pop("nodeAffinity", None)
            if not normalize(old_aff):
                ospec.pop("affinity")
        elif new_aff is not None and old_aff is None:
            ospec["affinity"] = {}
            _set(ospec["affinity"], "nodeAffinity", new_aff.get("nodeAffinity"))
        elif new_aff is not None:
            _set(old_aff, "nodeAffinity", new_aff.get("nodeAffinity"))
        for key in ("nodeSelector", "tolerations", "schedulingGates"):
            _set(ospec, key, tspec.get(key))
        if not isinstance(old_tmpl.get("metadata"), dict):
            old_tmpl["metadata"] = {}
        nmeta = tmpl.get("metadata") if isinstance(tmpl.get("metadata"), dict) else {}
        for key in ("annotations", "labels"):
            _set(old_tmpl["metadata"], key, nmeta.get(key))
    if pod_resources_mutable(old, features):
        # Only the pod specs are compared (at spec.template.spec), resources aside.
        new_spec = _spec(tmpl)
        old_spec = copy.deepcopy(_spec(old_tmpl))
        _resources_from_new(new_spec, old_spec)
        if semantic_equal(new_spec, old_spec):
            return []
        return [FieldError("Invalid", "spec.template.spec", FIELD_IMMUTABLE,
                           GoValue(go_struct("core.PodSpec", new_spec)), True)]
    if semantic_equal(tmpl, old_tmpl):
        return []
    return [FieldError("Invalid", "spec.template", FIELD_IMMUTABLE,
                       GoValue(go_struct("core.PodTemplateSpec", tmpl)), True)]
