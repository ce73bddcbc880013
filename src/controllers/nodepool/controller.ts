/**
 * `nodepool`: one keyed controller running, per NodePool, the upstream NodePool controllers as steps:
 * hash ({@link reconcileHash}), validation (`ValidationSucceeded`), readiness (`NodeClassReady`), registration
 * health (`NodeRegistrationHealthy` reset on NodePool/NodeClass changes, {@link reconcileRegistrationHealth}), counter
 * (`status.resources`, `status.nodes`); the root `Ready` = ValidationSucceeded ∧ NodeClassReady. A NodePool that
 * fails validation or whose NodeClass is missing/not ready gets `Ready=False` with the reason and message and a
 * Warning Event (on transition) — never a crash; provisioning skips NodePools that are not Ready.
 * Triggered by NodePool events, NodeClass events (every NodePool referencing it), and NodeClaim/Node events
 * (their `karpenter.sh/nodepool`, for the counter).
 */
import type { KubeObject } from '../../apis/core.ts';
import type { NodePool } from '../../apis/karpenter.ts';
import { LabelNodePool } from '../../apis/labels.ts';
import { statusResources } from '../../scheduling/limits.ts';
import type { NodePoolHealth } from '../../state/nodepoolhealth.ts';
import { ConditionSet, type ReconcileResult, type Watch, watch } from '../runtime/index.ts';
import { reconcileHash } from './hash.ts';
import { ConditionNodeClassReady, nodeClassReadiness } from './readiness.ts';
import { reconcileRegistrationHealth } from './registrationhealth.ts';
import { StatusController, type StatusControllerOptions } from './statuscontroller.ts';
import { ConditionValidationSucceeded, nodePoolValidationError } from './validation.ts';

/** Dependents of the NodePool's root `Ready` condition. */
export const NodePoolDependents = [ConditionValidationSucceeded, ConditionNodeClassReady] as const;

/** Options of {@link NodePoolController}. */
export interface NodePoolControllerOptions extends StatusControllerOptions {
  /** Parallel reconciles of distinct NodePools (default 4). */
  concurrency?: number;
  /** The registration outcomes shared with `nodeclaim.lifecycle` (`NodeRegistrationHealthy`); none: not tracked. */
  nodePoolHealth?: NodePoolHealth;
}

/** The NodePool controller. */
export class NodePoolController extends StatusController<NodePoolControllerOptions> {
  constructor(opts: NodePoolControllerOptions) {
    super('nodepool', opts, opts.concurrency ?? 4);
  }

  protected watches(): Watch[] {
    const byLabel = (o: KubeObject): string | undefined => o.metadata?.labels?.[LabelNodePool] || undefined;
    const byName = (np: NodePool): string => np.metadata.name;
    return [
      watch('NodePool', { events: ['add', 'update'], map: byName }),
      watch('NodeClaim', { map: byLabel }),
      watch('Node', { map: byLabel }),
      // every NodePool referencing the NodeClass
      ...this.nodeClassTypes().map((rt) =>
        watch(rt, {
          map: (nc) =>
            (this.kit.cache('NodePool')?.list() ?? [])
              .filter((np) => {
                const ref = np.spec.template.spec.nodeClassRef;
                return ref.kind === rt.kind && ref.group === rt.group && ref.name === nc.metadata?.name;
              })
              .map(byName),
        }),
      ),
    ];
  }

  /** Reconciles one NodePool (exposed for tests). */
  async reconcile(name: string): Promise<ReconcileResult> {
    const { client, clock } = this.opts;
    const nodePool = await client.tryGet('NodePool', name);
    if (!nodePool || nodePool.metadata.deletionTimestamp) return {};
    const stored = structuredClone(nodePool);
    const conds = new ConditionSet(nodePool, NodePoolDependents, clock);

    const invalid = await nodePoolValidationError(nodePool);
    if (invalid) conds.setFalse(ConditionValidationSucceeded, 'NodePoolValidationFailed', invalid);
    else conds.setTrue(ConditionValidationSucceeded);

    if (!invalid) await reconcileHash(client, nodePool);

    const ref = nodePool.spec?.template?.spec?.nodeClassRef;
    let nodeClass: KubeObject | undefined;
    const rt = ref ? client.registry.forKind(`${ref.kind}.${ref.group}`) : undefined;
    const supported = this.opts.cloudProvider.supportedNodeClasses();
    if (rt && ref && supported.some((k) => k.group === ref.group && k.kind === ref.kind))
      nodeClass = await client.tryGet(rt, ref.name);
    const verdict = ref
      ? nodeClassReadiness(nodePool, nodeClass, supported)
      : {
          status: 'False' as const,
          reason: 'NodeClassNotFound',
          message: 'spec.template.spec.nodeClassRef is missing',
        };
    if (verdict.status === 'True') conds.setTrue(ConditionNodeClassReady);
    else conds.setFalse(ConditionNodeClassReady, verdict.reason, verdict.message);
    reconcileRegistrationHealth(nodePool, conds, nodeClass, this.opts.nodePoolHealth);

    const [claims, nodes] = await Promise.all([
      client.list('NodeClaim', { labelSelector: { [LabelNodePool]: name } }),
      client.list('Node', { labelSelector: { [LabelNodePool]: name } }),
    ]);
    const usage = statusResources(name, claims.items, nodes.items);
    nodePool.status ??= {};
    const st = nodePool.status;
    st.resources = usage.resources;
    st.nodes = usage.nodes;

    if (JSON.stringify(stored.status ?? {}) !== JSON.stringify(nodePool.status)) {
      const failed = await this.writeStatus('NodePool', nodePool);
      if (failed) return failed;
      this.warnOnTransition(stored, nodePool);
    }
    return {};
  }

  private warnOnTransition(before: NodePool, after: NodePool): void {
    const was = (t: string) => before.status?.conditions?.find((c) => c.type === t);
    for (const t of NodePoolDependents) {
      const now = after.status?.conditions?.find((c) => c.type === t);
      const prev = was(t);
      if (now?.status === 'False' && (prev?.status !== 'False' || prev.message !== now.message)) {
        this.opts.logger.warn(
          {
            controller: this.name,
            nodepool: after.metadata.name,
            condition: t,
            reason: now.reason,
            detail: now.message,
          },
          'nodepool not ready',
        );
        void this.opts.recorder.publish(after, 'Warning', now.reason ?? t, now.message ?? '');
      }
    }
  }
}
