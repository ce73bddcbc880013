/**
 * Builders shared by the kwok provider's tests and its conformance run (not used by production code):
 * a KWOKNodeClass, a NodeClaim pointing at it, and a provider on a fake clock with an in-memory node store.
 */
import type { KWOKNodeClass, NodeClaim, NodeSelectorRequirementWithMinValues } from '../../apis/karpenter.ts';
import { LabelNodePool } from '../../apis/labels.ts';
import { FakeClock } from '../../kube/clock.ts';
import type { ConformanceContext } from '../conformance/suite.ts';
import type { CloudProvider } from '../types.ts';
import { InMemoryNodeWriter } from './nodes.ts';
import {
  KwokCloudProvider,
  type KwokCloudProviderDeps,
  KwokGroup,
  KwokNodeClassKind,
  sequentialInstanceIds,
} from './provider.ts';

/** A KWOKNodeClass named `name` with the given spec (Ready by default, as the CRD defaults it). */
export function kwokNodeClass(name = 'default', spec: KWOKNodeClass['spec'] = {}): KWOKNodeClass {
  return {
    apiVersion: 'karpenter.kwok.sh/v1alpha1',
    kind: 'KWOKNodeClass',
    metadata: { name },
    spec,
    status: { conditions: [{ type: 'Ready', status: 'True' }] },
  };
}

/** A NodeClaim of NodePool `default` referencing KWOKNodeClass `nodeClass`, with the given requirements. */
export function kwokNodeClaim(
  name: string,
  requirements: NodeSelectorRequirementWithMinValues[],
  nodeClass = 'default',
): NodeClaim {
  return {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodeClaim',
    metadata: { name, labels: { [LabelNodePool]: 'default' } },
    spec: {
      nodeClassRef: { group: KwokGroup, kind: KwokNodeClassKind, name: nodeClass },
      requirements,
    },
  };
}

/** A kwok provider in us-east-1 on a {@link FakeClock}, an {@link InMemoryNodeWriter}, and a NodeClass registry. */
export function kwokTestbed(overrides: Partial<KwokCloudProviderDeps> = {}): {
  provider: KwokCloudProvider;
  clock: FakeClock;
  nodes: InMemoryNodeWriter;
  nodeClasses: Map<string, KWOKNodeClass>;
  /** Advances the fake clock by `seconds` and waits for the Node writes it triggered. */
  advance(seconds: number): Promise<void>;
} {
  const clock = new FakeClock();
  const nodes = new InMemoryNodeWriter({ now: () => clock.now() });
  const nodeClasses = new Map<string, KWOKNodeClass>([['default', kwokNodeClass()]]);
  const provider = new KwokCloudProvider({
    region: 'us-east-1',
    nodes,
    clock,
    nodeClass: (n) => nodeClasses.get(n),
    instanceId: sequentialInstanceIds(),
    ...overrides,
  });
  return {
    provider,
    clock,
    nodes,
    nodeClasses,
    async advance(seconds: number): Promise<void> {
      await clock.tick(seconds * 1000);
      await provider.idle();
    },
  };
}

/**
 * The conformance context of a fresh kwok testbed (30 s registration delay, so get/list/delete are exercised
 * before and after the Node exists); `wrap` decorates the provider (e.g. with metrics).
 */
export function kwokConformanceContext(
  wrap: (p: CloudProvider) => CloudProvider = (p) => p,
): ConformanceContext {
  const bed = kwokTestbed();
  bed.nodeClasses.set('default', kwokNodeClass('default', { nodeRegistrationDelay: '30s' }));
  let n = 0;
  return {
    provider: wrap(bed.provider),
    nodeClaim: (o = {}) => {
      const nc = kwokNodeClaim(o.name ?? `default-${++n}`, o.requirements ?? []);
      if (o.labels) nc.metadata.labels = { ...nc.metadata.labels, ...o.labels };
      return nc;
    },
    markUnavailable: (it, zone, ct) => bed.provider.markUnavailable(it, zone, ct),
    advance: (s) => bed.advance(s),
  };
}
