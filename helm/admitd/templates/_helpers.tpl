{{/* The chart's name, or nameOverride. */}}
{{- define "admitd.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
The name of every object: the release name alone when it already says admitd, so
`helm install admitd` makes "admitd" rather than "admitd-admitd". 63 characters is the DNS label
limit that Service names must meet.
*/}}
{{- define "admitd.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains (include "admitd.name" .) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "admitd.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "admitd.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "admitd.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Immutable once the StatefulSet exists: only names that never change between upgrades. */}}
{{- define "admitd.selectorLabels" -}}
app.kubernetes.io/name: {{ include "admitd.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "admitd.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{/*
The port admitd listens on inside the pod. Fixed: it is the image's EXPOSE and what the probes
ask, and the Service maps service.port onto it by name.
*/}}
{{- define "admitd.containerPort" -}}50051{{- end -}}

{{/* One admitd per admission domain; see replicaCount in values.yaml. TLS and tokens agree. */}}
{{- define "admitd.validate" -}}
{{- if ne (int .Values.replicaCount) 1 -}}
{{- fail (printf "replicaCount is %v, but must be 1: one admitd is one admission domain and the only writer of its RocksDB store. For availability run a standby, not more replicas." .Values.replicaCount) -}}
{{- end -}}
{{- if and .Values.tls.enabled (not .Values.metrics.enabled) -}}
{{- fail "tls.enabled needs metrics.enabled: the probes use /healthz and /readyz on the metrics port over HTTPS (Kubernetes' gRPC probes cannot speak TLS)" -}}
{{- end -}}
{{- if and (not .Values.tls.enabled) .Values.auth.authenticationConfig -}}
{{- fail "auth.authenticationConfig needs tls.enabled: bearer tokens are only taken over TLS" -}}
{{- end -}}
{{- end -}}

{{/* The Secret with tls.crt, tls.key and ca.crt: the one given, or the chart's. */}}
{{- define "admitd.tlsSecret" -}}
{{- .Values.tls.secretName | default (printf "%s-tls" (include "admitd.fullname" .)) -}}
{{- end -}}
