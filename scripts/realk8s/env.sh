# shellcheck shell=bash
# Versions and cache layout of the real control plane, sourced by the other scripts in this directory.
# Binaries live in $REALK8S_BIN (default ~/.cache/realk8s/k8s-<v>_etcd-<v>_kwok-<v>/bin): one directory per
# version set, so a version bump builds next to the old one instead of mixing binaries.
K8S=${K8S:-1.34.4}        # k8s.io/kubernetes v$K8S, staging modules v0.${K8S#1.}
ETCD=${ETCD:-3.6.16}      # go.etcd.io/etcd/server/v3
KWOK_V=${KWOK_V:-0.8.0}   # sigs.k8s.io/kwok
REALK8S_CACHE=${REALK8S_CACHE:-$HOME/.cache/realk8s}
REALK8S_KEY="k8s-${K8S}_etcd-${ETCD}_kwok-${KWOK_V}"
REALK8S_HOME=${REALK8S_HOME:-$REALK8S_CACHE/$REALK8S_KEY}
BIN=${REALK8S_BIN:-$REALK8S_HOME/bin}
REALK8S_BINARIES=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok)
# The stamp build.sh writes last: its presence means every binary above is complete and of these versions.
REALK8S_STAMP="$BIN/VERSIONS"
realk8s_stamp_text() { echo "k8s=$K8S etcd=$ETCD kwok=$KWOK_V"; }
realk8s_cached() { [[ -f $REALK8S_STAMP && $(cat "$REALK8S_STAMP") == "$(realk8s_stamp_text)" ]]; }
realk8s_go() { # prints the go binary, or nothing
  if command -v go >/dev/null 2>&1; then command -v go; elif [[ -x /usr/local/go/bin/go ]]; then echo /usr/local/go/bin/go; fi
}
