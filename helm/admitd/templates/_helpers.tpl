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

{{/*
One admitd per admission domain, or one HA group of ha.replicas; see replicaCount and ha in
values.yaml. TLS and tokens agree.
*/}}
{{- define "admitd.validate" -}}
{{- if .Values.ha.enabled -}}
{{- if ne (int .Values.replicaCount) 1 -}}
{{- fail (printf "replicaCount is %v, but must stay 1: with ha.enabled the replicas of the group are ha.replicas (%v)" .Values.replicaCount .Values.ha.replicas) -}}
{{- end -}}
{{- if not .Values.ha.etcd.endpoints -}}
{{- fail "ha.enabled needs ha.etcd.endpoints: the client addresses (host:port) of the etcd members that hold the group's leader election and log, e.g. --set 'ha.etcd.endpoints={etcd-0.etcd:2379,etcd-1.etcd:2379,etcd-2.etcd:2379}'" -}}
{{- end -}}
{{- if .Values.config.manualScheduling -}}
{{- fail "ha.enabled does not go with config.manualScheduling: admitd refuses --ha-etcd-endpoints with --manual-scheduling" -}}
{{- end -}}
{{- else if ne (int .Values.replicaCount) 1 -}}
{{- fail (printf "replicaCount is %v, but must be 1: one admitd is one admission domain and the only writer of its RocksDB store. For several replicas of one domain set ha.enabled (an HA group on etcd)." .Values.replicaCount) -}}
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

{{/* The governing (peers) Service: every pod's stable DNS name, ready or not. */}}
{{- define "admitd.peersService" -}}
{{- printf "%s-headless" (include "admitd.fullname" .) -}}
{{- end -}}

{{/* HA: the domain's key prefix in etcd, unique per release unless ha.domain names one. */}}
{{- define "admitd.haDomain" -}}
{{- .Values.ha.domain | default (printf "%s-%s" .Release.Namespace (include "admitd.fullname" .)) -}}
{{- end -}}

{{/* HA: a pod's stable name through the peers Service, $(POD_NAME) expanded by the kubelet. */}}
{{- define "admitd.haAdvertiseAddress" -}}
{{- printf "$(POD_NAME).%s.%s.svc:%s" (include "admitd.peersService" .) .Release.Namespace (include "admitd.containerPort" .) -}}
{{- end -}}

{{/* HA: where the etcd client certificate Secret (ha.etcd.tls) is mounted. */}}
{{- define "admitd.etcdTLSDir" -}}/etc/admitd-etcd-tls{{- end -}}

{{/*
HA: the affinity of values.yaml's affinity, with the replicas spread over nodes
(ha.podAntiAffinity) unless it has a podAntiAffinity of its own.
*/}}
{{- define "admitd.haAffinity" -}}
{{- $affinity := deepCopy (.Values.affinity | default dict) -}}
{{- if not (hasKey $affinity "podAntiAffinity") -}}
{{- $term := dict "topologyKey" "kubernetes.io/hostname" "labelSelector" (dict "matchLabels" (include "admitd.selectorLabels" . | fromYaml)) -}}
{{- if eq .Values.ha.podAntiAffinity "required" -}}
{{- $_ := set $affinity "podAntiAffinity" (dict "requiredDuringSchedulingIgnoredDuringExecution" (list $term)) -}}
{{- else -}}
{{- $_ := set $affinity "podAntiAffinity" (dict "preferredDuringSchedulingIgnoredDuringExecution" (list (dict "weight" 100 "podAffinityTerm" $term))) -}}
{{- end -}}
{{- end -}}
{{- toYaml $affinity -}}
{{- end -}}
