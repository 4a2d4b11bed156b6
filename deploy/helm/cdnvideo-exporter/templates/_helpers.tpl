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

{{/* The job Prometheus gives the targets (the ServiceMonitor's jobLabel reads the Service's
     app.kubernetes.io/name): the chart's name, or nameOverride. The alerts select it. */}}
{{- define "cdnvideo-exporter.job" -}}
{{- include "cdnvideo-exporter.name" . }}
{{- end }}

{{/* The image: repository:tag, or repository@digest when a digest pins it. */}}
{{- define "cdnvideo-exporter.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}
{{- end }}

{{- define "cdnvideo-exporter.adminEnabled" -}}
{{- if (default (dict) .Values.config.admin).enabled }}true{{ end }}
{{- end }}

{{/* The keys of the credentials Secret, one file each: token, or password (with
     secret.username); admin-read-token and admin-write-token with admin on. The chart's own
     Secret fails the render when a value it needs is empty. */}}
{{- define "cdnvideo-exporter.secretData" -}}
{{- $s := .Values.secret }}
{{- if $s.username }}
password: {{ required "secret.password is required with secret.username (or set secret.existingSecret)" $s.password | quote }}
{{- else }}
token: {{ required "secret.token is required: the platform's token (or secret.username and secret.password, or secret.existingSecret)" $s.token | quote }}
{{- end }}
{{- if include "cdnvideo-exporter.adminEnabled" . }}
admin-read-token: {{ required "secret.adminReadToken is required with config.admin.enabled (or set secret.existingSecret)" $s.adminReadToken | quote }}
admin-write-token: {{ required "secret.adminWriteToken is required with config.admin.enabled (or set secret.existingSecret)" $s.adminWriteToken | quote }}
{{- end }}
{{- end }}

{{/* The admin API's bearer tokens must not cross the cluster in clear to a port every pod
     reaches: admin on needs TLS (webConfig) or the NetworkPolicy, or allowInsecureAdmin. */}}
{{- define "cdnvideo-exporter.adminGuard" -}}
{{- $tls := and .Values.webConfig.existingSecret .Values.webConfig.tls }}
{{- if and (include "cdnvideo-exporter.adminEnabled" .) (not $tls) (not .Values.networkPolicy.enabled) (not .Values.allowInsecureAdmin) }}
{{- fail "config.admin.enabled without TLS (webConfig.existingSecret) and without networkPolicy.enabled: the admin API's bearer tokens would cross the cluster in clear to a port every pod can reach. Set one of them, or allowInsecureAdmin=true to accept it." }}
{{- end }}
{{- end }}

{{- define "cdnvideo-exporter.scheme" -}}
{{- if .Values.serviceMonitor.scheme }}
{{- .Values.serviceMonitor.scheme }}
{{- else if and .Values.webConfig.existingSecret .Values.webConfig.tls }}https
{{- else }}http
{{- end }}
{{- end }}

{{- define "cdnvideo-exporter.probeScheme" -}}
{{- if and .Values.webConfig.existingSecret .Values.webConfig.tls }}HTTPS{{ else }}HTTP{{ end }}
{{- end }}

{{/* The exporter's config: the values' config, the credentials as *_file keys of the Secret's
     mount, admin.replicas_per_shard from replicasPerShard, web_config_file from webConfig. */}}
{{- define "cdnvideo-exporter.config" -}}
{{- $dir := "/etc/cdnvideo-exporter/secrets" }}
{{- $config := deepCopy .Values.config }}
{{- $upstream := default (dict) $config.upstream }}
{{- if .Values.secret.username }}
{{- $_ := set $upstream "username" .Values.secret.username }}
{{- $_ := set $upstream "password_file" (printf "%s/password" $dir) }}
{{- else }}
{{- $_ := set $upstream "token_file" (printf "%s/token" $dir) }}
{{- end }}
{{- $_ := set $config "upstream" $upstream }}
{{- $admin := default (dict) $config.admin }}
{{- $_ := set $admin "replicas_per_shard" (int .Values.replicasPerShard) }}
{{- if $admin.enabled }}
{{- $_ := set $admin "read_token_file" (printf "%s/admin-read-token" $dir) }}
{{- $_ := set $admin "write_token_file" (printf "%s/admin-write-token" $dir) }}
{{- end }}
{{- $_ := set $config "admin" $admin }}
{{- if .Values.webConfig.existingSecret }}
{{- $_ := set $config "web_config_file" (printf "/etc/cdnvideo-exporter/web/%s" .Values.webConfig.key) }}
{{- end }}
{{- toYaml $config }}
{{- end }}
