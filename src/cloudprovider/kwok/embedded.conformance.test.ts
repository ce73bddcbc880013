/**
 * The embedded default provider (`EmbeddedCloudProvider`, what `capenter start` and an operator without a
 * configured cloud use) passes the conformance suite, for NodePools on a KWOKNodeClass and on an EC2NodeClass.
 */
import type { KubeObject } from '../../apis/core.ts';
import { exampleEC2NodeClass } from '../../apis/examples.ts';
import type { NodeClassReference } from '../../apis/karpenter.ts';
import { FakeClock } from '../../kube/clock.ts';
import { describeCloudProviderConformance } from '../conformance/suite.ts';
import { EC2Group, EC2NodeClassKind, EmbeddedCloudProvider } from './embedded.ts';
import { InMemoryNodeWriter } from './nodes.ts';
import { sequentialInstanceIds } from './provider.ts';
import { kwokNodeClaim, kwokNodeClass } from './testing.ts';

for (const kind of ['KWOKNodeClass', 'EC2NodeClass'] as const) {
  describeCloudProviderConformance(`embedded (${kind})`, async () => {
    const clock = new FakeClock();
    const nodes = new InMemoryNodeWriter({ now: () => clock.now() });
    const ec2 = exampleEC2NodeClass();
    ec2.status = { ...(ec2.status ?? {}), conditions: [{ type: 'Ready', status: 'True' }] } as never;
    const objects = new Map<string, KubeObject>([
      ['KWOKNodeClass/default', kwokNodeClass('default', { nodeRegistrationDelay: '30s' })],
      ['EC2NodeClass/default', ec2],
    ]);
    const provider = new EmbeddedCloudProvider({
      region: 'us-east-1',
      nodes,
      clock,
      nodeClass: (ref: NodeClassReference) => objects.get(`${ref.kind}/${ref.name}`),
      kwok: { instanceId: sequentialInstanceIds(), registrationDelaySeconds: () => 30 },
    });
    let n = 0;
    return {
      provider,
      nodeClaim: (o = {}) => {
        const nc = kwokNodeClaim(o.name ?? `default-${++n}`, o.requirements ?? []);
        if (kind === 'EC2NodeClass')
          nc.spec.nodeClassRef = { group: EC2Group, kind: EC2NodeClassKind, name: 'default' };
        if (o.labels) nc.metadata.labels = { ...nc.metadata.labels, ...o.labels };
        return nc;
      },
      markUnavailable: (it, zone, ct) => provider.markUnavailable(it, zone, ct),
      advance: async (s) => {
        await clock.tick(s * 1000);
        await provider.idle();
      },
    };
  });
}
