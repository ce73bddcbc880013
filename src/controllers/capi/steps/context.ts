/**
 * What the KarpenterMachinePool reconcile steps (resolve → bootstrap → generate → apply → report, and finalize on
 * deletion) share: the injected dependencies ({@link KMPStepContext}) and one pass's in-memory state
 * ({@link KMPPass}: the KMP copy, the status the steps fill in, the condition setter). Each step reads the pass and
 * sets conditions on `pass.status`; the controller writes the status once at the end, as the NodeClaim lifecycle
 * controller does (`controllers/nodeclaim/lifecycle/context.ts`). A step that cannot go on throws the
 * {@link NotReady} returned by {@link KMPPass.notReady}: `Ready=False` is already set, the status is still written.
 */
import type { Logger } from 'pino';
import { type CAPICondition, type KarpenterMachinePool, KMPConditions } from '../../../apis/capi.ts';
import type { ClusterIdentityCheck } from '../../../cloudprovider/module.ts';
import type { KubeClient } from '../../../kube/client.ts';
import type { Clock } from '../../../kube/clock.ts';
import { isNotFound } from '../../../kube/errors.ts';
import type { EventRecorder } from '../../../kube/events.ts';
import type { SharedInformers } from '../../../kube/informer.ts';
import type { BootstrapDataStore } from '../bootstrap.ts';
import { getCondition, type Severity, setCondition } from '../conditions.ts';
import type { PoolInstances } from '../instances.ts';
import type { WorkloadClusters } from '../workload.ts';

/** Dependencies of every step (the controller's, with its child logger and its workload-cluster cache). */
export interface KMPStepContext {
  /** Management-cluster client. */
  client: KubeClient;
  /** Management-cluster informers (KMP, MachinePool, Cluster, AWSCluster). */
  informers: SharedInformers;
  clock: Clock;
  log: Logger;
  /** Events on the KMP (management cluster). */
  recorder: EventRecorder;
  /** Where bootstrap data goes (S3 on AWS; in-memory in the embedded setup). */
  bootstrapStore: BootstrapDataStore;
  /** The pool's instances (deletion waits for none to be left). */
  instances: PoolInstances;
  /** Workload-cluster clients. */
  workloads: WorkloadClusters;
  /** Only pools of this workload cluster (`MachinePool.spec.clusterName`); undefined: every cluster. */
  clusterName?: string | undefined;
  /**
   * Checks the AWSCluster's credentials (`spec.identityRef`) and makes the cloud provider use them (aws:
   * `src/cloudprovider/aws/identity.ts`); `{ok: false}` stops the pass with `Ready=False` and that reason. Undefined:
   * no check (the embedded setup, a provider without identities).
   */
  clusterIdentity?: ClusterIdentityCheck | undefined;
}

/** The KMP's `status` as the steps fill it in. */
export type KMPStatus = NonNullable<KarpenterMachinePool['status']>;

const NOT_READY = Symbol('not ready');

/** Thrown inside a reconcile to stop with a condition already set (not an error). */
export class NotReady extends Error {
  readonly [NOT_READY] = true;
}

/** One reconcile of one KMP: its copy, the status being built, and the condition helpers. */
export class KMPPass {
  readonly namespace: string;
  readonly name: string;
  /** `KarpenterMachinePool <ns>/<name>`, for messages. */
  readonly id: string;
  /** A copy of `kmp.status`; the steps mutate it, the controller writes it once. */
  readonly status: KMPStatus;
  private readonly now: string;

  /** `now` is the pass's time in ms since the epoch (conditions' `lastTransitionTime`). */
  constructor(
    readonly kmp: KarpenterMachinePool,
    now: number,
    private readonly log: Logger,
  ) {
    this.namespace = kmp.metadata.namespace ?? 'default';
    this.name = kmp.metadata.name as string;
    this.id = `KarpenterMachinePool ${this.namespace}/${this.name}`;
    this.status = structuredClone(kmp.status ?? {});
    this.now = new Date(now).toISOString();
  }

  /** Sets condition `type` to True/False/Unknown (`severity` only matters for False; default Warning). */
  cond(type: string, ok: boolean | 'Unknown', reason?: string, message?: string, severity?: Severity): void {
    this.status.conditions = setCondition(
      this.status.conditions,
      type,
      ok === 'Unknown' ? 'Unknown' : ok ? 'True' : 'False',
      this.now,
      reason,
      message,
      severity,
    );
  }

  /** The condition of `type` in the status being built. */
  condition(type: string): CAPICondition | undefined {
    return getCondition(this.status.conditions, type);
  }

  /** Sets Ready=False with `reason`/`message` and returns the {@link NotReady} to throw. */
  notReady(reason: string, message: string, severity: 'Error' | 'Warning' = 'Warning'): NotReady {
    this.cond(KMPConditions.Ready, false, reason, message, severity);
    this.log.debug({ reason, message }, 'karpentermachinepool not ready');
    return new NotReady(message);
  }
}

/**
 * Writes `status` to the KMP's status subresource (merge patch) when it differs from `kmp.status`; a KMP deleted
 * meanwhile is not an error. @throws the client's error otherwise.
 */
export async function writeStatus(
  client: KubeClient,
  kmp: KarpenterMachinePool,
  status: KMPStatus,
): Promise<void> {
  if (JSON.stringify(status) === JSON.stringify(kmp.status ?? {})) return;
  try {
    await client.patchStatus(
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
