/**
 * Controller scenarios C1–C4 of ../shared/cases/controller-scenarios.md on the real control plane of
 * `npm run test:cluster` (kube-apiserver, kube-controller-manager, kube-scheduler v1.34.4, kwok as the kubelets),
 * with capenter's controllers in-process on a FakeClock: each step is one explicit reconcile, as in the embedded
 * tests, whose arrange code (test/controllers/scenarios.ts) this file shares; C3's runs are shared whole. Nothing
 * sleeps for the 5/15/30-minute timeouts: the clock is set; waits are only for what the real API server's watch,
 * scheduler, controller-manager or kwok must do.
 *
 * What the real components do here that the embedded tests play themselves: kube-scheduler marks the pending pods
 * Unschedulable and binds the DaemonSet pods and C1's replacement pod; the ReplicaSet controller replaces C1's
 * evicted replica; the DaemonSet controller makes C2's agents; the disruption controller computes the PDBs' allowed
 * disruptions that the Eviction API enforces; kwok runs C1's Nodes and their pods. C2's and C4's Nodes are created
 * without the kwok marker and the test is their kubelet (kwok would post Ready again after C4's kubelet stops, and
 * removes a terminating pod at once, with no preStop hook for C2). Object timestamps (deletionTimestamp) are the
 * server's wall clock, so they are asserted as grace periods, not as fake-clock times.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject, Pod } from '../../src/apis/core.ts';
import type { NodeClaim } from '../../src/apis/karpenter.ts';
import { isNodeClaimNotFoundError } from '../../src/cloudprovider/types.ts';
import { NodeHealthController } from '../../src/controllers/node/health/controller.ts';
import { Launch } from '../../src/controllers/nodeclaim/lifecycle/launch.ts';
import { NodeClaimTermination } from '../../src/controllers/nodeclaim/lifecycle/termination.ts';
import {
  type ControllerTestEnv,
  clientNodeWriter,
  controllerTestEnv,
} from '../../src/controllers/nodeclaim/testing.ts';
import { pendingPod, testNodePool } from '../../src/controllers/provisioning/testing.ts';
import { KubeClient } from '../../src/kube/client.ts';
import { FakeClock } from '../../src/kube/clock.ts';
import { silentLogger } from '../../src/kube/logger.ts';
import { checkCRDs, installCRDs, requiredCRDs } from '../../src/operator/crds.ts';
import { catalog, createKwokNodeClass, startControllerProcess } from '../controllers/provisioning/harness.ts';
import {
  createSpotNode,
  DrainGroups,
  guardedPDB,
  guardedPod,
  kubeletStops,
  launchNode,
  launchTimeoutRun,
  lifecycleContext,
  MIN,
  metricOf,
  nodeTermination,
  offeringOf,
  register,
  registrationTimeoutRun,
  repairNodePool,
  rfc,
  scenarioDeps,
  spotInterruption,
  spotNodePool,
  TerminationTimestamp,
  webPDB,
  webReplica,
  withAwsRepairPolicies,
} from '../controllers/scenarios.ts';
import { clusterDisposable, clusterKubeconfig, until } from './helpers.ts';

const NS = 'default';
const KWOK = 'kwok.x-k8s.io/node';
let kubeconfig: string;
let client: KubeClient;
let installedCRDs: string[] = [];

/** A FakeClock at the wall clock's current second (the server's timestamps are near it). */
const fakeNow = () => new FakeClock(Math.floor(Date.now() / 1000) * 1000);

/** Waits (through the API, 30 s at most) for `fn` to be truthy. */
const waitFor = <T>(fn: () => T | Promise<T>, what: string) => until(fn, what, 30_000, 100);

const condition = (o: { status?: { conditions?: Array<{ type: string; status: string }> } }, type: string) =>
  o.status?.conditions?.find((c) => c.type === type)?.status;

/** Pods (of every namespace but kube-*) on the server. */
async function pods(): Promise<Pod[]> {
  return (await client.list('Pod')).items.filter((p) => !p.metadata.namespace?.startsWith('kube-'));
}

/**
 * Removes every workload (outside kube-*), Pod, PDB, NodeClaim, Node and NodePool, stripping finalizers (no
 * capenter controller runs between the scenarios); resolves once none is left. The KWOKNodeClass stays.
 */
async function clean(): Promise<void> {
  const kinds = ['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'Pod', 'PodDisruptionBudget'];
  await until(
    async () => {
      const left: KubeObject[] = [];
      for (const kind of kinds)
        left.push(
          ...((await client.list(kind)).items as KubeObject[])
            .filter((o) => !o.metadata?.namespace?.startsWith('kube-'))
            .map((o) => ({ ...o, kind })),
        );
      for (const kind of ['NodeClaim', 'Node', 'NodePool'])
        left.push(...((await client.list(kind)).items as KubeObject[]).map((o) => ({ ...o, kind })));
      for (const o of left) {
        const name = o.metadata?.name as string;
        const ns = o.metadata?.namespace;
        if (o.metadata?.finalizers?.length)
          await client.patch(o.kind as string, name, ns, { metadata: { finalizers: null } }).catch(() => {});
        await client
          .tryDelete(o.kind as string, name, ns, { gracePeriodSeconds: 0, propagationPolicy: 'Background' })
          .catch(() => {});
      }
      return left.length === 0;
    },
    'the scenario objects to be deleted',
    60_000,
    250,
  );
}

beforeAll(async () => {
  kubeconfig = clusterKubeconfig();
  if (!clusterDisposable())
    throw new Error(
      'test/cluster/scenarios.test.ts deletes every Node and workload: use a disposable cluster',
    );
  client = KubeClient.fromKubeconfig(kubeconfig);
  const required = requiredCRDs([
    { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass' },
    { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass' },
  ]);
  const missing = (await checkCRDs(client, required)).missing;
  if (missing.length > 0) {
    installedCRDs = (await installCRDs(client)).filter((n) => missing.includes(n));
    await until(async () => (await checkCRDs(client, required)).missing.length === 0, 'capenter CRDs served');
  }
  await clean();
  await client.tryDelete('KWOKNodeClass', 'default');
  await waitFor(async () => !(await client.tryGet('KWOKNodeClass', 'default')), 'no KWOKNodeClass default');
  await createKwokNodeClass(client);
});

afterAll(async () => {
  await clean();
  await client.tryDelete('KWOKNodeClass', 'default');
  // the cluster as found: test/cluster/controller.test.ts starts without capenter's CRDs
  for (const name of installedCRDs) await client.tryDelete('CustomResourceDefinition', name);
  client?.close();
});

/** Creates pending pod `web` (1 CPU) and waits for kube-scheduler to find no node for it. */
async function unschedulableWeb(): Promise<void> {
  const { status: _s, ...pod } = pendingPod('web', { cpu: '1', memory: '1Gi' });
  const { uid: _u, creationTimestamp: _c, ...metadata } = pod.metadata;
  await client.create({ ...pod, metadata } as Pod);
  await waitFor(
    async () => condition(await client.get('Pod', 'web', NS), 'PodScheduled') === 'False',
    'kube-scheduler to mark web Unschedulable',
  );
}

describe('launch and registration timeouts (C3) on the real control plane', () => {
  it('(i) a Node that never joins: deleted at 15 min after launch (registration_timeout), then the pod gets a new NodeClaim', async () => {
    const clock = fakeNow();
    await client.create(testNodePool('default'));
    await unschedulableWeb();
    const p = await startControllerProcess(client, clock, {}, silentLogger(), {
      registrationDelaySeconds: () => 365 * 24 * 3600,
    });
    try {
      await waitFor(() => p.cluster.pendingPods().length === 1, 'the Unschedulable pod in state');
      await registrationTimeoutRun(client, clock, p);
    } finally {
      await p.stop();
      await clean();
    }
  });

  it('(ii) every launch fails: Launched=False, deleted after 5 min (launch_timeout), not earlier', async () => {
    const clock = fakeNow();
    await client.create(testNodePool('default'));
    await unschedulableWeb();
    const p = await startControllerProcess(client, clock);
    try {
      await waitFor(() => p.cluster.pendingPods().length === 1, 'the Unschedulable pod in state');
      await launchTimeoutRun(client, clock, p);
    } finally {
      await p.stop();
      await clean();
    }
  });
});

/**
 * A controllers' env on its own client to the real server (its `stop` closes that client) whose kwok provider
 * creates Nodes without the kwok marker: kwok leaves them alone and the test is their kubelet (Ready, pods Running,
 * the final grace-0 deletion of a stopped pod), as in the embedded tests. (kwok, once it ran a Node, posts Ready
 * again and removes terminating pods at once: no preStop hook, no stopped kubelet.)
 */
function realEnv(clock: FakeClock): ControllerTestEnv {
  const c = KubeClient.fromKubeconfig(kubeconfig);
  const writer = clientNodeWriter(c);
  return controllerTestEnv(c, clock, {
    nodes: {
      ...writer,
      createNode: (node) => {
        const { [KWOK]: _k, ...annotations } = node.metadata.annotations ?? {};
        return writer.createNode({ ...node, metadata: { ...node.metadata, annotations } });
      },
    },
  });
}

/** The test as kubelet: the pods run (Running, Ready). */
async function run(names: string[]): Promise<void> {
  for (const name of names)
    await client.patchStatus(
      'Pod',
      name,
      NS,
      { status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] } },
      { type: 'merge' },
    );
}

/** The pod's deletion grace in seconds, `undefined` while it is not terminating. */
async function graceOf(name: string): Promise<number | undefined> {
  const p = await client.tryGet('Pod', name, NS);
  return p?.metadata.deletionTimestamp ? (p.metadata.deletionGracePeriodSeconds ?? -1) : undefined;
}

/** Deletes the C2 pod `name` with grace 0, as its kubelet does once it stopped, and waits until it is gone. */
async function stopped(env: ControllerTestEnv, name: string): Promise<void> {
  expect(await env.finishTerminating('c2')).toEqual([name]);
  await waitFor(async () => !(await client.tryGet('Pod', name, NS)), `${name} gone`);
}

/**
 * C2's node: NodeClaim c2 launched by the kwok provider (the test its kubelet), the DaemonSets `b-logs` and
 * `d-crit-ds` (their pods made by the DaemonSet controller and bound to c2 by kube-scheduler) and the pods `a-app`
 * and `c-crit` bound to c2, all Running. Returns the pod names in group order.
 */
async function drainGroupNode(env: ControllerTestEnv): Promise<string[]> {
  await launchNode(env, 'c2');
  for (const g of DrainGroups) {
    const spec = {
      containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }],
      ...(g.priorityClassName ? { priorityClassName: g.priorityClassName } : {}),
      ...(g.terminationGracePeriodSeconds
        ? { terminationGracePeriodSeconds: g.terminationGracePeriodSeconds }
        : {}),
    };
    if (!g.daemon) {
      await client.create({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: g.name, namespace: NS },
        spec: { ...spec, nodeName: 'c2' },
      });
      continue;
    }
    await client.create({
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name: g.name, namespace: NS },
      spec: {
        selector: { matchLabels: { ds: g.name } },
        template: { metadata: { labels: { ds: g.name } }, spec },
      },
    });
  }
  const bound = await waitFor(async () => {
    const on = (await pods()).filter((p) => p.spec.nodeName === 'c2');
    return on.length === 4 ? on : undefined;
  }, 'the four C2 pods bound to c2 (the DaemonSet pods by kube-scheduler)');
  // the DaemonSet pods have generated names: found by their DaemonSet
  const names = DrainGroups.map(
    (g) =>
      bound.find(
        (p) => p.metadata.name === g.name || p.metadata.ownerReferences?.some((o) => o.name === g.name),
      )?.metadata.name as string,
  );
  expect(names.every(Boolean), names.join(', ')).toBe(true);
  await run(names);
  return names;
}

describe('drain groups (C2) on the real control plane', () => {
  it('evicts (a) app with a 135 s grace, (b) log agent only once (a) is gone, then (c) critical, then (d) critical DaemonSet; the Node stays until all are gone', async () => {
    const clock = fakeNow();
    const env = realEnv(clock);
    try {
      await client.create(repairNodePool);
      const [a, b, c, d] = await drainGroupNode(env);
      const ctl = nodeTermination({ ...env, cloudProvider: env.provider });
      await client.delete('NodeClaim', 'c2');
      await new NodeClaimTermination(env.ctx).reconcile(await client.get('NodeClaim', 'c2'));
      expect(
        (await client.get('NodeClaim', 'c2')).metadata.annotations?.[TerminationTimestamp],
      ).toBeUndefined();
      const t0 = clock.now();
      expect(await ctl.reconcile('c2')).toEqual({ requeueAfter: 1 });
      // (a) asked to leave through the Eviction API: graceful deletion with its own 135 s
      expect(await graceOf(a as string)).toBe(135);
      expect(await graceOf(b as string)).toBeUndefined();
      // (a) runs its preStop hook: every pass meanwhile leaves (b), (c), (d) alone
      for (const at of [30_000, 60_000, 119_000]) {
        clock.set(t0 + at);
        expect(await ctl.reconcile('c2')).toEqual({ requeueAfter: 1 });
        expect(await Promise.all([b, c, d].map((x) => graceOf(x as string)))).toEqual([
          undefined,
          undefined,
          undefined,
        ]);
      }
      await stopped(env, a as string); // 120 s: the preStop hook returns and the kubelet stops (a)
      // the server stamps each eviction with its wall clock: from here a controller on a clock at the server's time
      // again (a FakeClock cannot go back; 120 s ahead, (b)'s 30 s grace would look over a minute old, stuck)
      const later = fakeNow();
      const ctl2 = nodeTermination({ ...env, clock: later, cloudProvider: env.provider });
      expect(await ctl2.reconcile('c2')).toEqual({ requeueAfter: 1 });
      expect(await graceOf(b as string)).toBe(30); // the DaemonSet pod's default grace
      expect(await graceOf(c as string)).toBeUndefined();
      // (b) still terminating: (c) waits
      later.advance(5_000);
      expect(await ctl2.reconcile('c2')).toEqual({ requeueAfter: 1 });
      expect(await graceOf(c as string)).toBeUndefined();
      await stopped(env, b as string);
      expect(await ctl2.reconcile('c2')).toEqual({ requeueAfter: 1 });
      expect(await graceOf(c as string)).toBe(30);
      expect(await graceOf(d as string)).toBeUndefined();
      later.advance(5_000);
      await stopped(env, c as string);
      expect(await ctl2.reconcile('c2')).toEqual({ requeueAfter: 1 });
      expect(await graceOf(d as string)).toBe(30);
      // the Node stays until the last group is gone; the DaemonSet controller does not bring (b) or (d) back
      expect(await client.tryGet('Node', 'c2')).toBeDefined();
      later.advance(5_000);
      await stopped(env, d as string);
      for (let i = 0; i < 4 && (await client.tryGet('Node', 'c2')); i++) await ctl2.reconcile('c2');
      expect(await client.tryGet('Node', 'c2')).toBeUndefined();
      expect((await pods()).filter((p) => p.spec.nodeName === 'c2')).toEqual([]);
    } finally {
      await env.stop();
      await clean();
    }
  });
});

describe('node repair (C4) on the real control plane', () => {
  let env: ControllerTestEnv;
  let health: NodeHealthController;
  let termination: ReturnType<typeof nodeTermination>;
  const nodeClaim = (name: string) => client.get('NodeClaim', name);

  beforeAll(async () => {
    env = realEnv(fakeNow());
    const provider = withAwsRepairPolicies(env.provider);
    const deps = { ...env, cloudProvider: provider, logger: silentLogger() };
    health = new NodeHealthController(deps);
    termination = nodeTermination(deps);
    await client.create(repairNodePool);
  });
  afterAll(async () => {
    await env.stop();
    await clean();
  });

  it('repairs the Unknown node at 30 min, not at 29, deleting its PDB-protected pod despite the PDB; the instance is terminated', async () => {
    for (let i = 0; i < 10; i++) await launchNode(env, `r-${i}`);
    await client.create(guardedPod(NS));
    await run(['guarded']);
    // minAvailable 1, all of guarded: the disruption controller refuses a percentage for a pod without a controller
    await client.create(guardedPDB(NS, 1));
    // the disruption controller allows no disruption of it
    await waitFor(async () => {
      const st = (await client.get('PodDisruptionBudget', 'guarded', NS)).status as
        | { currentHealthy?: number; disruptionsAllowed?: number }
        | undefined;
      if (st?.currentHealthy === 1 && st.disruptionsAllowed === 0) return true;
      throw new Error(`PDB status ${JSON.stringify(st)}`);
    }, 'the PDB to count guarded healthy and allow no disruption');
    const t0 = env.clock.now();
    await kubeletStops(env, 'r-0');
    // healthy nodes: nothing to do, no requeue
    expect(await health.reconcile('r-1')).toEqual({});

    env.clock.advance(29 * MIN);
    expect(await health.reconcile('r-0')).toEqual({ requeueAfter: 60 });
    let nc = await nodeClaim('r-0');
    expect(nc.metadata.deletionTimestamp).toBeUndefined();
    expect(nc.metadata.annotations?.[TerminationTimestamp]).toBeUndefined();

    env.clock.advance(1 * MIN);
    expect(await health.reconcile('r-0')).toEqual({});
    nc = await nodeClaim('r-0');
    expect(nc.metadata.deletionTimestamp).toBeDefined();
    expect(nc.metadata.annotations?.[TerminationTimestamp]).toBe(rfc(t0 + 30 * MIN));
    const labels = { nodepool: 'default', capacity_type: 'on-demand' };
    expect(await env.metric('karpenter_nodeclaims_disrupted_total', { reason: 'unhealthy', ...labels })).toBe(
      1,
    );

    // termination: the drain deletes the PDB-protected pod at once (no eviction), then the instance is terminated
    await new NodeClaimTermination(env.ctx).reconcile(nc);
    expect((await nodeClaim('r-0')).metadata.annotations?.[TerminationTimestamp]).toBe(rfc(t0 + 30 * MIN));
    // the drain deletes the PDB-protected pod with the grace left before the repair deadline, 0 s: the server removes
    // it at once, no kubelet needed (the stopped one never confirms); then the Node and the instance go
    for (let i = 0; i < 4 && (await client.tryGet('Node', 'r-0')); i++) await termination.reconcile('r-0');
    expect(await client.tryGet('Pod', 'guarded', NS)).toBeUndefined();
    expect(await client.tryGet('Node', 'r-0')).toBeUndefined();
    expect(await env.metric('karpenter_pods_eviction_requests_total', { code: '429' })).toBe(0);
    const deleted = (await env.events('guarded')).find((e) => e.reason === 'Disrupted');
    expect(deleted?.message).toMatch(/This bypasses the PDB of the pod/);
    const err = await env.provider.get(nc.status?.providerID as string).catch((e: unknown) => e);
    expect(isNodeClaimNotFoundError(err)).toBe(true);
    await new NodeClaimTermination(env.ctx).reconcile(await nodeClaim('r-0'));
    expect(await client.tryGet('NodeClaim', 'r-0')).toBeUndefined();
  });

  it('3 of 10 nodes unhealthy (> roundup(20% x 10) = 2): NodeRepairBlocked on each Node, no repair', async () => {
    await launchNode(env, 'b-0'); // r-0 is gone: 10 nodes again
    for (const n of ['r-1', 'r-2', 'r-3']) await kubeletStops(env, n);
    env.clock.advance(31 * MIN);
    for (const n of ['r-1', 'r-2', 'r-3']) {
      expect(await health.reconcile(n)).toEqual({ requeueAfter: 300 });
      const nc = await nodeClaim(n);
      expect(nc.metadata.deletionTimestamp).toBeUndefined();
      expect(nc.metadata.annotations?.[TerminationTimestamp]).toBeUndefined();
    }
    const blocked = (await env.events('r-1')).filter((e) => e.reason === 'NodeRepairBlocked');
    expect(blocked.map((e) => [e.type, e.involvedObject.kind, e.message, e.count])).toEqual([
      ['Warning', 'Node', 'more than 20% nodes are unhealthy in the nodepool', 3],
    ]);
    // one recovers: 2 of 10 ≤ 2, so repair proceeds
    await env.markReady('r-3');
    expect(await health.reconcile('r-1')).toEqual({});
    expect((await nodeClaim('r-1')).metadata.deletionTimestamp).toBeDefined();
    expect(
      await env.metric('karpenter_nodeclaims_disrupted_total', {
        reason: 'unhealthy',
        nodepool: 'default',
        capacity_type: 'on-demand',
      }),
    ).toBe(2);
  });
});

describe('spot interruption (C1) on the real control plane', () => {
  it('deletes the NodeClaim in the same poll, drains under the PDB, and the ReplicaSet’s replacement gets a NodeClaim before the node is gone, avoiding the interrupted offering; kube-scheduler binds it there', async () => {
    const clock = fakeNow();
    await client.create(spotNodePool());
    const m5 = catalog.find((t) => t.name === 'm5.large');
    const resources = {
      cpu: `${m5?.allocatable.cpu}m`,
      memory: String(m5?.allocatable.memory),
      pods: String(m5?.allocatable.pods),
    };
    await createSpotNode(client, {
      labels: {
        'kubernetes.io/hostname': 'node-s',
        'kubernetes.io/arch': 'amd64',
        'kubernetes.io/os': 'linux',
        'node.kubernetes.io/instance-type': 'm5.large',
        'topology.kubernetes.io/zone': 'us-east-1a',
        'karpenter.sh/initialized': 'true',
        'karpenter.sh/registered': 'true',
      },
      status: { capacity: resources, allocatable: resources },
      annotations: { [KWOK]: 'fake' },
    });
    // 2 replicas of web (the shared replica's pod spec) that kube-scheduler binds to node-s, under the PDB
    const replica = webReplica('web');
    await client.create({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: NS },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: 'web' } },
        template: { metadata: { labels: { app: 'web' } }, spec: replica.spec },
      },
    });
    await client.create(webPDB);
    const [first, second] = await waitFor(async () => {
      const run = (await pods()).filter(
        (p) => p.spec.nodeName === 'node-s' && condition(p, 'Ready') === 'True',
      );
      return run.length === 2 ? run : undefined;
    }, 'web 2/2 Running on node-s');
    await waitFor(
      async () =>
        ((await client.get('PodDisruptionBudget', 'web', NS)).status as { disruptionsAllowed?: number })
          ?.disruptionsAllowed === 1,
      'the PDB to allow one disruption',
    );
    const p = await startControllerProcess(client, clock);
    try {
      await waitFor(() => p.cluster.getNodeClaim('node-s'), 'node-s in state');
      const deps = { ...scenarioDeps(client, clock, p), provider: p.provider };
      const ctx = lifecycleContext(deps);
      const termination = nodeTermination(deps);
      const { interruption, deleted } = spotInterruption(deps);

      // the warning: in the same poll the NodeClaim is deleted and the offering is marked unavailable
      expect(await interruption.poll()).toEqual({ received: 1, deleted: 1, nodeClaims: ['node-s'] });
      expect((await client.get('NodeClaim', 'node-s')).metadata.deletionTimestamp).toBeDefined();
      expect(deleted).toEqual(['r-0']);
      expect(
        await metricOf(p, 'karpenter_interruption_received_messages_total', {
          message_type: 'spot_interrupted',
        }),
      ).toBe(1);
      expect(await metricOf(p, 'karpenter_interruption_deleted_messages_total')).toBe(1);

      // the finalizer deletes the Node; the drain taints it, one eviction passes, the PDB refuses the other (429)
      await new NodeClaimTermination(ctx).reconcile(await client.get('NodeClaim', 'node-s'));
      expect(await termination.reconcile('node-s')).toEqual({ requeueAfter: 1 });
      const node = await client.get('Node', 'node-s');
      expect(node.spec?.taints).toContainEqual({ key: 'karpenter.sh/disrupted', effect: 'NoSchedule' });
      expect(await metricOf(p, 'karpenter_pods_eviction_requests_total', { code: '200' })).toBe(1);
      expect(await metricOf(p, 'karpenter_pods_eviction_requests_total', { code: '429' })).toBe(1);
      const originals = [first, second].map((x) => x?.metadata.name as string);
      const left = await waitFor(async () => {
        const alive = (await pods()).filter(
          (x) => originals.includes(x.metadata.name as string) && !x.metadata.deletionTimestamp,
        );
        return alive.length === 1 ? alive : undefined;
      }, 'one original replica evicted, the other kept');
      expect(left[0]?.spec.nodeName).toBe('node-s');

      // the ReplicaSet replaces the evicted replica; kube-scheduler finds node-s tainted: a NodeClaim while node-s exists
      const pending = await waitFor(() => {
        const pp = p.cluster.pendingPods();
        return pp.length === 1 ? pp[0] : undefined;
      }, 'the ReplicaSet’s replacement pod Unschedulable in state');
      expect(originals).not.toContain(pending.metadata.name);
      const created = (await p.provisioner.provision()).created.map((c) => c.nodeClaim);
      expect(created).toHaveLength(1);
      expect(await client.tryGet('Node', 'node-s')).toBeDefined();
      // it launches on an offering other than the interrupted one: the cheapest still available
      const replacement = created[0] as NodeClaim;
      await new Launch(ctx).reconcile(replacement);
      expect(offeringOf(replacement)).not.toEqual(['m5.large', 'us-east-1a', 'spot']);
      expect(offeringOf(replacement)).toEqual(['m5.large', 'us-east-1b', 'spot']);
      // it registers; kube-scheduler binds the replacement pod to it and kwok runs it, node-s still draining
      const stored = await client.get('NodeClaim', replacement.metadata.name as string);
      await register(ctx, {
        ...stored,
        metadata: { ...stored.metadata, labels: replacement.metadata.labels },
        status: replacement.status,
      } as NodeClaim);
      const nodeName = (await client.list('Node')).items.find(
        (n) => n.spec?.providerID === replacement.status?.providerID,
      )?.metadata.name as string;
      expect(nodeName).toBeDefined();
      await until(
        async () => {
          const x = await client.tryGet('Pod', pending.metadata.name as string, NS);
          if (x?.spec.nodeName === nodeName && x?.status?.phase === 'Running') return true;
          const n = await client.tryGet('Node', nodeName);
          const why = x?.status?.conditions?.find((c) => c.type === 'PodScheduled')?.message;
          throw new Error(
            `pod on ${x?.spec.nodeName ?? '-'} phase ${x?.status?.phase} (${why}); node taints ` +
              `${JSON.stringify(n?.spec?.taints ?? [])} Ready ${condition(n ?? {}, 'Ready')}`,
          );
        },
        'the replacement pod Running on the replacement node',
        30_000,
        200,
      );
      expect(await client.tryGet('Node', 'node-s')).toBeDefined();
    } finally {
      await p.stop();
    }
  });
});
