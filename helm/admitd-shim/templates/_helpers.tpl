{{/* The chart's name, or nameOverride. */}}
{{- define "admitd-shim.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
The name of every object: the release name alone when it already says admitd-shim, so
`helm install admitd-shim` makes "admitd-shim" rather than "admitd-shim-admitd-shim". 63
characters is the DNS label limit that Service names must meet.
*/}}
{{- define "admitd-shim.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains (include "admitd-shim.name" .) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "admitd-shim.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "admitd-shim.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "admitd-shim.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Immutable once the Deployment exists: only names that never change between upgrades. */}}
{{- define "admitd-shim.selectorLabels" -}}
app.kubernetes.io/name: {{ include "admitd-shim.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "admitd-shim.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{/* /healthz, /readyz and /metrics. Fixed: the probes and the scrape annotations ask it. */}}
{{- define "admitd-shim.healthPort" -}}8081{{- end -}}

{{/* Where the webhook server reads tls.crt and tls.key (the shim's default). */}}
{{- define "admitd-shim.certDir" -}}/tmp/k8s-webhook-server/serving-certs{{- end -}}

{{- define "admitd-shim.certSecret" -}}
{{- .Values.webhook.certificate.existingSecret | default (printf "%s-webhook-cert" (include "admitd-shim.fullname" .)) -}}
{{- end -}}

{{/*
The namespaces the shim leaves alone, as a comma-separated list: managedNamespacesExclude and
the release's namespace. The webhooks' namespaceSelector excludes the same ones.
*/}}
{{- define "admitd-shim.excludedNamespaces" -}}
{{- $excluded := .Values.managedNamespacesExclude | default list -}}
{{- if not (has .Release.Namespace $excluded) -}}
{{- $excluded = append $excluded .Release.Namespace -}}
{{- end -}}
{{- join "," $excluded -}}
{{- end -}}

{{/* Without leader election every replica would reconcile the same Jobs; tokens need TLS. */}}
{{- define "admitd-shim.validate" -}}
{{- if and (not .Values.leaderElection.enabled) (gt (int .Values.replicaCount) 1) -}}
{{- fail (printf "replicaCount is %v with leaderElection.enabled=false: every replica would reconcile the same Jobs. Enable leader election or run one replica." .Values.replicaCount) -}}
{{- end -}}
{{- if and .Values.admitd.token.enabled (not .Values.admitd.tls.enabled) -}}
{{- fail "admitd.token.enabled needs admitd.tls.enabled: a bearer token is only sent over TLS" -}}
{{- end -}}
{{- end -}}
