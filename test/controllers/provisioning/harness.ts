/**
 * Test harness for the provisioning integration tests: a simulated cluster (embedded API server + CRDs; the
 * stand-ins are off so nothing binds pods or starts nodes behind the test's back), a KWOKNodeClass, the kwok
 * provider writing Nodes through the client, and a Cluster state + Provisioner on a FakeClock.
 */
import { Registry } from 'prom-client';
import type { Node, Pod } from '../../../src/apis/core.ts';
import type { KWOKNodeClass, NodeClaim, NodePool } from '../../../src/apis/karpenter.ts';
import { getInstanceTypes } from '../../../src/cloudprovider/aws/catalog/index.ts';
import { KubeNodeWriter } from '../../../src/cloudprovider/kwok/kubenodes.ts';
import {
  KwokCloudProvider,
  type KwokCloudProviderDeps,
  sequentialInstanceIds,
} from '../../../src/cloudprovider/kwok/provider.ts';
import type { InstanceType } from '../../../src/cloudprovider/types.ts';
import { Provisioner, type ProvisionerOptions } from '../../../src/controllers/provisioning/provisioner.ts';
import { type SimulatedCluster, startSimulatedCluster } from '../../../src/embedded/cluster.ts';
import type { KubeClient } from '../../../src/kube/client.ts';
import { FakeClock } from '../../../src/kube/clock.ts';
import { EventRecorder } from '../../../src/kube/events.ts';
import { SharedInformers } from '../../../src/kube/informer.ts';
import { type Logger, silentLogger } from '../../../src/kube/logger.ts';
import type { KubeEvent } from '../../../src/kube/types.ts';
import { Cluster } from '../../../src/state/cluster.ts';

/** The us-east-1 catalog the kwok provider uses by default. */
export const catalog = getInstanceTypes({ region: 'us-east-1' }).instanceTypes as InstanceType[];

/** One controller "process": its own informers, state, provider and provisioner on the shared clock. */
export interface ControllerProcess {
  informers: SharedInformers;
  cluster: Cluster;
  provider: KwokCloudProvider;
  provisioner: Provisioner;
  recorder: EventRecorder;
  registry: Registry;
  stop(): Promise<void>;
}

/** A running test environment. */
export interface Env {
  sim: SimulatedCluster;
  clock: FakeClock;
  client: SimulatedCluster['client'];
  /**
   * Starts a controller process (its own informers, state and provisioner; informers synced before it
   * resolves), logging to `logger` (default: silent).
   */
  startProcess(
    options?: ProvisionerOptions,
    logger?: Logger,
    providerDeps?: Partial<KwokCloudProviderDeps>,
  ): Promise<ControllerProcess>;
  stop(): Promise<void>;
}

export { eventually } from '../../../src/testing/eventually.ts';

/** Starts the environment with KWOKNodeClass `default` (Ready). */
export async function startEnv(): Promise<Env> {
  const clock = new FakeClock(Date.UTC(2025, 0, 1));
  const sim = await startSimulatedCluster({
    clock,
    components: { scheduler: false, kubelet: false, podGC: false, workloads: false },
  });
  const client = sim.client;
  await createKwokNodeClass(client);
  const processes: ControllerProcess[] = [];
  return {
    sim,
    clock,
    client,
    async startProcess(options = {}, logger = silentLogger(), providerDeps = {}) {
      const p = await startControllerProcess(client, clock, options, logger, providerDeps);
      processes.push(p);
      return p;
    },
    async stop() {
      for (const p of processes) await p.stop();
      await sim.stop();
    },
  };
}

/**
 * One controller "process" on `client` (any API server serving capenter's CRDs: the embedded one, or the real
 * control plane of test/cluster): its own informers (synced before it resolves), Cluster state, the kwok provider
 * writing Nodes through `client` (KWOKNodeClasses read from state), a recorder, a registry and a Provisioner, all
 * on `clock`. `stop()` flushes events and stops the informers; it does not close `client`.
 */
export async function startControllerProcess(
  client: KubeClient,
  clock: FakeClock,
  options: ProvisionerOptions = {},
  logger: Logger = silentLogger(),
  providerDeps: Partial<KwokCloudProviderDeps> = {},
): Promise<ControllerProcess> {
  const informers = new SharedInformers(client, { clock });
  const registry = new Registry();
  let cluster: Cluster | undefined;
  const provider = new KwokCloudProvider({
    region: 'us-east-1',
    nodes: new KubeNodeWriter(client),
    clock,
    instanceId: sequentialInstanceIds(),
    nodeClass: (name) =>
      cluster?.getNodeClass({ group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name }) as
        | KWOKNodeClass
        | undefined,
    ...providerDeps,
  });
  cluster = new Cluster({
    client,
    informers,
    clock,
    nodeClassKinds: provider.supportedNodeClasses(),
    registry,
  });
  informers.start();
  await informers.waitForSync(10_000);
  const recorder = new EventRecorder(client, { clock });
  const provisioner = new Provisioner({
    client,
    cluster,
    cloudProvider: provider,
    clock,
    logger,
    recorder,
    registry,
    options,
  });
  const c = cluster;
  return {
    informers,
    cluster: c,
    provider,
    provisioner,
    recorder,
    registry,
    async stop() {
      await recorder.flush();
      c.close();
      await informers.stop();
    },
  };
}

/** Creates KWOKNodeClass `default` with a Ready status (what its controller would report). */
export async function createKwokNodeClass(client: KubeClient): Promise<void> {
  const nc: KWOKNodeClass = {
    apiVersion: 'karpenter.kwok.sh/v1alpha1',
    kind: 'KWOKNodeClass',
    metadata: { name: 'default' },
    spec: {},
  };
  const created = await client.create(nc);
  await client.updateStatus({
    ...created,
    status: {
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          reason: 'Ready',
          message: '',
          lastTransitionTime: '2025-01-01T00:00:00Z',
        },
      ],
    },
  });
}

/** Creates `pod` and marks it Unschedulable (the scheduler's verdict); returns the stored pod. */
export async function createPendingPod(client: SimulatedCluster['client'], pod: Pod): Promise<Pod> {
  const { status, ...rest } = pod;
  const meta = { ...rest.metadata };
  delete meta.uid;
  delete meta.creationTimestamp;
  const stored = await client.create({ ...rest, metadata: meta } as Pod);
  return (await client.updateStatus({ ...stored, status })) as Pod;
}

/** Creates a NodePool (no status: usable once its NodeClass exists). */
export async function createNodePool(client: SimulatedCluster['client'], np: NodePool): Promise<NodePool> {
  return (await client.create(np)) as NodePool;
}

/** A Ready, initialized, untainted kwok-like Node of `instanceType` in NodePool `nodePool` (or unmanaged). */
export function readyNode(name: string, instanceType: string, nodePool?: string): Node {
  const it = catalog.find((t) => t.name === instanceType);
  if (!it) throw new Error(`unknown instance type ${instanceType}`);
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      labels: {
        'kubernetes.io/hostname': name,
        'kubernetes.io/arch': 'amd64',
        'kubernetes.io/os': 'linux',
        'node.kubernetes.io/instance-type': instanceType,
        'topology.kubernetes.io/zone': 'us-east-1a',
        ...(nodePool ? { 'karpenter.sh/nodepool': nodePool, 'karpenter.sh/initialized': 'true' } : {}),
      },
    },
    spec: { providerID: `kwok://us-east-1/us-east-1a/${name}` },
    status: {
      capacity: {
        cpu: `${it.capacity.cpu}m`,
        memory: String(it.capacity.memory),
        pods: String(it.capacity.pods),
      },
      allocatable: {
        cpu: `${it.allocatable.cpu}m`,
        memory: String(it.allocatable.memory),
        pods: String(it.allocatable.pods),
      },
      conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady' }],
    },
  };
}

/** Every NodeClaim on the API server. */
export async function listNodeClaims(client: SimulatedCluster['client']): Promise<NodeClaim[]> {
  return (await client.list('NodeClaim')).items as NodeClaim[];
}

/** Events in `namespace` with `reason`. */
export async function events(
  client: SimulatedCluster['client'],
  reason: string,
  namespace = 'default',
): Promise<KubeEvent[]> {
  return (await client.list('Event', { namespace })).items.filter(
    (e) => (e as KubeEvent).reason === reason,
  ) as KubeEvent[];
}

/** The first (cheapest) value of a NodeClaim's instance-type requirement. */
export function cheapestOf(nc: NodeClaim): string | undefined {
  return nc.spec.requirements.find((r) => r.key === 'node.kubernetes.io/instance-type')?.values?.[0];
}
