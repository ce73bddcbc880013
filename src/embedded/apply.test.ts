import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../apis/core.ts';
import { type SimulatedCluster, startSimulatedCluster } from '../embedded/cluster.ts';
import { applyObjects } from './apply.ts';

describe('applyObjects', () => {
  let sim: SimulatedCluster;
  beforeAll(async () => {
    sim = await startSimulatedCluster({ components: { scheduler: false, kubelet: false, podGC: false } });
  });
  afterAll(async () => {
    await sim.stop();
  });

  it('puts namespaced kinds outside the static registry (Service, ServiceAccount) in the default namespace, as kubectl', async () => {
    const objs: KubeObject[] = [
      { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'frontend' } },
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'frontend' },
        spec: { selector: { app: 'frontend' }, ports: [{ port: 80, targetPort: 8080 }] },
      } as KubeObject,
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'cfg', namespace: 'shop' },
        data: { a: 'b' },
      } as KubeObject,
    ];
    const applied = await applyObjects(sim.client, objs);
    expect(applied).toEqual([
      // ServiceAccount and ConfigMap before the rest (pods naming a missing ServiceAccount are refused)
      { kind: 'ServiceAccount', name: 'frontend', namespace: 'default', result: 'created' },
      { kind: 'ConfigMap', name: 'cfg', namespace: 'shop', result: 'created' },
      { kind: 'Service', name: 'frontend', namespace: 'default', result: 'created' },
    ]);
    const svc = await sim.client.discover('v1', 'Service');
    expect((await sim.client.get(svc, 'frontend', 'default')).metadata?.namespace).toBe('default');
  });

  it('reports an unserved kind as failed with the server’s answer, and still creates the rest', async () => {
    const applied = await applyObjects(sim.client, [
      { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' } },
      { apiVersion: 'v1', kind: 'Service', metadata: { name: 'other' } },
    ]);
    expect(applied[0]).toMatchObject({ kind: 'Widget', name: 'w', result: 'failed' });
    expect(applied[0]?.error).toContain('Widget');
    expect(applied[1]).toEqual({
      kind: 'Service',
      name: 'other',
      namespace: 'default',
      result: 'created',
    });
  });
});
