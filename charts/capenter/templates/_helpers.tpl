{{/* Name of the chart. */}}
{{- define "capenter.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Fullname: release-qualified unless the release name contains the chart name. */}}
{{- define "capenter.fullname" -}}
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

{{/* Selector labels. */}}
{{- define "capenter.selectorLabels" -}}
app.kubernetes.io/name: {{ include "capenter.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Common labels. */}}
{{- define "capenter.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "capenter.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.additionalLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Common annotations (may be empty). */}}
{{- define "capenter.annotations" -}}
{{- with .Values.additionalAnnotations }}
{{- toYaml . }}
{{- end }}
{{- end }}

{{/* ServiceAccount name. */}}
{{- define "capenter.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "capenter.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Image reference: digest wins over tag; tag defaults to appVersion. */}}
{{- define "capenter.image" -}}
{{- if .Values.controller.image.digest }}
{{- printf "%s@%s" .Values.controller.image.repository .Values.controller.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.controller.image.repository (default .Chart.AppVersion .Values.controller.image.tag) }}
{{- end }}
{{- end }}

{{/*
The controller's settings as environment variables (upstream's names, docs/settings.md): the core ones, then those of
.Values.cloudProvider only (aws: CLUSTER_ENDPOINT, INTERRUPTION_QUEUE, ...; clusterapi: CLUSTER_API_*). Values that are
false or empty are left out where upstream's chart leaves them out (`with`), so the controller's default applies.
*/}}
{{- define "capenter.settingsEnv" -}}
{{- $s := .Values.settings -}}
{{- with .Values.logOutputPaths }}
- name: LOG_OUTPUT_PATHS
  value: {{ join "," . | quote }}
{{- end }}
{{- with .Values.logErrorOutputPaths }}
- name: LOG_ERROR_OUTPUT_PATHS
  value: {{ join "," . | quote }}
{{- end }}
- name: BATCH_IDLE_DURATION
  value: {{ $s.batchIdleDuration | quote }}
- name: BATCH_MAX_DURATION
  value: {{ $s.batchMaxDuration | quote }}
- name: PREFERENCE_POLICY
  value: {{ $s.preferencePolicy | quote }}
- name: MIN_VALUES_POLICY
  value: {{ $s.minValuesPolicy | quote }}
- name: KUBE_CLIENT_QPS
  value: {{ $s.kubeClientQPS | quote }}
- name: KUBE_CLIENT_BURST
  value: {{ $s.kubeClientBurst | quote }}
{{- $g := $s.featureGates | default dict }}
- name: FEATURE_GATES
  value: {{ printf "ReservedCapacity=%t,SpotToSpotConsolidation=%t,NodeRepair=%t,NodeOverlay=%t,StaticCapacity=%t,CapacityBuffer=%t" ($g.reservedCapacity | default false) ($g.spotToSpotConsolidation | default false) ($g.nodeRepair | default false) ($g.nodeOverlay | default false) ($g.staticCapacity | default false) ($g.capacityBuffer | default false) | quote }}
- name: CLUSTER_NAME
  value: {{ tpl (toString $s.clusterName) $ | quote }}
{{- with $s.awsRegion }}
- name: AWS_REGION
  value: {{ . | quote }}
{{- end }}
{{- if and (hasKey $s "ignoreDRARequests") (ne (toString $s.ignoreDRARequests) "true") }}
- name: IGNORE_DRA_REQUESTS
  value: {{ toString $s.ignoreDRARequests | quote }}
{{- end }}
{{- with $s.disableClusterStateObservability }}
- name: DISABLE_CLUSTER_STATE_OBSERVABILITY
  value: {{ toString . | quote }}
{{- end }}
{{- if eq .Values.cloudProvider "aws" }}
{{- range $v := list (list "CLUSTER_CA_BUNDLE" $s.clusterCABundle) (list "CLUSTER_ENDPOINT" $s.clusterEndpoint) (list "ISOLATED_VPC" $s.isolatedVPC) (list "EKS_CONTROL_PLANE" $s.eksControlPlane) (list "VM_MEMORY_OVERHEAD_PERCENT" $s.vmMemoryOverheadPercent) (list "INTERRUPTION_QUEUE" $s.interruptionQueue) (list "ENABLE_ZONAL_SHIFT" $s.enableZonalShift) (list "RESERVED_ENIS" $s.reservedENIs) (list "DISABLE_DRY_RUN" $s.disableDryRun) (list "AMI_REFRESH_INTERVAL" $s.amiRefreshInterval) (list "SUBNET_REFRESH_INTERVAL" $s.subnetRefreshInterval) }}
{{- with index $v 1 }}
- name: {{ index $v 0 }}
  value: {{ tpl (toString .) $ | quote }}
{{- end }}
{{- end }}
{{- end }}
{{- if eq .Values.cloudProvider "clusterapi" }}
{{- $c := .Values.clusterapi }}
{{- with $c.kubeconfigSecret }}
- name: CLUSTER_API_KUBECONFIG
  value: /etc/capenter/cluster-api/kubeconfig
{{- end }}
- name: CLUSTER_API_NAMESPACE
  value: {{ $c.namespace | quote }}
{{- with $c.clusterName }}
- name: CLUSTER_API_CLUSTER_NAME
  value: {{ . | quote }}
{{- end }}
- name: CLUSTER_API_MACHINE_TIMEOUT
  value: {{ $c.machineTimeout | quote }}
{{- end }}
{{- end }}
