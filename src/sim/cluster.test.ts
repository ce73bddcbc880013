import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { capenterCRDs, startSimulatedCluster } from '../embedded/cluster.ts';
import { KubeClient } from '../kube/client.ts';
import { FakeClock } from '../kube/clock.ts';

describe('startSimulatedCluster', () => {
  it('parses the generated CRDs', () => {
    const names = capenterCRDs()
      .map((c) => c.metadata?.name)
      .sort();
    expect(names).toEqual(expect.arrayContaining(['nodeclaims.karpenter.sh', 'nodepools.karpenter.sh']));
  });

  it('serves capenter CRDs, writes a usable kubeconfig, runs the chosen stand-ins and stops twice', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'capenter-sim-'));
    const path = join(dir, 'nested', 'kubeconfig');
    const clock = new FakeClock();
    const c = await startSimulatedCluster({ clock, kubeconfigPath: path, components: { workloads: false } });
    try {
      expect(c.kubeconfigPath).toBe(path);
      expect(await readFile(path, 'utf8')).toBe(c.kubeconfig);
      const other = KubeClient.fromKubeconfig(path);
      const crds = (await other.list('CustomResourceDefinition')).items.map((x) => x.metadata?.name);
      expect(crds).toEqual(expect.arrayContaining(['nodepools.karpenter.sh', 'nodeclaims.karpenter.sh']));
      expect((await other.list('NodePool')).items).toEqual([]);
      other.close();
      expect(c.clock).toBe(clock);
      expect(c.scheduler).toBeDefined();
      expect(c.kubelet).toBeDefined();
      expect(c.podGC).toBeDefined();
      expect(c.workloads).toBeUndefined();
      expect(c.informers.hasSynced()).toBe(true);
    } finally {
      await c.stop();
      await c.stop();
      await rm(dir, { recursive: true, force: true });
    }
    await expect(c.client.list('Pod')).rejects.toThrow();
  });

  it('with loopback, the stand-ins use the in-process transport with the same token; users keep the TLS listener', async () => {
    const c = await startSimulatedCluster({ loopback: true, components: { workloads: false } });
    const transport = c.transport;
    if (!transport) throw new Error('no in-process transport with loopback: true');
    try {
      expect(/server:\s*(\S+)/.exec(c.kubeconfig)?.[1]).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
      await c.client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'via-loopback' } });
      const user = KubeClient.fromKubeconfig(c.kubeconfig);
      expect((await user.get('Namespace', 'via-loopback')).metadata.name).toBe('via-loopback');
      user.close();
      // the transport authenticates as the TLS listener: no token 403, another token 401
      const path = '/api/v1/namespaces';
      expect((await transport.request({ method: 'GET', path, headers: {} })).status).toBe(403);
      const wrong = await transport.request({
        method: 'GET',
        path,
        headers: { Authorization: 'Bearer nope' },
      });
      expect(wrong.status).toBe(401);
      expect(JSON.parse(wrong.body)).toMatchObject({ kind: 'Status', reason: 'Unauthorized', code: 401 });
    } finally {
      await c.stop();
    }
    // a stopped server refuses like a closed port: a connection error, code 0
    await expect(c.client.list('Namespace')).rejects.toMatchObject({ code: 0, reason: 'ConnectionError' });
  });
});
