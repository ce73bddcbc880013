#!/usr/bin/env bash
# `npm run test:cluster`: makes sure the binaries it needs are cached (built with Go from the module proxy when
# missing, while the host network is still there: the real control plane, scripts/realk8s/ensure.sh; Helm,
# scripts/ensure-helm.sh; the Cluster API core manager, scripts/realcapi/ensure.sh), then runs vitest with
# vitest.cluster.config.ts inside a loopback-only network namespace (scripts/realcapi/netns.sh: the CAPI manager's
# webhook server binds 0.0.0.0). Arguments go to vitest (e.g. one file). With CAPENTER_TEST_KUBECONFIG set the
# control plane is not built (the given cluster is used). Any missing piece fails the run, naming it.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -x /usr/local/go/bin/go ]] && export PATH=$PATH:/usr/local/go/bin
need() { # what script...
  local what=$1 rc=0
  shift
  "$@" >/dev/null || rc=$?
  if ((rc != 0)); then
    echo "test:cluster: cannot get $what (exit $rc from $*); Go (https://go.dev/dl) builds it once into ~/.cache" >&2
    exit 1
  fi
}
[[ -n ${CAPENTER_TEST_KUBECONFIG:-} ]] || need "the real control plane" bash scripts/realk8s/ensure.sh
need "Helm" bash scripts/ensure-helm.sh
need "the Cluster API manager" bash scripts/realcapi/ensure.sh
exec bash scripts/realcapi/netns.sh vitest run --config vitest.cluster.config.ts "$@"
