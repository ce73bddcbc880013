# shellcheck shell=bash
# Versions and cache layout of the real Cluster API core manager, sourced by the other scripts in this directory.
# One directory per version set: ~/.cache/realcapi/capi-<v>_api-<v>/ with bin/capi-manager, crds/*.yaml (core,
# kubeadm bootstrap and control-plane CRDs from the module zip) and webhook-manifests.yaml (the core manager's
# admission webhook configurations).
CAPI=${CAPI:-1.14.2}          # sigs.k8s.io/cluster-api (root module; its manager `main` is the `core` package)
CAPI_API=${CAPI_API:-1.14.1}  # sigs.k8s.io/cluster-api/api (own module; v1.14.1's tree equals v1.14.2's)
REALCAPI_CACHE=${REALCAPI_CACHE:-$HOME/.cache/realcapi}
REALCAPI_KEY="capi-${CAPI}_api-${CAPI_API}"
CAPI_HOME=${CAPI_HOME:-$REALCAPI_CACHE/$REALCAPI_KEY}
# The stamp build.sh writes last: its presence means the binary, the CRDs and the webhook manifest are complete.
REALCAPI_STAMP="$CAPI_HOME/VERSIONS"
realcapi_stamp_text() { echo "cluster-api=v$CAPI api=v$CAPI_API"; }
realcapi_cached() { [[ -f $REALCAPI_STAMP && $(cat "$REALCAPI_STAMP") == "$(realcapi_stamp_text)" ]]; }
realcapi_go() { # prints the go binary, or nothing
  if command -v go >/dev/null 2>&1; then command -v go; elif [[ -x /usr/local/go/bin/go ]]; then echo /usr/local/go/bin/go; fi
}
