/**
 * The KarpenterMachinePool controller (`capi.karpentermachinepool`): runs against the management cluster (Cluster,
 * MachinePool, AWSCluster, KubeadmConfig and the bootstrap Secret live there) and writes the pool's NodePool +
 * EC2NodeClass into the workload cluster through CAPI's `<cluster>-kubeconfig` Secret.
 *
 * One reconcile of `namespace/name` adds the finalizer `capenter.sh/karpentermachinepool` (a deleting KMP goes to
 * `steps/finalize.ts` instead), then runs ordered steps, one file each under `steps/`, on one in-memory copy of the
 * KMP ({@link KMPPass}), and writes the status once at the end:
 * 1. `resolve`: the spec checked; the owning MachinePool (ownerReference set by CAPI, else the MachinePool whose
 *    infrastructureRef names the KMP), annotated `cluster.x-k8s.io/replicas-managed-by: external-autoscaler`;
 *    Cluster → AWSCluster (region, bucket);
 * 2. `bootstrap`: the bootstrap Secret (`bootstrap.dataSecretName`) uploaded to
 *    `s3://<bucket>/karpenter-machine-pool/<ns>/<name>` when its SHA-256 differs from the KMP annotation
 *    `capenter.sh/userdata-hash` (rotation rewrites only the object); a `RegistrationTaintConfigured=False`
 *    condition + Warning Event when the KubeadmConfig does not register nodes with
 *    `karpenter.sh/unregistered:NoExecute`;
 * 3. `generate`: the control-plane version; the desired NodePool + EC2NodeClass (desired.ts: subnets, security
 *    groups, tags, user data), version skew gate, validated with capenter's own validation;
 * 4. `apply`: both written to the workload cluster (created or replaced, labelled with the KMP);
 * 5. `report`: `spec.providerIDList` from the pool's NodeClaims (never empty while replicas ≠ 0, an ID leaves only
 *    when its Node is gone), `status.replicas` (= that list's length) and the MachinePool's `spec.replicas` kept
 *    equal to it, `status.ready` / `initialization.provisioned` (one-way: they stay true once provisioned) /
 *    `version` / `Ready`. When a step fails the list and replicas are still published (they depend only on the
 *    workload cluster).
 * Bad input (no MachinePool, no AWSCluster, no bucket, invalid spec) gives a False condition naming the object,
 * the field and the fix ({@link NotReady} ends the steps, the status is still written); other errors set
 * `Ready=False` reason `ReconcileError`, are written and rethrown (a conflict requeues without a write). Secrets
 * are never logged.
 *
 * With a watch namespace (`CAPI_WATCH_NAMESPACE`, Cluster API's `--namespace`; src/operator/capi-settings.ts) the
 * management informers list and watch that namespace only (their `SharedInformers` default `namespace`), so
 * Secrets need RBAC there only; a KMP of another namespace is never seen, and a key of one is not reconciled.
 */
import type { Logger } from 'pino';
import {
  AnnotationReplicasManagedBy,
  type KarpenterMachinePool,
  KMPConditions,
  KMPFinalizer,
  LabelClusterName,
  type MachinePool,
  ReplicasManagedByExternalAutoscaler,
  refGroup,
} from '../../apis/capi.ts';
import type { KubeObject } from '../../apis/core.ts';
import { isConflict } from '../../kube/errors.ts';
import {
  type Controller,
  defineController,
  errorMessage,
  type InformerController,
  type QueueController,
  type ReconcileResult,
  type Watch,
  watch,
} from '../runtime/index.ts';
import { clusterNameOf } from './desired.ts';
import { applyDesired } from './steps/apply.ts';
import { reconcileBootstrap } from './steps/bootstrap.ts';
import { KMPPass, type KMPStepContext, NotReady, writeStatus } from './steps/context.ts';
import { finalizePool } from './steps/finalize.ts';
import { generateDesired } from './steps/generate.ts';
import { publishReplicas, reportReplicas } from './steps/report.ts';
import { machinePoolOf, resolveInputs } from './steps/resolve.ts';
import { WorkloadClusters } from './workload.ts';

/**
 * Dependencies of {@link KarpenterMachinePoolController}: the steps' (management client, informers — KMP,
 * MachinePool, Cluster, AWSCluster and Secret are registered here —, clock, recorder, bootstrap store, instances)
 * plus the controller's own.
 */
export interface KMPControllerDeps
  extends Pick<
    KMPStepContext,
    'client' | 'informers' | 'clock' | 'recorder' | 'bootstrapStore' | 'instances'
  > {
  logger: Logger;
  /** Workload-cluster access (default: built here from the management client). */
  workloads?: WorkloadClusters;
  /** Seconds between full resyncs of a pool (default 60). */
  resyncSeconds?: number;
  /** Parallel reconciles (default 10). */
  concurrency?: number;
  /**
   * Only pools of this workload cluster (`MachinePool.spec.clusterName`): one capenter per workload cluster, its
   * instances seen through that cluster's cloud provider. Default: every cluster of the management cluster.
   */
  clusterName?: string;
  /** The AWSCluster's identity check (`KMPStepContext.clusterIdentity`); default none. */
  clusterIdentity?: KMPStepContext['clusterIdentity'];
  /**
   * Only KMPs (and their MachinePools, Clusters, AWSClusters, Secrets) of this namespace (`CAPI_WATCH_NAMESPACE`):
   * `informers` must be restricted to it (`new SharedInformers(client, { clock, namespace })`). Default: all.
   */
  watchNamespace?: string;
}

/** `namespace/name` of an object (namespace `default` when unset): the controller's key. */
const keyOf = (o: KubeObject): string => `${o.metadata?.namespace ?? 'default'}/${o.metadata?.name}`;

/** The KarpenterMachinePool controller; see the module comment. */
export class KarpenterMachinePoolController implements Controller {
  readonly name = 'capi.karpentermachinepool';
  /** The keyed queue (its reconciles run once the management caches have synced). */
  readonly queue: QueueController;
  readonly workloads: WorkloadClusters;
  private readonly kit: InformerController;
  private readonly ctx: KMPStepContext;

  /**
   * @throws Error when `deps.informers` is not restricted to exactly `deps.watchNamespace` (a cluster-wide Secret
   * informer would need the RBAC the setting avoids; a namespaced one without the setting would miss pools).
   */
  constructor(private readonly deps: KMPControllerDeps) {
    if (deps.informers.namespace !== deps.watchNamespace)
      throw new Error(
        `KarpenterMachinePool controller: watchNamespace is ${deps.watchNamespace ? `"${deps.watchNamespace}"` : 'unset (all namespaces)'} but its management informers watch ${deps.informers.namespace ? `namespace "${deps.informers.namespace}"` : 'all namespaces'}; build them with new SharedInformers(client, { clock, namespace: watchNamespace })`,
      );
    // a workload cluster's NodeClaim/Node event requeues the pool it belongs to
    this.workloads =
      deps.workloads ??
      new WorkloadClusters({
        management: deps.client,
        clock: deps.clock,
        logger: deps.logger,
        onChange: (ns, _cluster, np) => this.kit.enqueue(`${ns}/${np}`),
      });
    this.ctx = {
      client: deps.client,
      informers: deps.informers,
      clock: deps.clock,
      log: deps.logger.child({ controller: this.name }),
      recorder: deps.recorder,
      bootstrapStore: deps.bootstrapStore,
      instances: deps.instances,
      workloads: this.workloads,
      clusterName: deps.clusterName,
      clusterIdentity: deps.clusterIdentity,
    };
    this.kit = defineController({
      name: this.name,
      deps,
      concurrency: deps.concurrency ?? 10,
      watches: this.watches(),
      reconcile: (key) => this.reconcile(key),
    });
    this.queue = this.kit.queue;
  }

  /**
   * The management-cluster watches: a KMP itself; a MachinePool → the KMP its infrastructureRef names; a Cluster or
   * AWSCluster → every KMP of its namespace; a CAPI Secret (labelled with the cluster name) → the KMP of each
   * MachinePool whose bootstrap `dataSecretName` it is.
   */
  private watches(): Watch[] {
    const kmpOf = (mp: MachinePool): string | undefined => {
      const ref = mp.spec?.template?.spec?.infrastructureRef;
      if (ref && refGroup(ref) !== undefined && ref.kind === 'KarpenterMachinePool')
        return `${mp.metadata?.namespace ?? 'default'}/${ref.name}`;
      return undefined;
    };
    const kmpsOfNamespace = (o: KubeObject): string[] =>
      this.kmps()
        .cache.list({ namespace: o.metadata?.namespace ?? 'default' })
        .map(keyOf);
    const kmpsOfSecret = (o: KubeObject): string[] =>
      (this.machinePools().cache.list({ namespace: o.metadata?.namespace ?? 'default' }) as MachinePool[])
        .filter((mp) => mp.spec?.template?.spec?.bootstrap?.dataSecretName === o.metadata?.name)
        .flatMap((mp) => kmpOf(mp) ?? []);
    return [
      watch('KarpenterMachinePool', { map: keyOf }),
      watch('MachinePool', { map: (mp) => kmpOf(mp as MachinePool) }),
      watch('Cluster', { map: kmpsOfNamespace }),
      watch('AWSCluster', { map: kmpsOfNamespace }),
      watch('Secret', { informer: { labelSelector: LabelClusterName }, map: kmpsOfSecret }),
    ];
  }

  private kmps() {
    return this.deps.informers.informerFor('KarpenterMachinePool');
  }
  private machinePools() {
    return this.deps.informers.informerFor('MachinePool');
  }

  /**
   * Registers the watches, starts the management informers, waits for their caches, then reconciles until
   * `signal` aborts ({@link defineController}); stops the workload clusters it connected itself. Never rejects.
   */
  async start(signal: AbortSignal): Promise<void> {
    try {
      await this.kit.start(signal);
    } finally {
      if (!this.deps.workloads) await this.workloads.stop();
    }
  }

  /** Reconciles `namespace/name` (exposed for tests and benchmarks). */
  async reconcile(key: string): Promise<ReconcileResult> {
    const [namespace, name] = key.includes('/') ? (key.split('/', 2) as [string, string]) : ['default', key];
    if (this.deps.watchNamespace && namespace !== this.deps.watchNamespace) return {}; // never touched
    const cached = this.kmps().cache.getByName(name, namespace) as KarpenterMachinePool | undefined;
    if (!cached) return {};
    const kmp = structuredClone(cached);
    if (kmp.metadata.deletionTimestamp) return this.finalize(kmp);
    if (!kmp.metadata.finalizers?.includes(KMPFinalizer)) {
      await this.deps.client.patch(
        'KarpenterMachinePool',
        name,
        namespace,
        { metadata: { finalizers: [...(kmp.metadata.finalizers ?? []), KMPFinalizer] } },
        { type: 'merge' },
      );
    }
    const pass = new KMPPass(kmp, this.deps.clock.now(), this.ctx.log);
    const { status } = pass;
    try {
      if (!(await this.runSteps(pass))) return {};
    } catch (err) {
      if (isConflict(err)) return { requeue: true } as ReconcileResult;
      // status.ready / initialization.provisioned keep their value: provisioning is one-way (steps/report.ts)
      await this.publishAfterFailure(pass);
      if (!(err instanceof NotReady)) {
        pass.cond(KMPConditions.Ready, false, 'ReconcileError', errorMessage(err));
        await writeStatus(this.deps.client, kmp, status);
        throw err;
      }
      this.announceNotReady(kmp, pass);
    }
    if (kmp.metadata.generation !== undefined) status.observedGeneration = kmp.metadata.generation;
    await writeStatus(this.deps.client, kmp, status);
    return { requeueAfter: this.deps.resyncSeconds ?? 60 };
  }

  /**
   * The steps of one pass, in order; each hands the next what it built. False when the pool belongs to another
   * workload cluster (nothing to write). @throws NotReady (a condition is set) or any step's error.
   */
  private async runSteps(pass: KMPPass): Promise<boolean> {
    const inputs = await resolveInputs(this.ctx, pass);
    if (!inputs) return false;
    const boot = await reconcileBootstrap(this.ctx, pass, inputs);
    const desired = await generateDesired(this.ctx, pass, inputs, boot);
    const workload = await applyDesired(this.ctx, pass, desired);
    await reportReplicas(this.ctx, pass, workload, inputs.machinePool);
    return true;
  }

  /**
   * A Warning Event on `kmp` with the reason and message of its `Ready=False` condition, when they differ from the
   * condition it had before this pass (so bad input is announced once, not every resync).
   */
  private announceNotReady(kmp: KarpenterMachinePool, pass: KMPPass): void {
    const now = pass.condition(KMPConditions.Ready);
    if (now?.status !== 'False' || !now.reason) return;
    const before = (kmp.status?.conditions ?? []).find((c) => c.type === KMPConditions.Ready);
    if (before?.status === 'False' && before.reason === now.reason && before.message === now.message) return;
    void this.deps.recorder.publish(kmp, 'Warning', now.reason, now.message ?? now.reason);
  }

  /**
   * After a failed step (bad AWSCluster, S3 down, invalid spec...): still publishes the pool's provider IDs and
   * replicas ({@link publishReplicas}), which depend only on the workload cluster, so CAPI keeps tracking the nodes
   * the NodePool goes on launching. Best effort: nothing when the MachinePool is not there or not yet annotated
   * `replicas-managed-by: external-autoscaler` (capenter does not own its replicas yet), or when the cluster's
   * kubeconfig or the workload cluster is not there (logged at debug); never throws.
   */
  private async publishAfterFailure(pass: KMPPass): Promise<void> {
    const mp = machinePoolOf(this.deps.informers, pass.kmp);
    const clusterName = mp && clusterNameOf(mp);
    if (!mp || !clusterName || (this.ctx.clusterName && clusterName !== this.ctx.clusterName)) return;
    if (mp.metadata.annotations?.[AnnotationReplicasManagedBy] !== ReplicasManagedByExternalAutoscaler)
      return;
    try {
      const wc = await this.workloads.get(pass.namespace, clusterName);
      await publishReplicas(this.ctx, pass, wc, mp);
    } catch (err) {
      this.ctx.log.debug({ kmp: pass.id, err: errorMessage(err) }, 'provider IDs not published');
    }
  }

  /** The MachinePool owning `kmp` (ownerReference), else the one whose infrastructureRef names it. */
  machinePoolOf(kmp: KarpenterMachinePool): MachinePool | undefined {
    return machinePoolOf(this.deps.informers, kmp);
  }

  /** Deletion of `kmp` (`steps/finalize.ts`): the pool drained, then the EC2NodeClass, user data and finalizer. */
  async finalize(kmp: KarpenterMachinePool): Promise<ReconcileResult> {
    return finalizePool(this.ctx, kmp);
  }
}
