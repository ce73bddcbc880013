/**
 * `nodeclass.clusterapi`: the condition `MachineDeploymentsReady` on every ClusterAPINodeClass, from what the
 * clusterapi provider resolves for it (`ClusterAPICloudProvider.resolve`), every `periodSeconds` (default 10):
 * - True, reason `MachineDeploymentsReady`: every selected MachineDeployment is usable;
 * - True, reason `SomeMachineDeploymentsUnusable`: some are usable; the message lists the others as
 *   `<name>: <Reason> (<why>)` (Paused, ReplicasManagedByTopology, PreflightChecksBlocked, CapacityUnknown,
 *   InvalidAnnotation, Deleting);
 * - False, reason `NoUsableMachineDeployments`: none is (the message lists why, or says that none is selected).
 * The operator makes it a dependent of the NodeClass's `Ready` (`nodeClassDependents`), so a NodeClass without a
 * usable deployment is not Ready and its NodePools do not provision. The status is written only when it changed.
 * Each pass also asks the provider to remove unclaimed Machines nobody waits for (`trimUnclaimed`).
 */

import type { KubeObject } from '../../../apis/core.ts';
import type { ClusterAPINodeClass, Condition, NodeClaim } from '../../../apis/karpenter.ts';
import { AnnotationDoNotDisrupt } from '../../../apis/labels.ts';
import { type Controller, errorMessage } from '../../../controllers/runtime/index.ts';
import type { KubeClient } from '../../../kube/client.ts';
import type { Clock } from '../../../kube/clock.ts';
import { isConflict, isNotFound } from '../../../kube/errors.ts';
import type { SharedInformers } from '../../../kube/informer.ts';
import type { Logger } from '../../../kube/logger.ts';
import { AnnotationNodeClaimMachineDeployment, type ClusterAPICloudProvider } from '../provider.ts';

/** NodeClaim annotation: capenter set `karpenter.sh/do-not-disrupt` because its deployment is at min-size. */
export const AnnotationMinSizeGuard = 'karpenter.cluster.x-k8s.io/min-size-guard';

/** Condition type this controller owns. */
export const ConditionMachineDeploymentsReady = 'MachineDeploymentsReady';

/** Options of {@link ClusterAPINodeClassController}. */
export interface ClusterAPINodeClassControllerOptions {
  /** Client of the workload cluster (where the ClusterAPINodeClasses live). */
  client: KubeClient;
  provider: ClusterAPICloudProvider;
  clock: Clock;
  logger: Logger;
  /** The operator's informers: a ClusterAPINodeClass add/update triggers a pass. */
  informers?: SharedInformers;
  /** Events on the NodeClass: a Warning with the condition's reason and message when deployments become unusable. */
  recorder?: {
    publish(obj: KubeObject, type: 'Normal' | 'Warning', reason: string, message: string): Promise<unknown>;
  };
  periodSeconds?: number;
}

/** The condition for a resolution. Pure. */
export function machineDeploymentsCondition(
  usable: readonly { name: string }[],
  unusable: readonly { name: string; reason: string; message: string }[],
): Pick<Condition, 'type' | 'status' | 'reason' | 'message'> {
  const list = unusable.map((u) => `${u.name}: ${u.reason} (${u.message})`).join('; ');
  if (usable.length === 0)
    return {
      type: ConditionMachineDeploymentsReady,
      status: 'False',
      reason: 'NoUsableMachineDeployments',
      message:
        unusable.length === 0
          ? 'no MachineDeployment labelled node.cluster.x-k8s.io/karpenter-member matches spec.scalableResourceSelector'
          : `no usable MachineDeployment: ${list}`,
    };
  if (unusable.length === 0)
    return {
      type: ConditionMachineDeploymentsReady,
      status: 'True',
      reason: 'MachineDeploymentsReady',
      message: `${usable.length} usable: ${usable.map((u) => u.name).join(', ')}`,
    };
  return {
    type: ConditionMachineDeploymentsReady,
    status: 'True',
    reason: 'SomeMachineDeploymentsUnusable',
    message: `${usable.length} usable (${usable.map((u) => u.name).join(', ')}); not used: ${list}`,
  };
}

/** The ClusterAPINodeClass status controller; see the module comment. */
export class ClusterAPINodeClassController implements Controller {
  readonly name = 'nodeclass.clusterapi';
  constructor(private readonly o: ClusterAPINodeClassControllerOptions) {}

  async start(signal: AbortSignal): Promise<void> {
    // A new or changed ClusterAPINodeClass is resolved at once, not at the next period.
    let wake: AbortController = new AbortController();
    const off = this.o.informers
      ?.informerFor('ClusterAPINodeClass')
      .on({ add: () => wake.abort(), update: () => wake.abort() });
    try {
      while (!signal.aborted) {
        wake = new AbortController();
        try {
          await this.reconcileAll();
        } catch (err) {
          this.o.logger.warn({ err: errorMessage(err) }, 'ClusterAPINodeClass status');
        }
        try {
          const trimmed = await this.o.provider.trimUnclaimed();
          if (Object.keys(trimmed).length > 0)
            this.o.logger.info({ machineDeployments: trimmed }, 'removed unclaimed Machines');
        } catch (err) {
          this.o.logger.warn({ err: errorMessage(err) }, 'removing unclaimed Machines');
        }
        try {
          await this.guardMinSize();
        } catch (err) {
          this.o.logger.warn({ err: errorMessage(err) }, 'min-size guard');
        }
        const both = AbortSignal.any([signal, wake.signal]);
        await this.o.clock.sleep((this.o.periodSeconds ?? 10) * 1000, both).catch(() => {});
      }
    } finally {
      off?.();
    }
  }

  /**
   * Keeps consolidation off the NodeClaims of deployments at their min-size (deleting one only makes CAPI replace
   * its Machine with an unclaimed one): `karpenter.sh/do-not-disrupt: "true"` plus {@link AnnotationMinSizeGuard}
   * on each such NodeClaim that is not drifted (drift still replaces it), both removed once the deployment is
   * above its min-size. Annotations a user set are left alone. Exposed for tests.
   */
  async guardMinSize(): Promise<void> {
    const held = await this.o.provider.atMinSize();
    const claims = (await this.o.client.list('NodeClaim')).items as NodeClaim[];
    for (const nc of claims) {
      const md = nc.metadata.annotations?.[AnnotationNodeClaimMachineDeployment];
      if (!md || nc.metadata.deletionTimestamp) continue;
      const drifted = nc.status?.conditions?.some((c) => c.type === 'Drifted' && c.status === 'True');
      const want = held.has(md) && !drifted;
      const ours = nc.metadata.annotations?.[AnnotationMinSizeGuard] === 'true';
      if (want === ours) continue;
      if (want && nc.metadata.annotations?.[AnnotationDoNotDisrupt] !== undefined) continue;
      const annotations = want
        ? { [AnnotationDoNotDisrupt]: 'true', [AnnotationMinSizeGuard]: 'true' }
        : { [AnnotationDoNotDisrupt]: null, [AnnotationMinSizeGuard]: null };
      await this.o.client
        .patch('NodeClaim', nc.metadata.name!, undefined, { metadata: { annotations } }, { type: 'merge' })
        .catch((err) => {
          if (!isNotFound(err) && !isConflict(err)) throw err;
        });
    }
  }

  /** One pass over every ClusterAPINodeClass (exposed for tests). */
  async reconcileAll(): Promise<void> {
    const list = await this.o.client.list('ClusterAPINodeClass');
    for (const nc of list.items as ClusterAPINodeClass[]) {
      const name = nc.metadata.name;
      const r = await this.o.provider.resolve(name, true).catch((err) => {
        if (isNotFound(err)) return undefined;
        throw err;
      });
      if (!r) continue;
      const want = machineDeploymentsCondition(r.usable, r.unusable);
      const conds = ((nc.status as { conditions?: Condition[] } | undefined)?.conditions ?? []).slice();
      const i = conds.findIndex((c) => c.type === want.type);
      const cur = i >= 0 ? conds[i] : undefined;
      if (cur && cur.status === want.status && cur.reason === want.reason && cur.message === want.message)
        continue;
      const next: Condition = {
        ...want,
        lastTransitionTime:
          cur && cur.status === want.status
            ? cur.lastTransitionTime
            : new Date(this.o.clock.now()).toISOString(),
        ...(nc.metadata.generation !== undefined ? { observedGeneration: nc.metadata.generation } : {}),
      } as Condition;
      if (i >= 0) conds[i] = next;
      else conds.push(next);
      try {
        await this.o.client.updateStatus({ ...nc, status: { ...(nc.status ?? {}), conditions: conds } });
        if (want.status === 'False' || want.reason !== 'MachineDeploymentsReady') {
          this.o.logger.info(
            { nodeclass: name, reason: want.reason, detail: want.message },
            'ClusterAPINodeClass',
          );
          void this.o.recorder?.publish(
            nc,
            'Warning',
            want.reason ?? 'MachineDeploymentsUnusable',
            want.message ?? '',
          );
        }
      } catch (err) {
        if (!isConflict(err) && !isNotFound(err)) throw err;
      }
    }
  }
}
