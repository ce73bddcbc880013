/**
 * The clusterapi provider's own behaviour beyond the conformance suite, against the embedded management API
 * server with the real CAPI CRDs and the MachineDeployment stand-in: batching (one replica update for a burst),
 * delete with min-size and rollback, drift, taints, namespace scoping, unusable deployments.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Machine, MachineDeployment } from '../../apis/capi.ts';
import type { NodePool } from '../../apis/karpenter.ts';
import { eventually } from '../../testing/eventually.ts';
import { isNodeClaimNotFoundError } from '../types.ts';
import { machineDeploymentsCondition } from './controllers/nodeclass.ts';
import { AnnotationNodeClaimMachineDeployment, DriftMachineTemplate } from './provider.ts';
import { LabelMachineNodeClaim } from './scaler.ts';
import { type ClusterAPITestbed, clusterAPINodeClaim, startClusterAPITestbed } from './testing.ts';

let bed: ClusterAPITestbed;
let blocked = new Set<string>();
const failing = new Set<string>(['spot-fails']);
beforeAll(async () => {
  bed = await startClusterAPITestbed({
    preflightBlocked: (md) => blocked.has(md.metadata.name ?? ''),
    failMachines: (md) => (failing.has(md.metadata.name ?? '') ? 'InsufficientInstanceCapacity' : undefined),
  });
});
afterAll(() => bed?.stop());

const typeReq = (v: string[]) => [
  { key: 'node.kubernetes.io/instance-type', operator: 'In' as const, values: v },
];
const md = async (ns: string, name: string) =>
  (await bed.client.get('MachineDeployment', name, ns)) as MachineDeployment;
const machines = async (ns: string, name: string) =>
  ((await bed.client.list('Machine', { namespace: ns })).items as Machine[]).filter(
    (m) => m.metadata.labels?.['cluster.x-k8s.io/deployment-name'] === name,
  );

describe('clusterapi provider', () => {
  it('a burst of NodeClaims for one deployment is one replica update; each gets its own Machine', async () => {
    const { namespace, provider } = await bed.namespace([
      { name: 'md', instanceType: 'm5.large', maxSize: 10 },
    ]);
    const launched = await Promise.all(
      [1, 2, 3, 4, 5, 6].map((i) =>
        provider.create(clusterAPINodeClaim(`burst-${i}`, typeReq(['m5.large']))),
      ),
    );
    expect(new Set(launched.map((n) => n.status?.providerID)).size).toBe(6);
    expect(launched.map((n) => n.metadata.annotations?.[AnnotationNodeClaimMachineDeployment])).toEqual(
      launched.map(() => `${namespace}/md`),
    );
    expect((await md(namespace, 'md')).spec.replicas).toBe(6);
    expect(provider.replicaUpdates()).toEqual({ [`${namespace}/md`]: 1 });
    const bound = (await machines(namespace, 'md'))
      .map((m) => m.metadata.labels?.[LabelMachineNodeClaim])
      .sort();
    expect(bound).toEqual(['burst-1', 'burst-2', 'burst-3', 'burst-4', 'burst-5', 'burst-6']);
    // A retried create of a launched NodeClaim returns the same Machine without scaling.
    const again = await provider.create(clusterAPINodeClaim('burst-3', typeReq(['m5.large'])));
    expect(again.status?.providerID).toBe(launched[2]!.status?.providerID);
    expect((await md(namespace, 'md')).spec.replicas).toBe(6);
  });

  it('max size: creates past it fail with InsufficientCapacity; the offering reports unavailable', async () => {
    const { namespace, provider } = await bed.namespace([
      { name: 'md', instanceType: 'm5.large', maxSize: 2 },
    ]);
    const results = await Promise.allSettled(
      [1, 2, 3].map((i) => provider.create(clusterAPINodeClaim(`cap-${i}`, typeReq(['m5.large'])))),
    );
    expect(results.filter((r) => r.status === 'fulfilled').length).toBe(2);
    const rejected = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect((rejected.reason as { code: string }).code).toBe('InsufficientCapacity');
    expect(String(rejected.reason)).toContain('MachineDeployment(s) md at their max size');
    expect((await md(namespace, 'md')).spec.replicas).toBe(2);
    const np = {
      metadata: { name: 'default' },
      spec: {
        template: {
          spec: {
            nodeClassRef: {
              group: 'karpenter.cluster.x-k8s.io',
              kind: 'ClusterAPINodeClass',
              name: 'default',
            },
            requirements: [],
          },
        },
      },
    } as unknown as NodePool;
    const types = await provider.instanceTypes(np);
    expect(types.find((t) => t.name === 'm5.large')!.offerings.map((o) => o.available)).toEqual([false]);
  });

  it('delete marks the Machine, lowers the replicas, and the MachineSet removes exactly it', async () => {
    const { namespace, provider } = await bed.namespace([{ name: 'md', instanceType: 'm5.large' }]);
    const [a, b] = await Promise.all(
      ['del-a', 'del-b'].map((n) => provider.create(clusterAPINodeClaim(n, typeReq(['m5.large'])))),
    );
    await provider.delete(a!);
    expect((await md(namespace, 'md')).spec.replicas).toBe(1);
    await eventually(async () => (await machines(namespace, 'md')).length === 1, 'marked Machine removed');
    expect((await machines(namespace, 'md'))[0]!.spec.providerID).toBe(b!.status?.providerID);
    const err = await provider.delete(a!).catch((e) => e);
    expect(isNodeClaimNotFoundError(err)).toBe(true);
  });

  it('delete at min size deletes the Machine and keeps the replicas; a failed update rolls the mark back', async () => {
    const { namespace, provider } = await bed.namespace([
      { name: 'md', instanceType: 'm5.large', minSize: 1 },
    ]);
    const a = await provider.create(clusterAPINodeClaim('min-a', typeReq(['m5.large'])));
    expect((await md(namespace, 'md')).spec.replicas).toBe(1);
    const b = await provider.create(clusterAPINodeClaim('min-b', typeReq(['m5.large'])));
    expect((await md(namespace, 'md')).spec.replicas).toBe(2);
    await provider.delete(a);
    expect((await md(namespace, 'md')).spec.replicas).toBe(1);
    await eventually(async () => (await machines(namespace, 'md')).length === 1, 'marked Machine removed');
    await provider.delete(b);
    // min-size 1 holds: the Machine itself is deleted and the MachineSet makes an unclaimed spare.
    expect((await md(namespace, 'md')).spec.replicas).toBe(1);
    const spare = await eventually(async () => {
      const ms = await machines(namespace, 'md');
      return ms.length === 1 && ms[0]!.spec.providerID && ms[0]!.spec.providerID !== b.status?.providerID
        ? ms[0]
        : undefined;
    }, 'a spare replaces the deleted Machine');
    expect(spare.metadata.labels?.[LabelMachineNodeClaim]).toBeUndefined();
    // The next NodeClaim takes the spare: no scale-up.
    const c = await provider.create(clusterAPINodeClaim('min-c', typeReq(['m5.large'])));
    expect(c.status?.providerID).toBe(spare.spec.providerID);
    expect((await md(namespace, 'md')).spec.replicas).toBe(1);

    // Rollback: the replica update fails (here: a malformed max-size annotation written meanwhile).
    await bed.client.patch(
      'MachineDeployment',
      'md',
      namespace,
      {
        metadata: { annotations: { 'cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size': 'many' } },
      },
      { type: 'merge' },
    );
    const err = await provider.delete(c).catch((e) => e as Error);
    expect(String(err)).toContain('"many" is not a non-negative integer');
    const kept = (await machines(namespace, 'md')).find((m) => m.spec.providerID === c.status?.providerID)!;
    expect(kept.metadata.annotations?.['cluster.x-k8s.io/delete-machine']).toBeUndefined();
    expect((await provider.get(c.status!.providerID!)).status?.providerID).toBe(c.status?.providerID);
  });

  it('unclaimed Machines nobody waits for are removed after the grace period, down to the bound ones and min-size', async () => {
    const { namespace, provider } = await bed.namespace(
      [{ name: 'md', instanceType: 'm5.large', replicas: 3, minSize: 1 }],
      { unclaimedGraceSeconds: 0 },
    );
    await eventually(
      async () => (await machines(namespace, 'md')).filter((m) => m.spec.providerID).length === 3,
      '3 Machines',
    );
    // A NodeClaim takes one of the spares: no scale-up.
    const a = await provider.create(clusterAPINodeClaim('trim-a', typeReq(['m5.large'])));
    expect((await md(namespace, 'md')).spec.replicas).toBe(3);
    expect(await provider.trimUnclaimed()).toEqual({ md: 2 });
    expect((await md(namespace, 'md')).spec.replicas).toBe(1);
    await eventually(async () => (await machines(namespace, 'md')).length === 1, 'spares removed');
    expect((await machines(namespace, 'md'))[0]!.spec.providerID).toBe(a.status?.providerID);
    expect(await provider.trimUnclaimed()).toEqual({});
  });

  it('a Machine the infrastructure fails: the offering becomes unavailable and the next cheapest deployment launches', async () => {
    const { namespace, provider } = await bed.namespace([
      { name: 'spot-fails', instanceType: 'm5.large', failureDomain: 'us-east-1a', spot: true },
      { name: 'od', instanceType: 'm5.large', failureDomain: 'us-east-1a' },
    ]);
    const nc = await provider.create(clusterAPINodeClaim('fail-a', typeReq(['m5.large'])));
    expect(nc.metadata.annotations?.[AnnotationNodeClaimMachineDeployment]).toBe(`${namespace}/od`);
    expect(nc.metadata.labels?.['karpenter.sh/capacity-type']).toBe('on-demand');
    // The failed Machine was marked and the spot deployment scaled back.
    expect((await md(namespace, 'spot-fails')).spec.replicas).toBe(0);
    await eventually(
      async () => (await machines(namespace, 'spot-fails')).length === 0,
      'failed Machine removed',
    );
    const np = {
      metadata: { name: 'default' },
      spec: {
        template: {
          spec: {
            nodeClassRef: {
              group: 'karpenter.cluster.x-k8s.io',
              kind: 'ClusterAPINodeClass',
              name: 'default',
            },
            requirements: [],
          },
        },
      },
    } as unknown as NodePool;
    const offerings = (await provider.instanceTypes(np)).find((t) => t.name === 'm5.large')!.offerings;
    expect(offerings.map((o) => [o.capacityType, o.available]).sort()).toEqual([
      ['on-demand', true],
      ['spot', false],
    ]);
  });

  it('a Machine the infrastructure fails while the deployment changes: the scale-back is retried on 409 before the next offering', async () => {
    const { namespace, provider } = await bed.namespace([
      { name: 'spot-fails', instanceType: 'm5.large', failureDomain: 'us-east-1a', spot: true },
      { name: 'od', instanceType: 'm5.large', failureDomain: 'us-east-1a' },
    ]);
    // When the failed Machine gets its delete mark, the MachineDeployment changes before the scaler's replica
    // write reaches the server (a microtask runs before the next request is read): that write gets 409 Conflict.
    const store = bed.server!.store;
    const mdDef = store.def('cluster.x-k8s.io/v1beta2', 'machinedeployments');
    let bumped = 0;
    const handle = store.watch(store.def('cluster.x-k8s.io/v1beta2', 'machines'), { namespace }, (_t, ev) => {
      const meta = ev.obj.metadata as {
        annotations?: Record<string, string>;
        labels?: Record<string, string>;
      };
      if (
        bumped === 0 &&
        meta.labels?.['cluster.x-k8s.io/deployment-name'] === 'spot-fails' &&
        meta.annotations?.['cluster.x-k8s.io/delete-machine'] !== undefined
      ) {
        bumped++;
        queueMicrotask(() =>
          store.patch(mdDef, namespace, 'spot-fails', 'merge', {
            metadata: { annotations: { bumped: '1' } },
          }),
        );
      }
    });
    try {
      const nc = await provider.create(clusterAPINodeClaim('fail-409', typeReq(['m5.large'])));
      expect(bumped).toBe(1);
      expect(nc.metadata.annotations?.[AnnotationNodeClaimMachineDeployment]).toBe(`${namespace}/od`);
      // The spot deployment was scaled back before create went on to the next offering.
      const spot = await md(namespace, 'spot-fails');
      expect(spot.metadata.annotations?.bumped).toBe('1');
      expect(spot.spec.replicas).toBe(0);
      expect((await md(namespace, 'od')).spec.replicas).toBe(1);
    } finally {
      handle.stop();
    }
  });

  it('drift: a changed template version or infrastructure template since the Machine was made', async () => {
    const { namespace, provider } = await bed.namespace([{ name: 'md', instanceType: 'm5.large' }]);
    const nc = await provider.create(clusterAPINodeClaim('drift-a', typeReq(['m5.large'])));
    expect(await provider.isDrifted(nc)).toBeUndefined();
    await bed.client.patch(
      'MachineDeployment',
      'md',
      namespace,
      { spec: { template: { spec: { version: 'v1.34.0' } } } },
      { type: 'merge' },
    );
    expect(await provider.isDrifted(nc)).toBe(DriftMachineTemplate);
  });

  it('taints: a tainted deployment is offered only to NodePools whose NodeClaims carry the taint', async () => {
    const { provider } = await bed.namespace([
      { name: 'plain', instanceType: 'm5.large' },
      {
        name: 'ml',
        instanceType: 'm5.xlarge',
        taints: [{ key: 'dedicated', value: 'ml', effect: 'NoSchedule' }],
      },
    ]);
    const pool = (taints: unknown[]) =>
      ({
        metadata: { name: 'p' },
        spec: {
          template: {
            spec: {
              nodeClassRef: {
                group: 'karpenter.cluster.x-k8s.io',
                kind: 'ClusterAPINodeClass',
                name: 'default',
              },
              requirements: [],
              taints,
            },
          },
        },
      }) as unknown as NodePool;
    expect((await provider.instanceTypes(pool([]))).map((t) => t.name)).toEqual(['m5.large']);
    expect(
      (await provider.instanceTypes(pool([{ key: 'dedicated', value: 'ml', effect: 'NoSchedule' }]))).map(
        (t) => t.name,
      ),
    ).toEqual(['m5.large', 'm5.xlarge']);
    const untainted = await provider
      .create(clusterAPINodeClaim('t-1', typeReq(['m5.xlarge'])))
      .catch((e) => e as { code: string });
    expect((untainted as { code: string }).code).toBe('InsufficientCapacity');
    const nc = clusterAPINodeClaim('t-2', typeReq(['m5.xlarge']));
    nc.spec.taints = [{ key: 'dedicated', value: 'ml', effect: 'NoSchedule' }];
    expect((await provider.create(nc)).metadata.annotations?.[AnnotationNodeClaimMachineDeployment]).toMatch(
      /\/ml$/,
    );
  });

  it("only the Cluster's namespace: another namespace's Machines are never bound, listed or deleted", async () => {
    const a = await bed.namespace([{ name: 'md', instanceType: 'm5.large' }]);
    const b = await bed.namespace([{ name: 'md', instanceType: 'm5.large', replicas: 2 }]);
    await eventually(
      async () => (await machines(b.namespace, 'md')).filter((m) => m.spec.providerID).length === 2,
      'B has 2 Machines',
    );
    const nc = await a.provider.create(clusterAPINodeClaim('ns-a', typeReq(['m5.large'])));
    expect(nc.metadata.annotations?.['karpenter.cluster.x-k8s.io/machine']).toMatch(
      new RegExp(`^${a.namespace}/`),
    );
    expect((await a.provider.list()).map((n) => n.status?.providerID)).toEqual([nc.status?.providerID]);
    const bMachine = (await machines(b.namespace, 'md'))[0]!;
    const err = await a.provider.get(bMachine.spec.providerID!).catch((e) => e);
    expect(isNodeClaimNotFoundError(err)).toBe(true);
    expect(
      (await machines(b.namespace, 'md')).every((m) => !m.metadata.labels?.[LabelMachineNodeClaim]),
    ).toBe(true);
  });

  it('unusable deployments: paused and preflight-blocked ones are reported with their reason and not offered', async () => {
    const { provider } = await bed.namespace([
      { name: 'ok', instanceType: 'm5.large' },
      { name: 'paused', instanceType: 'm5.xlarge', paused: true },
      { name: 'upgrading', instanceType: 'c5.xlarge' },
    ]);
    blocked = new Set(['upgrading']);
    const r = await eventually(async () => {
      const res = await provider.resolve('default', true);
      return res.unusable.length === 2 ? res : undefined;
    }, 'both reported');
    expect(r.usable.map((d) => d.name)).toEqual(['ok']);
    expect(r.unusable.map((u) => [u.name, u.reason]).sort()).toEqual([
      ['paused', 'Paused'],
      ['upgrading', 'PreflightChecksBlocked'],
    ]);
    const cond = machineDeploymentsCondition(r.usable, r.unusable);
    expect(cond).toMatchObject({ status: 'True', reason: 'SomeMachineDeploymentsUnusable' });
    expect(cond.message).toContain('upgrading: PreflightChecksBlocked (MachineSet');
    expect(machineDeploymentsCondition([], r.unusable)).toMatchObject({
      status: 'False',
      reason: 'NoUsableMachineDeployments',
    });
    blocked = new Set();
  });
});
