/**
 * End-to-end harness: the simulated cluster (embedded API server + kube-scheduler, kubelet and workload
 * stand-ins) with the real capenter operator in-process, everything through the real client. Short batch windows
 * (idle 0.3 s / max 3 s) keep the suite fast.
 */
import { parseAllDocuments } from 'yaml';
import type { KubeObject, Pod } from '../../src/apis/core.ts';
import type { NodeClaim, NodePool } from '../../src/apis/karpenter.ts';
import { applyObjects } from '../../src/embedded/apply.ts';
import {
  type SimulatedCluster,
  type SimulatedClusterOptions,
  startSimulatedCluster,
} from '../../src/embedded/cluster.ts';
import type { Clock } from '../../src/kube/clock.ts';
import { silentLogger } from '../../src/kube/logger.ts';
import { createOperator, type Operator, type OperatorConfig } from '../../src/operator/operator.ts';
import { embeddedOptions, type OperatorOptions } from '../../src/operator/options.ts';
import { eventually as pollUntil, type Truthy } from '../../src/testing/eventually.ts';

/** A running e2e environment. */
export interface E2E {
  sim: SimulatedCluster;
  client: SimulatedCluster['client'];
  operators: Operator[];
  /** Starts one more operator process against the cluster. */
  startOperator(o?: Partial<OperatorOptions>, extra?: Partial<OperatorConfig>): Promise<Operator>;
  /** Creates YAML/objects in dependency order; throws on any failure. */
  apply(objs: string | KubeObject[]): Promise<void>;
  stop(): Promise<void>;
}

/** Fast test options: short batch windows, leader election with the upstream lease. */
export function testOptions(o: Partial<OperatorOptions> = {}): OperatorOptions {
  return { ...embeddedOptions(), batchIdleSeconds: 0.3, batchMaxSeconds: 3, metricsPeriodSeconds: 1, ...o };
}

/** Starts the simulated cluster (and, unless `operator: false`, one operator). */
export async function startE2E(
  opts: {
    sim?: SimulatedClusterOptions;
    operator?: Partial<OperatorOptions> | false;
    config?: Partial<OperatorConfig>;
    clock?: Clock;
  } = {},
): Promise<E2E> {
  const sim = await startSimulatedCluster({
    kubeletReadyDelaySeconds: 0,
    podStartDelaySeconds: 0.2,
    schedulerRetrySeconds: 2,
    ...(opts.clock ? { clock: opts.clock } : {}),
    ...(opts.sim ?? {}),
  });
  const operators: Operator[] = [];
  const env: E2E = {
    sim,
    client: sim.client,
    operators,
    async startOperator(o = {}, extra = {}) {
      const op = createOperator({
        kubeconfig: sim.kubeconfig,
        logger: silentLogger(),
        options: testOptions(o),
        defaultMetrics: false,
        ...(opts.clock ? { clock: opts.clock } : {}),
        ...extra,
      });
      operators.push(op);
      await op.start();
      return op;
    },
    async apply(objs) {
      const list = typeof objs === 'string' ? parseYaml(objs) : objs;
      const res = await applyObjects(sim.client, list);
      const failed = res.filter((r) => r.result === 'failed');
      if (failed.length > 0) throw new Error(failed.map((f) => f.error).join('; '));
    },
    async stop() {
      for (const op of operators) await op.stop();
      await sim.stop();
    },
  };
  if (opts.operator !== false) await env.startOperator(opts.operator ?? {}, opts.config ?? {});
  return env;
}

/** Parses multi-document YAML into objects (empty documents skipped). */
export function parseYaml(text: string): KubeObject[] {
  return parseAllDocuments(text)
    .map((d) => d.toJS() as KubeObject | null)
    .filter((o): o is KubeObject => !!o && typeof o === 'object' && 'kind' in o);
}

/** Polls `fn` (real time) until truthy, 20 s by default (the shared helper, `src/testing/eventually.ts`). */
export function eventually<T>(
  fn: () => T | Promise<T>,
  what: string,
  timeoutMs = 20_000,
  intervalMs = 50,
): Promise<Truthy<T>> {
  return pollUntil(fn, what, { timeoutMs, intervalMs });
}

/** Live (not deleting) NodeClaims. */
export async function nodeClaims(client: E2E['client']): Promise<NodeClaim[]> {
  return ((await client.list('NodeClaim')).items as NodeClaim[]).filter((n) => !n.metadata.deletionTimestamp);
}

/** Pods not finished and not deleting. */
export async function livePods(client: E2E['client'], namespace?: string): Promise<Pod[]> {
  const pods = (await client.list('Pod', namespace ? { namespace } : {})).items as Pod[];
  return pods.filter(
    (p) => !p.metadata.deletionTimestamp && p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed',
  );
}

/** True when at least `min` live pods exist and all of them are Running. */
export async function allRunning(client: E2E['client'], min = 1, namespace?: string): Promise<boolean> {
  const pods = await livePods(client, namespace);
  return pods.length >= min && pods.every((p) => p.status?.phase === 'Running');
}

/** Instance type of a launched NodeClaim (its label). */
export function instanceTypeOf(nc: NodeClaim): string | undefined {
  return nc.metadata.labels?.['node.kubernetes.io/instance-type'];
}

/** A KWOKNodeClass `default` (spec optional) as YAML. */
export function kwokNodeClassYaml(name = 'default', spec = '{}'): string {
  return `apiVersion: karpenter.kwok.sh/v1alpha1\nkind: KWOKNodeClass\nmetadata:\n  name: ${name}\nspec: ${spec}\n`;
}

/** A NodePool on KWOKNodeClass `nodeClass`: on-demand amd64 linux c/m/r, optional limits (YAML map text). */
export function nodePoolYaml(
  name: string,
  o: { nodeClass?: string; limits?: string; extraRequirements?: string } = {},
): string {
  return `apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: ${name}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: ${o.nodeClass ?? 'default'}}
      expireAfter: 720h
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
        - {key: kubernetes.io/arch, operator: In, values: [amd64]}
        - {key: kubernetes.io/os, operator: In, values: [linux]}
        - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
${o.extraRequirements ?? ''}${o.limits ? `  limits: ${o.limits}\n` : ''}`;
}

/** A Deployment of `replicas` pause pods requesting `cpu`/`memory`. */
export function deploymentYaml(
  name: string,
  replicas: number,
  cpu: string,
  memory: string,
  namespace = 'default',
): string {
  return `apiVersion: apps/v1
kind: Deployment
metadata: {name: ${name}, namespace: ${namespace}}
spec:
  replicas: ${replicas}
  selector: {matchLabels: {app: ${name}}}
  template:
    metadata: {labels: {app: ${name}}}
    spec:
      containers:
        - name: app
          image: registry.k8s.io/pause:3.10
          resources: {requests: {cpu: "${cpu}", memory: "${memory}"}}
`;
}

/** Scales a Deployment through a merge patch of `spec.replicas`. */
export async function scale(
  client: E2E['client'],
  name: string,
  replicas: number,
  namespace = 'default',
): Promise<void> {
  await client.patch('Deployment', name, namespace, { spec: { replicas } }, { type: 'merge' });
}

/** The NodePool `name` as stored. */
export async function getNodePool(client: E2E['client'], name: string): Promise<NodePool | undefined> {
  return (await client.tryGet('NodePool', name)) as NodePool | undefined;
}
