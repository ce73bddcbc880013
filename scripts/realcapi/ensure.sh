#!/usr/bin/env bash
# Makes sure the Cluster API core manager of env.sh's versions is in $CAPI_HOME (cache stamped by build.sh; built
# with Go otherwise, about 3-5 min on 2 idle cores). One build at a time (flock on the cache directory). Prints
# $CAPI_HOME on stdout; exit 2 when Go is missing and nothing is cached.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=env.sh
source "$here/env.sh"
if realcapi_cached; then echo "$CAPI_HOME"; exit 0; fi
mkdir -p "$REALCAPI_CACHE"
exec 9> "$REALCAPI_CACHE/.$REALCAPI_KEY.lock"
flock 9
if realcapi_cached; then echo "$CAPI_HOME"; exit 0; fi
[[ -n $(realcapi_go) ]] || { echo "realcapi: Go is not installed and $CAPI_HOME is not built" >&2; exit 2; }
echo "realcapi: building $REALCAPI_KEY into $CAPI_HOME (about 3-5 minutes on 2 cores; log $CAPI_HOME.build.log)" >&2
t0=$SECONDS
if ! bash "$here/build.sh" > "$CAPI_HOME.build.log" 2>&1; then
  tail -30 "$CAPI_HOME.build.log" >&2; exit 1
fi
mv -f "$CAPI_HOME.build.log" "$CAPI_HOME/build.log"
echo "realcapi: built in $((SECONDS - t0)) s" >&2
echo "$CAPI_HOME"
