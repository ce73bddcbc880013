/** The metrics decorator (`withMetrics`, what every controller of the operator talks to) passes the conformance suite. */
import { Registry } from 'prom-client';
import { describeCloudProviderConformance } from './conformance/suite.ts';
import { kwokNodeClaim, kwokNodeClass, kwokTestbed } from './kwok/testing.ts';
import { withMetrics } from './metrics.ts';

describeCloudProviderConformance('kwok behind withMetrics', async () => {
  const bed = kwokTestbed();
  bed.nodeClasses.set('default', kwokNodeClass('default', { nodeRegistrationDelay: '30s' }));
  let n = 0;
  return {
    provider: withMetrics(bed.provider, new Registry(), { controller: 'conformance' }),
    nodeClaim: (o = {}) => {
      const nc = kwokNodeClaim(o.name ?? `default-${++n}`, o.requirements ?? []);
      if (o.labels) nc.metadata.labels = { ...nc.metadata.labels, ...o.labels };
      return nc;
    },
    markUnavailable: (it, zone, ct) => bed.provider.markUnavailable(it, zone, ct),
    advance: (s) => bed.advance(s),
  };
});
