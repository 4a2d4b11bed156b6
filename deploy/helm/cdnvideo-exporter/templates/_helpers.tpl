{{/* The chart's name, at most 63 characters. */}}
{{- define "cdnvideo-exporter.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's object name, at most 63 characters. */}}
{{- define "cdnvideo-exporter.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "cdnvideo-exporter.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "cdnvideo-exporter.selectorLabels" -}}
app.kubernetes.io/name: {{ include "cdnvideo-exporter.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "cdnvideo-exporter.labels" -}}
helm.sh/chart: {{ include "cdnvideo-exporter.chart" . }}
{{ include "cdnvideo-exporter.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "cdnvideo-exporter.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "cdnvideo-exporter.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "cdnvideo-exporter.secretName" -}}
{{- default (include "cdnvideo-exporter.fullname" .) .Values.secret.existingSecret }}
{{- end }}

{{/* The exporter's config: the values' config, admin.replicas_per_shard from replicasPerShard. */}}
{{- define "cdnvideo-exporter.config" -}}
{{- $config := deepCopy .Values.config }}
{{- $admin := default (dict) $config.admin }}
{{- $_ := set $admin "replicas_per_shard" (int .Values.replicasPerShard) }}
{{- $_ := set $config "admin" $admin }}
{{- toYaml $config }}
{{- end }}
