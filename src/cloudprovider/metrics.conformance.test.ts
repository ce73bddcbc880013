/** The metrics decorator (`withMetrics`, what every controller of the operator talks to) passes the conformance suite. */
import { Registry } from 'prom-client';
import { describeCloudProviderConformance } from './conformance/suite.ts';
import { kwokConformanceContext } from './kwok/testing.ts';
import { withMetrics } from './metrics.ts';

describeCloudProviderConformance('kwok behind withMetrics', async () =>
  kwokConformanceContext((p) => withMetrics(p, new Registry(), { controller: 'conformance' })),
);
