{{/*
The kinds the chart can enable besides batch/v1 Jobs and pods, one row each: `value` (the
integrations.<value> switch), `framework` (its --integrations name), its API group, version,
plural and singular (Kueue's webhook names m<singular>.kb.io and v<singular>.kb.io on
/mutate-<group>-<version>-<singular> and /validate-...), what its mutating webhook does, and
optionally `mutateOn` (the operations it mutates on; CREATE when unset), `verbs` (what the shim
does to the kind's objects; the default: start and stop them, with their status), `alsoRead`
(a resource of the same group it watches too: a Deployment's ReplicaSets) and `asPods` (its pods
are admitted through the pod integration, whose webhooks come with it).
The deployment's flag, the RBAC and both webhook configurations are rendered from this table.
*/}}
{{- define "admitd-shim.kinds" -}}
- value: rayclusters
  framework: ray.io/raycluster
  group: ray.io
  version: v1
  plural: rayclusters
  singular: raycluster
  mutates: >-
    A new RayCluster with a queue name is suspended until admitd admits it; an elastic one's head
    and worker templates get the kueue.x-k8s.io/elastic-job scheduling gate.
- value: rayjobs
  framework: ray.io/rayjob
  group: ray.io
  version: v1
  plural: rayjobs
  singular: rayjob
  mutates: >-
    A new RayJob with a queue name is suspended until admitd admits it; one for a MultiKueue
    manager's queue is managed by MultiKueue.
- value: jobsets
  framework: jobset.x-k8s.io/jobset
  group: jobset.x-k8s.io
  version: v1alpha2
  plural: jobsets
  singular: jobset
  mutates: >-
    A new JobSet with a queue name is suspended until admitd admits it; one for a MultiKueue
    manager's queue is managed by MultiKueue.
- value: pytorchjobs
  framework: kubeflow.org/pytorchjob
  group: kubeflow.org
  version: v1
  plural: pytorchjobs
  singular: pytorchjob
  mutates: >-
    A new PyTorchJob with a queue name is suspended (spec.runPolicy.suspend) until admitd admits
    it; one for a MultiKueue manager's queue is managed by MultiKueue.
- value: deployments
  framework: deployment
  group: apps
  version: v1
  plural: deployments
  singular: deployment
  mutateOn: [CREATE, UPDATE]
  verbs: [get, list, watch]
  alsoRead: replicasets
  asPods: true
  mutates: >-
    A Deployment with a queue name marks its pod template (kueue.x-k8s.io/pod-suspending-parent,
    the managed label, the queue name and priority class): each pod waits gated for its own
    admission; an elastic one's template is gated for its one Workload's slices.
- value: statefulsets
  framework: statefulset
  group: apps
  version: v1
  plural: statefulsets
  singular: statefulset
  mutateOn: [CREATE, UPDATE]
  verbs: [get, list, watch]
  asPods: true
  mutates: >-
    A StatefulSet with a queue name marks its pod template (kueue.x-k8s.io/pod-suspending-parent);
    the shim puts its pods in one serving pod group, admitted as a whole; an elastic one's
    template is gated for its one Workload's slices.
{{- end }}

{{/*
"true" when pods are admitted as pods: integrations.pods, or an enabled kind with asPods.
*/}}
{{- define "admitd-shim.podsAdmitted" -}}
{{- $on := .Values.integrations.pods }}
{{- range $k := include "admitd-shim.enabledKinds" . | fromYamlArray }}
{{- if $k.asPods }}{{ $on = true }}{{ end }}
{{- end }}
{{- if $on }}true{{ end }}
{{- end }}

{{/*
The enabled rows of the table, as a YAML list (read with fromYamlArray).
*/}}
{{- define "admitd-shim.enabledKinds" -}}
{{- $enabled := list }}
{{- range $k := include "admitd-shim.kinds" . | fromYamlArray }}
{{- if index $.Values.integrations $k.value }}
{{- $enabled = append $enabled $k }}
{{- end }}
{{- end }}
{{- toYaml $enabled }}
{{- end }}

{{/*
One webhook of a kind: the row as `kind`, "m" or "v" as `prefix`, the operations, and the
settings every webhook shares (`root`, `caBundle`, `clientConfig`, `namespaceSelector`).
*/}}
{{- define "admitd-shim.kindWebhook" -}}
{{- $k := .kind }}
{{- $operations := .operations }}
{{- if and (eq .prefix "m") $k.mutateOn }}{{ $operations = printf "[%s]" (join ", " $k.mutateOn) }}{{ end }}
{{- $path := printf "/%s-%s-%s-%s" (ternary "mutate" "validate" (eq .prefix "m")) (replace "." "-" $k.group) $k.version $k.singular }}
- name: {{ .prefix }}{{ $k.singular }}.kb.io
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: {{ .root.Values.webhook.failurePolicy }}
  timeoutSeconds: {{ .root.Values.webhook.timeoutSeconds }}
  clientConfig:
    caBundle: {{ .caBundle }}
    service:
      {{- toYaml (set (deepCopy .clientConfig) "path" $path) | nindent 6 }}
  namespaceSelector:
    {{- toYaml .namespaceSelector | nindent 4 }}
  rules:
    - apiGroups: [{{ $k.group | quote }}]
      apiVersions: [{{ $k.version }}]
      operations: {{ $operations }}
      resources: [{{ $k.plural }}]
{{- end }}
