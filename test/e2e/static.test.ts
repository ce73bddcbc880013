/**
 * Static NodePools end to end: the real operator (with `static.capacity`, the lifecycle controller and the kwok
 * provider) in the simulated cluster keeps `spec.replicas` launched NodeClaims, follows a scale-down, and with the
 * `StaticCapacity` gate off says so with a Warning Event instead of doing nothing silently.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { KubeEvent } from '../../src/kube/types.ts';
import { defaultOptions } from '../../src/operator/options.ts';
import { type E2E, eventually, instanceTypeOf, kwokNodeClassYaml, nodeClaims, startE2E } from './harness.ts';

let env: E2E | undefined;
afterEach(async () => {
  await env?.stop();
  env = undefined;
});

const staticPoolYaml = (replicas: number) => `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: static}
spec:
  replicas: ${replicas}
  template:
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
        - {key: karpenter.k8s.aws/instance-family, operator: In, values: [m5]}
`;

const gates = (on: boolean) => ({ featureGates: { ...defaultOptions().featureGates, StaticCapacity: on } });

describe('operator e2e: static NodePools', () => {
  it('gate on: replicas 3 → 3 launched m5.large NodeClaims with Nodes; replicas 1 → 1', async () => {
    env = await startE2E({ operator: gates(true) });
    const { client } = env;
    await env.apply(`${kwokNodeClassYaml()}---\n${staticPoolYaml(3)}`);
    const launched = await eventually(async () => {
      const l = await nodeClaims(client);
      return l.length === 3 && l.every((n) => instanceTypeOf(n)) ? l : undefined;
    }, '3 launched static NodeClaims');
    expect(launched.map(instanceTypeOf)).toEqual(['m5.large', 'm5.large', 'm5.large']);
    await eventually(async () => (await client.list('Node')).items.length === 3, '3 Nodes');
    // a merge patch: the controller writes the NodePool's status meanwhile (an update could meet a 409)
    await client.patch('NodePool', 'static', undefined, { spec: { replicas: 1 } }, { type: 'merge' });
    await eventually(
      async () => (await nodeClaims(client)).length === 1,
      '1 live NodeClaim after scale-down',
    );
    // stays at 1: no re-creation after the deletions
    expect(await nodeClaims(client)).toHaveLength(1);
  });

  it('gate off: no NodeClaims and a StaticCapacityDisabled Warning on the NodePool', async () => {
    env = await startE2E({ operator: gates(false) });
    const { client } = env;
    await env.apply(`${kwokNodeClassYaml()}---\n${staticPoolYaml(3)}`);
    const ev = await eventually(
      async () =>
        ((await client.list('Event')).items as KubeEvent[]).find(
          (e) => e.involvedObject.name === 'static' && e.reason === 'StaticCapacityDisabled',
        ),
      'StaticCapacityDisabled Event',
    );
    expect(ev.type).toBe('Warning');
    expect(ev.message).toContain('enable it with --feature-gates StaticCapacity=true');
    expect(await nodeClaims(client)).toHaveLength(0);
  });
});
