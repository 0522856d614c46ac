{{/* The release's base name for every object. */}}
{{- define "podpath.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "podpath.labels" -}}
app.kubernetes.io/name: podpath
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "podpath.serverSelector" -}}
app.kubernetes.io/name: podpath
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: server
{{- end -}}

{{- define "podpath.postgresSelector" -}}
app.kubernetes.io/name: podpath
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: postgres
{{- end -}}

{{- define "podpath.serviceAccount" -}}
{{- default (include "podpath.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{/* Whether the chart runs the trial Postgres. */}}
{{- define "podpath.trialPostgres" -}}
{{- if and (not .Values.database.url) (not .Values.database.existingSecret) -}}true{{- end -}}
{{- end -}}

{{/* The Secret holding DATABASE_URL. */}}
{{- define "podpath.databaseSecret" -}}
{{- default (printf "%s-database" (include "podpath.fullname" .)) .Values.database.existingSecret -}}
{{- end -}}

{{/* The trial Postgres's password: the value, else the one stored on a
     previous install, else a new random one. */}}
{{- define "podpath.postgresPassword" -}}
{{- if .Values.postgres.password -}}
{{- if not (kindIs "string" .Values.postgres.password) -}}
{{- fail "postgres.password: quote it, so YAML reads it as text (postgres.password: \"12345678\")" -}}
{{- end -}}
{{- if not (regexMatch "^[A-Za-z0-9._~-]+$" .Values.postgres.password) -}}
{{- fail "postgres.password: use letters, digits and . _ ~ - only (it goes into a connection URL)" -}}
{{- end -}}
{{- .Values.postgres.password -}}
{{- else -}}
{{- $old := lookup "v1" "Secret" .Release.Namespace (printf "%s-database" (include "podpath.fullname" .)) -}}
{{- if and $old $old.data (index $old.data "POSTGRES_PASSWORD") -}}
{{- index $old.data "POSTGRES_PASSWORD" | b64dec -}}
{{- else -}}
{{- randAlphaNum 24 -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* key=value,... as PODPATH_KUBE_NODE_SELECTOR takes it. */}}
{{- define "podpath.labNodeSelector" -}}
{{- $out := list -}}
{{- range $k, $v := .Values.labs.nodeSelector -}}
{{- $out = append $out (printf "%s=%v" $k $v) -}}
{{- end -}}
{{- join "," $out -}}
{{- end -}}

{{/* key=value:Effect or key:Effect,... as PODPATH_KUBE_TOLERATIONS takes it. */}}
{{- define "podpath.labTolerations" -}}
{{- $out := list -}}
{{- range .Values.labs.tolerations -}}
{{- if not .key -}}{{- fail "labs.tolerations: every toleration needs a key" -}}{{- end -}}
{{- if not .effect -}}{{- fail (printf "labs.tolerations: %s needs an effect (NoSchedule, PreferNoSchedule or NoExecute)" .key) -}}{{- end -}}
{{- if .value -}}
{{- $out = append $out (printf "%s=%v:%s" .key .value .effect) -}}
{{- else -}}
{{- $out = append $out (printf "%s:%s" .key .effect) -}}
{{- end -}}
{{- end -}}
{{- join "," $out -}}
{{- end -}}
