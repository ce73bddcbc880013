{{/*
Checks of the values, run by every render (templates/validate.yaml): each key of .Values must be a key of
files/known-values.yaml (recursively, except below `any`), else the install fails naming the value and the closest
known name (Levenshtein distance, case-insensitive); cloudProvider must be aws, clusterapi or kwok; provider-only
settings set away from their default with another provider, and upstream settings capenter does not implement set to
a value with effect, fail naming the value and why.
*/}}

{{/* Levenshtein distance of (list a b). */}}
{{- define "capenter.distance" -}}
{{- $a := index . 0 }}
{{- $b := index . 1 }}
{{- $prev := list }}
{{- range $j := until (int (add (len $b) 1)) }}{{ $prev = append $prev $j }}{{ end }}
{{- range $i := until (len $a) }}
{{- $cur := list (add $i 1) }}
{{- $ca := substr $i (int (add $i 1)) $a }}
{{- range $j := until (len $b) }}
{{- $cost := 1 }}
{{- if eq $ca (substr $j (int (add $j 1)) $b) }}{{ $cost = 0 }}{{ end }}
{{- $cur = append $cur (min (add (index $prev (add $j 1)) 1) (add (index $cur $j) 1) (add (index $prev $j) $cost)) }}
{{- end }}
{{- $prev = $cur }}
{{- end }}
{{- last $prev }}
{{- end }}

{{/* The name of (list name candidates) closest to name. */}}
{{- define "capenter.closest" -}}
{{- $name := lower (index . 0) }}
{{- $best := "" }}
{{- $bestD := 100000 }}
{{- range $c := sortAlpha (index . 1) }}
{{- $d := int (include "capenter.distance" (list $name (lower $c))) }}
{{- if lt $d $bestD }}{{ $best = $c }}{{ $bestD = $d }}{{ end }}
{{- end }}
{{- $best }}
{{- end }}

{{/* Fails on the first key of (list values known path) that known does not list. */}}
{{- define "capenter.checkKeys" -}}
{{- $values := index . 0 }}
{{- $known := index . 1 }}
{{- $path := index . 2 }}
{{- range $k := keys $values | sortAlpha }}
{{- $v := index $values $k }}
{{- $p := $k }}
{{- if $path }}{{ $p = printf "%s.%s" $path $k }}{{ end }}
{{- $moved := dict "controller.imagePullPolicy" "imagePullPolicy" }}
{{- if hasKey $moved $p }}
{{- fail (printf "unknown value %q: did you mean %q? (upstream's name, at the top level)" $p (index $moved $p)) }}
{{- end }}
{{- if not (hasKey $known $k) }}
{{- $close := include "capenter.closest" (list $k (keys $known)) }}
{{- fail (printf "unknown value %q: the chart has no such value; did you mean %q? (every value: charts/capenter/values.yaml)" $p (ternary $close (printf "%s.%s" $path $close) (eq $path ""))) }}
{{- end }}
{{- $kv := index $known $k }}
{{- if kindIs "map" $kv }}
{{- if and (not (kindIs "map" $v)) (not (kindIs "invalid" $v)) }}
{{- fail (printf "value %q must be a map of %s, got %s %v" $p (keys $kv | sortAlpha | join ", ") (kindOf $v) $v) }}
{{- end }}
{{- if kindIs "map" $v }}
{{- include "capenter.checkKeys" (list $v $kv $p) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/* Every check of the values; renders nothing. */}}
{{- define "capenter.validate" -}}
{{- include "capenter.checkKeys" (list .Values (.Files.Get "files/known-values.yaml" | fromYaml) "") }}
{{- $providers := list "aws" "clusterapi" "kwok" }}
{{- if not (has .Values.cloudProvider $providers) }}
{{- fail (printf "value \"cloudProvider\": %q is not a cloud provider; did you mean %q? (aws, clusterapi or kwok)" (toString .Values.cloudProvider) (include "capenter.closest" (list (toString .Values.cloudProvider) $providers))) }}
{{- end }}
{{- if not .Values.settings.clusterName }}
{{- fail "value \"settings.clusterName\" is required: the cluster's name (CLUSTER_NAME; aws tags instances kubernetes.io/cluster/<name>), e.g. --set settings.clusterName=my-cluster" }}
{{- end }}
{{- if ne .Values.cloudProvider "aws" }}
{{- $aws := dict "clusterCABundle" "" "clusterEndpoint" "" "isolatedVPC" false "eksControlPlane" false "vmMemoryOverheadPercent" 0.075 "interruptionQueue" "" "enableZonalShift" false "reservedENIs" "0" "disableDryRun" false "amiRefreshInterval" "1m" "subnetRefreshInterval" "1m" }}
{{- range $k := keys $aws | sortAlpha }}
{{- $v := index $.Values.settings $k }}
{{- if and (not (kindIs "invalid" $v)) (ne (toString $v) (toString (index $aws $k))) }}
{{- fail (printf "value \"settings.%s\" (%v) applies to cloudProvider aws only; this release has cloudProvider %s: remove it or set cloudProvider: aws" $k $v $.Values.cloudProvider) }}
{{- end }}
{{- end }}
{{- end }}
{{- if and .Values.capi.watchNamespace (not .Values.capi.enabled) }}
{{- fail (printf "value \"capi.watchNamespace\" (%s) applies with capi.enabled only: remove it or set capi.enabled: true" .Values.capi.watchNamespace) }}
{{- end }}
{{- if and .Values.capi.watchNamespace (not (regexMatch "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$" (toString .Values.capi.watchNamespace))) }}
{{- fail (printf "value \"capi.watchNamespace\": %q is not a namespace name (one namespace, lowercase letters, digits and \"-\", at most 63)" (toString .Values.capi.watchNamespace)) }}
{{- end }}
{{- if and .Values.settings.awsFeatureGates .Values.settings.awsFeatureGates.nodeClassCEL }}
{{- fail "value \"settings.awsFeatureGates.nodeClassCEL\": true is not implemented; set it to false" }}
{{- end }}
{{- end }}
