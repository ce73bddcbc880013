/**
 * Issue 13, section 4: one `DisruptionTerminating` Event per disrupted object (the Node and its NodeClaim, as
 * upstream, never the same object twice), and `karpenter_pods_startup_duration_seconds` observes every pod that
 * went Pending → Running, also the 40 that land on existing nodes within a second (between two passes of the
 * metrics controller, which is how the metric stayed empty).
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { KubeEvent } from '../../src/kube/types.ts';
import {
  allRunning,
  deploymentYaml,
  type E2E,
  eventually,
  kwokNodeClassYaml,
  scale,
  startE2E,
} from './harness.ts';

let env: E2E | undefined;
afterAll(async () => {
  await env?.stop();
});

describe('events and pod metrics', () => {
  it('publishes each disruption Event once per object and observes every pod startup', async () => {
    env = await startE2E({ operator: false });
    const { client } = env;
    const op = await env.startOperator(
      { leaderElect: false, metricsPeriodSeconds: 5 },
      // nominations live 2 s (upstream 20 s): the emptied nodes are consolidation candidates soon after
      { tuning: { disruption: { pollSeconds: 1, validationSeconds: 1 }, nominationTTLSeconds: 2 } },
    );
    await env.apply(`${kwokNodeClassYaml()}---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: 1h}
  template:
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
        - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
        - {key: karpenter.k8s.aws/instance-size, operator: In, values: [large]}
---
${deploymentYaml('reserve', 4, '1500m', '256Mi').replace('      containers:', '      terminationGracePeriodSeconds: 0\n      containers:')}`);
    // nodes for the reserve pods, then emptied (consolidateAfter 1h keeps them): the 40 pods below start on them at once
    const startupCount = async (): Promise<number> => {
      const m = (await op.registry.getSingleMetric('karpenter_pods_startup_duration_seconds')?.get())?.values;
      return m?.find((v) => (v as { metricName?: string }).metricName?.endsWith('_count'))?.value ?? 0;
    };
    await eventually(() => allRunning(client, 4), 'reserve pods running', 90_000);
    await eventually(async () => (await startupCount()) === 4, 'reserve pod startups observed', 20_000);
    await scale(client, 'reserve', 0);
    await eventually(async () => (await client.list('Pod')).items.length === 0, 'reserve pods gone', 60_000);
    const nodes = (await client.list('Node')).items.length;
    expect(nodes).toBeGreaterThanOrEqual(2);
    // grace 0 as the reserve pods: scaled to 0 below, pods with the default 30 s grace kept their nodes 30 s longer
    await env.apply(
      deploymentYaml('web', 40, '100m', '128Mi').replace(
        '      containers:',
        '      terminationGracePeriodSeconds: 0\n      containers:',
      ),
    );
    await eventually(() => allRunning(client, 40), '40 pods running', 90_000);
    expect((await client.list('Node')).items.length).toBe(nodes); // no new capacity was needed
    await eventually(async () => (await startupCount()) >= 44, 'startup durations observed', 20_000).catch(
      async (e) => {
        throw new Error(`${(e as Error).message}: ${await startupCount()} observed`);
      },
    );
    expect(await startupCount()).toBe(44); // 4 reserve + 40 web pods, each once

    await client.patch(
      'NodePool',
      'default',
      undefined,
      { spec: { disruption: { consolidateAfter: '0s' } } },
      { type: 'merge' },
    );
    await scale(client, 'web', 0);
    await eventually(
      async () => (await client.list('Node')).items.length === 0,
      'empty nodes removed',
      90_000,
    );
    await op.recorder.flush();
    const events = ((await client.list('Event')).items as KubeEvent[]).filter(
      (e) => e.reason === 'DisruptionTerminating',
    );
    const per = new Map<string, number>();
    for (const e of events) {
      const k = `${e.involvedObject.kind}/${e.involvedObject.name}`;
      per.set(k, (per.get(k) ?? 0) + (e.count ?? 1));
    }
    expect(
      [...per.values()].every((n) => n === 1),
      JSON.stringify([...per]),
    ).toBe(true);
    expect([...per.keys()].filter((k) => k.startsWith('NodeClaim/'))).toHaveLength(nodes);
    expect([...per.keys()].filter((k) => k.startsWith('Node/'))).toHaveLength(nodes);
    expect(events.every((e) => e.message === 'Disrupting Node: Empty')).toBe(true);
  }, 240_000);
});
