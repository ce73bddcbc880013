/**
 * The KarpenterMachinePool controller (`capi.karpentermachinepool`): runs against the management cluster (Cluster,
 * MachinePool, AWSCluster, KubeadmConfig and the bootstrap Secret live there) and writes the pool's NodePool +
 * EC2NodeClass into the workload cluster through CAPI's `<cluster>-kubeconfig` Secret.
 *
 * One reconcile of `namespace/name`:
 * 1. finalizer `capenter.sh/karpentermachinepool`; deletion → {@link KarpenterMachinePoolController.finalize};
 * 2. the owning MachinePool (ownerReference set by CAPI, else the MachinePool whose infrastructureRef names the
 *    KMP), annotated `cluster.x-k8s.io/replicas-managed-by: external-autoscaler`;
 * 3. Cluster → AWSCluster (region, subnets, security groups, bucket, tags), control-plane version;
 * 4. bootstrap Secret (`bootstrap.dataSecretName`): uploaded to `s3://<bucket>/karpenter-machine-pool/<ns>/<name>`
 *    when its SHA-256 differs from the KMP annotation `capenter.sh/userdata-hash` (rotation rewrites only the
 *    object);
 * 5. desired NodePool + EC2NodeClass (desired.ts), validated with capenter's own validation, written to the
 *    workload cluster (created or replaced, labelled with the KMP);
 * 6. `spec.providerIDList` from the pool's NodeClaims (never empty while replicas ≠ 0, an ID leaves only when its
 *    Node is gone), `status.replicas` / `ready` / `initialization.provisioned` / `version` / conditions; a
 *    `RegistrationTaintConfigured=False` condition + Warning Event when the KubeadmConfig does not register nodes
 *    with `karpenter.sh/unregistered:NoExecute`.
 * Bad input (no MachinePool, no AWSCluster, no bucket, invalid spec) gives a False condition naming the object,
 * the field and the fix; it never throws out of the controller. Secrets are never logged.
 */
import type { Logger } from 'pino';
import {
  AnnotationReplicasManagedBy,
  AnnotationUserDataHash,
  type AWSCluster,
  type CAPICluster,
  type CAPIRef,
  type KarpenterMachinePool,
  KMPConditions,
  KMPFinalizer,
  LabelClusterName,
  LabelKMPName,
  type MachinePool,
  ReplicasManagedByExternalAutoscaler,
  refersToKMP,
  refGroup,
  validateKMP,
} from '../../apis/capi.ts';
import type { KubeObject } from '../../apis/core.ts';
import { applyDefaults } from '../../apis/defaults.ts';
import type { EC2NodeClass, NodePool } from '../../apis/karpenter.ts';
import { LabelNodePool } from '../../apis/labels.ts';
import { validateObject } from '../../apis/validation.ts';
import type { KubeClient } from '../../kube/client.ts';
import type { Clock } from '../../kube/clock.ts';
import { isConflict, isNotFound } from '../../kube/errors.ts';
import type { EventRecorder } from '../../kube/events.ts';
import type { SharedInformers } from '../../kube/informer.ts';
import type { Secret } from '../../kube/types.ts';
import {
  type Controller,
  errorMessage,
  QueueController,
  type ReconcileResult,
  waitForInformerSync,
} from '../runtime/index.ts';
import {
  type BootstrapDataStore,
  type BootstrapLocation,
  BootstrapSecretError,
  bootstrapKey,
  readBootstrapSecret,
} from './bootstrap.ts';
import { getCondition, setCondition } from './conditions.ts';
import {
  clusterNameOf,
  desiredObjects,
  hasRegistrationTaint,
  nextProviderIDList,
  uninitializedEffect,
} from './desired.ts';
import type { PoolInstances } from './instances.ts';
import { WorkloadClusters } from './workload.ts';

/** Dependencies of {@link KarpenterMachinePoolController}. */
export interface KMPControllerDeps {
  /** Management-cluster client. */
  client: KubeClient;
  /** Management-cluster informers (KMP, MachinePool, Cluster, AWSCluster, Secret are registered here). */
  informers: SharedInformers;
  clock: Clock;
  logger: Logger;
  /** Events on the KMP (management cluster). */
  recorder: EventRecorder;
  /** Where bootstrap data goes (S3 on AWS; in-memory in the embedded setup). */
  bootstrapStore: BootstrapDataStore;
  /** The pool's instances (deletion waits for none to be left). */
  instances: PoolInstances;
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
}

type Status = NonNullable<KarpenterMachinePool['status']>;

const NOT_READY = Symbol('not ready');

/** Thrown inside a reconcile to stop with a condition already set (not an error). */
class NotReady extends Error {
  readonly [NOT_READY] = true;
}

/** The KarpenterMachinePool controller; see the module comment. */
export class KarpenterMachinePoolController implements Controller {
  readonly name = 'capi.karpentermachinepool';
  readonly queue: QueueController;
  readonly workloads: WorkloadClusters;
  private readonly deps: KMPControllerDeps;
  private readonly log: Logger;
  private readonly ownWorkloads: boolean;

  constructor(deps: KMPControllerDeps) {
    this.deps = deps;
    this.log = deps.logger.child({ controller: this.name });
    this.ownWorkloads = !deps.workloads;
    this.workloads =
      deps.workloads ??
      new WorkloadClusters({
        management: deps.client,
        clock: deps.clock,
        logger: deps.logger,
        onChange: (ns, _cluster, np) => this.queue.enqueue(`${ns}/${np}`),
      });
    this.queue = new QueueController({
      name: this.name,
      clock: deps.clock,
      logger: deps.logger,
      concurrency: deps.concurrency ?? 10,
      reconcile: (key) => this.reconcile(key),
    });
  }

  private kmps() {
    return this.deps.informers.informerFor('KarpenterMachinePool');
  }
  private machinePools() {
    return this.deps.informers.informerFor('MachinePool');
  }

  async start(signal: AbortSignal): Promise<void> {
    const inf = this.deps.informers;
    const enqueueKMP = (o: KubeObject): void =>
      this.queue.enqueue(`${o.metadata?.namespace ?? 'default'}/${o.metadata?.name}`);
    const enqueueForMP = (o: KubeObject): void => {
      const ref = (o as MachinePool).spec?.template?.spec?.infrastructureRef;
      if (ref && refGroup(ref) !== undefined && ref.kind === 'KarpenterMachinePool')
        this.queue.enqueue(`${o.metadata?.namespace ?? 'default'}/${ref.name}`);
    };
    const enqueueNamespace = (o: KubeObject): void => {
      for (const k of this.kmps().cache.list({ namespace: o.metadata?.namespace ?? 'default' }))
        enqueueKMP(k);
    };
    const enqueueForSecret = (o: KubeObject): void => {
      for (const mp of this.machinePools().cache.list({ namespace: o.metadata?.namespace ?? 'default' }))
        if ((mp as MachinePool).spec?.template?.spec?.bootstrap?.dataSecretName === o.metadata?.name)
          enqueueForMP(mp);
    };
    const on = (fn: (o: KubeObject) => void) => ({
      add: fn,
      update: (_: KubeObject, o: KubeObject) => fn(o),
      delete: fn,
    });
    const offs = [
      this.kmps().on(on(enqueueKMP) as never),
      this.machinePools().on(on(enqueueForMP) as never),
      inf.informerFor('Cluster').on(on(enqueueNamespace) as never),
      inf.informerFor('AWSCluster').on(on(enqueueNamespace) as never),
      inf.informerFor('Secret', { labelSelector: LabelClusterName }).on(on(enqueueForSecret) as never),
    ];
    inf.start();
    try {
      if (await waitForInformerSync({ name: this.name, logger: this.log, informers: inf, signal }))
        await this.queue.start(signal);
    } catch (err) {
      this.log.error({ err: errorMessage(err) }, 'controller stopped on an error');
    } finally {
      for (const off of offs) off();
      if (this.ownWorkloads) await this.workloads.stop();
    }
  }

  /** Reconciles `namespace/name` (exposed for tests and benchmarks). */
  async reconcile(key: string): Promise<ReconcileResult> {
    const [namespace, name] = key.includes('/') ? (key.split('/', 2) as [string, string]) : ['default', key];
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
    const status: Status = structuredClone(kmp.status ?? {});
    const now = new Date(this.deps.clock.now()).toISOString();
    const cond = (
      type: string,
      ok: boolean | 'Unknown',
      reason?: string,
      message?: string,
      severity?: 'Error' | 'Warning' | 'Info',
    ): void => {
      status.conditions = setCondition(
        status.conditions,
        type,
        ok === 'Unknown' ? 'Unknown' : ok ? 'True' : 'False',
        now,
        reason,
        message,
        severity,
      );
    };
    const id = `KarpenterMachinePool ${namespace}/${name}`;
    try {
      const valid = validateKMP(kmp);
      if (!valid.ok)
        throw this.notReady(cond, 'InvalidSpec', `${id} is invalid: ${valid.issues.join('; ')}`, 'Error');
      const mp = this.machinePoolOf(kmp);
      if (!mp)
        throw this.notReady(
          cond,
          'WaitingForMachinePool',
          `no MachinePool in namespace ${namespace} has spec.template.spec.infrastructureRef {kind: KarpenterMachinePool, name: ${name}}`,
        );
      const clusterName = clusterNameOf(mp);
      if (this.deps.clusterName && clusterName !== this.deps.clusterName) return {};
      await this.annotateMachinePool(mp);
      const cluster = clusterName
        ? (this.deps.informers.informerFor('Cluster').cache.getByName(clusterName, namespace) as
            | CAPICluster
            | undefined)
        : undefined;
      if (!cluster)
        throw this.notReady(
          cond,
          'WaitingForCluster',
          `Cluster ${namespace}/${clusterName ?? '<unset>'} of MachinePool ${mp.metadata.name} not found (spec.clusterName)`,
        );
      const awsRef = cluster.spec?.infrastructureRef;
      const aws =
        awsRef?.kind === 'AWSCluster'
          ? (this.deps.informers.informerFor('AWSCluster').cache.getByName(awsRef.name, namespace) as
              | AWSCluster
              | undefined)
          : undefined;
      if (!aws)
        throw this.notReady(
          cond,
          'WaitingForAWSCluster',
          `Cluster ${namespace}/${cluster.metadata.name} has no AWSCluster (spec.infrastructureRef ${awsRef ? `${awsRef.kind}/${awsRef.name} not found` : 'unset'})`,
        );
      const region = aws.spec?.region;
      const bucket = aws.spec?.s3Bucket?.name;
      if (!region)
        throw this.notReady(
          cond,
          'MissingRegion',
          `AWSCluster ${namespace}/${aws.metadata.name} has no spec.region`,
        );
      if (!bucket)
        throw this.notReady(
          cond,
          'S3BucketNotConfigured',
          `AWSCluster ${namespace}/${aws.metadata.name} has no spec.s3Bucket.name; set it (the pool's bootstrap data is stored there)`,
          'Error',
        );
      const loc: BootstrapLocation = { region, bucket, key: bootstrapKey(namespace, name) };

      // Bootstrap data → S3.
      const format = await this.uploadBootstrap(kmp, mp, loc, cond);

      // Bootstrap config checks (registration taint, uninitialized taint effect).
      const config = await this.bootstrapConfig(mp);
      const hasTaint = hasRegistrationTaint(config);
      const prevReg = getCondition(status.conditions, KMPConditions.RegistrationTaintConfigured);
      if (hasTaint === false) {
        const msg = `bootstrap config ${config?.kind}/${config?.metadata?.name} does not register nodes with karpenter.sh/unregistered:NoExecute; add it to spec.joinConfiguration.nodeRegistration.taints, or Karpenter's registration fails`;
        cond(KMPConditions.RegistrationTaintConfigured, false, 'RegistrationTaintMissing', msg);
        if (prevReg?.status !== 'False')
          void this.deps.recorder.publish(kmp, 'Warning', 'RegistrationTaintMissing', msg);
      } else cond(KMPConditions.RegistrationTaintConfigured, hasTaint === undefined ? 'Unknown' : true);

      const cpVersion = await this.controlPlaneVersion(cluster);
      const desired = desiredObjects(
        {
          kmp,
          machinePool: mp,
          cluster,
          awsCluster: aws,
          bootstrapFormat: format,
          bootstrapLocation: loc,
          uninitializedTaintEffect: uninitializedEffect(config),
          ...(cpVersion ? { controlPlaneVersion: cpVersion } : {}),
        },
        status.version,
      );
      if (desired.skew) {
        cond(
          KMPConditions.VersionSkewPolicySatisfied,
          false,
          'VersionNewerThanControlPlane',
          desired.skew.message,
        );
      } else cond(KMPConditions.VersionSkewPolicySatisfied, true);
      for (const obj of [desired.ec2NodeClass, desired.nodePool]) {
        const v = validateObject(obj);
        if (!v.ok)
          throw this.notReady(
            cond,
            'InvalidGeneratedSpec',
            `${id}: the generated ${obj.kind} is invalid: ${v.issues.map((i) => i.message).join('; ')}; fix spec.${obj.kind === 'NodePool' ? 'nodePool' : 'ec2NodeClass'}`,
            'Error',
          );
      }

      // Workload cluster writes.
      const wc = await this.workloads.get(namespace, desired.clusterName).catch((err: unknown) => {
        throw this.notReady(cond, 'WorkloadClusterUnavailable', errorMessage(err));
      });
      await this.put(wc.client, 'EC2NodeClass', desired.ec2NodeClass);
      cond(KMPConditions.EC2NodeClassCreated, true);
      await this.put(wc.client, 'NodePool', desired.nodePool);
      cond(KMPConditions.NodePoolCreated, true);
      if (desired.version) status.version = desired.version;

      // providerIDList and replicas from the pool's NodeClaims.
      const claims = WorkloadClusters.nodeClaims(wc, name);
      const nodeIDs = new Set(
        WorkloadClusters.nodes(wc)
          .map((n) => n.spec?.providerID ?? '')
          .filter((x) => x),
      );
      const prevList = kmp.spec?.providerIDList ?? [];
      const list = nextProviderIDList(
        prevList,
        claims.map((c) => c.status?.providerID ?? ''),
        claims.length,
        nodeIDs,
      );
      if (JSON.stringify(list) !== JSON.stringify(prevList)) {
        await this.deps.client.patch(
          'KarpenterMachinePool',
          name,
          namespace,
          { spec: { providerIDList: list } },
          { type: 'merge' },
        );
      }
      status.replicas = claims.length;
      const ready = getCondition(status.conditions, KMPConditions.BootstrapDataReady)?.status === 'True';
      status.ready = ready;
      status.initialization = { provisioned: ready };
      cond(KMPConditions.Ready, ready, ready ? undefined : 'BootstrapDataNotReady');
    } catch (err) {
      if (!(err instanceof NotReady)) {
        if (isConflict(err)) return { requeue: true } as ReconcileResult;
        cond(KMPConditions.Ready, false, 'ReconcileError', errorMessage(err));
        await this.writeStatus(kmp, status);
        throw err;
      }
      status.ready = status.ready === true && getCondition(status.conditions, 'Ready')?.status === 'True';
    }
    if (kmp.metadata.generation !== undefined) status.observedGeneration = kmp.metadata.generation;
    await this.writeStatus(kmp, status);
    return { requeueAfter: this.deps.resyncSeconds ?? 60 };
  }

  /** Sets Ready=False with `reason`/`message` and returns the NotReady to throw. */
  private notReady(
    cond: (t: string, ok: boolean, r?: string, m?: string, s?: 'Error' | 'Warning' | 'Info') => void,
    reason: string,
    message: string,
    severity: 'Error' | 'Warning' = 'Warning',
  ): NotReady {
    cond(KMPConditions.Ready, false, reason, message, severity);
    this.log.debug({ reason, message }, 'karpentermachinepool not ready');
    return new NotReady(message);
  }

  /** The MachinePool owning `kmp` (ownerReference), else the one whose infrastructureRef names it. */
  machinePoolOf(kmp: KarpenterMachinePool): MachinePool | undefined {
    const ns = kmp.metadata.namespace ?? 'default';
    const cache = this.machinePools().cache;
    const owner = kmp.metadata.ownerReferences?.find(
      (o) => o.kind === 'MachinePool' && o.apiVersion.startsWith('cluster.x-k8s.io/'),
    );
    if (owner) {
      const mp = cache.getByName(owner.name, ns) as MachinePool | undefined;
      if (mp) return mp;
    }
    return (cache.list({ namespace: ns }) as MachinePool[]).find((mp) =>
      refersToKMP(mp.spec?.template?.spec?.infrastructureRef, kmp.metadata.name as string),
    );
  }

  private async annotateMachinePool(mp: MachinePool): Promise<void> {
    if (mp.metadata.annotations?.[AnnotationReplicasManagedBy] === ReplicasManagedByExternalAutoscaler)
      return;
    await this.deps.client.patch(
      'MachinePool',
      mp.metadata.name as string,
      mp.metadata.namespace,
      { metadata: { annotations: { [AnnotationReplicasManagedBy]: ReplicasManagedByExternalAutoscaler } } },
      { type: 'merge' },
    );
  }

  /** Uploads the bootstrap data when its hash changed; returns its format. Sets BootstrapDataReady. */
  private async uploadBootstrap(
    kmp: KarpenterMachinePool,
    mp: MachinePool,
    loc: BootstrapLocation,
    cond: (t: string, ok: boolean, r?: string, m?: string, s?: 'Error' | 'Warning' | 'Info') => void,
  ): Promise<'cloud-config' | 'ignition'> {
    const ns = kmp.metadata.namespace ?? 'default';
    const secretName = mp.spec?.template?.spec?.bootstrap?.dataSecretName;
    const notReady = (reason: string, message: string): NotReady => {
      cond(KMPConditions.BootstrapDataReady, false, reason, message);
      return this.notReady(cond, reason, message);
    };
    if (!secretName)
      throw notReady(
        'WaitingForBootstrapData',
        `MachinePool ${ns}/${mp.metadata.name} has no spec.template.spec.bootstrap.dataSecretName yet`,
      );
    const secret = (await this.deps.client.tryGet('Secret', secretName, ns)) as Secret | undefined;
    if (!secret) throw notReady('WaitingForBootstrapData', `bootstrap Secret ${ns}/${secretName} not found`);
    let data: ReturnType<typeof readBootstrapSecret>;
    try {
      data = readBootstrapSecret(secret);
    } catch (err) {
      if (err instanceof BootstrapSecretError) throw notReady('InvalidBootstrapData', err.message);
      throw err;
    }
    const stored = kmp.metadata.annotations?.[AnnotationUserDataHash];
    if (stored !== data.sha256 || !(await this.deps.bootstrapStore.get(loc))) {
      await this.deps.bootstrapStore.put(loc, data.value);
      await this.deps.client.patch(
        'KarpenterMachinePool',
        kmp.metadata.name as string,
        ns,
        { metadata: { annotations: { [AnnotationUserDataHash]: data.sha256 } } },
        { type: 'merge' },
      );
      this.log.info(
        { kmp: `${ns}/${kmp.metadata.name}`, sha256: data.sha256, bucket: loc.bucket, key: loc.key },
        'uploaded bootstrap data',
      );
    }
    cond(KMPConditions.BootstrapDataReady, true);
    return data.format;
  }

  /** The MachinePool's bootstrap config object (KubeadmConfig), when referenced and readable. */
  private async bootstrapConfig(mp: MachinePool): Promise<KubeObject | undefined> {
    const ref: CAPIRef | undefined = mp.spec?.template?.spec?.bootstrap?.configRef;
    if (!ref) return undefined;
    try {
      return await this.deps.client.get(ref.kind, ref.name, mp.metadata.namespace);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      this.log.debug({ err: errorMessage(err) }, 'bootstrap config unreadable');
      return undefined;
    }
  }

  /** Control-plane version: `Cluster.spec.topology.version`, else the control-plane object's `status.version`. */
  private async controlPlaneVersion(cluster: CAPICluster): Promise<string | undefined> {
    if (cluster.spec?.topology?.version) return cluster.spec.topology.version;
    const ref = cluster.spec?.controlPlaneRef;
    if (!ref) return undefined;
    try {
      const cp = (await this.deps.client.get(
        ref.kind,
        ref.name,
        cluster.metadata.namespace,
      )) as KubeObject & {
        status?: { version?: string };
        spec?: { version?: string };
      };
      return cp.status?.version ?? cp.spec?.version;
    } catch {
      return undefined;
    }
  }

  /** Creates `obj` or replaces its labels and spec (kind is NodePool or EC2NodeClass). */
  private async put(client: KubeClient, kind: 'NodePool' | 'EC2NodeClass', obj: NodePool | EC2NodeClass) {
    const name = obj.metadata.name;
    const have = (await client.tryGet(kind, name)) as NodePool | EC2NodeClass | undefined;
    if (!have) {
      await client.create(obj);
      return;
    }
    const labels = { ...(have.metadata.labels ?? {}), ...(obj.metadata.labels ?? {}) };
    const same =
      JSON.stringify(labels) === JSON.stringify(have.metadata.labels ?? {}) &&
      specContains(have.spec as unknown, applyDefaults(obj).spec as unknown) &&
      specContains(applyDefaults(obj).spec as unknown, have.spec as unknown);
    if (same) return;
    await client.update({ ...have, metadata: { ...have.metadata, labels }, spec: obj.spec } as KubeObject);
  }

  private async writeStatus(kmp: KarpenterMachinePool, status: Status): Promise<void> {
    if (JSON.stringify(status) === JSON.stringify(kmp.status ?? {})) return;
    try {
      await this.deps.client.patchStatus(
        'KarpenterMachinePool',
        kmp.metadata.name as string,
        kmp.metadata.namespace,
        { status },
        { type: 'merge' },
      );
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  /**
   * Deletion: NodePool removed (and the pool's NodeClaims, so Karpenter drains and terminates them), then waits until
   * no NodeClaim and no instance of the pool is left — when the Cluster is being deleted (a live read) whatever
   * remains is terminated — then removes the EC2NodeClass and the S3 object and drops the finalizer.
   */
  async finalize(kmp: KarpenterMachinePool): Promise<ReconcileResult> {
    if (!kmp.metadata.finalizers?.includes(KMPFinalizer)) return {};
    const ns = kmp.metadata.namespace ?? 'default';
    const name = kmp.metadata.name as string;
    const mp = this.machinePoolOf(kmp);
    const clusterName = (mp && clusterNameOf(mp)) ?? kmp.metadata.labels?.[LabelClusterName];
    if (this.deps.clusterName && clusterName !== this.deps.clusterName) return {};
    const cluster = clusterName
      ? ((await this.deps.client.tryGet('Cluster', clusterName, ns)) as CAPICluster | undefined)
      : undefined;
    const clusterGone = !cluster || !!cluster.metadata.deletionTimestamp;
    const aws =
      cluster?.spec?.infrastructureRef?.kind === 'AWSCluster'
        ? ((await this.deps.client.tryGet('AWSCluster', cluster.spec.infrastructureRef.name, ns)) as
            | AWSCluster
            | undefined)
        : undefined;
    const region = aws?.spec?.region ?? '';
    let wcClient: KubeClient | undefined;
    if (clusterName) {
      try {
        wcClient = (await this.workloads.get(ns, clusterName)).client;
      } catch (err) {
        if (!clusterGone) throw err;
      }
    }
    const q = { namespace: ns, clusterName: clusterName ?? '', nodePool: name, region };
    if (wcClient) {
      await wcClient.tryDelete('NodePool', name);
      const claims = (await wcClient.list('NodeClaim', { labelSelector: { [LabelNodePool]: name } })).items;
      for (const c of claims)
        if (!c.metadata?.deletionTimestamp) await wcClient.tryDelete('NodeClaim', c.metadata?.name as string);
      if (claims.length > 0 && !clusterGone) return { requeueAfter: 2 };
    }
    const left = await this.deps.instances.list(q);
    if (left.length > 0) {
      if (!clusterGone) return { requeueAfter: 2 };
      this.log.info(
        { kmp: `${ns}/${name}`, instances: left.length },
        'cluster deleted: terminating the pool instances',
      );
      await this.deps.instances.terminate(q, left);
      if ((await this.deps.instances.list(q)).length > 0) return { requeueAfter: 2 };
    }
    if (wcClient) await wcClient.tryDelete('EC2NodeClass', name);
    if (aws?.spec?.s3Bucket?.name && region)
      await this.deps.bootstrapStore.delete({
        region,
        bucket: aws.spec.s3Bucket.name,
        key: bootstrapKey(ns, name),
      });
    const fresh = (await this.deps.client.tryGet('KarpenterMachinePool', name, ns)) as
      | KarpenterMachinePool
      | undefined;
    if (!fresh) return {};
    await this.deps.client.patch(
      'KarpenterMachinePool',
      name,
      ns,
      {
        metadata: {
          finalizers: (fresh.metadata.finalizers ?? []).filter((f) => f !== KMPFinalizer),
          resourceVersion: fresh.metadata.resourceVersion,
        },
      },
      { type: 'merge' },
    );
    this.log.info({ kmp: `${ns}/${name}`, label: LabelKMPName }, 'karpentermachinepool finalized');
    return {};
  }
}

/** True when every field of `want` equals the same field of `have` (server defaults in `have` are ignored). */
function specContains(have: unknown, want: unknown): boolean {
  if (Array.isArray(want)) {
    return (
      Array.isArray(have) && have.length === want.length && want.every((w, i) => specContains(have[i], w))
    );
  }
  if (want && typeof want === 'object') {
    if (!have || typeof have !== 'object') return false;
    return Object.entries(want).every(([k, v]) =>
      v === undefined ? true : specContains((have as Record<string, unknown>)[k], v),
    );
  }
  return have === want;
}
