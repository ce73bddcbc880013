/**
 * Vitest global setup of `npm run test:cluster`: one real Kubernetes control plane on loopback for the whole
 * run (etcd, kube-apiserver, kube-controller-manager, kube-scheduler v1.34.4 and kwok, from
 * scripts/realk8s/), stopped after. The binaries come from the cache (`scripts/realk8s/ensure.sh` builds them
 * with Go when absent, about 11 minutes on 2 cores).
 *
 * Exports to the test workers (environment, read by test code only):
 * - `CAPENTER_TEST_KUBECONFIG`: the admin kubeconfig (test/conformance/harness.ts understands it);
 * - `CAPENTER_TEST_CLUSTER_DISPOSABLE=1`: the cluster exists for this run, tests may install/delete CRDs;
 * - `CAPENTER_TEST_KUBECTL`: the kubectl of the same version.
 * With `CAPENTER_TEST_KUBECONFIG` already set, that cluster is used as is (nothing started or stopped, and
 * not disposable unless the caller says so).
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const scripts = join(root, 'scripts', 'realk8s');

function run(script: string, env: Record<string, string> = {}): { stdout: string; ms: number } {
  const t0 = Date.now();
  const r = spawnSync('bash', [join(scripts, script)], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 64 * 1024 * 1024,
  });
  if (r.status === 2 && script === 'ensure.sh')
    throw new Error('test:cluster needs Go to build the control plane (https://go.dev/dl); none found');
  if (r.status !== 0)
    throw new Error(`scripts/realk8s/${script} failed (exit ${r.status}):\n${r.stdout}${r.error ?? ''}`);
  return { stdout: r.stdout, ms: Date.now() - t0 };
}

export default function setup(): (() => Promise<void>) | undefined {
  if (process.env.CAPENTER_TEST_KUBECONFIG) {
    console.log(
      `test:cluster: using the cluster of CAPENTER_TEST_KUBECONFIG=${process.env.CAPENTER_TEST_KUBECONFIG}`,
    );
    return undefined;
  }
  const ensured = run('ensure.sh');
  const bin = ensured.stdout.trim().split('\n').pop() as string;
  const up = run('up.sh');
  const m = /^RUN=(.+)$/m.exec(up.stdout);
  if (!m?.[1]) throw new Error(`scripts/realk8s/up.sh printed no RUN=<dir>:\n${up.stdout}`);
  const runDir = m[1];
  const kubeconfig = join(runDir, 'kubeconfig');
  if (!existsSync(kubeconfig)) throw new Error(`no kubeconfig at ${kubeconfig}`);
  console.log(
    `test:cluster: binaries ${bin} ready in ${(ensured.ms / 1000).toFixed(1)} s; control plane up in ` +
      `${(up.ms / 1000).toFixed(1)} s (${readFileSync(join(runDir, 'ports'), 'utf8').trim()}; logs ${runDir}/logs)`,
  );
  process.env.CAPENTER_TEST_KUBECONFIG = kubeconfig;
  process.env.CAPENTER_TEST_CLUSTER_DISPOSABLE = '1';
  process.env.CAPENTER_TEST_KUBECTL = join(bin, 'kubectl');
  return async () => {
    // asynchronous, so the main process keeps serving the test workers while the control plane stops
    const down = spawn('bash', [join(scripts, 'down.sh')], {
      env: { ...process.env, RUN: runDir, KEEP_RUN: process.env.CAPENTER_TEST_KEEP_RUN === '1' ? '1' : '0' },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    await new Promise((r) => down.on('close', r));
  };
}
