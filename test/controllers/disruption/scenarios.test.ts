/**
 * Drift, expiration and emptiness through the whole stack (simulated cluster + operator + disruption, expiration
 * and pod-events controllers on a pumped FakeClock). Workloads use required pod anti-affinity on the hostname so
 * each replica gets its own node.
 */
import { describe, expect, it } from 'vitest';
import type { Node } from '../../../src/apis/core.ts';
import type { NodeClaim } from '../../../src/apis/karpenter.ts';
import type { InFlightCommand } from '../../../src/controllers/disruption/orchestration.ts';
import type { WatchHandle } from '../../../src/kube/client.ts';
import type { KubeEvent } from '../../../src/kube/types.ts';
import { conditionOf } from '../../../src/state/cluster.ts';
import { type Env, liveNodeClaims, livePods, poolYaml, startEnv } from './harness.ts';

/** A Deployment whose replicas refuse to share a node. */
function spreadDeployment(name: string, replicas: number): string {
  return `apiVersion: apps/v1
kind: Deployment
metadata: {name: ${name}, namespace: default}
spec:
  replicas: ${replicas}
  selector: {matchLabels: {app: ${name}}}
  template:
    metadata: {labels: {app: ${name}}}
    spec:
      terminationGracePeriodSeconds: 5
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - topologyKey: kubernetes.io/hostname
              labelSelector: {matchLabels: {app: ${name}}}
      containers:
        - name: app
          image: registry.example/app:1
          resources: {requests: {cpu: "1", memory: 1Gi}}
`;
}

const running = async (env: Env, n: number): Promise<boolean> =>
  (await livePods(env.client)).filter((p) => p.status?.phase === 'Running').length === n;

/** Watches Nodes: max simultaneously disrupting nodes, and when each node was first seen deleting (fake ms). */
async function watchNodes(env: Env) {
  const state = new Map<string, boolean>();
  const deletingAt = new Map<string, number>();
  const out = { maxDisrupting: 0, deletingAt, handle: undefined as WatchHandle | undefined };
  out.handle = await env.client.watch(
    'Node',
    {},
    (ev) => {
      if (ev.type === 'BOOKMARK' || ev.type === 'ERROR') return;
      const n = ev.object as Node;
      const name = n.metadata.name as string;
      if (n.metadata.deletionTimestamp && !deletingAt.has(name)) deletingAt.set(name, env.clock.now());
      if (ev.type === 'DELETED') state.delete(name);
      else
        state.set(
          name,
          !!n.metadata.deletionTimestamp ||
            (n.spec?.taints ?? []).some((t) => t.key === 'karpenter.sh/disrupted'),
        );
      out.maxDisrupting = Math.max(out.maxDisrupting, [...state.values()].filter(Boolean).length);
    },
    () => {},
  );
  return out;
}

/** Watches NodeClaims: per NodeClaim, the `DisruptionReason` condition (status/reason/message) last seen on it. */
async function watchDisruptionReasons(env: Env) {
  const seen = new Map<
    string,
    { status: string; reason?: string | undefined; message?: string | undefined }
  >();
  const handle = await env.client.watch(
    'NodeClaim',
    {},
    (ev) => {
      if (ev.type === 'BOOKMARK' || ev.type === 'ERROR') return;
      const nc = ev.object as NodeClaim;
      const c = (nc.status?.conditions ?? []).find((x) => x.type === 'DisruptionReason');
      if (c) seen.set(nc.metadata.name as string, { status: c.status, reason: c.reason, message: c.message });
    },
    () => {},
  );
  return { seen, handle };
}

describe('drift', () => {
  it('changing the NodePool template rolls every node, one at a time, replacements initialized first', async () => {
    const env = await startEnv();
    const watch = await watchNodes(env);
    const reasons = await watchDisruptionReasons(env);
    const phases: Array<{ phase: string; replacementsInitialized: boolean; method: string }> = [];
    env.disruption.orchestrator.listeners.add((c: InFlightCommand) => {
      phases.push({
        phase: c.phase,
        method: c.command.method,
        replacementsInitialized: c.replacements.every(
          (r) => conditionOf(env.op.cluster.getNodeClaim(r), 'Initialized')?.status === 'True',
        ),
      });
    });
    try {
      await env.apply(
        poolYaml({ labels: '{team: a}', consolidateAfter: 'Never', budgets: '[{nodes: "1"}]' }),
      );
      await env.apply(spreadDeployment('web', 3));
      await env.until(() => running(env, 3), '3 pods running', 60_000);
      const original = (await liveNodeClaims(env.client)).map((n) => n.metadata.name as string).sort();
      expect(original).toHaveLength(3);
      await env.client.patch(
        'NodePool',
        'default',
        undefined,
        { spec: { template: { metadata: { labels: { team: 'b' } } } } },
        { type: 'merge' },
      );
      // the NodeClaims show why they are disrupted
      await env.until(
        async () =>
          (await env.client.list('NodeClaim')).items.some((nc) =>
            (nc.status?.conditions ?? []).some(
              (c) => c.type === 'Drifted' && c.status === 'True' && c.reason === 'NodePoolDrifted',
            ),
          ),
        'a Drifted=True (NodePoolDrifted) condition',
        30_000,
      );
      await env.until(
        async () => {
          const ncs = await liveNodeClaims(env.client);
          const nodes = (await env.client.list('Node')).items;
          return (
            ncs.length === 3 &&
            nodes.length === 3 &&
            ncs.every((n) => n.metadata.labels?.team === 'b') &&
            (await running(env, 3))
          );
        },
        'every node rolled to team=b',
        90_000,
      );
      const now = (await liveNodeClaims(env.client)).map((n) => n.metadata.name as string);
      expect(now.filter((n) => original.includes(n))).toEqual([]);
      const terminating = phases.filter((p) => p.phase === 'terminating');
      expect(terminating.length).toBe(3);
      expect(terminating.every((p) => p.method === 'Drift' && p.replacementsInitialized)).toBe(true);
      expect(watch.maxDisrupting).toBe(1);
      // one decision per drifted node: `replace`, or `delete` when the node's pod fits beside the others (the
      // hostname spread allows it once a replacement has room; which one depends on the order nodes came up)
      const drifted = (
        await env.op.registry.getSingleMetric('karpenter_voluntary_disruption_decisions_total')?.get()
      )?.values.filter((v) => v.labels.reason === 'drifted');
      expect(
        drifted?.reduce((sum, v) => sum + v.value, 0),
        JSON.stringify(drifted?.map((v) => [v.labels, v.value])),
      ).toBe(3);
      expect(drifted?.every((v) => ['replace', 'delete'].includes(String(v.labels.decision)))).toBe(true);
      expect(drifted?.find((v) => v.labels.decision === 'replace')?.value).toBeGreaterThanOrEqual(1);
      // each drifted NodeClaim was marked as upstream's queue does: DisruptionReason=True, reason = message = Drifted
      expect([...reasons.seen.keys()].sort()).toEqual(original);
      for (const c of reasons.seen.values())
        expect(c).toEqual({ status: 'True', reason: 'Drifted', message: 'Drifted' });
      // their pods drained under that reason (upstream eviction.go evictionReason)
      expect(await metric(env, 'karpenter_pods_drained_total', { reason: 'Drifted' })).toBe(3);
      expect(await metric(env, 'karpenter_pods_drained_total', { reason: 'Forceful Termination' })).toBe(0);
    } finally {
      reasons.handle.stop();
      watch.handle?.stop();
      await env.stop();
    }
  }, 150_000);
});

describe('rollback', () => {
  it('replacements that never initialize are deleted after the timeout and the candidate is untainted', async () => {
    let stall = false;
    const env = await startEnv({
      kubeletReadyDelaySeconds: () => (stall ? 1e7 : 1),
      disruption: { replacementTimeoutSeconds: 120 },
    });
    // Per node, the disrupted-taint state of every watch event, in order.
    const taintHistory = new Map<string, boolean[]>();
    const nodeWatch = await env.client.watch(
      'Node',
      {},
      (ev) => {
        if (ev.type === 'BOOKMARK' || ev.type === 'ERROR') return;
        const n = ev.object as Node;
        const name = n.metadata.name as string;
        const tainted = (n.spec?.taints ?? []).some((t) => t.key === 'karpenter.sh/disrupted');
        const seq = taintHistory.get(name) ?? [];
        if (seq.at(-1) !== tainted) seq.push(tainted);
        taintHistory.set(name, seq);
      },
      () => {},
    );
    let rolledBack: InFlightCommand | undefined;
    env.disruption.orchestrator.listeners.add((c: InFlightCommand) => {
      if (c.phase === 'rolledBack' && !rolledBack) {
        env.pause();
        rolledBack = { ...c, replacements: [...c.replacements] };
      }
    });
    try {
      await env.apply(poolYaml({ labels: '{team: a}', consolidateAfter: 'Never' }));
      await env.apply(spreadDeployment('web', 1));
      await env.until(() => running(env, 1), '1 pod running', 60_000);
      const [original] = await liveNodeClaims(env.client);
      stall = true;
      const t0 = env.clock.now();
      await env.client.patch(
        'NodePool',
        'default',
        undefined,
        { spec: { template: { metadata: { labels: { team: 'b' } } } } },
        { type: 'merge' },
      );
      const c = await env.until(() => rolledBack, 'a rolled back command', 60_000);
      expect(c.failure).toBe('timed out after 120s waiting for replacements to initialize');
      expect(env.clock.now() - t0).toBeGreaterThanOrEqual(120_000);
      expect(c.replacements).toHaveLength(1);
      const replacement = await env.client.tryGet('NodeClaim', c.replacements[0] as string);
      expect(replacement === undefined || !!replacement.metadata.deletionTimestamp).toBe(true);
      const node = (await env.client.list('Node')).items.find(
        (n) => n.spec?.providerID === original?.status?.providerID,
      );
      expect(node?.metadata.deletionTimestamp).toBeUndefined();
      // The rollback removed the disrupted taint. (The node is still drifted, so the next pass may taint it
      // again right away; the watch shows the tainted → untainted transition whatever happens after.)
      const seq = taintHistory.get(node?.metadata.name as string) ?? [];
      expect(seq.indexOf(true)).toBeGreaterThanOrEqual(0);
      expect(seq.indexOf(false, seq.indexOf(true))).toBeGreaterThan(seq.indexOf(true));
      expect(await running(env, 1)).toBe(true);
      expect(
        await metric(env, 'karpenter_voluntary_disruption_queue_failures_total', {
          decision: 'replace',
          reason: 'drifted',
          consolidation_type: '',
        }),
      ).toBe(1);
      // upstream's Events on the replacement NodeClaim: launched, then waited on (disruption/events/events.go)
      await env.op.recorder.flush();
      const onReplacement = ((await env.client.list('Event')).items as KubeEvent[])
        .filter((e) => e.involvedObject.kind === 'NodeClaim' && e.involvedObject.name === c.replacements[0])
        .map((e) => [e.reason, e.message]);
      expect(onReplacement).toEqual(
        expect.arrayContaining([
          ['DisruptionLaunching', 'Launching NodeClaim: Drifted'],
          ['DisruptionWaitingReadiness', 'Waiting on readiness to continue disruption'],
        ]),
      );
    } finally {
      nodeWatch.stop();
      env.resume();
      await env.stop();
    }
  }, 150_000);
});

describe('expiration', () => {
  it('expireAfter deletes nodes past their lifetime; their pods move to new nodes', async () => {
    const env = await startEnv({ msPerStep: 1000 });
    const reasons = await watchDisruptionReasons(env);
    try {
      await env.apply(poolYaml({ expireAfter: '10m', consolidateAfter: 'Never' }));
      await env.apply(spreadDeployment('web', 2));
      await env.until(() => running(env, 2), '2 pods running', 60_000);
      const original = await liveNodeClaims(env.client);
      const created = Math.max(...original.map((n) => Date.parse(n.metadata.creationTimestamp ?? '')));
      // the original NodeClaims gone, not merely deleting: their finalizer goes only after their Nodes were drained,
      // and the drain (each original's pod evicted) is what the drained-pods metric below counts. While one is still
      // deleting, its pod can still be Running there next to the replacement of the other one (both nominated to
      // replacements before the evictions), so "2 running and no live original" passed with one pod evicted on a
      // loaded machine.
      await env.until(
        async () => {
          const all = (await env.client.list('NodeClaim')).items as NodeClaim[];
          const names = new Set(all.map((n) => n.metadata.name));
          const live = all.filter((n) => !n.metadata.deletionTimestamp);
          return (
            original.every((o) => !names.has(o.metadata.name)) && live.length >= 2 && (await running(env, 2))
          );
        },
        'original nodes expired, drained, deleted and replaced',
        90_000,
      );
      // not before their lifetime
      expect(env.clock.now() - created).toBeGreaterThanOrEqual(600_000);
      expect(
        await metric(env, 'karpenter_nodeclaims_disrupted_total', {
          reason: 'expired',
          nodepool: 'default',
          capacity_type: 'on-demand',
        }),
      ).toBeGreaterThanOrEqual(2);
      // upstream's expiration controller deletes without stamping DisruptionReason (only the disruption queue
      // does), so the expired nodes' pods count as drained by "Forceful Termination"
      expect(original.filter((o) => reasons.seen.has(o.metadata.name as string))).toEqual([]);
      expect(
        await metric(env, 'karpenter_pods_drained_total', { reason: 'Forceful Termination' }),
      ).toBeGreaterThanOrEqual(2);
      expect(await metric(env, 'karpenter_pods_drained_total', { reason: 'Expired' })).toBe(0);
    } finally {
      reasons.handle.stop();
      await env.stop();
    }
  }, 180_000); // startup + the two waits (60 s + 90 s)
});

describe('emptiness', () => {
  it('an empty node is removed once consolidateAfter has passed since its last pod left', async () => {
    const env = await startEnv();
    const watch = await watchNodes(env);
    const reasons = await watchDisruptionReasons(env);
    try {
      await env.apply(
        poolYaml({ policy: 'WhenEmpty', consolidateAfter: '2m', budgets: '[{nodes: "100%"}]' }),
      );
      await env.apply(spreadDeployment('web', 3));
      await env.until(() => running(env, 3), '3 pods running', 60_000);
      expect(await liveNodeClaims(env.client)).toHaveLength(3);
      await env.client.patch('Deployment', 'web', 'default', { spec: { replicas: 1 } }, { type: 'merge' });
      await env.until(async () => (await livePods(env.client)).length === 1, 'scaled to 1', 30_000);
      const emptiedAt = env.clock.now();
      await env.until(
        async () => (await env.client.list('Node')).items.length === 1,
        'empty nodes removed',
        60_000,
      );
      const removed = [...watch.deletingAt.values()];
      expect(removed).toHaveLength(2);
      for (const at of removed) {
        expect(at - emptiedAt).toBeGreaterThanOrEqual(120_000 - 6_000); // pods left within the scale-down window
        expect(at - emptiedAt).toBeLessThanOrEqual(120_000 + 10_000 + 15_000 + 20_000); // + poll + validation + slack
      }
      expect(await running(env, 1)).toBe(true);
      const events = (await env.client.list('Event')).items.filter(
        (e) => (e as { reason?: string }).reason === 'DisruptionTerminating',
      );
      expect(events.map((e) => (e as { message?: string }).message)).toContain('Disrupting Node: Empty');
      // the two consolidated NodeClaims carried DisruptionReason=True, reason = message = Empty; the kept one none
      expect([...reasons.seen.values()]).toEqual([
        { status: 'True', reason: 'Empty', message: 'Empty' },
        { status: 'True', reason: 'Empty', message: 'Empty' },
      ]);
      const kept = (await liveNodeClaims(env.client)).map((n) => n.metadata.name as string);
      expect(kept.filter((n) => reasons.seen.has(n))).toEqual([]);
    } finally {
      reasons.handle.stop();
      watch.handle?.stop();
      await env.stop();
    }
  }, 150_000);
});

async function metric(env: Env, name: string, labels: Record<string, string>): Promise<number> {
  const m = env.op.registry.getSingleMetric(name);
  if (!m) return 0;
  const v = (await m.get()).values.find((x) =>
    Object.entries(labels).every(([k, val]) => String(x.labels[k] ?? '') === val),
  );
  return v?.value ?? 0;
}
