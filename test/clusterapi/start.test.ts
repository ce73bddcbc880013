/**
 * `capenter start --cloud-provider clusterapi` end to end: two embedded API servers, the sample Cluster with two
 * MachineDeployments of different instance types and prices, the bundled demo in the workload cluster; settles with
 * every pod Running on Machines whose MachineDeployment replicas equal the NodeClaims.
 */
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runStart } from '../../src/cli/start.ts';

describe('capenter start --cloud-provider clusterapi', () => {
  it('settles with every pod Running on Machines of the sample MachineDeployments', async () => {
    let out = '';
    let err = '';
    const code = await runStart(
      {
        cloudProvider: 'clusterapi',
        exitWhenSettled: true,
        timeout: '120',
        output: 'json',
        logLevel: 'silent',
      },
      { stdout: (t) => (out += t), stderr: (t) => (err += t) },
    );
    expect(code, err).toBe(0);
    // The kubeconfigs lived in a temporary folder that is gone once the run returns.
    const kubeconfigs = [...err.matchAll(/\(kubeconfig ([^)]+)\)/g)].map((m) => m[1]!);
    expect(kubeconfigs).toHaveLength(2);
    const dir = dirname(kubeconfigs[0]!);
    expect(dir.startsWith(join(tmpdir(), 'capenter-clusterapi-'))).toBe(true);
    expect(kubeconfigs.map(dirname)).toEqual([dir, dir]);
    expect(existsSync(dir)).toBe(false);
    expect(err).toContain('applied 6 object(s) to the management cluster');
    const s = JSON.parse(out) as {
      pods: { running: number; total: number };
      nodeClaims: Array<{ nodePool: string; instanceType: string }>;
      machineDeployments: Array<{ name: string; replicas: number; readyReplicas: number }>;
    };
    expect(s.pods.total).toBeGreaterThan(0);
    expect(s.pods.running).toBe(s.pods.total);
    expect(s.nodeClaims.every((n) => n.nodePool === 'default')).toBe(true);
    const replicas = s.machineDeployments.reduce((a, m) => a + m.replicas, 0);
    expect(replicas).toBe(s.nodeClaims.length);
    for (const md of s.machineDeployments) expect(md.readyReplicas).toBe(md.replicas);
    const byType = new Set(s.nodeClaims.map((n) => n.instanceType));
    for (const t of byType) expect(['m5.xlarge', 'c5.2xlarge']).toContain(t);
  }, 150_000);
});
