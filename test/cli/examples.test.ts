/**
 * `kubectl apply -f examples/microservices-demo/` works on a cluster that has only the default namespaces (the
 * example carries its Namespace objects): applied with kubectl to the embedded API server, which refuses objects in
 * a namespace that does not exist, as a real one does.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from '../../scripts/build.ts';
import { startSimulatedCluster } from '../../src/embedded/cluster.ts';

const dir = mkdtempSync(join(tmpdir(), 'capenter-examples-'));
let sim: Awaited<ReturnType<typeof startSimulatedCluster>> | undefined;
afterAll(async () => {
  await sim?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('examples', () => {
  it('kubectl apply -f examples/microservices-demo/ creates every object, its Namespaces included', async () => {
    const kubeconfig = join(dir, 'kubeconfig');
    sim = await startSimulatedCluster({
      kubeconfigPath: kubeconfig,
      components: { scheduler: false, kubelet: false, podGC: false, workloads: false },
    });
    // asynchronously: the API server runs in this process
    const r = await new Promise<{ status: number | null; stdout: string; stderr: string }>((res, rej) => {
      const p = spawn(process.env.CAPENTER_TEST_KUBECTL || 'kubectl', [
        '--kubeconfig',
        kubeconfig,
        'apply',
        '-f',
        join(ROOT, 'examples', 'microservices-demo'),
      ]);
      let stdout = '';
      let stderr = '';
      p.stdout.on('data', (d) => (stdout += d));
      p.stderr.on('data', (d) => (stderr += d));
      p.on('error', rej); // kubectl must be installed (.ci/run installs it)
      p.on('close', (status) => res({ status, stdout, stderr }));
    });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('namespace/monitoring created');
    expect(r.stdout).toContain('daemonset.apps/node-exporter created');
    const ds = await sim.client.get('DaemonSet', 'node-exporter', 'monitoring');
    expect(ds.metadata.namespace).toBe('monitoring');
  });
});
