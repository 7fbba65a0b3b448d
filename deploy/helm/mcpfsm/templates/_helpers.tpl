{{- define "mcpfsm.name" -}}
{{- default .Chart.Name .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "mcpfsm.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{- define "mcpfsm.selector" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "mcpfsm.secretName" -}}
{{- if .Values.auth.existingSecret -}}{{ .Values.auth.existingSecret }}{{- else -}}{{ include "mcpfsm.name" . }}-token{{- end -}}
{{- end -}}

{{- define "mcpfsm.credentialSecretName" -}}
{{- if .Values.credentialStore.existingSecret -}}{{ .Values.credentialStore.existingSecret }}{{- else -}}{{ include "mcpfsm.name" . }}-credential-store{{- end -}}
{{- end -}}
