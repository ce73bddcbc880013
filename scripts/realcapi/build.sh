#!/usr/bin/env bash
# Builds Cluster API's core manager (package sigs.k8s.io/cluster-api/core: the `manager` of the
# capi-controller-manager image) from the Go module proxy only, into $CAPI_HOME/bin/capi-manager, and copies the
# core, kubeadm-bootstrap and kubeadm-control-plane CRDs and the core webhook configurations out of the module zip
# into $CAPI_HOME/crds/ and $CAPI_HOME/webhook-manifests.yaml. Writes the stamp (env.sh) last.
#
# The root module cannot be `go install`ed: its go.mod has `replace sigs.k8s.io/cluster-api/api => ./api`, and
# ./api is its own module (not in the root module's zip). As scripts/realk8s/build.sh does for Kubernetes, a
# wrapper module requires sigs.k8s.io/cluster-api and replaces the api submodule by its published version
# (CAPI_API, env.sh); it is the module kwok is built from too (capikwok.sh), so the two share compiled packages. Copied from the shared tool ../shared/tools/realcapi/build.sh (cache layout of env.sh).
# About 3-5 min on 2 idle cores with a cold Go build cache (4.3 CPU-minutes), seconds with a warm one.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=env.sh
source "$here/env.sh"
GO=$(realcapi_go)
[[ -n $GO ]] || { echo "realcapi: Go is not installed" >&2; exit 2; }
export CGO_ENABLED=0 GOFLAGS=${GOFLAGS:--p=2}
rm -f "$REALCAPI_STAMP"
# shellcheck source=capikwok.sh
source "$here/capikwok.sh"
capikwok_versions "$here"
mkdir -p "$CAPI_HOME/src/capibuild" "$CAPI_HOME/bin" "$CAPI_HOME/crds"
cd "$CAPI_HOME/src/capibuild"
capikwok_module
t0=$SECONDS
"$GO" mod tidy
echo "realcapi: go mod tidy (module download) $((SECONDS - t0)) s"
t0=$SECONDS
MINOR=${CAPI#1.}; MINOR=${MINOR%%.*}
p=sigs.k8s.io/cluster-api/version
LD="-s -w -X $p.gitVersion=v$CAPI -X $p.gitMajor=1 -X $p.gitMinor=$MINOR -X $p.gitTreeState=clean -X $p.buildDate=2025-01-01T00:00:00Z"
# kwok in the same build: scripts/realk8s/build.sh builds it from the same module (capikwok.sh) and finds its
# packages in the build cache; the extra link (about 10 s) is the price of compiling them beside the manager's
out=$(mktemp -d "$CAPI_HOME/bin/.build.XXXXXX")
# nice 10 on a developer's machine, CAPENTER_BUILD_NICE (0 in .ci/run) otherwise; no DWARF in the compiled
# packages, as scripts/realk8s/build.sh (same flags, so kwok's build there finds these packages cached)
nice -n "${CAPENTER_BUILD_NICE:-10}" "$GO" build -trimpath -gcflags=all=-dwarf=false -ldflags="$LD" -o "$out/" sigs.k8s.io/cluster-api/core sigs.k8s.io/kwok/cmd/kwok
mv -f "$out/core" "$CAPI_HOME/bin/capi-manager"
rm -rf "$out"
echo "realcapi: go build (with kwok's packages) $((SECONDS - t0)) s"
MODDIR=$("$GO" mod download -json "sigs.k8s.io/cluster-api@v$CAPI" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
rm -f "$CAPI_HOME"/crds/*.yaml
cp -f "$MODDIR"/core/config/crd/bases/*.yaml "$MODDIR"/bootstrap/kubeadm/config/crd/bases/*.yaml \
  "$MODDIR"/controlplane/kubeadm/config/crd/bases/*.yaml "$CAPI_HOME/crds/"
cp -f "$MODDIR"/core/config/webhook/manifests.yaml "$CAPI_HOME/webhook-manifests.yaml"
chmod u+w "$CAPI_HOME"/crds/*.yaml "$CAPI_HOME/webhook-manifests.yaml"
realcapi_stamp_text > "$REALCAPI_STAMP"
echo "realcapi: built $CAPI_HOME/bin/capi-manager"
