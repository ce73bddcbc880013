/**
 * Node termination through the embedded API server and the real client: tiered drain, PDBs (429 → FailedDraining,
 * then progress once the PDB allows), `karpenter.sh/do-not-disrupt`, `terminationGracePeriod` forcing deletion,
 * VolumeAttachments. Time is the test env's FakeClock; each step is one explicit reconcile.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Pod } from '../../../src/apis/core.ts';
import type { NodeTerminationController } from '../../../src/controllers/node/termination/controller.ts';
import { NodeClaimTermination } from '../../../src/controllers/nodeclaim/lifecycle/termination.ts';
import { startTestEnv, type TestEnv } from '../../../src/controllers/nodeclaim/testing.ts';
import { DrainGroups, launchNode as launchShared, nodeTermination } from '../scenarios.ts';

let env: TestEnv;
let ctl: NodeTerminationController;
const NS = 'w';

beforeAll(async () => {
  env = await startTestEnv();
  // object timestamps (deletionTimestamp → the termination deadline) follow the fake clock
  Object.defineProperty(env.cluster.store, 'now', { value: () => env.clock.now() });
  await env.client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
  ctl = nodeTermination({ ...env, cloudProvider: env.provider });
});
afterAll(async () => env.stop());

/** A launched, registered NodeClaim `name` with its Node (both carrying the termination finalizer). */
async function launchNode(name: string, terminationGracePeriod?: string): Promise<void> {
  await launchShared(env, name, terminationGracePeriod ? { terminationGracePeriod } : {});
  const node = await env.client.get('Node', name);
  expect(node.metadata.finalizers).toContain('karpenter.sh/termination');
}

/** Creates a Running, Ready pod bound to `node`. */
async function runningPod(
  name: string,
  node: string,
  opts: {
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    daemon?: boolean;
    priorityClassName?: string;
    terminationGracePeriodSeconds?: number;
    /** `status.startTime`, ms since the epoch. */
    startTime?: number;
  } = {},
): Promise<void> {
  const pod: Pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: NS,
      labels: opts.labels ?? {},
      ...(opts.annotations ? { annotations: opts.annotations } : {}),
      ...(opts.daemon
        ? {
            ownerReferences: [
              { apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'ds', uid: 'ds-uid', controller: true },
            ],
          }
        : {}),
    },
    spec: {
      nodeName: node,
      containers: [{ name: 'c', image: 'registry.example/app:1' }],
      ...(opts.priorityClassName ? { priorityClassName: opts.priorityClassName } : {}),
      ...(opts.terminationGracePeriodSeconds !== undefined
        ? { terminationGracePeriodSeconds: opts.terminationGracePeriodSeconds }
        : {}),
    },
  };
  await env.client.create(pod);
  await env.client.patchStatus(
    'Pod',
    name,
    NS,
    {
      status: {
        phase: 'Running',
        conditions: [{ type: 'Ready', status: 'True' }],
        ...(opts.startTime !== undefined ? { startTime: new Date(opts.startTime).toISOString() } : {}),
      },
    },
    { type: 'merge' },
  );
}

async function pdb(name: string, app: string, spec: Record<string, unknown>): Promise<void> {
  await env.client.create({
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: { name, namespace: NS },
    spec: { selector: { matchLabels: { app } }, ...spec },
  });
  await env.cluster.store.settle();
}

/** The kubelet stops the pods being deleted on `node`; then the names of the pods still bound there. */
const podNames = async (node: string): Promise<string[]> => {
  await env.finishTerminating(node);
  return podsOn(node);
};

const podsOn = async (node: string): Promise<string[]> =>
  (await env.client.list('Pod', { namespace: NS })).items
    .filter((p) => p.spec.nodeName === node)
    .map((p) => p.metadata.name as string)
    .sort();

/** Deletes the NodeClaim and runs its finalizer step once: stamps the deadline, deletes the Node. Returns the deadline (ms). */
async function deleteNodeClaim(name: string): Promise<number | undefined> {
  await env.client.delete('NodeClaim', name);
  await new NodeClaimTermination(env.ctx).reconcile(await env.client.get('NodeClaim', name));
  const nc = await env.client.get('NodeClaim', name);
  const node = await env.client.get('Node', name);
  expect(node.metadata.deletionTimestamp).toBeDefined();
  const at = nc.metadata.annotations?.['karpenter.sh/nodeclaim-termination-timestamp'];
  return at ? Date.parse(at) : undefined;
}

/** Reconciles the Node until it is gone (finalizer removed), at most `passes` times; returns the passes used. */
async function finish(name: string, passes = 6): Promise<number> {
  for (let i = 1; i <= passes; i++) {
    await env.finishTerminating(name);
    await ctl.reconcile(name);
    if (!(await env.client.tryGet('Node', name))) return i;
  }
  throw new Error(`node ${name} still exists after ${passes} passes`);
}

describe('node termination drain', () => {
  it('a PDB allowing 0 disruptions blocks the drain (FailedDraining) until it allows one', async () => {
    await launchNode('pdb-1');
    await runningPod('guarded', 'pdb-1', { labels: { app: 'guarded' } });
    await pdb('guarded', 'guarded', { minAvailable: 1 });
    await env.client.delete('Node', 'pdb-1');
    for (let i = 0; i < 3; i++) {
      expect(await ctl.reconcile('pdb-1')).toEqual({ requeueAfter: 1 });
      env.clock.advance(11_000); // past the eviction backoff (max 10 s)
    }
    expect(await podNames('pdb-1')).toEqual(['guarded']);
    const events = await env.events('pdb-1');
    const failed = events.filter((e) => e.reason === 'FailedDraining' && e.type === 'Warning');
    expect(failed.map((e) => e.message)).toContainEqual(
      expect.stringMatching(
        /^Failed to drain node, evicting pod w\/guarded violates a PDB: .*disruption budget/,
      ),
    );
    expect(await env.metric('karpenter_pods_eviction_requests_total', { code: '429' })).toBe(3);
    // still cordoned and tainted meanwhile
    const node = await env.client.get('Node', 'pdb-1');
    expect(node.spec?.taints).toContainEqual({ key: 'karpenter.sh/disrupted', effect: 'NoSchedule' });
    // the PDB now allows one disruption
    await env.client.patch(
      'PodDisruptionBudget',
      'guarded',
      NS,
      { spec: { minAvailable: null, maxUnavailable: 1 } },
      { type: 'merge' },
    );
    await env.cluster.store.settle();
    env.clock.advance(11_000);
    expect(await ctl.reconcile('pdb-1')).toEqual({ requeueAfter: 1 });
    expect(await podNames('pdb-1')).toEqual([]);
    expect(await finish('pdb-1')).toBeLessThanOrEqual(3);
    expect(await env.metric('karpenter_pods_eviction_requests_total', { code: '200' })).toBe(1);
    expect(await env.metric('karpenter_pods_drained_total', { reason: 'Forceful Termination' })).toBe(1);
    expect(await env.metric('karpenter_nodes_drained_total', { nodepool: 'default' })).toBe(1);
  });

  it('evicts critical pods only after non-critical ones, DaemonSet pods after the others of their class', async () => {
    await launchNode('tier-1');
    await runningPod('app', 'tier-1', { labels: { app: 'tier-app' } });
    await runningPod('ds', 'tier-1', { daemon: true });
    await runningPod('crit', 'tier-1', { priorityClassName: 'system-cluster-critical' });
    await runningPod('crit-ds', 'tier-1', { daemon: true, priorityClassName: 'system-node-critical' });
    await pdb('tier-app', 'tier-app', { maxUnavailable: 0 });
    await env.client.delete('Node', 'tier-1');
    // tier 0 (app) is blocked by its PDB: nothing else moves
    for (let i = 0; i < 3; i++) {
      await ctl.reconcile('tier-1');
      env.clock.advance(11_000);
    }
    expect(await podNames('tier-1')).toEqual(['app', 'crit', 'crit-ds', 'ds']);
    await env.client.patch(
      'PodDisruptionBudget',
      'tier-app',
      NS,
      { spec: { maxUnavailable: 1 } },
      { type: 'merge' },
    );
    await env.cluster.store.settle();
    env.clock.advance(11_000);
    const order: string[][] = [];
    for (let i = 0; i < 4; i++) {
      await ctl.reconcile('tier-1');
      order.push(await podNames('tier-1'));
    }
    expect(order).toEqual([['crit', 'crit-ds', 'ds'], ['crit', 'crit-ds'], ['crit-ds'], []]);
    expect(await finish('tier-1')).toBeLessThanOrEqual(3);
  });

  it('a karpenter.sh/do-not-disrupt pod is never evicted; it is deleted at deadline minus its grace period', async () => {
    await launchNode('dnd-1', '10m');
    await runningPod('keep', 'dnd-1', {
      annotations: { 'karpenter.sh/do-not-disrupt': 'true' },
      terminationGracePeriodSeconds: 120,
    });
    await runningPod('free', 'dnd-1');
    const deadline = await deleteNodeClaim('dnd-1');
    expect(deadline).toBeDefined();
    const d = deadline as number;
    expect(await ctl.reconcile('dnd-1')).toEqual({ requeueAfter: 1 });
    expect(await podNames('dnd-1')).toEqual(['keep']); // `free` evicted, `keep` waits
    env.clock.set(d - 121_000);
    expect(await ctl.reconcile('dnd-1')).toEqual({ requeueAfter: 1 });
    expect(await podNames('dnd-1')).toEqual(['keep']);
    env.clock.set(d - 120_000);
    await ctl.reconcile('dnd-1');
    expect(await podNames('dnd-1')).toEqual([]);
    const disrupted = (await env.events('keep')).find((e) => e.reason === 'Disrupted');
    expect(disrupted?.message).toContain(
      'granted 120 seconds of grace-period of its 120 terminationGracePeriodSeconds',
    );
    expect(await finish('dnd-1')).toBeLessThanOrEqual(3);
  });

  it('a do-not-disrupt duration keeps its pod until it elapses (DoNotDisruptUntil, then GracePeriodElapsed); an invalid one is ignored', async () => {
    await launchNode('dnd-dur');
    const started = Math.floor(env.clock.now() / 1000) * 1000 - 20 * 60_000; // 20 min ago
    await runningPod('half-hour', 'dnd-dur', {
      annotations: { 'karpenter.sh/do-not-disrupt': '30m' },
      startTime: started,
    });
    await runningPod('typo', 'dnd-dur', { annotations: { 'karpenter.sh/do-not-disrupt': '30 min' } });
    await deleteNodeClaim('dnd-dur');
    expect(await ctl.reconcile('dnd-dur')).toEqual({ requeueAfter: 1 });
    expect(await podNames('dnd-dur')).toEqual(['half-hour']); // `typo` evicted: the invalid value is ignored
    const typo = (await env.events('typo')).find((e) => e.reason === 'InvalidDoNotDisruptAnnotation');
    expect(typo?.type).toBe('Warning');
    expect(typo?.message).toBe(
      'Invalid karpenter.sh/do-not-disrupt annotation: failed to parse "30 min" as a duration: time: unknown unit " min" in duration "30 min", ignoring annotation',
    );
    const until = (await env.events('half-hour')).find((e) => e.reason === 'DoNotDisruptUntil');
    expect(until?.message).toBe(
      `The karpenter.sh/do-not-disrupt grace period will elapse at ${new Date(started + 30 * 60_000).toISOString().replace('.000Z', 'Z')}`,
    );
    env.clock.set(started + 30 * 60_000 - 1000);
    expect(await ctl.reconcile('dnd-dur')).toEqual({ requeueAfter: 1 });
    expect(await podNames('dnd-dur')).toEqual(['half-hour']);
    env.clock.set(started + 30 * 60_000);
    await ctl.reconcile('dnd-dur');
    expect(await podNames('dnd-dur')).toEqual([]);
    const elapsed = (await env.events('half-hour')).find(
      (e) => e.reason === 'DoNotDisruptGracePeriodElapsed',
    );
    expect(elapsed?.message).toBe(
      'The karpenter.sh/do-not-disrupt grace period has elapsed, pod is now disruptable',
    );
    expect(await finish('dnd-dur')).toBeLessThanOrEqual(3);
  });

  it('terminationGracePeriod deletes PDB-protected pods once the deadline nears, then the node goes', async () => {
    await launchNode('tgp-1', '5m');
    await runningPod('stuck', 'tgp-1', { labels: { app: 'stuck' } }); // default grace 30 s
    await pdb('stuck', 'stuck', { maxUnavailable: 0 });
    const d = (await deleteNodeClaim('tgp-1')) as number;
    expect(d - env.clock.now()).toBe(300_000);
    for (const at of [d - 200_000, d - 31_000]) {
      env.clock.set(at);
      expect(await ctl.reconcile('tgp-1')).toEqual({ requeueAfter: 1 });
      expect(await podNames('tgp-1')).toEqual(['stuck']);
    }
    // upstream NodeTerminationGracePeriodExpiring: on the Node too, with the NodeClaim's termination timestamp
    const at = new Date(d).toISOString().replace(/\.\d{3}Z$/, 'Z');
    const expiring = (await env.events('tgp-1')).filter((e) => e.reason === 'TerminationGracePeriodExpiring');
    expect(expiring.map((e) => [e.involvedObject.kind, e.type, e.message]).sort()).toEqual([
      ['Node', 'Warning', `All pods will be deleted by ${at}`],
      ['NodeClaim', 'Warning', `All pods will be deleted by ${at}`],
    ]);
    env.clock.set(d - 30_000);
    await ctl.reconcile('tgp-1');
    expect(await podNames('tgp-1')).toEqual([]);
    expect(await finish('tgp-1')).toBeLessThanOrEqual(3);
    expect(await env.client.tryGet('Node', 'tgp-1')).toBeUndefined();
  });

  it('pods tolerating karpenter.sh/disrupted stay; VolumeAttachments of drained pods are awaited', async () => {
    await launchNode('va-1');
    await env.client.create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'tolerant', namespace: NS },
      spec: {
        nodeName: 'va-1',
        containers: [{ name: 'c', image: 'registry.example/app:1' }],
        tolerations: [{ key: 'karpenter.sh/disrupted', operator: 'Exists' }],
      },
    });
    await env.client.create({
      apiVersion: 'storage.k8s.io/v1',
      kind: 'VolumeAttachment',
      metadata: { name: 'va-data' },
      spec: { attacher: 'ebs.csi.aws.com', nodeName: 'va-1', source: { persistentVolumeName: 'pv-data' } },
    });
    await env.client.delete('Node', 'va-1');
    expect(await ctl.reconcile('va-1')).toEqual({ requeueAfter: 1 });
    expect(await ctl.reconcile('va-1')).toEqual({ requeueAfter: 1 });
    const awaiting = (await env.events('va-1')).find((e) => e.reason === 'AwaitingVolumeDetachment');
    expect(awaiting?.message).toBe('Awaiting deletion of bound volumeattachments (va-data)');
    expect(await podNames('va-1')).toEqual(['tolerant']);
    const nc = await env.client.get('NodeClaim', 'va-1');
    expect(nc.status?.conditions?.find((c) => c.type === 'Drained')?.status).toBe('True');
    expect(nc.status?.conditions?.find((c) => c.type === 'VolumesDetached')?.status).toBe('Unknown');
    await env.client.delete('VolumeAttachment', 'va-data');
    expect(await finish('va-1')).toBeLessThanOrEqual(3);
  });
});

/** deletionTimestamp of a pod as ms since the epoch (undefined while not terminating). */
const deletingAt = async (name: string): Promise<number | undefined> => {
  const ts = (await env.client.tryGet('Pod', name, NS))?.metadata.deletionTimestamp;
  return ts ? Date.parse(ts) : undefined;
};

describe('drain groups wait for the previous group to be gone (C2)', () => {
  it('evicts (a) app with a 120 s preStop, (b) log agent only once (a) is gone, then (c) critical, then (d) critical DaemonSet', async () => {
    await launchNode('c2');
    for (const p of DrainGroups) await runningPod(p.name, 'c2', p);
    expect(await deleteNodeClaim('c2')).toBeUndefined(); // no terminationGracePeriod
    const t0 = env.clock.now();
    expect(await ctl.reconcile('c2')).toEqual({ requeueAfter: 1 });
    // (a) asked to leave: graceful deletion with its own 135 s
    expect(await deletingAt('a-app')).toBe(t0 + 135_000);
    expect(await deletingAt('b-logs')).toBeUndefined();
    // (a) runs its preStop hook for 120 s: every pass meanwhile leaves (b), (c), (d) alone
    for (const at of [30_000, 60_000, 119_000]) {
      env.clock.set(t0 + at);
      expect(await ctl.reconcile('c2')).toEqual({ requeueAfter: 1 });
      expect(await podsOn('c2')).toEqual(['a-app', 'b-logs', 'c-crit', 'd-crit-ds']);
      expect(await deletingAt('b-logs')).toBeUndefined();
    }
    // 120 s: the preStop hook returns and the kubelet stops (a)
    env.clock.set(t0 + 120_000);
    expect(await env.finishTerminating('c2')).toEqual(['a-app']);
    expect(await ctl.reconcile('c2')).toEqual({ requeueAfter: 1 });
    expect(await deletingAt('b-logs')).toBe(t0 + 150_000); // evicted at 120 s with its default 30 s
    expect(await deletingAt('c-crit')).toBeUndefined();
    // (b) still terminating: (c) waits
    expect(await ctl.reconcile('c2')).toEqual({ requeueAfter: 1 });
    expect(await deletingAt('c-crit')).toBeUndefined();
    env.clock.set(t0 + 125_000);
    expect(await env.finishTerminating('c2')).toEqual(['b-logs']);
    expect(await ctl.reconcile('c2')).toEqual({ requeueAfter: 1 });
    expect(await deletingAt('c-crit')).toBe(t0 + 155_000);
    expect(await deletingAt('d-crit-ds')).toBeUndefined();
    env.clock.set(t0 + 130_000);
    expect(await env.finishTerminating('c2')).toEqual(['c-crit']);
    expect(await ctl.reconcile('c2')).toEqual({ requeueAfter: 1 });
    expect(await deletingAt('d-crit-ds')).toBe(t0 + 160_000);
    // the Node stays until the last group is gone
    expect(await env.client.tryGet('Node', 'c2')).toBeDefined();
    expect(await finish('c2')).toBeLessThanOrEqual(3);
    expect(await env.client.tryGet('Node', 'c2')).toBeUndefined();
  });

  it('at the terminationGracePeriod deadline every remaining pod of every group is deleted at once', async () => {
    await launchNode('c2-tgp', '5m');
    await runningPod('a-held', 'c2-tgp', { labels: { app: 'c2-held' } }); // default grace 30 s
    await pdb('c2-held', 'c2-held', { maxUnavailable: 0 });
    await runningPod('b-logs2', 'c2-tgp', { daemon: true });
    await runningPod('c-crit2', 'c2-tgp', { priorityClassName: 'system-cluster-critical' });
    await runningPod('d-crit-ds2', 'c2-tgp', { daemon: true, priorityClassName: 'system-node-critical' });
    const d = (await deleteNodeClaim('c2-tgp')) as number;
    env.clock.set(d - 31_000);
    expect(await ctl.reconcile('c2-tgp')).toEqual({ requeueAfter: 1 });
    expect(await podNames('c2-tgp')).toEqual(['a-held', 'b-logs2', 'c-crit2', 'd-crit-ds2']);
    env.clock.set(d - 30_000);
    await ctl.reconcile('c2-tgp');
    // all four deleted in the same pass, each with the 30 s left
    expect(await Promise.all(['a-held', 'b-logs2', 'c-crit2', 'd-crit-ds2'].map(deletingAt))).toEqual([
      d,
      d,
      d,
      d,
    ]);
    expect(await podNames('c2-tgp')).toEqual([]);
    expect(await finish('c2-tgp')).toBeLessThanOrEqual(3);
  });
});
