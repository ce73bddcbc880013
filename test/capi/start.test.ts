/**
 * `capenter start --capi` end to end: two embedded API servers, the sample CAPI objects, the bundled demo in the
 * workload cluster; settles with every pod Running and the KarpenterMachinePool reporting its nodes' provider IDs.
 */
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runStart } from '../../src/cli/start.ts';

describe('capenter start --capi', () => {
  it('settles with the KarpenterMachinePool reporting every NodeClaim', async () => {
    let out = '';
    let err = '';
    const code = await runStart(
      { capi: true, exitWhenSettled: true, timeout: '120', output: 'json', logLevel: 'silent' },
      { stdout: (t) => (out += t), stderr: (t) => (err += t) },
    );
    expect(code, err).toBe(0);
    // The kubeconfigs lived in a temporary folder that is gone once the run returns.
    const kubeconfigs = [...err.matchAll(/\(kubeconfig ([^)]+)\)/g)].map((m) => m[1]!);
    expect(kubeconfigs).toHaveLength(2);
    const dir = dirname(kubeconfigs[0]!);
    expect(dir.startsWith(join(tmpdir(), 'capenter-capi-'))).toBe(true);
    expect(kubeconfigs.map(dirname)).toEqual([dir, dir]);
    expect(existsSync(dir)).toBe(false);
    expect(err).toContain('applied 6 object(s) to the management cluster');
    const s = JSON.parse(out) as {
      pods: { running: number; total: number };
      nodeClaims: Array<{ nodePool: string }>;
      karpenterMachinePools: Array<{
        name: string;
        spec: { providerIDList: string[] };
        status: { ready: boolean; replicas: number };
      }>;
    };
    expect(s.pods.running).toBe(s.pods.total);
    expect(s.nodeClaims.every((n) => n.nodePool === 'workers')).toBe(true);
    const kmp = s.karpenterMachinePools.find((k) => k.name === 'workers');
    expect(kmp?.status.ready).toBe(true);
    expect(kmp?.status.replicas).toBe(s.nodeClaims.length);
    expect(kmp?.spec.providerIDList).toHaveLength(s.nodeClaims.length);
  }, 150_000);

  it('serves the dashboard with the KarpenterMachinePool, its MachinePool, replicas and provider IDs', async () => {
    let err = '';
    const ac = new AbortController();
    const run = runStart(
      { capi: true, logLevel: 'silent' },
      { stdout: () => {}, stderr: (t) => (err += t), signal: ac.signal },
    );
    try {
      const end = Date.now() + 120_000;
      let pools: Array<{ name: string; machinePool: string; replicas: number; providerIDs: string[] }> = [];
      let nodes = 0;
      while (Date.now() < end) {
        const url = /capenter: dashboard (\S+)/.exec(err)?.[1];
        if (url) {
          const v = (await (await fetch(new URL('api/view', url))).json()) as {
            machinePools: typeof pools;
            nodes: unknown[];
          };
          pools = v.machinePools;
          nodes = v.nodes.length;
          if (nodes > 0 && pools[0] && pools[0].providerIDs.length === nodes && pools[0].replicas === nodes)
            break;
        }
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(nodes).toBeGreaterThan(0);
      expect(pools.map((p) => [p.name, p.machinePool, p.replicas, p.providerIDs.length])).toEqual([
        ['workers', 'workers', nodes, nodes],
      ]);
      expect(pools[0]?.providerIDs[0]).toMatch(/^kwok:\/\/|^aws:\/\//);
    } finally {
      ac.abort();
      await run;
    }
  }, 150_000);
});
