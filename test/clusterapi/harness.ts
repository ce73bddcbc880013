/**
 * clusterapi end-to-end harness: the stack of `embedded/clusterapi.ts` (embedded management cluster with the real
 * CAPI/CAPA CRDs and the MachineDeployment stand-in, simulated workload cluster, the clusterapi provider and the
 * real operator) with short periods, and helpers reading both clusters.
 */
import type { Machine, MachineDeployment } from '../../src/apis/capi.ts';
import type { KubeObject } from '../../src/apis/core.ts';
import type { NodeClaim } from '../../src/apis/karpenter.ts';
import {
  type ClusterAPIStack,
  type ClusterAPIStackOptions,
  startClusterAPIStack,
} from '../../src/embedded/clusterapi.ts';
import {
  createClusterAPIObjects,
  type SampleDeployment,
  sampleClusterAPIObjects,
  sampleClusterAPIWorkloadObjects,
} from '../../src/sim/capi/clusterapi.ts';
import { testOptions } from '../e2e/harness.ts';

/** A running clusterapi e2e environment. */
export interface ClusterAPIE2E {
  stack: ClusterAPIStack;
  /** Creates the sample Cluster + deployments (management) and NodeClass + NodePool (workload). */
  setup(
    deployments: SampleDeployment[],
    workload?: Parameters<typeof sampleClusterAPIWorkloadObjects>[0],
  ): Promise<void>;
  deployment(name: string): Promise<MachineDeployment>;
  machines(deployment?: string): Promise<Machine[]>;
  nodeClaims(): Promise<NodeClaim[]>;
  stop(): Promise<void>;
}

/** Starts everything with fast periods. */
export async function startClusterAPIE2E(o: ClusterAPIStackOptions = {}): Promise<ClusterAPIE2E> {
  const stack = await startClusterAPIStack({
    env: {
      workload: {
        kubeletReadyDelaySeconds: 0,
        podStartDelaySeconds: 0.2,
        schedulerRetrySeconds: 1,
        maxTerminationSeconds: 1,
      },
    },
    standIn: { periodSeconds: 0.1 },
    provider: { pollSeconds: 0.1, cacheSeconds: 0.5, machineTimeoutSeconds: 60 },
    operator: testOptions({ leaderElect: false }),
    tuning: { disruption: { pollSeconds: 1, validationSeconds: 1 } },
    nodeClassPeriodSeconds: 0.5,
    ...o,
  });
  const mgmt = stack.env.mgmt;
  const wl = stack.env.workload.client;
  return {
    stack,
    async setup(deployments, workload = {}) {
      await createClusterAPIObjects(mgmt, sampleClusterAPIObjects({ deployments }));
      await createClusterAPIObjects(wl, sampleClusterAPIWorkloadObjects(workload) as KubeObject[]);
    },
    deployment: async (name) => (await mgmt.get('MachineDeployment', name, 'default')) as MachineDeployment,
    async machines(deployment) {
      const items = (await mgmt.list('Machine', { namespace: 'default' })).items as Machine[];
      return items.filter(
        (m) => !deployment || m.metadata.labels?.['cluster.x-k8s.io/deployment-name'] === deployment,
      );
    },
    async nodeClaims() {
      return ((await wl.list('NodeClaim')).items as NodeClaim[]).filter((n) => !n.metadata.deletionTimestamp);
    },
    stop: () => stack.stop(),
  };
}
