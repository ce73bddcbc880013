/**
 * The real Cluster API core manager (sigs.k8s.io/cluster-api v1.14.2, `core/` main; scripts/realcapi/) on the
 * control plane of `npm run test:cluster`, with its real conversion and admission webhooks on a self-signed
 * certificate (no cert-manager), as ../shared/tools/realcapi/up.sh + prepare-manifests.py do:
 * - core CRDs: conversion webhook `https://127.0.0.1:<port>/convert` with the certificate as CA bundle, label
 *   `cluster.x-k8s.io/provider: cluster-api`; KubeadmConfig/KubeadmControlPlane CRDs (no controller runs for them)
 *   with the release contract labels; CAPA's AWSCluster/AWSMachineTemplate CRDs (crds/capi/) with CAPA's; capenter's
 *   KarpenterMachinePool CRD as is;
 * - the manager (`--leader-elect=false`, health and diagnostics on 127.0.0.1), then its admission webhook
 *   configurations (`service:` → `url:` on 127.0.0.1, names prefixed `realcapi-`).
 * The manager's webhook server binds 0.0.0.0 and has no host flag: {@link startRealCAPI} refuses to run unless the
 * process is in a network namespace with only loopback (`scripts/realcapi/netns.sh`, which `npm run test:cluster`
 * uses). Binaries come from `scripts/realcapi/ensure.sh` (cache ~/.cache/realcapi; a build with Go when absent).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { createServer } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { kubectl, root, until } from './helpers.ts';

/** A running CAPI core manager. */
export interface RealCAPI {
  /** The cache directory (bin/capi-manager, crds/, webhook-manifests.yaml). */
  home: string;
  /** Where its log (`capi-manager.log`) and the applied manifests are. */
  dir: string;
  /** Milliseconds: ensure.sh (cache or build), and manager start → `/readyz` 200. */
  timings: { ensureMs: number; readyMs: number };
  /** The manager's log so far. */
  log(): string;
  /** Stops the manager (SIGTERM, SIGKILL after 10 s) and deletes its webhook configurations. */
  stop(): Promise<void>;
}

/** Interfaces of this process's network namespace that have an address (Node's view). */
function interfaces(): string[] {
  return Object.keys(networkInterfaces()).sort();
}

/** A free TCP port on 127.0.0.1. */
function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => res(typeof a === 'object' && a ? a.port : 0));
    });
  });
}

/** `scripts/realcapi/ensure.sh`: the cache directory. @throws naming the script's output when it fails. */
function ensure(): string {
  const r = spawnSync('bash', [join(root, 'scripts', 'realcapi', 'ensure.sh')], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 20 * 60_000,
  });
  if (r.status === 2)
    throw new Error(
      `the real-CAPI tests need Go to build sigs.k8s.io/cluster-api once (scripts/realcapi/ensure.sh): ${r.stderr}`,
    );
  if (r.status !== 0)
    throw new Error(`scripts/realcapi/ensure.sh failed (exit ${r.status}):\n${r.stderr}${r.error ?? ''}`);
  return r.stdout.trim().split('\n').pop() as string;
}

/** A self-signed serving certificate for 127.0.0.1 in `dir` (tls.crt, tls.key), also used as the CA bundle. */
function selfSignedCert(dir: string): string {
  const r = spawnSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      join(dir, 'tls.key'),
      '-out',
      join(dir, 'tls.crt'),
      '-days',
      '2',
      '-subj',
      '/CN=capi-webhook-service',
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
    ],
    { encoding: 'utf8' },
  );
  if (r.status !== 0) throw new Error(`openssl could not make the webhook certificate: ${r.stderr}`);
  return Buffer.from(readFileSync(join(dir, 'tls.crt'))).toString('base64');
}

type Doc = Record<string, unknown> & {
  metadata: { name: string; labels?: Record<string, string> };
  spec?: Record<string, unknown>;
};

const CORE_GROUPS = [
  'cluster.x-k8s.io',
  'addons.cluster.x-k8s.io',
  'ipam.cluster.x-k8s.io',
  'runtime.cluster.x-k8s.io',
];
/** Contract labels of the release manifests: CAPI v1.14's kubeadm providers, CAPA v2.11 (v1beta1 contract). */
const KUBEADM_LABELS = { 'cluster.x-k8s.io/v1beta1': 'v1beta1', 'cluster.x-k8s.io/v1beta2': 'v1beta2' };
const CAPA_LABELS = { 'cluster.x-k8s.io/v1beta1': 'v1beta1_v1beta2' };

/** Reads every YAML document of `file`. */
function docs(file: string): Doc[] {
  return parseAllDocuments(readFileSync(file, 'utf8'))
    .map((d) => d.toJS() as Doc | null)
    .filter((d): d is Doc => d !== null);
}

/** The CRDs to apply (see the module comment), pointed at `base` = `https://127.0.0.1:<port>` with `ca`. */
export function prepareCRDs(home: string, base: string, ca: string): Doc[] {
  const crdDir = join(home, 'crds');
  const out: Doc[] = [];
  const files = [
    ...readdirSync(crdDir)
      .filter((f) => f.endsWith('.yaml'))
      .sort()
      .map((f) => join(crdDir, f)),
    join(root, 'crds', 'capi', 'infrastructure.cluster.x-k8s.io_awsclusters.yaml'),
    join(root, 'crds', 'capi', 'infrastructure.cluster.x-k8s.io_awsmachinetemplates.yaml'),
  ];
  for (const f of files) {
    for (const crd of docs(f)) {
      const group = crd.spec?.group as string;
      const labels = { ...(crd.metadata.labels ?? {}) };
      if (CORE_GROUPS.includes(group)) {
        labels['cluster.x-k8s.io/provider'] = 'cluster-api';
        (crd.spec as Record<string, unknown>).conversion = {
          strategy: 'Webhook',
          webhook: {
            conversionReviewVersions: ['v1'],
            clientConfig: { url: `${base}/convert`, caBundle: ca },
          },
        };
      } else if (group === 'bootstrap.cluster.x-k8s.io' || group === 'controlplane.cluster.x-k8s.io')
        Object.assign(labels, KUBEADM_LABELS);
      else if (group === 'infrastructure.cluster.x-k8s.io') Object.assign(labels, CAPA_LABELS);
      crd.metadata.labels = labels;
      out.push(crd);
    }
  }
  out.push(...docs(join(root, 'crds', 'infrastructure.cluster.x-k8s.io_karpentermachinepools.yaml')));
  return out;
}

/** The core manager's webhook configurations with `url:` on `base` and `ca`, names prefixed `realcapi-`. */
export function prepareWebhooks(home: string, base: string, ca: string): Doc[] {
  return docs(join(home, 'webhook-manifests.yaml')).map((cfg) => {
    cfg.metadata.name = `realcapi-${cfg.metadata.name}`;
    for (const wh of (cfg.webhooks as Array<{ clientConfig: { service?: { path?: string } } }>) ?? []) {
      const path = wh.clientConfig.service?.path ?? '/';
      wh.clientConfig = { url: `${base}${path}`, caBundle: ca } as typeof wh.clientConfig;
    }
    return cfg;
  });
}

/** GET `http://127.0.0.1:<port><path>`: the status code (0 when nothing answers). */
function httpStatus(port: number, path: string): Promise<number> {
  return new Promise((res) => {
    const req = get({ host: '127.0.0.1', port, path, agent: false }, (r) => {
      r.resume();
      r.on('end', () => res(r.statusCode ?? 0));
    });
    req.on('error', () => res(0));
  });
}

/** Applies `objs` server-side (field manager `realcapi-test`, conflicts forced). @throws with kubectl's output. */
export async function applyDocs(kubeconfig: string, objs: unknown[], what: string): Promise<void> {
  const r = await kubectl(
    kubeconfig,
    ['apply', '--server-side', '--force-conflicts', '--field-manager', 'realcapi-test', '-f', '-'],
    objs.map((o) => stringify(o)).join('---\n'),
  );
  if (r.code !== 0) throw new Error(`kubectl apply of ${what} failed (exit ${r.code}): ${r.stderr}`);
}

/**
 * Installs the CRDs, starts the manager against `kubeconfig` and installs its webhooks (see the module comment).
 * @throws when not in a loopback-only network namespace, when the build is unavailable, or when the manager is not
 * ready within 180 s (with its log's tail).
 */
export async function startRealCAPI(kubeconfig: string): Promise<RealCAPI> {
  const ifs = interfaces();
  if (ifs.join(',') !== 'lo')
    throw new Error(
      `the real CAPI manager serves webhooks on 0.0.0.0 (no host flag): run test:cluster in a loopback-only network namespace (npm run test:cluster does, through scripts/realcapi/netns.sh); this one has interfaces ${ifs.join(', ')}`,
    );
  const t0 = Date.now();
  const home = ensure();
  const ensureMs = Date.now() - t0;
  const dir = mkdtempSync(join(tmpdir(), 'realcapi-test-'));
  const certDir = join(dir, 'webhook-cert');
  mkdirSync(certDir);
  const ca = selfSignedCert(certDir);
  const [pWebhook, pHealth, pDiag] = [await freePort(), await freePort(), await freePort()];
  const base = `https://127.0.0.1:${pWebhook}`;
  const crds = prepareCRDs(home, base, ca);
  writeFileSync(join(dir, 'crds.yaml'), crds.map((o) => stringify(o)).join('---\n'));
  await applyDocs(kubeconfig, crds, 'the CAPI CRDs');
  const est = await kubectl(kubeconfig, [
    'wait',
    '--for',
    'condition=Established',
    '--timeout',
    '60s',
    'crd',
    '--all',
  ]);
  if (est.code !== 0) throw new Error(`CRDs not established: ${est.stderr}`);

  const logFile = join(dir, 'capi-manager.log');
  const fd = openSync(logFile, 'a');
  const t1 = Date.now();
  const proc: ChildProcess = spawn(
    join(home, 'bin', 'capi-manager'),
    [
      '--kubeconfig',
      kubeconfig,
      '--leader-elect=false',
      '--webhook-port',
      String(pWebhook),
      '--webhook-cert-dir',
      certDir,
      '--health-addr',
      `127.0.0.1:${pHealth}`,
      '--diagnostics-address',
      `127.0.0.1:${pDiag}`,
      '--insecure-diagnostics',
      '--v=4',
    ],
    { stdio: ['ignore', fd, fd] },
  );
  let exit: number | undefined;
  const exited = new Promise<void>((r) =>
    proc.on('exit', (code) => {
      exit = code ?? -1;
      r();
    }),
  );
  const log = (): string => readFileSync(logFile, 'utf8');
  try {
    await until(
      async () => {
        if (exit !== undefined) throw new Error(`capi-manager exited ${exit}`);
        return (await httpStatus(pHealth, '/readyz')) === 200;
      },
      'capi-manager /readyz',
      180_000,
      250,
    );
  } catch (err) {
    proc.kill('SIGKILL');
    throw new Error(`${String(err)}\n${log().split('\n').slice(-40).join('\n')}`);
  }
  const readyMs = Date.now() - t1;
  const webhooks = prepareWebhooks(home, base, ca);
  await applyDocs(kubeconfig, webhooks, 'the CAPI webhook configurations');
  return {
    home,
    dir,
    timings: { ensureMs, readyMs },
    log,
    async stop() {
      for (const w of webhooks)
        await kubectl(kubeconfig, ['delete', w.kind as string, w.metadata.name, '--ignore-not-found']);
      if (exit === undefined) proc.kill('SIGTERM');
      const kill = setTimeout(() => proc.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(kill);
    },
  };
}

/**
 * The objects every real-CAPI test cluster needs in `ns`, labelled with the Cluster's name: the Namespace, the
 * AWSCluster (`awsClusterSpec` beside its region and control-plane endpoint on 127.0.0.1:`apiPort`), a
 * KubeadmControlPlane at v1.33.1 (no controller runs for it: the tests write its status), the Cluster pointing at
 * both, and the `<cluster>-kubeconfig` Secret (`kubeconfigB64`: base64 of the kubeconfig CAPI reads the workload
 * cluster with).
 */
export function capiClusterObjects(o: {
  ns: string;
  cluster: string;
  kubeconfigB64: string;
  apiPort: string;
  awsClusterSpec?: Record<string, unknown>;
}): unknown[] {
  const meta = (name: string) => ({
    name,
    namespace: o.ns,
    labels: { 'cluster.x-k8s.io/cluster-name': o.cluster },
  });
  return [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: o.ns } },
    {
      apiVersion: 'infrastructure.cluster.x-k8s.io/v1beta2',
      kind: 'AWSCluster',
      metadata: meta(o.cluster),
      spec: {
        region: 'us-east-1',
        controlPlaneEndpoint: { host: '127.0.0.1', port: Number(o.apiPort) },
        ...o.awsClusterSpec,
      },
    },
    {
      apiVersion: 'controlplane.cluster.x-k8s.io/v1beta2',
      kind: 'KubeadmControlPlane',
      metadata: meta(`${o.cluster}-control-plane`),
      spec: {
        version: 'v1.33.1',
        replicas: 1,
        machineTemplate: {
          spec: {
            infrastructureRef: {
              apiGroup: 'infrastructure.cluster.x-k8s.io',
              kind: 'AWSMachineTemplate',
              name: `${o.cluster}-control-plane`,
            },
          },
        },
      },
    },
    {
      apiVersion: 'cluster.x-k8s.io/v1beta2',
      kind: 'Cluster',
      metadata: meta(o.cluster),
      spec: {
        infrastructureRef: {
          apiGroup: 'infrastructure.cluster.x-k8s.io',
          kind: 'AWSCluster',
          name: o.cluster,
        },
        controlPlaneRef: {
          apiGroup: 'controlplane.cluster.x-k8s.io',
          kind: 'KubeadmControlPlane',
          name: `${o.cluster}-control-plane`,
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: meta(`${o.cluster}-kubeconfig`),
      type: 'cluster.x-k8s.io/secret',
      data: { value: o.kubeconfigB64 },
    },
  ];
}
