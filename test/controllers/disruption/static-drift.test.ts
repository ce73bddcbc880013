/**
 * Static drift through the whole stack (simulated cluster + operator with the `StaticCapacity` gate): a template
 * change drifts the nodes of a static NodePool; `StaticDrift` replaces them one at a time (budget 1) with fresh
 * template NodeClaims, and the NodePool never has fewer than `replicas` live NodeClaims nor more than
 * `replicas + 1`; expired static NodeClaims get successors.
 */
import { describe, expect, it } from 'vitest';
import type { InFlightCommand } from '../../../src/controllers/disruption/orchestration.ts';
import { liveNodeClaims, startEnv } from './harness.ts';

const staticPool = (team: string, expireAfter = '720h') => `apiVersion: karpenter.kwok.sh/v1alpha1
kind: KWOKNodeClass
metadata: {name: default}
spec: {}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: static}
spec:
  replicas: 2
  template:
    metadata:
      labels: {team: ${team}}
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}
      expireAfter: ${expireAfter}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
        - {key: karpenter.k8s.aws/instance-family, operator: In, values: [m5]}
  disruption:
    consolidateAfter: 0s
    budgets: [{nodes: "1"}]
`;

describe('static drift', () => {
  it('a template change replaces each static node one for one, by StaticDrift, never below replicas', async () => {
    const env = await startEnv({ featureGates: { StaticCapacity: true } });
    const methods: string[] = [];
    env.disruption.orchestrator.listeners.add((c: InFlightCommand) => {
      if (c.phase === 'terminating') methods.push(c.command.method);
    });
    let min = Number.POSITIVE_INFINITY;
    let max = 0;
    try {
      await env.apply(staticPool('a'));
      await env.until(
        async () => (await env.client.list('Node')).items.length === 2,
        '2 static nodes',
        60_000,
      );
      const original = (await liveNodeClaims(env.client)).map((n) => n.metadata.name as string).sort();
      expect(original).toHaveLength(2);
      await env.client.patch(
        'NodePool',
        'static',
        undefined,
        { spec: { template: { metadata: { labels: { team: 'b' } } } } },
        { type: 'merge' },
      );
      await env.until(
        async () => {
          const ncs = await liveNodeClaims(env.client);
          min = Math.min(min, ncs.length);
          max = Math.max(max, ncs.length);
          return ncs.length === 2 && ncs.every((n) => n.metadata.labels?.team === 'b');
        },
        'both static nodes rolled to team=b',
        90_000,
      );
      const now = (await liveNodeClaims(env.client)).map((n) => n.metadata.name as string);
      expect(now.filter((n) => original.includes(n))).toEqual([]);
      expect(methods).toEqual(['StaticDrift', 'StaticDrift']);
      expect(min).toBe(2);
      expect(max).toBeLessThanOrEqual(3);
    } finally {
      await env.stop();
    }
  }, 150_000);

  it('expired static NodeClaims are deleted by expiration and static.capacity creates their successors', async () => {
    const env = await startEnv({ featureGates: { StaticCapacity: true } });
    try {
      await env.apply(staticPool('a', '5m'));
      await env.until(
        async () => (await env.client.list('Node')).items.length === 2,
        '2 static nodes',
        60_000,
      );
      const original = (await liveNodeClaims(env.client)).map((n) => n.metadata.name as string);
      await env.until(
        async () => {
          const live = (await liveNodeClaims(env.client)).map((n) => n.metadata.name as string);
          return live.length === 2 && live.every((n) => !original.includes(n));
        },
        '2 successors of the expired static NodeClaims',
        90_000,
      );
    } finally {
      await env.stop();
    }
  }, 150_000);
});
