import { afterAll, beforeAll } from 'vitest';
import { describeCloudProviderConformance } from '../conformance/suite.ts';
import { type ClusterAPITestbed, clusterAPIConformanceContext, startClusterAPITestbed } from './testing.ts';

let bed: ClusterAPITestbed;
beforeAll(async () => {
  bed = await startClusterAPITestbed();
});
afterAll(() => bed?.stop());

describeCloudProviderConformance('clusterapi (embedded management cluster + CAPI stand-in)', () =>
  clusterAPIConformanceContext(bed),
);
