/**
 * Arrange code of the controller scenarios C1–C4 of ../shared/cases/controller-scenarios.md, shared by the embedded
 * tests (test/controllers/termination/interruption.test.ts C1, termination/termination.test.ts C2,
 * nodeclaim/timeouts.test.ts C3, health/repair.test.ts C4) and test/cluster/scenarios.test.ts, which runs them on
 * the real control plane. Every builder works on a {@link KubeClient} to either API server; C3's runs (no kubelet or
 * scheduler decision in them) are shared whole. Time is a FakeClock: each step is one explicit reconcile.
 */
import {
  DeleteMessageCommand,
  GetQueueUrlCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { expect } from 'vitest';
import type { NodeCondition, Pod } from '../../src/apis/core.ts';
import type { NodeClaim, NodePool } from '../../src/apis/karpenter.ts';
import { InterruptionController } from '../../src/cloudprovider/aws/controllers/interruption/controller.ts';
import { AwsRepairPolicies } from '../../src/cloudprovider/aws/provider.ts';
import { KwokNodeMarker } from '../../src/cloudprovider/kwok/provider.ts';
import { type CloudProvider, CreateError } from '../../src/cloudprovider/types.ts';
import { NodeTerminationController } from '../../src/controllers/node/termination/controller.ts';
import type { LifecycleContext } from '../../src/controllers/nodeclaim/lifecycle/context.ts';
import { NodeClaimLifecycleController } from '../../src/controllers/nodeclaim/lifecycle/controller.ts';
import { Launch } from '../../src/controllers/nodeclaim/lifecycle/launch.ts';
import { Registration } from '../../src/controllers/nodeclaim/lifecycle/registration.ts';
import { lifecycleMetrics } from '../../src/controllers/nodeclaim/metrics.ts';
import { type ControllerTestEnv, testNodeClaim } from '../../src/controllers/nodeclaim/testing.ts';
import { pendingPod, testNodePool } from '../../src/controllers/provisioning/testing.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import type { FakeClock } from '../../src/kube/clock.ts';
import { silentLogger } from '../../src/kube/logger.ts';
import { type ControllerProcess, eventually, listNodeClaims } from './provisioning/harness.ts';

/** One minute in ms. */
export const MIN = 60_000;
/** The annotation node repair sets to now before deleting the NodeClaim (upstream `annotateTerminationGracePeriod`). */
export const TerminationTimestamp = 'karpenter.sh/nodeclaim-termination-timestamp';

/** RFC 3339 without milliseconds, as the API serialises times. */
export const rfc = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** What the controllers of a scenario are built from (a {@link ControllerProcess}'s or a {@link ControllerTestEnv}'s). */
export interface ScenarioDeps {
  client: KubeClient;
  clock: FakeClock;
  cloudProvider: CloudProvider;
  recorder: ControllerProcess['recorder'];
  registry: ControllerProcess['registry'];
}

/** The deps of controllers beside process `p` (its provider, recorder and registry) on `client` and `clock`. */
export function scenarioDeps(
  client: KubeClient,
  clock: FakeClock,
  p: { provider: CloudProvider; recorder: ScenarioDeps['recorder']; registry: ScenarioDeps['registry'] },
): ScenarioDeps {
  return { client, clock, cloudProvider: p.provider, recorder: p.recorder, registry: p.registry };
}

/** The node termination controller over `d`, finding a Node's NodeClaims by provider ID through the API. */
export function nodeTermination(d: ScenarioDeps): NodeTerminationController {
  return new NodeTerminationController({
    client: d.client,
    cloudProvider: d.cloudProvider,
    clock: d.clock,
    recorder: d.recorder,
    registry: d.registry,
    logger: silentLogger(),
    nodeClaimsFor: async (n) =>
      (await d.client.list('NodeClaim')).items.filter((c) => c.status?.providerID === n.spec?.providerID),
  });
}

/** A lifecycle context over `d` (Nodes of a NodeClaim listed by provider ID through the API). */
export function lifecycleContext(d: ScenarioDeps): LifecycleContext {
  return {
    client: d.client,
    cloudProvider: d.cloudProvider,
    clock: d.clock,
    recorder: d.recorder,
    logger: silentLogger(),
    metrics: lifecycleMetrics(d.registry),
    nodesFor: async (nc) =>
      (await d.client.list('Node')).items.filter((n) => n.spec?.providerID === nc.status?.providerID),
  };
}

// ---- C1: spot interruption ------------------------------------------------------------------------------------

/** node-s's provider ID (an EC2 instance in us-east-1a). */
export const SpotProviderID = 'aws:///us-east-1a/i-0spot';

/** NodePool `spot`: spot m5 large..2xlarge. */
export function spotNodePool(): NodePool {
  return testNodePool('spot', {
    requirements: [
      { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['spot'] },
      { key: 'karpenter.k8s.aws/instance-family', operator: 'In', values: ['m5'] },
      { key: 'karpenter.k8s.aws/instance-size', operator: 'In', values: ['large', 'xlarge', '2xlarge'] },
    ],
  });
}

/** A `web` replica (500m, 1Gi, label app=web, owned by a ReplicaSet), not yet bound. */
export const webReplica = (name: string): Pod =>
  pendingPod(name, { cpu: '500m', memory: '1Gi', labels: { app: 'web' }, ownerKind: 'ReplicaSet' });

/** The PDB of `web`: maxUnavailable 1. */
export const webPDB = {
  apiVersion: 'policy/v1',
  kind: 'PodDisruptionBudget',
  metadata: { name: 'web', namespace: 'default' },
  spec: { selector: { matchLabels: { app: 'web' } }, maxUnavailable: 1 },
};

/**
 * node-s: a launched, registered, initialized spot m5.large in us-east-1a (NodeClaim and Node with the termination
 * finalizer). `nodeStatus` is what the Node's kubelet would post (the embedded tests give a Ready one); `annotations`
 * go on the Node (the kwok marker on the real control plane, so kwok runs it and its pods).
 */
export async function createSpotNode(
  client: KubeClient,
  node: { labels: Record<string, string>; status?: object; annotations?: Record<string, string> },
): Promise<void> {
  const labels = { ...node.labels, 'karpenter.sh/capacity-type': 'spot', 'karpenter.sh/nodepool': 'spot' };
  const nc = (await client.create({
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodeClaim',
    metadata: { name: 'node-s', labels, finalizers: ['karpenter.sh/termination'] },
    spec: {
      nodeClassRef: { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: 'default' },
      requirements: [{ key: 'node.kubernetes.io/instance-type', operator: 'In', values: ['m5.large'] }],
    },
  } satisfies NodeClaim)) as NodeClaim;
  await client.updateStatus({
    ...nc,
    status: {
      providerID: SpotProviderID,
      nodeName: 'node-s',
      conditions: ['Launched', 'Registered', 'Initialized', 'Ready'].map((type) => ({
        type,
        status: 'True',
        reason: type,
        message: '',
        lastTransitionTime: '2025-01-01T00:00:00Z',
      })),
    },
  } as NodeClaim);
  const n = await client.create({
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: 'node-s',
      labels,
      finalizers: ['karpenter.sh/termination'],
      ...(node.annotations ? { annotations: node.annotations } : {}),
    },
    spec: { providerID: SpotProviderID },
  });
  if (node.status)
    await client.patchStatus(
      'Node',
      n.metadata.name as string,
      undefined,
      { status: node.status },
      { type: 'merge' },
    );
}

/** A stand-in SQS client: one queue holding `bodies` until received and deleted; `deleted` lists receipt handles. */
export function fakeSQS(bodies: string[]): { sqs: SQSClient; deleted: string[] } {
  const deleted: string[] = [];
  let queue: Message[] = bodies.map((Body, i) => ({ Body, MessageId: `m-${i}`, ReceiptHandle: `r-${i}` }));
  const sqs = {
    send: async (cmd: unknown) => {
      if (cmd instanceof GetQueueUrlCommand) return { QueueUrl: 'https://sqs.us-east-1.amazonaws.com/1/q' };
      if (cmd instanceof ReceiveMessageCommand) return { Messages: queue };
      if (cmd instanceof DeleteMessageCommand) {
        deleted.push(cmd.input.ReceiptHandle ?? '');
        queue = queue.filter((m) => m.ReceiptHandle !== cmd.input.ReceiptHandle);
        return {};
      }
      throw new Error(`unexpected SQS call ${String(cmd)}`);
    },
  } as unknown as SQSClient;
  return { sqs, deleted };
}

/**
 * The interruption controller over `p` (its provider is the unavailable-offerings cache) reading a queue that holds
 * one EC2 Spot Instance Interruption Warning for node-s's instance, as EventBridge writes it, sent at `now` (ms).
 */
export function spotInterruption(d: ScenarioDeps & { provider: ControllerProcess['provider'] }): {
  interruption: InterruptionController;
  deleted: string[];
} {
  const { sqs, deleted } = fakeSQS([
    JSON.stringify({
      version: '0',
      id: 'spot-1',
      'detail-type': 'EC2 Spot Instance Interruption Warning',
      source: 'aws.ec2',
      account: '123456789012',
      time: new Date(d.clock.now()).toISOString(),
      region: 'us-east-1',
      resources: ['arn:aws:ec2:us-east-1a:instance/i-0spot'],
      detail: { 'instance-id': 'i-0spot', 'instance-action': 'terminate' },
    }),
  ]);
  const interruption = new InterruptionController({
    client: d.client,
    clock: d.clock,
    recorder: d.recorder,
    registry: d.registry,
    logger: silentLogger(),
    sqs,
    queue: 'capenter-interruption',
    unavailableOfferings: d.provider,
    waitTimeSeconds: 0,
  });
  return { interruption, deleted };
}

/** Value of a counter of `p` with the given labels (0 when never set). */
export async function metricOf(
  p: { registry: ControllerProcess['registry'] },
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const v = (await p.registry.getSingleMetric(name)?.get())?.values.find((x) =>
    Object.entries(labels).every(([k, val]) => String(x.labels[k] ?? '') === val),
  );
  return v?.value ?? 0;
}

/** The instance type, zone and capacity type a launched NodeClaim's labels name. */
export function offeringOf(nc: NodeClaim): Array<string | undefined> {
  const l = nc.metadata.labels ?? {};
  return [
    l['node.kubernetes.io/instance-type'],
    l['topology.kubernetes.io/zone'],
    l['karpenter.sh/capacity-type'],
  ];
}

// ---- C2: drain groups -----------------------------------------------------------------------------------------

/** One pod of the C2 node. */
export interface DrainGroupPod {
  name: string;
  /** Owned by a DaemonSet. */
  daemon?: boolean;
  priorityClassName?: string;
  terminationGracePeriodSeconds?: number;
}

/**
 * The four pods of C2 in their eviction order: (a) an app pod with a 120 s preStop hook and 135 s grace, (b) a
 * DaemonSet log agent, (c) a system-cluster-critical pod, (d) a system-node-critical DaemonSet pod.
 */
export const DrainGroups: readonly DrainGroupPod[] = [
  { name: 'a-app', terminationGracePeriodSeconds: 135 },
  { name: 'b-logs', daemon: true },
  { name: 'c-crit', priorityClassName: 'system-cluster-critical' },
  { name: 'd-crit-ds', daemon: true, priorityClassName: 'system-node-critical' },
];

/**
 * Runs the Registration step on `nc` until it is done: it answers a conflict on its optimistic Node patch (another
 * writer, e.g. kwok posting the Node's status or the node lifecycle controller's taints) with `requeue`, which the
 * lifecycle controller would re-run; here it is re-run at once, at most 10 times.
 * @throws Error naming the NodeClaim when it still conflicts after 10 runs.
 */
export async function register(ctx: LifecycleContext, nc: NodeClaim): Promise<void> {
  for (let i = 0; i < 10; i++) if (!(await new Registration(ctx).reconcile(nc)).requeue) return;
  throw new Error(`NodeClaim ${nc.metadata.name}: Registration still conflicting after 10 runs`);
}

// ---- C2, C4: launched nodes -----------------------------------------------------------------------------------

/**
 * Launches NodeClaim `name` (m5.large, on-demand, NodePool `nodePool`, default `default`) through the lifecycle's
 * Launch and Registration steps, gives it and its Node the termination finalizer and marks the Node Ready (on the
 * real control plane kwok runs the Node the kwok provider created).
 */
export async function launchNode(
  env: ControllerTestEnv,
  name: string,
  opts: { nodePool?: string; annotations?: Record<string, string>; terminationGracePeriod?: string } = {},
): Promise<void> {
  const claim = testNodeClaim(name, {
    instanceType: 'm5.large',
    labels: { 'karpenter.sh/nodepool': opts.nodePool ?? 'default' },
    ...(opts.terminationGracePeriod ? { terminationGracePeriod: opts.terminationGracePeriod } : {}),
  });
  if (opts.annotations) claim.metadata.annotations = opts.annotations;
  const nc = await env.client.create(claim);
  await new Launch(env.ctx).reconcile(nc);
  await register(env.ctx, nc);
  await env.client.patchStatus('NodeClaim', name, undefined, { status: nc.status }, { type: 'merge' });
  await env.client.patch(
    'NodeClaim',
    name,
    undefined,
    { metadata: { labels: nc.metadata.labels, finalizers: ['karpenter.sh/termination'] } },
    { type: 'merge' },
  );
  await env.markReady(name);
}

/**
 * The kubelet of `name` stops posting status: Ready=Unknown since the clock's now. The kwok marker is removed first
 * (on the real control plane kwok would otherwise post Ready again).
 */
export async function kubeletStops(env: ControllerTestEnv, name: string): Promise<void> {
  await env.client.patch(
    'Node',
    name,
    undefined,
    { metadata: { annotations: { [KwokNodeMarker]: null } } },
    { type: 'merge' },
  );
  const ready: NodeCondition = {
    type: 'Ready',
    status: 'Unknown',
    reason: 'NodeStatusUnknown',
    message: 'Kubelet stopped posting node status.',
    lastTransitionTime: new Date(env.clock.now()).toISOString(),
  };
  await env.client.patchStatus(
    'Node',
    name,
    undefined,
    { status: { conditions: [ready] } },
    { type: 'merge' },
  );
}

// ---- C4: node repair ------------------------------------------------------------------------------------------

/** NodePool `default` (on-demand) without terminationGracePeriod. */
export const repairNodePool = {
  apiVersion: 'karpenter.sh/v1',
  kind: 'NodePool',
  metadata: { name: 'default' },
  spec: {
    template: {
      spec: {
        nodeClassRef: { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: 'default' },
        requirements: [{ key: 'karpenter.sh/capacity-type', operator: 'In' as const, values: ['on-demand'] }],
      },
    },
  },
};

/** `provider` answering the aws provider's repair policies (Ready False/Unknown tolerated 30 min, ...). */
export function withAwsRepairPolicies(provider: CloudProvider): CloudProvider {
  return Object.assign(Object.create(provider) as CloudProvider, {
    repairPolicies: () => AwsRepairPolicies.map((p) => ({ ...p })),
  });
}

/** Pod `guarded` (label app=guarded) in `namespace`, bound to r-0. */
export const guardedPod = (namespace: string): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'guarded', namespace, labels: { app: 'guarded' } },
  spec: { nodeName: 'r-0', containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] },
});

/**
 * The PDB of `guarded`: minAvailable 100% (or `minAvailable`: the real disruption controller resolves a percentage
 * only through the pods' controller's scale, and `guarded` has none).
 */
export const guardedPDB = (namespace: string, minAvailable: string | number = '100%') => ({
  apiVersion: 'policy/v1',
  kind: 'PodDisruptionBudget',
  metadata: { name: 'guarded', namespace },
  spec: { selector: { matchLabels: { app: 'guarded' } }, minAvailable },
});

// ---- C3: launch and registration timeouts ---------------------------------------------------------------------

/** NodeClaims not being deleted. */
const live = async (client: KubeClient): Promise<NodeClaim[]> =>
  (await listNodeClaims(client)).filter((nc) => !nc.metadata.deletionTimestamp);

const cond = (nc: NodeClaim | undefined, type: string) =>
  nc?.status?.conditions?.find((c) => c.type === type);

/** A lifecycle controller over `provider` sharing the process's registry (its metrics). */
const lifecycle = (client: KubeClient, clock: FakeClock, p: ControllerProcess, provider: CloudProvider) =>
  new NodeClaimLifecycleController({
    client,
    cloudProvider: provider,
    clock,
    logger: silentLogger(),
    recorder: p.recorder,
    registry: p.registry,
  });

/** Provisions once and returns the NodeClaim names created. */
async function provision(p: ControllerProcess): Promise<string[]> {
  return (await p.provisioner.provision()).created.map((c) => c.nodeClaim.metadata.name as string);
}

/**
 * C3 (i): with one pending pod in `p`'s state and a provider whose Nodes never join, the NodeClaim is deleted at
 * 15 min after launch (`registration_timeout`), not a second earlier, and the pod then gets a new NodeClaim; never
 * two live at once.
 */
export async function registrationTimeoutRun(
  client: KubeClient,
  clock: FakeClock,
  p: ControllerProcess,
): Promise<void> {
  const [first] = await provision(p);
  expect(first).toBeDefined();
  const name = first as string;
  const ctl = lifecycle(client, clock, p, p.provider);
  await ctl.reconcile(name); // finalizer, launch, registration pending
  const launched = await client.get('NodeClaim', name);
  expect(cond(launched, 'Launched')?.status).toBe('True');
  expect(cond(launched, 'Registered')?.status).toBe('Unknown');
  const t0 = Date.parse(cond(launched, 'Registered')?.lastTransitionTime as string);
  await eventually(() => p.cluster.getNodeClaim(name), 'in state');
  // while it is in flight the pod is not given a second NodeClaim
  expect(await provision(p)).toEqual([]);
  clock.set(t0 + 15 * MIN - 1000);
  expect(await ctl.reconcile(name)).toEqual({ requeueAfter: 1 });
  expect(await provision(p)).toEqual([]);
  expect((await live(client)).map((nc) => nc.metadata.name)).toEqual([name]);
  expect(await metricOf(p, 'karpenter_nodeclaims_disrupted_total', { reason: 'registration_timeout' })).toBe(
    0,
  );
  // 15 min: deleted, counted, the instance terminated by the finalizer
  clock.set(t0 + 15 * MIN);
  expect(await ctl.reconcile(name)).toEqual({});
  expect((await client.get('NodeClaim', name)).metadata.deletionTimestamp).toBeDefined();
  expect(await metricOf(p, 'karpenter_nodeclaims_disrupted_total', { reason: 'registration_timeout' })).toBe(
    1,
  );
  await p.recorder.flush();
  const ev = (await client.list('Event')).items.find((x) => x.reason === 'RegistrationTimeout');
  expect(ev?.message).toBe('Node did not register within 900s; deleting the NodeClaim');
  expect(await live(client)).toEqual([]);
  for (let i = 0; i < 3 && (await client.tryGet('NodeClaim', name)); i++) await ctl.reconcile(name);
  expect(await client.tryGet('NodeClaim', name)).toBeUndefined();
  // the still-pending pod gets a new NodeClaim: one live NodeClaim at a time
  await eventually(() => !p.cluster.getNodeClaim(name), 'gone from state');
  const second = await provision(p);
  expect(second).toHaveLength(1);
  expect(second[0]).not.toBe(name);
  expect((await live(client)).map((nc) => nc.metadata.name)).toEqual(second);
}

/**
 * C3 (ii): with one pending pod in `p`'s state and every launch failing, the NodeClaim is Launched=False and
 * deleted at 5 min (`launch_timeout`), not a second earlier.
 */
export async function launchTimeoutRun(
  client: KubeClient,
  clock: FakeClock,
  p: ControllerProcess,
): Promise<void> {
  const failing = Object.assign(Object.create(p.provider) as CloudProvider, {
    create: async () => {
      throw new CreateError('no capacity in the simulated cloud', 'LaunchFailed');
    },
  });
  const [name] = (await provision(p)) as [string];
  const ctl = lifecycle(client, clock, p, failing);
  await expect(ctl.reconcile(name)).rejects.toThrow(/no capacity in the simulated cloud/);
  const nc = await client.get('NodeClaim', name);
  expect([cond(nc, 'Launched')?.status, cond(nc, 'Launched')?.reason]).toEqual(['False', 'LaunchFailed']);
  const t0 = Date.parse(cond(nc, 'Launched')?.lastTransitionTime as string);
  clock.set(t0 + 5 * MIN - 1000);
  await expect(ctl.reconcile(name)).rejects.toThrow(/no capacity/);
  expect((await client.get('NodeClaim', name)).metadata.deletionTimestamp).toBeUndefined();
  expect(await metricOf(p, 'karpenter_nodeclaims_disrupted_total', { reason: 'launch_timeout' })).toBe(0);
  expect((await live(client)).length).toBe(1);
  clock.set(t0 + 5 * MIN);
  await ctl.reconcile(name).catch(() => undefined); // the launch step fails once more; liveness deletes
  expect((await client.get('NodeClaim', name)).metadata.deletionTimestamp).toBeDefined();
  expect(await metricOf(p, 'karpenter_nodeclaims_disrupted_total', { reason: 'launch_timeout' })).toBe(1);
  expect(await live(client)).toEqual([]);
}
