/**
 * Test environment for the NodeClaim, Node and NodePool controllers (tests only, not production code): the
 * embedded API server with capenter's CRDs, a client, a FakeClock starting now, the kwok provider writing Nodes
 * through the client, an EventRecorder, a prom-client Registry and a kubelet stand-in (`markReady`,
 * `finishTerminating`).
 */
import { Registry } from 'prom-client';
import type { Node } from '../../apis/core.ts';
import { crdObjects } from '../../apis/crds.ts';
import type { KWOKNodeClass, NodeClaim, NodeSelectorRequirementWithMinValues } from '../../apis/karpenter.ts';
import { LabelNodePool } from '../../apis/labels.ts';
import type { NodeWriter } from '../../cloudprovider/kwok/nodes.ts';
import {
  KwokCloudProvider,
  type KwokCloudProviderDeps,
  sequentialInstanceIds,
} from '../../cloudprovider/kwok/provider.ts';
import { KubeClient } from '../../kube/client.ts';
import { FakeClock } from '../../kube/clock.ts';
import { isNotFound } from '../../kube/errors.ts';
import { EventRecorder } from '../../kube/events.ts';
import { silentLogger } from '../../kube/logger.ts';
import type { KubeEvent } from '../../kube/types.ts';
import { type EmbeddedCluster, startEmbeddedCluster } from '../../sim/apiserver/index.ts';
import type { LifecycleContext } from './lifecycle/context.ts';
import { lifecycleMetrics } from './metrics.ts';

/** A {@link NodeWriter} over the Kubernetes client (what the operator wires for the kwok provider). */
export function clientNodeWriter(client: KubeClient): NodeWriter {
  return {
    createNode: async (node) => client.create({ ...node, apiVersion: 'v1', kind: 'Node' }),
    deleteNode: async (name) => {
      await client.tryDelete('Node', name);
    },
    getNode: (name) => client.tryGet('Node', name),
    listNodes: async (sel) =>
      (await client.list('Node', sel && Object.keys(sel).length > 0 ? { labelSelector: sel } : {})).items,
  };
}

/**
 * The controllers' side of a test environment, over any API server (embedded, or the real control plane of
 * `npm run test:cluster`); `stop()` flushes events and closes the client.
 */
export interface ControllerTestEnv {
  client: KubeClient;
  clock: FakeClock;
  provider: KwokCloudProvider;
  nodeClasses: Map<string, KWOKNodeClass>;
  recorder: EventRecorder;
  registry: Registry;
  /** A lifecycle context with `nodesFor` listing Nodes through the API (no informer). */
  ctx: LifecycleContext;
  /** Kubelet stand-in: sets the Node's Ready condition True. */
  markReady(nodeName: string): Promise<Node>;
  /**
   * Kubelet stand-in: the pods on `nodeName` being deleted (graceful deletion after an eviction or a
   * DELETE) stop at once and are removed (DELETE with grace 0). Returns their names.
   */
  finishTerminating(nodeName: string): Promise<string[]>;
  /** Events about an object name, newest last. */
  events(name: string): Promise<KubeEvent[]>;
  /** Value of a counter/gauge with the given labels (0 when never set). */
  metric(name: string, labels: Record<string, string>): Promise<number>;
  stop(): Promise<void>;
}

/** A running test environment on the embedded API server; `stop()` tears it down. */
export interface TestEnv extends ControllerTestEnv {
  cluster: EmbeddedCluster;
}

/** Starts the environment. `provider` overrides kwok provider deps (e.g. `registrationDelaySeconds`). */
export async function startTestEnv(provider: Partial<KwokCloudProviderDeps> = {}): Promise<TestEnv> {
  const cluster = await startEmbeddedCluster();
  for (const crd of Object.values(crdObjects())) cluster.installCRD(crd as never);
  const client = KubeClient.fromKubeconfig(cluster.kubeconfig);
  const env = controllerTestEnv(client, new FakeClock(Math.floor(Date.now() / 1000) * 1000), provider);
  return {
    ...env,
    cluster,
    stop: async () => {
      await env.stop();
      await cluster.stop();
    },
  };
}

/**
 * The controllers' side of a test environment on `client` (its API server already serves capenter's CRDs): the
 * kwok provider writing Nodes through `client` on `clock`, KWOKNodeClass `default` (Ready, in memory), a recorder,
 * a registry and the kubelet stand-ins. `finishTerminating` strips the finalizers of the terminating pods (a test's
 * stand-in for a preStop hook) before deleting them with grace 0. `stop()` closes `client`.
 */
export function controllerTestEnv(
  client: KubeClient,
  clock: FakeClock,
  provider: Partial<KwokCloudProviderDeps> = {},
): ControllerTestEnv {
  const nodeClasses = new Map<string, KWOKNodeClass>([
    [
      'default',
      {
        apiVersion: 'karpenter.kwok.sh/v1alpha1',
        kind: 'KWOKNodeClass',
        metadata: { name: 'default' },
        spec: {},
        status: { conditions: [{ type: 'Ready', status: 'True' }] },
      },
    ],
  ]);
  const kwok = new KwokCloudProvider({
    region: 'us-east-1',
    nodes: clientNodeWriter(client),
    clock,
    nodeClass: (n) => nodeClasses.get(n),
    instanceId: sequentialInstanceIds(),
    ...provider,
  });
  const recorder = new EventRecorder(client, { clock });
  const registry = new Registry();
  const logger = silentLogger();
  const ctx: LifecycleContext = {
    client,
    cloudProvider: kwok,
    clock,
    logger,
    recorder,
    metrics: lifecycleMetrics(registry),
    nodesFor: async (nc) => {
      const id = nc.status?.providerID;
      if (!id) return [];
      return (await client.list('Node')).items.filter((n) => n.spec?.providerID === id);
    },
  };
  return {
    client,
    clock,
    provider: kwok,
    nodeClasses,
    recorder,
    registry,
    ctx,
    markReady: (name) =>
      client.patchStatus(
        'Node',
        name,
        undefined,
        {
          status: {
            conditions: [
              {
                type: 'Ready',
                status: 'True',
                reason: 'KubeletReady',
                message: 'kubelet is posting ready status',
                lastTransitionTime: new Date(clock.now()).toISOString(),
                lastHeartbeatTime: new Date(clock.now()).toISOString(),
              },
            ],
          },
        },
        { type: 'merge' },
      ),
    finishTerminating: async (nodeName) => {
      const pods = (await client.list('Pod', { fieldSelector: `spec.nodeName=${nodeName}` })).items;
      const done = pods.filter((p) => p.metadata.deletionTimestamp);
      for (const p of done) {
        const name = p.metadata.name as string;
        if (p.metadata.finalizers?.length)
          await client
            .patch('Pod', name, p.metadata.namespace, { metadata: { finalizers: null } }, { type: 'merge' })
            .catch((err: unknown) => {
              if (!isNotFound(err)) throw err;
            });
        await client.tryDelete('Pod', name, p.metadata.namespace, { gracePeriodSeconds: 0 });
      }
      return done.map((p) => p.metadata.name as string);
    },
    events: async (name) => {
      await recorder.flush();
      return (await client.list('Event')).items.filter((e) => e.involvedObject.name === name);
    },
    metric: async (name, labels) => {
      const m = registry.getSingleMetric(name);
      if (!m) return 0;
      const v = (await m.get()).values.find((x) =>
        Object.entries(labels).every(([k, val]) => String(x.labels[k] ?? '') === val),
      );
      return v?.value ?? 0;
    },
    stop: async () => {
      await recorder.flush();
      client.close();
    },
  };
}

/** A NodeClaim of NodePool `default` on KWOKNodeClass `default` asking for `instanceType` (or any type). */
export function testNodeClaim(
  name: string,
  opts: {
    instanceType?: string;
    requirements?: NodeSelectorRequirementWithMinValues[];
    startupTaints?: NodeClaim['spec']['startupTaints'];
    taints?: NodeClaim['spec']['taints'];
    requests?: Record<string, string>;
    terminationGracePeriod?: string;
    labels?: Record<string, string>;
  } = {},
): NodeClaim {
  const requirements: NodeSelectorRequirementWithMinValues[] = [
    ...(opts.instanceType
      ? [{ key: 'node.kubernetes.io/instance-type', operator: 'In' as const, values: [opts.instanceType] }]
      : []),
    { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] },
    ...(opts.requirements ?? []),
  ];
  return {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodeClaim',
    metadata: { name, labels: { [LabelNodePool]: 'default', ...(opts.labels ?? {}) } },
    spec: {
      nodeClassRef: { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: 'default' },
      requirements,
      ...(opts.taints ? { taints: opts.taints } : {}),
      ...(opts.startupTaints ? { startupTaints: opts.startupTaints } : {}),
      ...(opts.requests ? { resources: { requests: opts.requests } } : {}),
      ...(opts.terminationGracePeriod ? { terminationGracePeriod: opts.terminationGracePeriod } : {}),
    },
  };
}
