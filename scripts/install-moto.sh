#!/usr/bin/env bash
# Installs the AWS API emulator moto (PyPI `moto[server]`, pinned) into a virtualenv under ~/.cache, once.
# Idempotent (a marker file records a finished install; concurrent runs wait on a lock). Prints the path of the
# moto_server binary on stdout. Called by .ci/run and by the moto test harness (test/aws/moto.ts).
# Override the location with CAPENTER_MOTO_VENV.
set -euo pipefail
MOTO_VERSION="5.2.3"
VENV="${CAPENTER_MOTO_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/capenter/moto-${MOTO_VERSION}}"
BIN="$VENV/bin/moto_server"
MARKER="$VENV/.capenter-installed"
if [ -f "$MARKER" ] && [ -x "$BIN" ]; then
  echo "$BIN"
  exit 0
fi
mkdir -p "$(dirname "$VENV")"
exec 9>"$VENV.lock"
flock 9
if [ ! -f "$MARKER" ] || [ ! -x "$BIN" ]; then
  rm -rf "$VENV"
  "${PYTHON:-python3}" -m venv "$VENV" >&2
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "moto[server]==${MOTO_VERSION}" >&2
  "$VENV/bin/python" -c "import moto; assert moto.__version__ == '${MOTO_VERSION}', moto.__version__" >&2
  touch "$MARKER"
fi
echo "$BIN"
