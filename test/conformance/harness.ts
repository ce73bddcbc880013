/**
 * Conformance harness: one cluster per test file. By default an embedded API server
 * (`src/sim/apiserver`); with CAPENTER_TEST_KUBECONFIG set, the real cluster it points to (env is read
 * here, in test code only). Every run works in its own fresh namespace, deleted at the end.
 * The tests themselves use only `src/kube/`.
 */
import { randomBytes } from 'node:crypto';
import { KubeClient } from '../../src/kube/client.ts';
import { isNotFound } from '../../src/kube/errors.ts';
import { startEmbeddedCluster } from '../../src/sim/apiserver/index.ts';

/** A cluster to test against. */
export interface TestCluster {
  client: KubeClient;
  /** Kubeconfig YAML or path the client was built from (for second clients). */
  kubeconfig: string;
  /** Namespace created for this file. */
  namespace: string;
  /** True when running against a real cluster (skip embedded-only cases). */
  real: boolean;
  /**
   * True when the cluster exists only for this test run (the embedded server, or the control plane that
   * `npm run test:cluster` starts and sets CAPENTER_TEST_CLUSTER_DISPOSABLE=1 for): tests may install and
   * delete cluster-wide objects such as CRDs. False for a real cluster someone pointed the tests at.
   */
  disposable: boolean;
  /** A new client on the same cluster (separate connection pool). */
  newClient(): KubeClient;
  /** Unique DNS-1123 name with a prefix. */
  name(prefix: string): string;
  stop(): Promise<void>;
}

/** Options for the embedded server. */
export interface HarnessOptions {
  /** Watch history length per resource (small values provoke 410 Gone). */
  watchHistory?: number;
}

/** The real cluster's kubeconfig path, when configured. */
export const realKubeconfig: string | undefined = process.env.CAPENTER_TEST_KUBECONFIG || undefined;
/** True when the real cluster is a throw-away one (see {@link TestCluster.disposable}). */
export const realDisposable: boolean = process.env.CAPENTER_TEST_CLUSTER_DISPOSABLE === '1';

let counter = 0;

/** Starts (or connects to) a cluster and creates a fresh namespace. */
export async function startCluster(file: string, opts: HarnessOptions = {}): Promise<TestCluster> {
  const suffix = randomBytes(3).toString('hex');
  const name = (prefix: string): string => `${prefix}-${suffix}-${++counter}`;
  let kubeconfig: string;
  let stopServer: () => Promise<void>;
  const real = realKubeconfig !== undefined;
  if (realKubeconfig) {
    kubeconfig = realKubeconfig;
    stopServer = async () => {};
  } else {
    const srv = await startEmbeddedCluster(
      opts.watchHistory !== undefined ? { watchHistory: opts.watchHistory } : {},
    );
    kubeconfig = srv.kubeconfig;
    stopServer = async () => {
      await srv.stop();
    };
  }
  const client = KubeClient.fromKubeconfig(kubeconfig);
  const namespace = `conf-${file}-${suffix}`;
  await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
  return {
    client,
    kubeconfig,
    namespace,
    real,
    disposable: !real || realDisposable,
    name,
    newClient: () => KubeClient.fromKubeconfig(kubeconfig),
    stop: async () => {
      try {
        await client.delete('Namespace', namespace);
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
      client.close();
      await stopServer();
    },
  };
}

/** Polls `fn` every `intervalMs` until it returns a truthy value (returned) or `timeoutMs` passes (throws). */
export async function eventually<T>(
  fn: () => T | Promise<T>,
  what: string,
  timeoutMs = 10_000,
  intervalMs = 25,
): Promise<NonNullable<T>> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v as NonNullable<T>;
    } catch (err) {
      last = err;
    }
    if (Date.now() > end)
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`,
      );
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** A minimal pod in `namespace` that no scheduler will place (nodeSelector matches nothing). */
export function testPod(
  namespace: string,
  name: string,
  labels: Record<string, string> = {},
  extra: Record<string, unknown> = {},
): {
  apiVersion: 'v1';
  kind: 'Pod';
  metadata: { name: string; namespace: string; labels: Record<string, string>; [k: string]: unknown };
  spec: { containers: Array<{ name: string; image: string }>; [k: string]: unknown };
} {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, labels, ...((extra.metadata as object) ?? {}) },
    spec: {
      containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }],
      nodeSelector: { 'capenter.test/never': 'true' },
      terminationGracePeriodSeconds: 0,
      ...((extra.spec as object) ?? {}),
    },
  };
}
