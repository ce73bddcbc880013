/**
 * E2E (simulated cluster, real operator) of the `NodeOverlay` gate: with it, `nodeoverlay.controller` marks the
 * overlay Ready and the provisioner orders the NodeClaim's instance types by the overlaid price and annotates it
 * `karpenter.sh/price-overlay-applied: "true"` (upstream nodeclaimtemplate.go); without it (the default), the
 * overlay is not read. The kwok provider then launches the cheapest option by the catalog's own prices in both
 * cases, as upstream's kwok provider does (only the AWS provider's CreateFleet honours the annotation upstream).
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { NodeClaim, NodeOverlay } from '../../src/apis/karpenter.ts';
import { embeddedOptions } from '../../src/operator/options.ts';
import {
  allRunning,
  deploymentYaml,
  type E2E,
  eventually,
  instanceTypeOf,
  kwokNodeClassYaml,
  nodeClaims,
  nodePoolYaml,
  startE2E,
} from './harness.ts';

let env: E2E | undefined;
afterEach(async () => {
  await env?.stop();
  env = undefined;
});

const OVERLAY = `apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: cheap-m5}
spec:
  requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}]
  price: "0.01"
`;
const POOL = nodePoolYaml('default', {
  extraRequirements:
    '        - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large, c5.large]}\n',
});

async function provisioned(nodeOverlay: boolean): Promise<NodeClaim> {
  env = await startE2E({
    operator: { featureGates: { ...embeddedOptions().featureGates, NodeOverlay: nodeOverlay } },
  });
  const { client } = env;
  await env.apply(`${kwokNodeClassYaml()}---\n${POOL}---\n${OVERLAY}`);
  if (nodeOverlay)
    await eventually(async () => {
      const o = (await client.get('NodeOverlay', 'cheap-m5')) as NodeOverlay;
      return o.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
    }, 'cheap-m5 Ready');
  await env.apply(deploymentYaml('web', 1, '1', '1Gi'));
  await eventually(() => allRunning(client, 1), '1 pod running');
  const claims = await nodeClaims(client);
  expect(claims).toHaveLength(1);
  return claims[0]!;
}
const options = (nc: NodeClaim) =>
  nc.spec.requirements.find((r) => r.key === 'node.kubernetes.io/instance-type')?.values;

describe('operator e2e: NodeOverlay gate', () => {
  it('gate on: cheap-m5 is Ready; the NodeClaim lists m5.large ($0.096 overlaid to $0.01) before c5.large ($0.085) and is annotated', async () => {
    const nc = await provisioned(true);
    expect(options(nc)).toEqual(['m5.large', 'c5.large']);
    expect(nc.metadata.annotations?.['karpenter.sh/price-overlay-applied']).toBe('true');
    // kwok launches the cheapest by its own catalog prices, as upstream kwok
    expect(instanceTypeOf(nc)).toBe('c5.large');
    const o = (await env!.client.get('NodeOverlay', 'cheap-m5')) as NodeOverlay;
    expect(o.status?.conditions?.map((c) => [c.type, c.status]).sort()).toEqual([
      ['Ready', 'True'],
      ['ValidationSucceeded', 'True'],
    ]);
  });

  it('gate off (default): the overlay is not read (no status), catalog order, no annotation', async () => {
    const nc = await provisioned(false);
    expect(options(nc)).toEqual(['c5.large', 'm5.large']);
    expect(nc.metadata.annotations?.['karpenter.sh/price-overlay-applied']).toBeUndefined();
    const o = (await env!.client.get('NodeOverlay', 'cheap-m5')) as NodeOverlay;
    expect(o.status?.conditions).toBeUndefined();
  });
});
