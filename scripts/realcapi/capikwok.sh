# shellcheck shell=bash
# One Go module for the two controllers test:cluster runs beside the control plane: the Cluster API core manager
# (scripts/realcapi/build.sh) and kwok (scripts/realk8s/build.sh). Both builds write this same go.mod, so `go mod
# tidy` selects one version of every shared dependency (client-go, apimachinery, controller-runtime, ...) and
# whichever build runs second finds those packages compiled in Go's build cache: on 2 cores with an empty cache the
# two together took 3 min 29 s (395 CPU-s) against 4.3 CPU-min for the manager alone and about 2 min for kwok
# alone. Separately, kwok's go-openapi/jsonreference (v0.21.0 against the manager's v0.20.2) changed the cache key
# of everything above kube-openapi, and nothing was shared.
# Needs CAPI and CAPI_API (scripts/realcapi/env.sh) and KWOK_V (scripts/realk8s/env.sh); see capikwok_versions.

# capikwok_versions HERE: sets CAPI, CAPI_API and KWOK_V from both env.sh files (HERE: scripts/realcapi or
# scripts/realk8s), without taking any other of their variables.
capikwok_versions() {
  local scripts
  scripts=$(cd "$1/.." && pwd)
  CAPI=$(source "$scripts/realcapi/env.sh" && echo "$CAPI")
  CAPI_API=$(source "$scripts/realcapi/env.sh" && echo "$CAPI_API")
  KWOK_V=$(source "$scripts/realk8s/env.sh" && echo "$KWOK_V")
}

# capikwok_module: writes go.mod and tools.go of the shared module into the current directory.
capikwok_module() {
  cat > go.mod <<GOMOD
module realk8s/capikwok

go 1.26.0

require (
	sigs.k8s.io/cluster-api v$CAPI
	sigs.k8s.io/kwok v$KWOK_V
)

replace sigs.k8s.io/cluster-api/api => sigs.k8s.io/cluster-api/api v$CAPI_API
GOMOD
  cat > tools.go <<'GOSRC'
//go:build tools

package tools

import (
	_ "sigs.k8s.io/cluster-api/core"
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
GOSRC
}
