import { describeCloudProviderConformance } from '../conformance/suite.ts';
import { kwokNodeClaim, kwokNodeClass, kwokTestbed } from './testing.ts';

describeCloudProviderConformance('kwok', async () => {
  const bed = kwokTestbed();
  // A registration delay so that get/list/delete are exercised both before and after the Node exists.
  bed.nodeClasses.set('default', kwokNodeClass('default', { nodeRegistrationDelay: '30s' }));
  let n = 0;
  return {
    provider: bed.provider,
    nodeClaim: (o = {}) => {
      const nc = kwokNodeClaim(o.name ?? `default-${++n}`, o.requirements ?? []);
      if (o.labels) nc.metadata.labels = { ...nc.metadata.labels, ...o.labels };
      return nc;
    },
    markUnavailable: (it, zone, ct) => bed.provider.markUnavailable(it, zone, ct),
    advance: (s) => bed.advance(s),
  };
});
