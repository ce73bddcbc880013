#!/usr/bin/env bash
# Prints the path of a Helm v3.22.0 binary, building it from the Go module proxy into ~/.cache/helm-bin when missing
# (`go install helm.sh/helm/v3/cmd/helm@v3.22.0`). Exit 1 when neither helm nor Go is available.
set -euo pipefail
want=v3.22.0
bin="${HELM_BIN_DIR:-$HOME/.cache/helm-bin}/helm"
# `go install` builds report "v3.22" (no patch, no ldflags), so the module version is read from the build info
is_want() { [[ -x $1 ]] && { "$1" version --short 2>/dev/null | grep -q "^$want" || go version -m "$1" 2>/dev/null | grep -qE "^\s+mod\s+helm.sh/helm/v3\s+$want\s"; }; }
if is_want "$bin"; then echo "$bin"; exit 0; fi
if command -v helm >/dev/null 2>&1 && helm version --short 2>/dev/null | grep -q "^$want"; then command -v helm; exit 0; fi
if ! command -v go >/dev/null 2>&1; then echo "ensure-helm: no helm $want and no Go to build it" >&2; exit 1; fi
mkdir -p "$(dirname "$bin")"
GOBIN="$(dirname "$bin")" GOFLAGS=-mod=mod go install "helm.sh/helm/v3/cmd/helm@$want" >&2
echo "$bin"
