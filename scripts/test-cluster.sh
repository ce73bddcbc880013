#!/usr/bin/env bash
# `npm run test:cluster`: makes sure the binaries it needs are cached (built with Go from the module proxy when
# missing, while the host network is still there: the real control plane, scripts/realk8s/ensure.sh; Helm,
# scripts/ensure-helm.sh; the Cluster API core manager, scripts/realcapi/ensure.sh), then runs vitest with
# vitest.cluster.config.ts inside a loopback-only network namespace (scripts/realcapi/netns.sh: the CAPI manager's
# webhook server binds 0.0.0.0), as two shards at once (below). Arguments go to one vitest (e.g. one file). With
# CAPENTER_TEST_KUBECONFIG set the control plane is not built (the given cluster is used, by one vitest). Any
# missing piece fails the run, naming it.
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
# Arguments (one file, a filter, a vitest flag), CAPENTER_TEST_CLUSTER_SHARDS=1 or a given cluster: one vitest.
if (($# > 0)) || [[ ${CAPENTER_TEST_CLUSTER_SHARDS:-2} == 1 || -n ${CAPENTER_TEST_KUBECONFIG:-} ]]; then
  exec bash scripts/realcapi/netns.sh vitest run --config vitest.cluster.config.ts "$@"
fi
# The whole suite: two shards at once, each its own vitest with its own control plane in its own network namespace
# (the files of a shard still run one at a time on theirs). Most of a file's time is waiting on the real control
# plane (watches, kube-scheduler, the CAPI manager), so two shards on 2 cores take about the time of the longer one.
# Shard "capi": the real-CAPI files, the Helm chart files and the small ones; shard "core": everything else
# (conformance, differential, the controller e2e and the cases), so a new file lands in "core" unless listed here.
capi_shard=(test/cluster/realcapi test/cluster/chart test/cluster/helm test/cluster/capa-guide-helm
  test/cluster/plan test/cluster/soak-badinput test/cluster/scenarios)
core_excludes=()
for f in "${capi_shard[@]}"; do core_excludes+=(--exclude "**/$f*"); done
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
# shard NAME ARGS...: runs one vitest in its own namespace, each line prefixed with [NAME], its exit code in $logs/NAME.rc
shard() {
  local name=$1
  shift
  { bash scripts/realcapi/netns.sh vitest run --config vitest.cluster.config.ts "$@" 2>&1 &&
    echo 0 >"$logs/$name.rc" || echo $? >"$logs/$name.rc"; } | tee "$logs/$name.log" | sed -u "s/^/[$name] /"
}
shard capi "${capi_shard[@]}" &
shard core "${core_excludes[@]}" &
wait
# one summary line over both shards, as test/summary-reporter.ts prints it for one run
total() { # FIELD: the sum of "N FIELD" over the shards' summary lines
  sed -n 's/^tests: //p' "$logs"/*.log | grep -o "[0-9]* $1" | awk '{s += $1} END {print s + 0}'
}
failed=0
for name in capi core; do
  rc=$(cat "$logs/$name.rc" 2>/dev/null || echo 1)
  if [[ $rc != 0 ]]; then
    echo "test:cluster: shard $name failed (exit $rc)" >&2
    failed=1
  fi
done
echo
echo "tests: $(total passed) passed, $(total failed) failed, $(total skipped) skipped"
exit $failed
