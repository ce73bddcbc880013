/**
 * Disruption test harness: the simulated cluster (API server + kube-scheduler, kubelet and workload stand-ins) and
 * the real operator in-process, plus the disruption, expiration and pod-events controllers, all on one FakeClock
 * that a pump advances continuously (`msPerStep` of simulated time every `realMs` of wall time). The API server's
 * timestamps follow the same clock, so `expireAfter`, `consolidateAfter` and termination deadlines are simulated.
 */
import { parseAllDocuments } from 'yaml';
import type { KubeObject, Node, Pod } from '../../../src/apis/core.ts';
import type { NodeClaim } from '../../../src/apis/karpenter.ts';
import type { DisruptionController, DisruptionPass } from '../../../src/controllers/disruption/controller.ts';
import { applyObjects } from '../../../src/embedded/apply.ts';
import { type SimulatedCluster, startSimulatedCluster } from '../../../src/embedded/cluster.ts';
import { FakeClock } from '../../../src/kube/clock.ts';
import { silentLogger } from '../../../src/kube/logger.ts';
import { createOperator, type Operator } from '../../../src/operator/operator.ts';
import { embeddedOptions } from '../../../src/operator/options.ts';

/** A running environment. */
export interface Env {
  sim: SimulatedCluster;
  client: SimulatedCluster['client'];
  clock: FakeClock;
  op: Operator;
  disruption: DisruptionController;
  /** Every disruption pass so far, oldest first. */
  passes: DisruptionPass[];
  /** Creates objects (YAML text or objects) in dependency order; throws on failure. */
  apply(objs: string | KubeObject[]): Promise<void>;
  /** Polls `fn` (wall time, the pump keeps simulated time moving) until truthy. */
  until<T>(fn: () => T | Promise<T>, what: string, timeoutMs?: number): Promise<NonNullable<T>>;
  /** Pauses / resumes the time pump. */
  pause(): void;
  resume(): void;
  stop(): Promise<void>;
}

/** Options of {@link startEnv}. */
export interface EnvOptions {
  /** Simulated ms per pump step (default 250). */
  msPerStep?: number;
  /** Wall ms between pump steps (default 5). */
  realMs?: number;
  /** Start time of the clock (ms). */
  start?: number;
  /** Overrides for the disruption controller. */
  disruption?: NonNullable<NonNullable<Parameters<typeof createOperator>[0]['tuning']>['disruption']>;
  /**
   * Batches of objects created in order before the operator starts; API timestamps at `createdAt` when given
   * (e.g. long-lived nodes), else the clock.
   */
  preload?: Array<{ objects: KubeObject[]; createdAt?: number | undefined }>;
  /** Runs after the preloads, before the operator starts (e.g. to write statuses). */
  afterPreload?: (client: SimulatedCluster['client']) => Promise<void>;
  kubeletReadyDelaySeconds?: number | ((node: Node) => number);
  /** Feature gates over the defaults (e.g. `{ StaticCapacity: true }`). */
  featureGates?: Record<string, boolean>;
}

/** Parses multi-document YAML. */
export function parseYaml(text: string): KubeObject[] {
  return parseAllDocuments(text)
    .map((d) => d.toJS() as KubeObject | null)
    .filter((o): o is KubeObject => !!o && typeof o === 'object' && 'kind' in o);
}

/** Starts the environment (see the module doc). */
export async function startEnv(o: EnvOptions = {}): Promise<Env> {
  const clock = new FakeClock(o.start ?? Date.UTC(2025, 0, 1));
  const sim = await startSimulatedCluster({
    clock,
    kubeletReadyDelaySeconds: o.kubeletReadyDelaySeconds ?? 1,
    podStartDelaySeconds: 1,
    schedulerRetrySeconds: 2,
  });
  let stampAt: number | undefined;
  Object.defineProperty(sim.apiServer.store, 'now', { value: () => stampAt ?? clock.now() });
  const client = sim.client;
  const apply = async (objs: string | KubeObject[]): Promise<void> => {
    const res = await applyObjects(client, typeof objs === 'string' ? parseYaml(objs) : objs);
    const failed = res.filter((r) => r.result === 'failed');
    if (failed.length > 0) throw new Error(failed.map((f) => f.error).join('; '));
  };
  for (const batch of o.preload ?? []) {
    if (batch.objects.length === 0) continue;
    stampAt = batch.createdAt;
    try {
      await apply(batch.objects);
    } finally {
      stampAt = undefined;
    }
  }
  await o.afterPreload?.(client);
  const logger = silentLogger();
  const op = createOperator({
    client,
    clock,
    logger,
    options: {
      ...embeddedOptions(),
      leaderElect: false,
      batchIdleSeconds: 1,
      batchMaxSeconds: 10,
      featureGates: { ...embeddedOptions().featureGates, ...(o.featureGates ?? {}) },
    },
    defaultMetrics: false,
    ...(o.disruption ? { tuning: { disruption: o.disruption } } : {}),
  });
  // The operator runs the disruption, expiration and pod-event controllers itself.
  const disruption = op.disruption;
  const passes: DisruptionPass[] = [];
  disruption.passListeners.add((p) => passes.push(p));
  await op.start();
  let paused = false;
  let stopped = false;
  const pump = (async () => {
    while (!stopped) {
      await new Promise((r) => setTimeout(r, o.realMs ?? 5));
      if (!paused && !stopped) clock.advance(o.msPerStep ?? 250);
    }
  })();
  return {
    sim,
    client,
    clock,
    op,
    disruption,
    passes,
    apply,
    async until(fn, what, timeoutMs = 60_000) {
      const end = Date.now() + timeoutMs;
      let last: unknown;
      for (;;) {
        try {
          const v = await fn();
          if (v) return v as NonNullable<Awaited<typeof v>>;
          last = v;
        } catch (err) {
          last = err;
        }
        if (Date.now() > end) throw new Error(`timed out waiting for ${what} (last: ${String(last)})`);
        await new Promise((r) => setTimeout(r, 25));
      }
    },
    pause: () => {
      paused = true;
    },
    resume: () => {
      paused = false;
    },
    async stop() {
      stopped = true;
      await pump;
      const stopping = op.stop();
      // let timers of stopping controllers fire
      for (let i = 0; i < 50; i++) clock.advance(1000);
      await stopping;
      await sim.stop();
    },
  };
}

/** Live (not deleting) NodeClaims. */
export async function liveNodeClaims(client: Env['client']): Promise<NodeClaim[]> {
  return ((await client.list('NodeClaim')).items as NodeClaim[]).filter((n) => !n.metadata.deletionTimestamp);
}

/** Every Node. */
export async function nodes(client: Env['client']): Promise<Node[]> {
  return (await client.list('Node')).items as Node[];
}

/** Pods of `namespace` not finished and not deleting. */
export async function livePods(client: Env['client'], namespace = 'default'): Promise<Pod[]> {
  return ((await client.list('Pod', { namespace })).items as Pod[]).filter(
    (p) => !p.metadata.deletionTimestamp && p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed',
  );
}

/** A KWOKNodeClass `default` plus a NodePool `default` (on-demand, c/m/r, amd64) with the given extras. */
export function poolYaml(
  o: {
    budgets?: string;
    consolidateAfter?: string;
    policy?: string;
    labels?: string;
    expireAfter?: string;
    terminationGracePeriod?: string;
    /** Largest instance size allowed (vCPU): adds `karpenter.k8s.aws/instance-cpu Lt maxCpu+1`. */
    maxCpu?: number;
  } = {},
): string {
  return `apiVersion: karpenter.kwok.sh/v1alpha1
kind: KWOKNodeClass
metadata: {name: default}
spec: {}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    metadata:
      labels: ${o.labels ?? '{}'}
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}
      expireAfter: ${o.expireAfter ?? '720h'}
${o.terminationGracePeriod ? `      terminationGracePeriod: ${o.terminationGracePeriod}\n` : ''}      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
        - {key: kubernetes.io/arch, operator: In, values: [amd64]}
        - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
        - {key: karpenter.k8s.aws/instance-generation, operator: Gt, values: ["4"]}
${o.maxCpu ? `        - {key: karpenter.k8s.aws/instance-cpu, operator: Lt, values: ["${o.maxCpu + 1}"]}\n` : ''}  disruption:
    consolidationPolicy: ${o.policy ?? 'WhenEmptyOrUnderutilized'}
    consolidateAfter: ${o.consolidateAfter ?? '0s'}
    budgets: ${o.budgets ?? '[{nodes: "10%"}]'}
`;
}

/** A Deployment of `replicas` pods requesting `cpu`/`memory`. */
export function deploymentYaml(name: string, replicas: number, cpu: string, memory: string): string {
  return `apiVersion: apps/v1
kind: Deployment
metadata: {name: ${name}, namespace: default}
spec:
  replicas: ${replicas}
  selector: {matchLabels: {app: ${name}}}
  template:
    metadata: {labels: {app: ${name}}}
    spec:
      terminationGracePeriodSeconds: 5
      containers:
        - name: app
          image: registry.example/app:1
          resources: {requests: {cpu: "${cpu}", memory: "${memory}"}}
`;
}

/** Hourly price (USD) of the live NodeClaims, from their instance-type label and the catalog price table. */
export function priceOf(ncs: NodeClaim[], price: (type: string) => number): number {
  return ncs.reduce((s, nc) => s + price(nc.metadata.labels?.['node.kubernetes.io/instance-type'] ?? ''), 0);
}
