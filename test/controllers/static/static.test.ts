/**
 * `static.capacity` on the embedded API server with the kwok provider (upstream static provisioning and
 * deprovisioning suites): replicas → NodeClaims of the template's cheapest type, scale-down order, limits.nodes,
 * and the gate-off Event.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { NodeClaim, NodePool } from '../../../src/apis/karpenter.ts';
import { testNodePool } from '../../../src/controllers/provisioning/testing.ts';
import { StaticCapacityController } from '../../../src/controllers/static/controller.ts';
import { silentLogger } from '../../../src/kube/logger.ts';
import type { KubeEvent } from '../../../src/kube/types.ts';
import {
  type ControllerProcess,
  type Env,
  eventually,
  listNodeClaims,
  readyNode,
  startEnv,
} from '../provisioning/harness.ts';

let env: Env | undefined;
afterEach(async () => {
  await env?.stop();
  env = undefined;
});

/** A static NodePool of on-demand m5 (cheapest: m5.large), Ready. */
function staticPool(replicas: number, limits?: Record<string, string>): NodePool {
  const np = testNodePool('static', {
    requirements: [
      { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] },
      { key: 'karpenter.k8s.aws/instance-family', operator: 'In', values: ['m5'] },
    ],
    ...(limits ? { limits } : {}),
  });
  np.spec.replicas = replicas;
  return np;
}

async function setup(np: NodePool, enabled = true) {
  env = await startEnv();
  const p = await env.startProcess();
  const created = (await env.client.create(np)) as NodePool;
  await env.client.updateStatus({
    ...created,
    status: {
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          reason: 'Ready',
          message: '',
          lastTransitionTime: '2025-01-01T00:00:00Z',
        },
      ],
    },
  });
  await eventually(() => p.cluster.getNodePool('static'), 'NodePool in state');
  const ctrl = new StaticCapacityController({
    client: env.client,
    cloudProvider: p.provider,
    clock: env.clock,
    logger: silentLogger(),
    recorder: p.recorder,
    registry: p.registry,
    informers: p.informers,
    cluster: p.cluster,
    launcher: p.provisioner.launcher,
    enabled,
  });
  return { p, ctrl, client: env.client };
}

async function poolEvents(p: ControllerProcess, reason: string): Promise<KubeEvent[]> {
  await p.recorder.flush();
  const all = (await env?.client.list('Event'))?.items ?? [];
  return (all as KubeEvent[]).filter((e) => e.involvedObject.name === 'static' && e.reason === reason);
}

const live = (ncs: NodeClaim[]) => ncs.filter((nc) => !nc.metadata.deletionTimestamp);

describe('static.capacity (embedded API server, kwok provider)', () => {
  it('replicas 3 → 3 NodeClaims from the template, launched by the provider as the cheapest type', async () => {
    const { p, ctrl, client } = await setup(staticPool(3));
    expect(await ctrl.reconcile('static')).toEqual({ requeueAfter: 60 });
    const ncs = await listNodeClaims(client);
    expect(ncs).toHaveLength(3);
    for (const nc of ncs) {
      expect(nc.metadata.labels?.['karpenter.sh/nodepool']).toBe('static');
      expect(nc.metadata.ownerReferences?.[0]?.name).toBe('static');
      // upstream ToNodeClaim: no instance-type list for static NodeClaims, the provider picks
      expect(nc.spec.requirements.map((r) => r.key)).toEqual([
        'karpenter.sh/capacity-type',
        'karpenter.k8s.aws/instance-family',
      ]);
      const launched = await p.provider.create(nc);
      expect(launched.metadata.labels?.['node.kubernetes.io/instance-type']).toBe('m5.large');
    }
    // a second pass creates nothing more
    expect(await ctrl.reconcile('static')).toEqual({ requeueAfter: 60 });
    expect(await listNodeClaims(client)).toHaveLength(3);
  });

  it('3 → 1 deletes the unlaunched NodeClaim and the empty node, keeps the node with a pod', async () => {
    const { p, ctrl, client } = await setup(staticPool(3));
    await ctrl.reconcile('static');
    const [a, b, c] = (await listNodeClaims(client)).sort((x, y) =>
      (x.metadata.name ?? '').localeCompare(y.metadata.name ?? ''),
    ) as [NodeClaim, NodeClaim, NodeClaim];
    // a and b launched (provider ID + Node); c never launched; a runs a workload pod
    for (const [nc, node] of [
      [a, 'node-a'],
      [b, 'node-b'],
    ] as const) {
      await client.create(readyNode(node, 'm5.large', 'static'));
      await client.updateStatus({
        ...nc,
        status: { providerID: `kwok://us-east-1/us-east-1a/${node}`, nodeName: node },
      });
    }
    await client.create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'app',
        namespace: 'default',
        ownerReferences: [
          { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'rs', uid: 'rs-uid', controller: true },
        ],
      },
      spec: { nodeName: 'node-a', containers: [{ name: 'app', image: 'app:1' }] },
    });
    await eventually(
      () => p.cluster.stateNodes().find((sn) => sn.name === 'node-a' && sn.pods.length === 1),
      'pod on node-a in state',
    );
    const np = (await client.get('NodePool', 'static')) as NodePool;
    await client.update({ ...np, spec: { ...np.spec, replicas: 1 } });
    await eventually(async () => (await client.get('NodePool', 'static')).spec.replicas === 1, 'replicas 1');
    expect(await ctrl.reconcile('static')).toEqual({ requeueAfter: 60 });
    const left = live(await listNodeClaims(client)).map((nc) => nc.metadata.name);
    expect(left).toEqual([a.metadata.name]);
    const ev = await poolEvents(p, 'ScaledDown');
    expect(ev.map((e) => e.message)).toEqual([
      `NodePool "static" replicas 1: deleting overprovisioned NodeClaims ${c.metadata.name} (unresolved), ${b.metadata.name} (empty)`,
    ]);
  });

  it('limits.nodes 2 with replicas 3 → 2 NodeClaims and a NodeLimitReached Event', async () => {
    const { p, ctrl, client } = await setup(staticPool(3, { nodes: '2' }));
    expect(await ctrl.reconcile('static')).toEqual({ requeueAfter: 30 });
    expect(await listNodeClaims(client)).toHaveLength(2);
    expect(await ctrl.reconcile('static')).toEqual({ requeueAfter: 30 });
    expect(await listNodeClaims(client)).toHaveLength(2);
    const ev = await poolEvents(p, 'NodeLimitReached');
    expect(ev[0]?.type).toBe('Warning');
    expect(ev[0]?.message).toBe(
      'NodePool "static" has 2 of 3 replicas; spec.limits.nodes=2 allows no more (active 2, deleting 0, pending disruption 0); raise limits.nodes or lower replicas',
    );
  });

  it('gate off: no NodeClaims, a StaticCapacityDisabled Warning once per generation', async () => {
    const { p, ctrl, client } = await setup(staticPool(3), false);
    expect(await ctrl.reconcile('static')).toEqual({});
    expect(await ctrl.reconcile('static')).toEqual({});
    expect(await listNodeClaims(client)).toHaveLength(0);
    const ev = await poolEvents(p, 'StaticCapacityDisabled');
    expect(ev).toHaveLength(1);
    expect(ev[0]?.type).toBe('Warning');
    expect(ev[0]?.message).toContain('StaticCapacity feature gate is off');
  });
});
