/**
 * Provisioning against the embedded API server through the real client: NodeClaims created match what the
 * pure scheduler plans for the same pods, existing capacity is used first, NodePool limits hold across
 * batches, and a restarted provisioner (fresh state, same API server) creates no duplicates.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Pod } from '../../../src/apis/core.ts';
import type { NodeClaim } from '../../../src/apis/karpenter.ts';
import { Provisioner } from '../../../src/controllers/provisioning/provisioner.ts';
import { pendingPod, testNodePool } from '../../../src/controllers/provisioning/testing.ts';
import { ProvisioningTrigger } from '../../../src/controllers/provisioning/trigger.ts';
import { createLogger, silentLogger } from '../../../src/kube/logger.ts';
import { solve } from '../../../src/scheduling/scheduler.ts';
import {
  catalog,
  cheapestOf,
  createNodePool,
  createPendingPod,
  type Env,
  events,
  eventually,
  listNodeClaims,
  readyNode,
  startEnv,
} from './harness.ts';

let env: Env | undefined;
afterEach(async () => {
  await env?.stop();
  env = undefined;
});

async function podsSeen(cluster: { pendingPods(): Pod[] }, n: number): Promise<void> {
  await eventually(() => cluster.pendingPods().length === n, `${n} pending pods in state`);
}

describe('provisioner (embedded API server, kwok provider)', () => {
  it('creates exactly the NodeClaims the scheduler plans, nominates the pods, then creates none on the next passes', async () => {
    env = await startEnv();
    const { client, clock } = env;
    // At most 8 vCPUs per node: the 19 requested cores need several NodeClaims.
    const np = await createNodePool(
      client,
      testNodePool('default', {
        requirements: [
          ...testNodePool('x').spec.template.spec.requirements,
          { key: 'karpenter.k8s.aws/instance-cpu', operator: 'Lt', values: ['9'] },
        ],
      }),
    );
    const pods: Pod[] = [];
    for (let i = 0; i < 10; i++)
      pods.push(await createPendingPod(client, pendingPod(`web-${i}`, { cpu: '1', memory: '2Gi' })));
    for (let i = 0; i < 3; i++)
      pods.push(await createPendingPod(client, pendingPod(`db-${i}`, { cpu: '3', memory: '12Gi' })));
    const p = await env.startProcess();
    await podsSeen(p.cluster, 13);

    // What the scheduler plans for the same pods and NodePool, built without cluster state (as `simulate` does).
    const expected = solve({
      pods,
      existingNodes: [],
      nodePools: [np],
      instanceTypes: { default: catalog },
      daemonSets: [],
    });
    expect(expected.unschedulable).toEqual([]);
    expect(expected.newNodeClaims.length).toBeGreaterThanOrEqual(3);

    const res = await p.provisioner.provision();
    expect(res.synced).toBe(true);
    expect(res.created).toHaveLength(expected.newNodeClaims.length);
    const api = await listNodeClaims(client);
    expect(api).toHaveLength(expected.newNodeClaims.length);
    expect(api.map(cheapestOf).sort()).toEqual(
      expected.newNodeClaims.map((pl) => pl.cheapest.instanceType.name).sort(),
    );
    expect(api.map((nc) => nc.spec.resources?.requests?.cpu).sort()).toEqual(
      expected.newNodeClaims.map((pl) => `${pl.requests.cpu! / 1000}`).sort(),
    );
    for (const nc of api) {
      expect(nc.metadata.name).toMatch(/^default-[a-z0-9]{5}$/);
      expect(nc.metadata.ownerReferences?.[0]).toMatchObject({
        kind: 'NodePool',
        name: 'default',
        uid: np.metadata.uid,
      });
      expect(nc.metadata.annotations?.['karpenter.sh/nodepool-hash']).toMatch(/^\d+$/);
    }
    // every pod is nominated to one of the created NodeClaims; Events for the first 10 only (upstream's
    // PodNominationRateLimiter: 5/s, burst 10, on the clock that does not move here)
    const names = new Set(api.map((nc) => nc.metadata.name));
    for (const pod of pods) expect(names.has(p.cluster.nominationFor(pod)?.target.name)).toBe(true);
    await p.recorder.flush();
    const nominated = await events(client, 'Nominated');
    expect(nominated).toHaveLength(10);
    expect(nominated[0]!.message).toMatch(/^Pod should schedule on: nodeclaim\/default-[a-z0-9]{5}$/);
    const metrics = await p.registry.getSingleMetricAsString('karpenter_nodeclaims_created_total');
    expect(metrics).toContain(
      `karpenter_nodeclaims_created_total{reason="provisioned",nodepool="default",min_values_relaxed="false"} ${api.length}`,
    );

    expect(
      await p.registry.getSingleMetricAsString('karpenter_scheduler_scheduling_duration_seconds'),
    ).toContain('karpenter_scheduler_scheduling_duration_seconds_count{controller="provisioner"} 1');
    expect(
      await p.registry.getSingleMetricAsString('karpenter_scheduler_unschedulable_pods_count'),
    ).toContain('karpenter_scheduler_unschedulable_pods_count{controller="provisioner"} 0');
    // no pod names a zone or spreads over zones: all 13 are `flexible` (upstream computeEffectiveZoneFromPod)
    expect(
      await p.registry.getSingleMetricAsString('karpenter_scheduler_pending_pods_by_effective_zone_count'),
    ).toContain(
      'karpenter_scheduler_pending_pods_by_effective_zone_count{controller="provisioner",zone="flexible"} 13',
    );
    // Next pass: all pods nominated → nothing to do.
    const again = await p.provisioner.provision();
    expect(again.created).toHaveLength(0);
    expect(again.selection?.nominated).toHaveLength(13);
    // The nominations outlive their 20 s TTL while the NodeClaims have no initialized Node.
    clock.advance(60_000);
    const later = await p.provisioner.provision();
    expect(later.selection?.nominated).toHaveLength(13);
    expect(later.created).toHaveLength(0);
    // A NodeClaim that goes away (e.g. ICE) releases its pods: they are planned again, and only they.
    const gone = api[0]!;
    const released = pods.filter((pod) => p.cluster.nominationFor(pod)?.target.name === gone.metadata.name);
    expect(released.length).toBeGreaterThan(0);
    await client.delete('NodeClaim', gone.metadata.name!);
    await eventually(() => !p.cluster.getNodeClaim(gone.metadata.name!), 'the NodeClaim deletion in state');
    const replan = await p.provisioner.provision();
    expect(replan.selection?.pods.map((x) => x.metadata.name).sort()).toEqual(
      released.map((x) => x.metadata.name).sort(),
    );
    expect(replan.created.length).toBeLessThanOrEqual(1);
    expect(await listNodeClaims(client)).toHaveLength(api.length - 1 + replan.created.length);
    for (const pod of pods) expect(p.cluster.nominationFor(pod)).toBeDefined();
  });

  it('MIN_VALUES_POLICY: Strict launches nothing when minValues cannot be met; BestEffort launches with minValues lowered and the relaxed annotation', async () => {
    env = await startEnv();
    const { client } = env;
    // instance-family minValues 3, but a 200Gi pod rules out every c5 (c5.24xlarge has 192GiB): m5 and r5 remain.
    await createNodePool(
      client,
      testNodePool('default', {
        requirements: [
          { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] },
          { key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] },
          {
            key: 'karpenter.k8s.aws/instance-family',
            operator: 'In',
            values: ['c5', 'm5', 'r5'],
            minValues: 3,
          },
        ],
      }),
    );
    await createPendingPod(client, pendingPod('big', { cpu: '1', memory: '200Gi' }));
    const strict = await env.startProcess();
    await podsSeen(strict.cluster, 1);
    const res = await strict.provisioner.provision();
    expect(res.created).toHaveLength(0);
    expect(res.result?.unschedulable.map((u) => u.message)).toEqual([
      'incompatible with nodepool "default": minValues requirement not met: key "karpenter.k8s.aws/instance-family" needs at least 3 distinct values, the remaining instance types offer 2 [m5, r5]',
    ]);
    expect(await listNodeClaims(client)).toHaveLength(0);
    await strict.stop();

    const best = await env.startProcess({ minValuesPolicy: 'BestEffort' });
    await podsSeen(best.cluster, 1);
    const res2 = await best.provisioner.provision();
    expect(res2.created).toHaveLength(1);
    const [nc] = await listNodeClaims(client);
    expect(nc!.metadata.annotations?.['karpenter.sh/nodeclaim-min-values-relaxed']).toBe('true');
    expect(nc!.spec.requirements.find((r) => r.key === 'karpenter.k8s.aws/instance-family')).toEqual({
      key: 'karpenter.k8s.aws/instance-family',
      operator: 'In',
      values: ['c5', 'm5', 'r5'],
      minValues: 2,
    });
    expect(await best.registry.getSingleMetricAsString('karpenter_nodeclaims_created_total')).toContain(
      'karpenter_nodeclaims_created_total{reason="provisioned",nodepool="default",min_values_relaxed="true"} 1',
    );
  });

  it('publishes NoCompatibleInstanceTypes on a NodePool whose requirements filter out all its instance types, once a minute', async () => {
    env = await startEnv();
    const { client, clock } = env;
    // "huge": no catalog type has more than 10,000 vCPUs; "narrow": only m5 exists of its two families (no "x9"), so
    // its types can never meet minValues 2.
    const huge = await createNodePool(
      client,
      testNodePool('huge', {
        requirements: [{ key: 'karpenter.k8s.aws/instance-cpu', operator: 'Gt', values: ['10000'] }],
      }),
    );
    const narrow = await createNodePool(
      client,
      testNodePool('narrow', {
        requirements: [
          { key: 'karpenter.k8s.aws/instance-family', operator: 'In', values: ['m5', 'x9'], minValues: 2 },
        ],
      }),
    );
    await createPendingPod(client, pendingPod('web', { cpu: '1', memory: '1Gi' }));
    const p = await env.startProcess();
    await podsSeen(p.cluster, 1);
    const res = await p.provisioner.provision();
    expect(res.result?.noCompatibleInstanceTypes).toEqual([
      { nodePool: 'huge', minValues: false },
      { nodePool: 'narrow', minValues: true },
    ]);
    expect(res.created).toHaveLength(0);
    const seen = async () =>
      (await events(client, 'NoCompatibleInstanceTypes'))
        .map((e) => ({
          type: e.type,
          name: e.involvedObject.name,
          kind: e.involvedObject.kind,
          uid: e.involvedObject.uid,
          message: e.message,
          count: e.count,
        }))
        .sort((a, b) => String(a.name).localeCompare(String(b.name)));
    await p.recorder.flush();
    const first = [
      {
        type: 'Warning',
        name: 'huge',
        kind: 'NodePool',
        uid: huge.metadata.uid,
        message: 'NodePool requirements filtered out all compatible available instance types',
        count: 1,
      },
      {
        type: 'Warning',
        name: 'narrow',
        kind: 'NodePool',
        uid: narrow.metadata.uid,
        message:
          'NodePool requirements filtered out all compatible available instance types due to minValues incompatibility',
        count: 1,
      },
    ];
    expect(await seen()).toEqual(first);
    // deduplicated per NodePool UID for 1 min (upstream DedupeTimeout)
    clock.advance(59_000);
    await p.provisioner.provision();
    await p.recorder.flush();
    expect(await seen()).toEqual(first);
    clock.advance(1_000);
    await p.provisioner.provision();
    await p.recorder.flush();
    expect((await seen()).map((e) => e.count)).toEqual([2, 2]);
  });

  it('creates no NodeClaim when the pods fit an existing node, and nominates them to it', async () => {
    env = await startEnv();
    const { client } = env;
    await createNodePool(client, testNodePool('default'));
    await client.create(readyNode('node-a', 'm5.2xlarge', 'default'));
    for (let i = 0; i < 3; i++)
      await createPendingPod(client, pendingPod(`api-${i}`, { cpu: '2', memory: '4Gi' }));
    const p = await env.startProcess();
    await podsSeen(p.cluster, 3);
    const res = await p.provisioner.provision();
    expect(res.created).toHaveLength(0);
    expect(res.result?.placements.map((pl) => pl.target)).toEqual([
      { kind: 'existing', node: 'node-a' },
      { kind: 'existing', node: 'node-a' },
      { kind: 'existing', node: 'node-a' },
    ]);
    expect(await listNodeClaims(client)).toHaveLength(0);
    await p.recorder.flush();
    expect((await events(client, 'Nominated')).map((e) => e.message)).toEqual([
      'Pod should schedule on: node/node-a',
      'Pod should schedule on: node/node-a',
      'Pod should schedule on: node/node-a',
    ]);
    // A fourth pod: the three nominated to node-a are simulated again with it (a nomination onto a Node holds no
    // pod out of a pass; upstream re-simulates every pending pod), three fit node-a (m5.2xlarge: 8 vCPU), one
    // NodeClaim for the fourth.
    await createPendingPod(client, pendingPod('api-3', { cpu: '2', memory: '4Gi' }));
    await podsSeen(p.cluster, 4);
    const res2 = await p.provisioner.provision();
    expect(res2.selection?.pods.map((x) => x.metadata.name)).toEqual(['api-0', 'api-1', 'api-2', 'api-3']);
    expect(res2.selection?.nominated).toEqual([]);
    expect(res2.result?.placements.filter((pl) => pl.target.kind === 'existing')).toHaveLength(3);
    expect(res2.created).toHaveLength(1);
    expect(await listNodeClaims(client)).toHaveLength(1);
  });

  it('plans a pod again as soon as its NodeClaim initializes and kube-scheduler bound another pod there that excludes it', async () => {
    env = await startEnv();
    const { client } = env;
    await createNodePool(client, testNodePool('default'));
    // two pods that never share a node (required anti-affinity on the hostname): one NodeClaim each
    const web = (name: string): Pod => {
      const pod = pendingPod(name, { cpu: '1', memory: '1Gi', labels: { app: 'web' } });
      pod.spec.affinity = {
        podAntiAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: [
            { labelSelector: { matchLabels: { app: 'web' } }, topologyKey: 'kubernetes.io/hostname' },
          ],
        },
      };
      return pod;
    };
    await createPendingPod(client, web('web-a'));
    await createPendingPod(client, web('web-b'));
    const p = await env.startProcess();
    await podsSeen(p.cluster, 2);
    const first = await p.provisioner.provision();
    expect(first.created).toHaveLength(2);
    const target = (name: string) => p.cluster.nominationFor(`default/${name}`)?.target.name;
    const x = target('web-a') ?? '';
    const y = target('web-b') ?? '';
    expect(new Set([x, y])).toEqual(new Set(first.created.map((c) => c.nodeClaim.metadata.name)));
    expect(p.cluster.inFlightNominationFor('default/web-a')?.target.name).toBe(x);

    // X launches and initializes, and kube-scheduler, which knows nothing of nominations, binds web-b there
    const node = readyNode('node-x', 'm5.xlarge', 'default');
    await client.create(node);
    const nc = await client.get('NodeClaim', x);
    await client.updateStatus({ ...nc, status: { ...nc.status, providerID: node.spec?.providerID } });
    await client.request('POST', '/api/v1/namespaces/default/pods/web-b/binding', {
      body: {
        apiVersion: 'v1',
        kind: 'Binding',
        metadata: { name: 'web-b', namespace: 'default' },
        target: { apiVersion: 'v1', kind: 'Node', name: 'node-x' },
      },
    });
    await eventually(
      () =>
        p.cluster.getPod('default/web-b')?.spec.nodeName === 'node-x' && p.cluster.pendingPods().length === 1,
      'web-b bound in state',
    );
    // web-a still "fits" node-x by its resources (4 vCPU, 1 used) and its nomination lives on (20 s TTL), but it
    // holds the pod no longer: the next pass plans it again and finds the room Y kept for web-b, launching nothing
    expect(p.cluster.nominationFor('default/web-a')?.target.name).toBe(x);
    expect(p.cluster.inFlightNominationFor('default/web-a')).toBeUndefined();
    const second = await p.provisioner.provision();
    expect(second.selection?.pods.map((pod) => pod.metadata.name)).toEqual(['web-a']);
    expect(second.result?.placements.map((pl) => pl.target)).toEqual([{ kind: 'inflight', nodeClaim: y }]);
    expect(second.created).toEqual([]);
    expect(target('web-a')).toBe(y);
    expect(await listNodeClaims(client)).toHaveLength(2);
  });

  it('limits.nodes holds across concurrent batches, and a concurrent pass does not launch again for pods being launched for', async () => {
    env = await startEnv();
    const { client } = env;
    await createNodePool(client, testNodePool('two', { limits: { nodes: '2' } }));
    // big pods: each needs a node of its own
    for (let i = 0; i < 4; i++)
      await createPendingPod(client, pendingPod(`n-${i}`, { cpu: '6', memory: '1Gi' }));
    const p = await env.startProcess();
    await podsSeen(p.cluster, 4);
    const [a, b] = await Promise.all([p.provisioner.provision(), p.provisioner.provision()]);
    // both passes plan the same 4 pods onto one node; the second finds them being launched for (issue 16's
    // duplicate-NodeClaim invariant: one NodeClaim per pending pod), so one NodeClaim, within the limit
    const created = [...a.created, ...b.created];
    expect(created.map((c) => c.plan.pods.map((x) => x.metadata.name).sort())).toEqual([
      ['n-0', 'n-1', 'n-2', 'n-3'],
    ]);
    expect([...a.skipped, ...b.skipped].map((s) => s.reason)).toEqual([
      'pending pod default/n-0 already has capacity coming (a NodeClaim being created); not launching for it twice',
    ]);
    expect(await listNodeClaims(client)).toHaveLength(1);
    expect(p.cluster.nodePoolUsage().two!.nodes).toBe(1);
  });

  it('holds NodePool limits across two batches and reports the pods that do not fit', async () => {
    env = await startEnv();
    const { client } = env;
    await createNodePool(client, testNodePool('small', { limits: { cpu: '8' } }));
    for (let i = 0; i < 6; i++)
      await createPendingPod(client, pendingPod(`a-${i}`, { cpu: '1', memory: '1Gi' }));
    const p = await env.startProcess();
    await podsSeen(p.cluster, 6);
    const first = await p.provisioner.provision();
    expect(first.created).toHaveLength(1);
    const [nc] = await listNodeClaims(client);
    const options = nc!.spec.requirements.find((r) => r.key === 'node.kubernetes.io/instance-type')!.values!;
    const byName = new Map(catalog.map((t) => [t.name, t]));
    // every option stays within the 8-cpu limit; the largest is what the limit reserves
    expect(Math.max(...options.map((n) => byName.get(n)!.capacity.cpu!))).toBeLessThanOrEqual(8000);

    // Second batch while the first NodeClaim is still in flight (not launched): more pods than it can hold.
    for (let i = 0; i < 8; i++)
      await createPendingPod(client, pendingPod(`b-${i}`, { cpu: '1', memory: '1Gi' }));
    await podsSeen(p.cluster, 14);
    const second = await p.provisioner.provision();
    const usage = p.cluster.nodePoolUsage(new Map(catalog.map((t) => [t.name, t]))).small!;
    expect(usage.cpu).toBeLessThanOrEqual(8000);
    expect(await listNodeClaims(client)).toHaveLength(1 + second.created.length);
    const placedInflight = second.result!.placements.filter((pl) => pl.target.kind === 'inflight').length;
    expect(second.created).toHaveLength(0);
    expect(second.result!.unschedulable.length).toBe(8 - placedInflight);
    expect(second.result!.unschedulable[0]!.code).toBe('NodePoolLimitsExceeded');
    await p.recorder.flush();
    const failed = await events(client, 'FailedScheduling');
    expect(failed.length).toBe(8 - placedInflight);
    expect(failed[0]!.type).toBe('Warning');
    expect(failed[0]!.message).toMatch(/^Failed to schedule pod, .*exceed limits for nodepool/);

    // A second provisioner (its own, fresh state) finds the limit used up as well.
    const other = await env.startProcess();
    await podsSeen(other.cluster, 14);
    const third = await other.provisioner.provision();
    expect(third.created).toHaveLength(0);
    expect(await listNodeClaims(client)).toHaveLength(1);
  });

  it('a restarted provisioner creates no duplicates for pods already nominated or in flight', async () => {
    env = await startEnv();
    const { client } = env;
    await createNodePool(client, testNodePool('default'));
    for (let i = 0; i < 12; i++)
      await createPendingPod(client, pendingPod(`w-${i}`, { cpu: '1500m', memory: '3Gi' }));
    const p1 = await env.startProcess();
    await podsSeen(p1.cluster, 12);
    const first = await p1.provisioner.provision();
    expect(first.created.length).toBeGreaterThan(0);
    const before = (await listNodeClaims(client)).map((nc) => nc.metadata.name).sort();
    await p1.stop();

    // A new process (fresh state, same API server) restores the nominations from the NodeClaims.
    const p2 = await env.startProcess();
    await podsSeen(p2.cluster, 12);
    const again = await p2.provisioner.provision();
    expect(again.synced).toBe(true);
    expect(again.selection?.nominated).toHaveLength(12);
    expect(again.selection?.pods).toHaveLength(0);
    expect(again.created).toHaveLength(0);
    expect((await listNodeClaims(client)).map((nc) => nc.metadata.name).sort()).toEqual(before);

    // Without the annotation (NodeClaims made by another tool) the pods are re-packed onto the in-flight ones.
    for (const nc of await listNodeClaims(client)) {
      const anns = { ...(nc.metadata.annotations ?? {}) };
      delete anns['capenter.dev/nominated-pods'];
      await client.update({ ...nc, metadata: { ...nc.metadata, annotations: anns } });
    }
    await p2.stop();
    const p3 = await env.startProcess();
    await podsSeen(p3.cluster, 12);
    const third = await p3.provisioner.provision();
    expect(third.selection?.nominated).toHaveLength(0);
    expect(third.result?.placements).toHaveLength(12);
    expect(third.result?.placements.every((pl) => pl.target.kind === 'inflight')).toBe(true);
    expect(third.created).toHaveLength(0);
    expect((await listNodeClaims(client)).map((nc) => nc.metadata.name).sort()).toEqual(before);
  });

  it('a restarted provisioner restores a nomination to the live NodeClaim when a deleting one lists the pod too (soak seed 3)', async () => {
    env = await startEnv();
    const { client } = env;
    await createNodePool(client, testNodePool('default'));
    await createPendingPod(client, pendingPod('lost', { cpu: '1500m', memory: '3Gi' }));
    const p1 = await env.startProcess();
    await podsSeen(p1.cluster, 1);
    const first = await p1.provisioner.provision();
    expect(first.created).toHaveLength(1);
    const a = first.created[0]!.nodeClaim;
    await p1.stop();
    // An older NodeClaim made for the same pod, being deleted (held by a finalizer); the watch lists it after `a`.
    const { status: _status, ...rest } = a;
    await client.create({
      ...rest,
      metadata: {
        name: 'zz-old',
        labels: a.metadata.labels,
        annotations: a.metadata.annotations,
        finalizers: ['test.capenter.dev/hold'],
      },
    } as NodeClaim);
    await client.delete('NodeClaim', 'zz-old');

    const p2 = await env.startProcess();
    await podsSeen(p2.cluster, 1);
    expect(p2.cluster.nominationFor('default/lost')?.target).toEqual({
      kind: 'nodeclaim',
      name: a.metadata.name,
    });
    const again = await p2.provisioner.provision();
    expect(again.created).toHaveLength(0);
    expect((await listNodeClaims(client)).map((nc) => nc.metadata.name).sort()).toEqual(
      [a.metadata.name, 'zz-old'].sort(),
    );
  });

  it('warns, saying why its nomination ended, when it launches for a pod an in-flight NodeClaim was made for', async () => {
    env = await startEnv();
    const { client } = env;
    await createNodePool(client, testNodePool('default'));
    await createPendingPod(client, pendingPod('lost', { cpu: '1500m', memory: '3Gi' }));
    const lines: Array<Record<string, unknown>> = [];
    const logger = createLogger({
      level: 'warn',
      destination: { write: (l: string) => void lines.push(JSON.parse(l) as Record<string, unknown>) },
    });
    const p = await env.startProcess({}, logger);
    await podsSeen(p.cluster, 1);
    const first = await p.provisioner.provision();
    expect(first.created).toHaveLength(1);
    const a = first.created[0]?.nodeClaim.metadata.name ?? '';
    expect(lines).toEqual([]); // a first launch is not a relaunch
    // The nomination onto `a` ends while `a` is still in flight (here: a deletion mark in state only).
    p.cluster.markForDeletion(a);
    expect(p.cluster.nominationFor('default/lost')).toBeUndefined();
    const second = await p.provisioner.provision();
    expect(second.created).toHaveLength(1);
    const warnings = lines.filter((l) => l.level === 'WARN');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({
      message: 'launching for a pending pod that an in-flight nodeclaim was created for',
      Pod: { name: 'lost', namespace: 'default' },
      NodeClaim: { name: a },
      pod: 'default/lost',
      nodeclaim: a,
    });
    expect(String(warnings[0]?.nomination)).toMatch(
      new RegExp(`^nodeclaim/${a}: its NodeClaim is marked for deletion at \\d{4}-`),
    );
  });

  it('does not provision while state is not synced', async () => {
    env = await startEnv();
    const { client } = env;
    await createNodePool(client, testNodePool('default'));
    await createPendingPod(client, pendingPod('x'));
    const p = await env.startProcess();
    await podsSeen(p.cluster, 1);
    // A NodeClaim the API has but this state has not seen (its watch event is not applied yet).
    p.cluster.close();
    await client.create({
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodeClaim',
      metadata: { name: 'unseen', labels: { 'karpenter.sh/nodepool': 'default' } },
      spec: {
        nodeClassRef: { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: 'default' },
        requirements: [{ key: 'node.kubernetes.io/instance-type', operator: 'In', values: ['m5.large'] }],
      },
    });
    const res = await p.provisioner.provision();
    expect(res.synced).toBe(false);
    expect(res.created).toHaveLength(0);
    expect(await listNodeClaims(client)).toHaveLength(1);
  });

  it('records when each pod was first seen, decided and found schedulable; observes each first decision once', async () => {
    env = await startEnv();
    const { client, clock } = env;
    await createNodePool(client, testNodePool('default'));
    const p = await env.startProcess();
    const trigger = new ProvisioningTrigger({
      cluster: p.cluster,
      provisioner: { trigger: () => {} },
      clock,
      logger: silentLogger(),
    });
    const ac = new AbortController();
    const running = trigger.start(ac.signal);
    try {
      const avoid = pendingPod('avoid', { cpu: '1' });
      avoid.spec.affinity = {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [
              { matchExpressions: [{ key: 'karpenter.sh/nodepool', operator: 'DoesNotExist' }] },
            ],
          },
        },
      };
      await createPendingPod(client, pendingPod('fits', { cpu: '1', memory: '1Gi' }));
      await createPendingPod(client, pendingPod('huge', { cpu: '1000', memory: '1Gi' }));
      await createPendingPod(client, avoid);
      await podsSeen(p.cluster, 3);
      const times = p.cluster.podScheduling;
      const seenAt = clock.now();
      // acknowledged when state sees them marked Unschedulable (provisionable)
      await eventually(() => times.size === 3, 'three pods acknowledged');
      for (const k of ['default/fits', 'default/huge', 'default/avoid'])
        expect(times.ackTime(k)).toBe(seenAt);
      clock.advance(3_000);
      await p.provisioner.provision();
      const decidedAt = seenAt + 3_000;
      expect(times.schedulableTime('default/fits')).toBe(decidedAt);
      for (const k of ['default/huge', 'default/avoid']) {
        expect(times.decisionTime(k)).toBe(decidedAt);
        expect(times.schedulableTime(k)).toBeUndefined();
      }
      // one observation per pod: 3 s from first seen to the first decision (placed, unschedulable, rejected)
      const decision = async () =>
        await p.registry.getSingleMetricAsString('karpenter_pods_scheduling_decision_duration_seconds');
      expect(await decision()).toContain('karpenter_pods_scheduling_decision_duration_seconds_count 3');
      expect(await decision()).toContain('karpenter_pods_scheduling_decision_duration_seconds_sum 9');
      expect(await decision()).toContain(
        'karpenter_pods_scheduling_decision_duration_seconds_bucket{le="3"} 3',
      );
      expect(await decision()).toContain(
        'karpenter_pods_scheduling_decision_duration_seconds_bucket{le="2.5"} 0',
      );
      clock.advance(5_000);
      await p.provisioner.provision();
      expect(await decision()).toContain('karpenter_pods_scheduling_decision_duration_seconds_count 3');
      await client.delete('Pod', 'huge', 'default');
      await eventually(() => times.ackTime('default/huge') === undefined, 'a deleted pod forgotten');
    } finally {
      ac.abort();
      await running;
    }
  });

  it('runs end to end: pod events open a batch that closes after 1 s idle on the fake clock', async () => {
    env = await startEnv();
    const { client, clock } = env;
    await createNodePool(client, testNodePool('default'));
    const p = await env.startProcess();
    const trigger = new ProvisioningTrigger({
      cluster: p.cluster,
      provisioner: p.provisioner,
      clock,
      logger: silentLogger(),
    });
    const ac = new AbortController();
    const running = Promise.all([p.provisioner.start(ac.signal), trigger.start(ac.signal)]);
    try {
      for (let i = 0; i < 4; i++)
        await createPendingPod(client, pendingPod(`e-${i}`, { cpu: '500m', memory: '512Mi' }));
      await podsSeen(p.cluster, 4);
      expect(p.provisioner.batcher.pending || (await listNodeClaims(client)).length === 0).toBe(true);
      await clock.tick(999);
      expect(await listNodeClaims(client)).toHaveLength(0);
      await clock.tick(1);
      const ncs = (await eventually(async () => {
        const l = await listNodeClaims(client);
        return l.length > 0 ? l : undefined;
      }, 'a NodeClaim'))!;
      expect(ncs).toHaveLength(1);
      expect(cheapestOf(ncs[0]!)).toBe(
        solve({
          pods: [0, 1, 2, 3].map((i) => pendingPod(`e-${i}`, { cpu: '500m', memory: '512Mi' })),
          existingNodes: [],
          nodePools: [testNodePool('default')],
          instanceTypes: { default: catalog },
          daemonSets: [],
        }).newNodeClaims[0]!.cheapest.instanceType.name,
      );
    } finally {
      ac.abort();
      await running;
    }
    expect(p.provisioner).toBeInstanceOf(Provisioner);
  });
});
