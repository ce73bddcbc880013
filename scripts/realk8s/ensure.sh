#!/usr/bin/env bash
# Makes sure the control-plane binaries of env.sh's versions are in $BIN: uses the cache when stamped, adopts an
# unstamped build of the shared tool (~/.cache/realk8s/bin) when every binary reports the wanted version, and
# otherwise builds (build.sh, ~11 min on 2 cores; needs Go). Prints $BIN on stdout; exit 2 when Go is missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=env.sh
source "$here/env.sh"
if realk8s_cached; then echo "$BIN"; exit 0; fi

legacy=$REALK8S_CACHE/bin
adopt() {
  for b in "${REALK8S_BINARIES[@]}"; do [[ -x $legacy/$b ]] || return 1; done
  [[ -f $legacy/kwok-stages.yaml ]] || return 1
  [[ $("$legacy/etcd" --version 2>/dev/null | sed -n 1p) == "etcd Version: $ETCD" ]] || return 1
  [[ $("$legacy/kube-apiserver" --version 2>/dev/null) == "Kubernetes v$K8S" ]] || return 1
  [[ $("$legacy/kube-controller-manager" --version 2>/dev/null) == "Kubernetes v$K8S" ]] || return 1
  [[ $("$legacy/kube-scheduler" --version 2>/dev/null) == "Kubernetes v$K8S" ]] || return 1
  [[ $("$legacy/kubectl" version --client 2>/dev/null | sed -n 1p) == "Client Version: v$K8S" ]] || return 1
  [[ $("$legacy/kwok" --version 2>/dev/null | sed -n 1p) == "kwok version v$KWOK_V "* ]] || return 1
  mkdir -p "$BIN"
  for f in "${REALK8S_BINARIES[@]}" kwok-stages.yaml; do
    ln -f "$legacy/$f" "$BIN/$f" 2>/dev/null || cp -f "$legacy/$f" "$BIN/$f"
  done
  realk8s_stamp_text > "$REALK8S_STAMP"
}
if [[ -d $legacy ]] && adopt; then echo "realk8s: adopted $legacy ($REALK8S_KEY)" >&2; echo "$BIN"; exit 0; fi

[[ -n $(realk8s_go) ]] || { echo "realk8s: Go is not installed and $BIN is not built" >&2; exit 2; }
mkdir -p "$REALK8S_CACHE"
echo "realk8s: building $REALK8S_KEY into $BIN (about 11 minutes on 2 cores; log $REALK8S_HOME.build.log)" >&2
if ! bash "$here/build.sh" > "$REALK8S_HOME.build.log" 2>&1; then
  tail -30 "$REALK8S_HOME.build.log" >&2; exit 1
fi
mv -f "$REALK8S_HOME.build.log" "$REALK8S_HOME/build.log"
echo "$BIN"
