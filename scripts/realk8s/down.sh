#!/usr/bin/env bash
# Stops what up.sh started in $RUN, by the PIDs it recorded in $RUN/pids (checks each PID still runs that
# binary), in reverse start order. Copied from the shared tool ../shared/tools/realk8s/down.sh.
# With KEEP_RUN=0 (default 1 = keep, for the logs) it also removes $RUN.
set -uo pipefail
[[ -n ${RUN:-} ]] || { echo "usage: RUN=<dir printed by up.sh> down.sh" >&2; exit 2; }
if [[ -f $RUN/pids ]]; then
  mapfile -t lines < <(tac "$RUN/pids")
  for l in "${lines[@]}"; do
    read -r name pid exe <<<"$l"
    if kill -0 "$pid" 2>/dev/null && [[ $(readlink "/proc/$pid/exe" 2>/dev/null) == "$(readlink -f "$exe")"* ]]; then
      kill -TERM "$pid"
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; echo "killed $name ($pid)"; else echo "stopped $name ($pid)"; fi
    else
      echo "$name ($pid) not running"
    fi
  done
  rm -f "$RUN/pids"
else
  echo "nothing to stop ($RUN/pids missing)"
fi
[[ ${KEEP_RUN:-1} == 0 ]] && rm -rf "$RUN"
exit 0
