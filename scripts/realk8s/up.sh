#!/usr/bin/env bash
# Starts a real Kubernetes control plane on loopback only:
#   etcd + kube-apiserver (RBAC, client-cert + static-token auth) + kube-controller-manager + kube-scheduler
#   (+ kwok, if $BIN/kwok exists and KWOK!=0).
# Copied from the shared tool ../shared/tools/realk8s/up.sh, changed so that several can run at once on one
# machine: every run has its own directory ($RUN, default a fresh `mktemp -d`) holding its PKI, etcd data,
# logs, PIDs and kubeconfigs; nothing is shared but the binaries.
# Binaries: $BIN (env.sh; run ensure.sh first). Prints `RUN=<dir>` last; the admin kubeconfig is $RUN/kubeconfig
# (client cert in system:masters), $RUN/kubeconfig-token the same with a static bearer token.
# Stop with `RUN=<dir> down.sh`. About 8 s on 2 cores.
# KCM_ARGS / SCHEDULER_ARGS: extra flags of kube-controller-manager / kube-scheduler (split on spaces), e.g.
# `--kube-api-qps=200 --kube-api-burst=400` to lift their clients' default rate limits (20 / 50 QPS).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=env.sh
source "$here/env.sh"
RUN=${RUN:-$(mktemp -d "${TMPDIR:-/tmp}/realk8s-run.XXXXXX")}
PKI=$RUN/pki
KWOK=${KWOK:-1}
TIMEOUT=${TIMEOUT:-90}
export PATH=$BIN:$PATH

if [[ -f $RUN/pids ]]; then
  for pid in $(awk '{print $2}' "$RUN/pids"); do
    if kill -0 "$pid" 2>/dev/null; then echo "already running (pid $pid); run down.sh first" >&2; exit 1; fi
  done
fi
for b in etcd kube-apiserver; do [[ -x $BIN/$b ]] || { echo "missing $BIN/$b: run ensure.sh" >&2; exit 1; }; done
rm -rf "$RUN/etcd" "$RUN/logs" "$RUN/pids" "$RUN/pki"; mkdir -p "$RUN/logs" "$PKI"

# ---- free loopback ports -------------------------------------------------------------------------
read -r P_ETCD P_PEER P_API P_KCM P_SCHED P_KWOK < <(python3 - <<'PY'
import socket
socks=[]
for _ in range(6):
    s=socket.socket(); s.bind(('127.0.0.1',0)); socks.append(s)
print(' '.join(str(s.getsockname()[1]) for s in socks))
PY
)

# ---- PKI (per run) -------------------------------------------------------------------------------
(
  cd "$PKI"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3650 -subj "/CN=realk8s-ca" 2>/dev/null
  openssl genrsa -out sa.key 2048 2>/dev/null
  openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
  # apiserver serving cert
  openssl req -newkey rsa:2048 -nodes -keyout apiserver.key -out apiserver.csr -subj "/CN=kube-apiserver" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\nextendedKeyUsage=serverAuth\n' > apiserver.ext
  openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out apiserver.crt -days 3650 -extfile apiserver.ext 2>/dev/null
  # client certs: name|CN|O
  for spec in "admin|admin|system:masters" \
              "kube-controller-manager|system:kube-controller-manager|" \
              "kube-scheduler|system:kube-scheduler|" \
              "kwok|kwok-controller|system:masters"; do
    IFS='|' read -r n cn o <<<"$spec"
    subj="/CN=$cn"; [[ -n $o ]] && subj="/O=$o/CN=$cn"
    openssl req -newkey rsa:2048 -nodes -keyout "$n.key" -out "$n.csr" -subj "$subj" 2>/dev/null
    printf 'extendedKeyUsage=clientAuth\n' > client.ext
    openssl x509 -req -in "$n.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$n.crt" -days 3650 -extfile client.ext 2>/dev/null
  done
  # static token for admin (token,user,uid,"group")
  echo "$(openssl rand -hex 16),admin-token,admin-token-uid,\"system:masters\"" > tokens.csv
  rm -f ./*.csr ./*.ext
)

b64() { base64 -w0 < "$1"; }
kubeconfig() { # name file
  cat > "$2" <<KC
apiVersion: v1
kind: Config
clusters:
- name: realk8s
  cluster:
    server: https://127.0.0.1:$P_API
    certificate-authority-data: $(b64 "$PKI/ca.crt")
users:
- name: $1
  user:
    client-certificate-data: $(b64 "$PKI/$1.crt")
    client-key-data: $(b64 "$PKI/$1.key")
contexts:
- name: realk8s
  context: {cluster: realk8s, user: $1}
current-context: realk8s
KC
}
for n in admin kube-controller-manager kube-scheduler kwok; do kubeconfig "$n" "$RUN/$n.kubeconfig"; done
TOKEN=$(cut -d, -f1 "$PKI/tokens.csv")

PIDS=()
start() { # name cmd...
  local n=$1; shift
  nohup "$@" > "$RUN/logs/$n.log" 2>&1 &
  local pid=$!
  echo "$n $pid $1" >> "$RUN/pids"
  PIDS+=("$n=$pid")
}
fail() {
  echo "ERROR: $*" >&2
  for f in "$RUN"/logs/*.log; do echo "--- $f" >&2; tail -20 "$f" >&2; done
  RUN=$RUN bash "$here/down.sh" >&2 || true
  exit 1
}
wait_for() { # what cmd...
  local what=$1; shift; local end=$((SECONDS + TIMEOUT))
  until "$@" >/dev/null 2>&1; do
    (( SECONDS > end )) && fail "timed out waiting for $what"
    sleep 0.3
  done
}

# ---- etcd ----------------------------------------------------------------------------------------
start etcd "$BIN/etcd" --name default --data-dir "$RUN/etcd" \
  --listen-client-urls "http://127.0.0.1:$P_ETCD" --advertise-client-urls "http://127.0.0.1:$P_ETCD" \
  --listen-peer-urls "http://127.0.0.1:$P_PEER" --initial-advertise-peer-urls "http://127.0.0.1:$P_PEER" \
  --initial-cluster "default=http://127.0.0.1:$P_PEER" --unsafe-no-fsync --log-level warn
wait_for etcd curl -sf "http://127.0.0.1:$P_ETCD/health"

# ---- kube-apiserver ------------------------------------------------------------------------------
start kube-apiserver "$BIN/kube-apiserver" \
  --etcd-servers "http://127.0.0.1:$P_ETCD" \
  --bind-address 127.0.0.1 --secure-port "$P_API" --advertise-address 127.0.0.1 \
  --endpoint-reconciler-type none \
  --service-cluster-ip-range 10.96.0.0/16 \
  --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
  --client-ca-file "$PKI/ca.crt" --token-auth-file "$PKI/tokens.csv" \
  --service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
  --service-account-issuer https://kubernetes.default.svc.cluster.local \
  --authorization-mode RBAC --allow-privileged=true --profiling=false --v=1
wait_for kube-apiserver curl -sf --cacert "$PKI/ca.crt" -H "Authorization: Bearer $TOKEN" "https://127.0.0.1:$P_API/readyz"

# ---- kube-controller-manager / kube-scheduler ------------------------------------------------------
K=$RUN/kube-controller-manager.kubeconfig
read -r -a KCM_EXTRA <<< "${KCM_ARGS:-}"
read -r -a SCHEDULER_EXTRA <<< "${SCHEDULER_ARGS:-}"
if [[ -x $BIN/kube-controller-manager && -x $BIN/kube-scheduler ]]; then
start kube-controller-manager "$BIN/kube-controller-manager" \
  --kubeconfig "$K" --authentication-kubeconfig "$K" --authorization-kubeconfig "$K" \
  --bind-address 127.0.0.1 --secure-port "$P_KCM" --leader-elect=false \
  --use-service-account-credentials=true --service-account-private-key-file "$PKI/sa.key" \
  --root-ca-file "$PKI/ca.crt" --cluster-signing-cert-file "$PKI/ca.crt" --cluster-signing-key-file "$PKI/ca.key" \
  --profiling=false --v=1 ${KCM_EXTRA[@]+"${KCM_EXTRA[@]}"}
S=$RUN/kube-scheduler.kubeconfig
start kube-scheduler "$BIN/kube-scheduler" \
  --kubeconfig "$S" --authentication-kubeconfig "$S" --authorization-kubeconfig "$S" \
  --bind-address 127.0.0.1 --secure-port "$P_SCHED" --leader-elect=false --profiling=false --v=1 \
  ${SCHEDULER_EXTRA[@]+"${SCHEDULER_EXTRA[@]}"}
wait_for kube-controller-manager curl -skf "https://127.0.0.1:$P_KCM/healthz"
wait_for kube-scheduler curl -skf "https://127.0.0.1:$P_SCHED/healthz"
fi

# ---- kwok (optional): fakes kubelets for Nodes annotated kwok.x-k8s.io/node=fake -------------------
if [[ $KWOK != 0 && -x $BIN/kwok ]]; then
  mkdir -p "$RUN/kwok-home"
  HOME=$RUN/kwok-home start kwok "$BIN/kwok" --kubeconfig "$RUN/kwok.kubeconfig" \
    --manage-all-nodes=false \
    --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
    --manage-nodes-with-label-selector= \
    --node-lease-duration-seconds=40 \
    --server-address "127.0.0.1:$P_KWOK" \
    --config "$BIN/kwok-stages.yaml" --node-ip 127.0.0.1 --cidr 10.0.0.1/16
  wait_for kwok curl -sf "http://127.0.0.1:$P_KWOK/healthz"
fi

cp "$RUN/admin.kubeconfig" "$RUN/kubeconfig"
# token variant (same server, bearer token instead of client cert)
sed -e '/client-certificate-data/d' -e "s|client-key-data: .*|token: $TOKEN|" "$RUN/admin.kubeconfig" > "$RUN/kubeconfig-token"
# wait for the default ServiceAccount in "default" (controller-manager's serviceaccount controller is up)
if [[ -x $BIN/kube-controller-manager ]]; then
  wait_for default-serviceaccount "$BIN/kubectl" --kubeconfig "$RUN/kubeconfig" -n default get serviceaccount default
fi
cat > "$RUN/ports" <<PORTS
etcd=$P_ETCD apiserver=$P_API controller-manager=$P_KCM scheduler=$P_SCHED kwok=$P_KWOK
PORTS
echo "kubeconfig: $RUN/kubeconfig"
echo "apiserver: https://127.0.0.1:$P_API"
echo "pids: ${PIDS[*]}"
echo "RUN=$RUN"
