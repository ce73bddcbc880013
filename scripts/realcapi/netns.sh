#!/usr/bin/env bash
# Runs a command in a fresh network namespace whose only interface is loopback (up), so that nothing it starts is
# reachable from outside the machine. `npm run test:cluster` (scripts/test-cluster.sh) runs vitest in it: Cluster API's core manager (the real-CAPI
# tests, test/cluster/realcapi.test.ts) serves its webhooks on 0.0.0.0:<port> and has no flag to choose the host.
# Needs util-linux `unshare` and iproute2 `ip`, and the right to create a network namespace (root, or
# unprivileged user namespaces: then `unshare -rn`). Fails (exit 3) naming what is missing; it never falls back
# to the host network. Inside, REALCAPI_NETNS=1 is set. With CAPENTER_TEST_KUBECONFIG set (test:cluster against an
# existing cluster, which a new namespace could not reach) the command runs in the host's namespace, with a note:
# test/cluster/realcapi.test.ts then fails, saying why.
set -euo pipefail
(($# > 0)) || { echo "usage: netns.sh COMMAND [ARGS...]" >&2; exit 64; }
for t in unshare ip; do
  command -v "$t" >/dev/null 2>&1 || { echo "netns.sh: '$t' not found (util-linux unshare, iproute2 ip)" >&2; exit 3; }
done
if [[ ${REALCAPI_NETNS:-} == 1 ]]; then exec "$@"; fi
if [[ -n ${CAPENTER_TEST_KUBECONFIG:-} ]]; then
  echo "netns.sh: CAPENTER_TEST_KUBECONFIG is set: running in the host's network namespace (the real-CAPI tests will refuse)" >&2
  exec "$@"
fi
inner='ip link set lo up && exec env REALCAPI_NETNS=1 "$@"'
if [[ $(id -u) == 0 ]]; then
  exec unshare --net -- bash -c "$inner" netns "$@"
fi
if unshare --net --map-current-user -- true 2>/dev/null; then
  exec unshare --net --map-current-user -- bash -c "$inner" netns "$@"
fi
echo "netns.sh: cannot create a network namespace (not root, no unprivileged user namespaces); test:cluster needs one" >&2
exit 3
