/**
 * A harness for the KarpenterMachinePool steps (`src/controllers/capi/steps/`) one at a time: the two embedded
 * clusters (management with the CAPI/CAPA CRDs, a simulated workload cluster; no MachinePool stand-in, no capenter
 * operator), the management informers the steps read, an in-memory bootstrap store, an in-memory instance list and
 * a step context over them. Passes are built at a fixed time ({@link NOW}) so conditions carry known timestamps.
 */
import type { KarpenterMachinePool } from '../../../src/apis/capi.ts';
import type { KubeObject } from '../../../src/apis/core.ts';
import { InMemoryBootstrapStore } from '../../../src/controllers/capi/bootstrap.ts';
import type { Desired } from '../../../src/controllers/capi/desired.ts';
import type { PoolInstances, PoolQuery } from '../../../src/controllers/capi/instances.ts';
import { type BootstrapResult, reconcileBootstrap } from '../../../src/controllers/capi/steps/bootstrap.ts';
import { KMPPass, type KMPStepContext } from '../../../src/controllers/capi/steps/context.ts';
import { generateDesired } from '../../../src/controllers/capi/steps/generate.ts';
import { type PoolInputs, resolveInputs } from '../../../src/controllers/capi/steps/resolve.ts';
import { WorkloadClusters } from '../../../src/controllers/capi/workload.ts';
import { applyObjects } from '../../../src/embedded/apply.ts';
import { startCAPIEnvironment } from '../../../src/embedded/cluster.ts';
import { EventRecorder } from '../../../src/kube/events.ts';
import { silentLogger } from '../../../src/kube/logger.ts';
import {
  type CAPIEnvironment,
  type SampleCAPIOptions,
  sampleCAPIObjects,
} from '../../../src/sim/capi/environment.ts';
import { eventually } from '../../../src/testing/eventually.ts';

/** The time of every pass (ms since the epoch): `2026-12-02T12:00:00.000Z`. */
export const NOW = Date.parse('2026-12-02T12:00:00.000Z');

/** Instances by `cluster/pool`, as provider IDs; terminations are recorded. */
export class FakeInstances implements PoolInstances {
  readonly byPool = new Map<string, string[]>();
  readonly terminated: string[] = [];
  async list(q: PoolQuery): Promise<string[]> {
    return [...(this.byPool.get(`${q.clusterName}/${q.nodePool}`) ?? [])];
  }
  async terminate(q: PoolQuery, ids: readonly string[]): Promise<void> {
    const key = `${q.clusterName}/${q.nodePool}`;
    this.terminated.push(...ids);
    this.byPool.set(
      key,
      (this.byPool.get(key) ?? []).filter((id) => !ids.includes(id)),
    );
  }
}

/** A pass run through the steps before `apply`, with what each handed on. */
export interface Prepared {
  pass: KMPPass;
  inputs: PoolInputs;
  boot: BootstrapResult;
  desired: Desired;
}

/** A running step environment. */
export interface StepEnv {
  env: CAPIEnvironment;
  ctx: KMPStepContext;
  store: InMemoryBootstrapStore;
  instances: FakeInstances;
  /** Creates `objs` in the management cluster and waits until the informers hold them. */
  apply(objs: KubeObject[]): Promise<void>;
  /** A pass over the live KMP `default/<name>` once the informer holds that version. */
  pass(name?: string): Promise<KMPPass>;
  /** A fresh pass of `default/<name>` run through resolve → bootstrap → generate. */
  prepare(name: string): Promise<Prepared>;
  /** `reason: message` of the Events on KMP `default/<name>`. */
  events(name?: string): Promise<string[]>;
  stop(): Promise<void>;
}

/**
 * The sample CAPI objects of KMP/MachinePool `pool` in cluster `<pool>-c` (namespace default), each passed through
 * `edit` (return undefined to leave an object out).
 */
export function samplePool(
  pool: string,
  edit: (o: KubeObject) => KubeObject | undefined = (o) => o,
  o: SampleCAPIOptions = {},
): KubeObject[] {
  return sampleCAPIObjects({ poolName: pool, clusterName: `${pool}-c`, ...o })
    .map(edit)
    .filter((x): x is KubeObject => x !== undefined);
}

const CACHED = ['KarpenterMachinePool', 'MachinePool', 'Cluster', 'AWSCluster'];

/** Starts the environment; the `demo-kubeconfig` Secret is written unless `kubeconfig: false`. */
export async function startStepEnv(o: { kubeconfig?: boolean; clusterName?: string } = {}): Promise<StepEnv> {
  const env = await startCAPIEnvironment({ machinePoolStandIn: false });
  for (const kind of CACHED) env.mgmtInformers.informerFor(kind);
  env.mgmtInformers.start();
  await env.mgmtInformers.waitForSync(30_000);
  if (o.kubeconfig !== false) await env.writeKubeconfigSecret('default', 'demo');
  const logger = silentLogger();
  const store = new InMemoryBootstrapStore();
  const instances = new FakeInstances();
  const workloads = new WorkloadClusters({ management: env.mgmt, clock: env.clock, logger });
  const ctx: KMPStepContext = {
    client: env.mgmt,
    informers: env.mgmtInformers,
    clock: env.clock,
    log: logger,
    recorder: new EventRecorder(env.mgmt, { clock: env.clock, component: 'capenter-capi', host: 'test' }),
    bootstrapStore: store,
    instances,
    workloads,
    clusterName: o.clusterName,
  };
  const synced = async (kind: string, name: string): Promise<KubeObject> => {
    const live = await env.mgmt.get(kind, name, 'default');
    const rv = live.metadata?.resourceVersion;
    await eventually(
      () =>
        env.mgmtInformers.informerFor(kind).cache.getByName(name, 'default')?.metadata?.resourceVersion ===
        rv,
      `${kind} default/${name} in the informer cache`,
    );
    return live;
  };
  const pass = async (name = 'workers'): Promise<KMPPass> => {
    const kmp = (await synced('KarpenterMachinePool', name)) as KarpenterMachinePool;
    return new KMPPass(kmp, NOW, logger);
  };
  return {
    env,
    ctx,
    store,
    instances,
    async apply(objs) {
      const res = await applyObjects(env.mgmt, objs);
      const failed = res.filter((r) => r.result === 'failed');
      if (failed.length > 0) throw new Error(failed.map((f) => f.error).join('; '));
      for (const obj of objs)
        if (CACHED.includes(obj.kind as string))
          await synced(obj.kind as string, obj.metadata?.name as string);
    },
    pass,
    async prepare(name) {
      const p = await pass(name);
      const inputs = await resolveInputs(ctx, p);
      if (!inputs) throw new Error(`${p.id} not resolved`);
      const boot = await reconcileBootstrap(ctx, p, inputs);
      return { pass: p, inputs, boot, desired: await generateDesired(ctx, p, inputs, boot) };
    },
    async events(name = 'workers') {
      const list = await env.mgmt.list('Event', { namespace: 'default' });
      return (
        list.items as Array<
          KubeObject & { involvedObject?: { name?: string }; reason?: string; message?: string }
        >
      )
        .filter((e) => e.involvedObject?.name === name)
        .map((e) => `${e.reason}: ${e.message}`);
    },
    async stop() {
      await workloads.stop();
      await env.stop();
    },
  };
}
