/**
 * The clusterapi provider against the real control plane (`npm run test:cluster`): the shared provider conformance
 * suite with the real Cluster API / CAPA CRDs installed in kube-apiserver v1.34 (their openAPI schemas and CEL
 * rules enforced by the real apiextensions server) and the MachineDeployment stand-in.
 */
import { afterAll, beforeAll } from 'vitest';
import {
  type ClusterAPITestbed,
  clusterAPIConformanceContext,
  startClusterAPITestbed,
} from '../../src/cloudprovider/clusterapi/testing.ts';
import { describeCloudProviderConformance } from '../../src/cloudprovider/conformance/suite.ts';
import { clusterKubeconfig } from './helpers.ts';

let bed: ClusterAPITestbed;
beforeAll(async () => {
  bed = await startClusterAPITestbed({}, clusterKubeconfig());
});
afterAll(() => bed?.stop());

describeCloudProviderConformance('clusterapi (real kube-apiserver, real CAPI CRDs)', () =>
  clusterAPIConformanceContext(bed),
);
