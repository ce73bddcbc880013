#!/usr/bin/env bash
# `npm run soak:long`: the long fault-injection soaks, run before resolving any issue that touches controllers or
# providers (docs/soak.md "Long run" has the last result). CI runs the short ones (.ci/run).
#   1. kwok: 1,000 seeded runs x 50 steps (seeds 30001-31000), 3 workers, every fault kind >= 20 times, then 300
#      generated malformed objects (20 per family); about 70 minutes on 2 cores.
#   2. aws against moto: 50 runs x 200 steps (seeds 101-150), 4 workers, every kind >= 20 times, a hung run fails
#      after 600 s; one operator log per run in $SOAK_LOG_DIR (default a fresh temporary folder, printed); about
#      35 minutes on 2 cores.
# Nothing is --known: any invariant violated fails the soak with its seed and a replay command.
# SOAK_LONG_ONLY=kwok|aws runs one of the two; SOAK_LONG_KWOK_RUNS / SOAK_LONG_AWS_RUNS change the run counts.
set -euo pipefail
cd "$(dirname "$0")/.."
only=${SOAK_LONG_ONLY:-}
case $only in
  "" | kwok | aws) ;;
  *) echo "soak:long: SOAK_LONG_ONLY must be kwok or aws (or unset for both), got \"$only\"" >&2; exit 2 ;;
esac
logs=${SOAK_LOG_DIR:-$(mktemp -d -t capenter-soak-XXXXXX)}
mkdir -p "$logs"
echo "soak:long: operator logs in $logs"
if [[ -z $only || $only == kwok ]]; then
  npm run soak -- --runs "${SOAK_LONG_KWOK_RUNS:-1000}" --seed 30001 --steps 50 --parallel 3 --no-shrink \
    --min-each 20 --bad-inputs 300
fi
if [[ -z $only || $only == aws ]]; then
  npm run soak -- --provider aws --runs "${SOAK_LONG_AWS_RUNS:-50}" --seed 101 --steps 200 --parallel 4 \
    --min-each 20 --no-shrink --run-timeout 600 --log-file "$logs/aws-{seed}.log"
fi
