#!/usr/bin/env bash
# Builds etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and kwok from Go modules only
# (Go module proxy) into $BIN (see env.sh), then writes $BIN/kwok-stages.yaml and the $BIN/VERSIONS stamp.
# Copied from the shared tool ../shared/tools/realk8s/build.sh (the session's realk8s harness), with the
# cache keyed by version and a lock so two runs never build into one directory at once.
# Timings on 2 shared cores, cold cache: etcd 43 s, kube-apiserver 6 min 12 s, then kcm+scheduler 1 min 42 s
# (shared build cache), kubectl ~1 min, kwok 1 min 58 s alone — about 11 minutes; kwok is mostly a link when the
# Cluster API manager was built first (scripts/realcapi/capikwok.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=env.sh
source "$here/env.sh"
GOBIN_=$(realk8s_go)
[[ -n $GOBIN_ ]] || { echo "realk8s: Go is not installed; cannot build the control plane" >&2; exit 2; }
export PATH=$(dirname "$GOBIN_"):$PATH
export CGO_ENABLED=0 GOFLAGS=-p=2
# nice 10 on a developer's machine (test:cluster builds on first use); .ci/run sets CAPENTER_BUILD_NICE=0, since
# on a fresh CI machine this build is the critical path
GO="nice -n ${CAPENTER_BUILD_NICE:-10} go"
# no DWARF in the compiled packages (the binaries are stripped by -s -w anyway): about a quarter less compile CPU
# (Cluster API manager + kwok with an empty build cache: 302 against 395 CPU-s, 157 against 209 s). The same flags
# as scripts/realcapi/build.sh, whose build cache kwok's shares.
GCFLAGS=-gcflags=all=-dwarf=false
mkdir -p "$BIN" "$REALK8S_HOME/src"
exec 9>"$REALK8S_HOME/build.lock"
flock 9
if realk8s_cached; then echo "realk8s: $REALK8S_KEY already built in $BIN"; exit 0; fi
rm -f "$REALK8S_STAMP"

# ---- etcd ----------------------------------------------------------------------------------------
mkdir -p "$REALK8S_HOME/src/etcdbuild" && cd "$REALK8S_HOME/src/etcdbuild"
cat > go.mod <<'GOMOD'
module realk8s/etcdbuild

go 1.24
GOMOD
go get "go.etcd.io/etcd/server/v3@v$ETCD"
time $GO build -trimpath "$GCFLAGS" -ldflags='-s -w' -o "$BIN/etcd" go.etcd.io/etcd/server/v3

# ---- kubernetes: wrapper module that replaces every staging module by its published version --------
# (k8s.io/kubernetes cannot be `go install`ed: its go.mod replaces the staging modules by local paths)
mkdir -p "$REALK8S_HOME/src/kbuild" && cd "$REALK8S_HOME/src/kbuild"
MODDIR=$(go mod download -json "k8s.io/kubernetes@v$K8S" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
{
  echo "module realk8s/kbuild"; echo; echo "go 1.24.0"; echo; echo "godebug default=go1.24"; echo
  echo "require k8s.io/kubernetes v$K8S"; echo; echo "replace ("
  for m in $(sed -n '/^replace/,/^)/p' "$MODDIR/go.mod" | awk '/=>/{print $1}'); do
    # not required by k8s.io/kubernetes and not published for every release
    case $m in k8s.io/sample-cli-plugin|k8s.io/sample-controller) continue ;; esac
    echo "	$m => $m v0.${K8S#1.}"
  done
  echo ")"
} > go.mod
cat > tools.go <<'GOSRC'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GOSRC
go mod tidy
MINOR=${K8S#1.}; MINOR=${MINOR%%.*}
LD="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  LD="$LD -X $p.gitVersion=v$K8S -X $p.gitMajor=1 -X $p.gitMinor=$MINOR -X $p.gitTreeState=clean -X $p.buildDate=2025-01-01T00:00:00Z"
done
# one `go build` for the four (and a kubectl of the same version: Debian's kubernetes-client is 1.20): one
# dependency graph keeps both cores busy to the end, where three builds in a row each ended on one core (the
# last big package, then the link)
time $GO build -trimpath "$GCFLAGS" -ldflags="$LD" -o "$BIN/" k8s.io/kubernetes/cmd/kube-apiserver \
  k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl

# ---- kwok: from the module the Cluster API manager is built from (scripts/realcapi/capikwok.sh) --------------
# With the same go.mod, every package the two share is compiled once in Go's build cache: .ci/run builds the CAPI
# manager (and kwok's packages) beside the control plane, so by the time this step runs it is mostly a link.
mkdir -p "$REALK8S_HOME/src/kwokbuild" && cd "$REALK8S_HOME/src/kwokbuild"
# shellcheck source=../realcapi/capikwok.sh
source "$here/../realcapi/capikwok.sh"
capikwok_versions "$here"
rm -f go.sum
capikwok_module
go mod tidy
time $GO build -trimpath "$GCFLAGS" -ldflags='-s -w' -o "$BIN/kwok" sigs.k8s.io/kwok/cmd/kwok
# kwok's controller has no built-in stages: take kwokctl's default ones from the module
S=$(go mod download -json "sigs.k8s.io/kwok@v$KWOK_V" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')/kustomize/stage
for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
         pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
  echo '---'; cat "$S/$f"
done > "$BIN/kwok-stages.yaml"

# sed, not head: under pipefail a `head -1` that exits before the second line is written fails the build with
# SIGPIPE (it did, once, in a cold CI run at load ~8: kubectl writes its Kustomize line separately)
"$BIN/etcd" --version | sed -n 1p; "$BIN/kube-apiserver" --version; "$BIN/kubectl" version --client 2>/dev/null | sed -n 1p
"$BIN/kwok" --version 2>/dev/null | sed -n 1p || true
realk8s_stamp_text > "$REALK8S_STAMP"
echo "realk8s: built $REALK8S_KEY into $BIN"
