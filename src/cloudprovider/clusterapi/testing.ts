/**
 * Test bed of the clusterapi provider (not used by production code): an embedded management API server with the
 * real Cluster API / CAPA CRDs, the MachineDeployment stand-in, and a provider per namespace. The conformance run
 * and the provider tests use it.
 */
import type { KubeObject } from '../../apis/core.ts';
import type {
  ClusterAPINodeClass,
  NodeClaim,
  NodeSelectorRequirementWithMinValues,
} from '../../apis/karpenter.ts';
import { LabelNodePool } from '../../apis/labels.ts';
import { machineDeploymentNodeShape } from '../../embedded/rules.ts';
import { KubeClient } from '../../kube/client.ts';
import { RealClock } from '../../kube/clock.ts';
import { type EmbeddedCluster, startEmbeddedCluster } from '../../sim/apiserver/index.ts';
import {
  createClusterAPIObjects,
  type SampleDeployment,
  sampleClusterAPIObjects,
} from '../../sim/capi/clusterapi.ts';
import { capiCRDs } from '../../sim/capi/environment.ts';
import {
  type CAPIMachineDeploymentOptions,
  CAPIMachineDeploymentStandIn,
} from '../../sim/capi/machinedeployment.ts';
import type { ConformanceContext } from '../conformance/suite.ts';
import {
  ClusterAPICloudProvider,
  type ClusterAPICloudProviderDeps,
  ClusterAPIGroup,
  ClusterAPINodeClassKind,
} from './provider.ts';

/** The deployments of the conformance run: m5.large in two zones (one spot), m5.xlarge, c5.2xlarge, a generic one. */
export const ConformanceDeployments: SampleDeployment[] = [
  { name: 'm5-large-a', instanceType: 'm5.large', failureDomain: 'us-east-1a' },
  { name: 'm5-large-b', instanceType: 'm5.large', failureDomain: 'us-east-1b' },
  { name: 'm5-large-b-spot', instanceType: 'm5.large', failureDomain: 'us-east-1b', spot: true },
  { name: 'm5-xlarge-a', instanceType: 'm5.xlarge', failureDomain: 'us-east-1a' },
  { name: 'c5-2xlarge-b', instanceType: 'c5.2xlarge', failureDomain: 'us-east-1b' },
  {
    name: 'generic-a',
    failureDomain: 'us-east-1a',
    price: 0.9,
    capacityAnnotations: { cpu: '16', memory: '64Gi', maxPods: '58' },
  },
];

/** A ClusterAPINodeClass selecting every member deployment (or those with `matchLabels`). */
export function clusterAPINodeClass(
  name = 'default',
  matchLabels: Record<string, string> = {},
): ClusterAPINodeClass {
  return {
    apiVersion: 'karpenter.cluster.x-k8s.io/v1alpha1',
    kind: 'ClusterAPINodeClass',
    metadata: { name },
    spec: { scalableResourceSelector: { matchLabels } },
    status: { conditions: [] },
  };
}

/** A NodeClaim of NodePool `default` referencing ClusterAPINodeClass `nodeClass`. */
export function clusterAPINodeClaim(
  name: string,
  requirements: NodeSelectorRequirementWithMinValues[],
  nodeClass = 'default',
): NodeClaim {
  return {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodeClaim',
    metadata: { name, labels: { [LabelNodePool]: 'default' } },
    spec: {
      nodeClassRef: { group: ClusterAPIGroup, kind: ClusterAPINodeClassKind, name: nodeClass },
      requirements,
    },
  };
}

/** A running management server with the stand-in. */
export interface ClusterAPITestbed {
  /** The embedded server (undefined on an existing cluster). */
  server: EmbeddedCluster | undefined;
  client: KubeClient;
  standIn: CAPIMachineDeploymentStandIn;
  /** A fresh namespace holding `deployments` (and a Cluster), and a provider for it. */
  namespace(
    deployments?: SampleDeployment[],
    deps?: Partial<ClusterAPICloudProviderDeps>,
  ): Promise<{
    namespace: string;
    provider: ClusterAPICloudProvider;
    nodeClasses: Map<string, ClusterAPINodeClass>;
  }>;
  stop(): Promise<void>;
}

let counter = 0;

/**
 * Starts the management server and the stand-in (fast periods). With `kubeconfig`, an existing cluster (a real
 * control plane) is used instead of an embedded server: the Cluster API / CAPA CRDs are created there when missing
 * and the test namespaces are deleted at the end.
 */
export async function startClusterAPITestbed(
  standIn: Partial<Omit<CAPIMachineDeploymentOptions, 'client' | 'clock'>> = {},
  kubeconfig?: string,
): Promise<ClusterAPITestbed> {
  const clock = new RealClock();
  let server: EmbeddedCluster | undefined;
  let client: KubeClient;
  if (kubeconfig) {
    client = KubeClient.fromKubeconfig(kubeconfig, { clock, userAgent: 'clusterapi-test' });
    for (const crd of capiCRDs()) {
      if (await client.tryGet('CustomResourceDefinition', crd.metadata!.name!)) continue;
      await client.create(crd);
    }
    const deadline = Date.now() + 60_000;
    for (const crd of capiCRDs()) {
      for (;;) {
        const got = (await client.get('CustomResourceDefinition', crd.metadata!.name!)) as {
          status?: { conditions?: Array<{ type: string; status: string }> };
        };
        if (got.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) break;
        if (Date.now() > deadline) throw new Error(`CRD ${crd.metadata!.name} not Established`);
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  } else {
    server = await startEmbeddedCluster({});
    for (const crd of capiCRDs()) server.installCRD(crd);
    client = KubeClient.fromKubeconfig(server.kubeconfig, { clock, userAgent: 'clusterapi-test' });
  }
  const namespaces: string[] = [];
  const md = new CAPIMachineDeploymentStandIn({
    nodeShape: machineDeploymentNodeShape,
    client,
    clock,
    periodSeconds: 0.05,
    ...standIn,
  });
  md.start();
  const providers: ClusterAPICloudProvider[] = [];
  return {
    server,
    client,
    standIn: md,
    async namespace(deployments = ConformanceDeployments, deps = {}) {
      const namespace = `capi-${process.pid}-${++counter}`;
      namespaces.push(namespace);
      await client.create({
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: namespace },
      } as KubeObject);
      await createClusterAPIObjects(client, sampleClusterAPIObjects({ namespace, deployments }));
      const nodeClasses = new Map([['default', clusterAPINodeClass()]]);
      const provider = new ClusterAPICloudProvider({
        management: client,
        namespace,
        clock,
        nodeClass: (n) => nodeClasses.get(n),
        pollSeconds: 0.05,
        machineTimeoutSeconds: 30,
        cacheSeconds: 0,
        ...deps,
      });
      providers.push(provider);
      return { namespace, provider, nodeClasses };
    },
    async stop() {
      for (const p of providers) p.stop();
      await md.stop();
      if (!server) for (const ns of namespaces) await client.tryDelete('Namespace', ns);
      client.close();
      await server?.stop();
    },
  };
}

/** The conformance context of a fresh namespace on `bed`. */
export async function clusterAPIConformanceContext(bed: ClusterAPITestbed): Promise<ConformanceContext> {
  const { provider } = await bed.namespace();
  let n = 0;
  return {
    provider,
    nodeClaim: (o = {}) => {
      const nc = clusterAPINodeClaim(o.name ?? `default-${++n}`, o.requirements ?? []);
      if (o.labels) nc.metadata.labels = { ...nc.metadata.labels, ...o.labels };
      return nc;
    },
    markUnavailable: (it, zone, ct) => provider.markUnavailable(it, zone, ct),
  };
}
