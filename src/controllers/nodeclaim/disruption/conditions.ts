/**
 * NodeClaim disruption conditions, after kubernetes-sigs/karpenter `pkg/controllers/nodeclaim/disruption`
 * (`consolidation.go`, `drift.go`): `Consolidatable=True` once `consolidateAfter` has elapsed since the last pod
 * event (removed otherwise) and `Drifted=True` with the drift reason (`NodePoolDrifted`, `RequirementsDrifted`,
 * `InstanceTypeNotFound`, provider reasons; removed when no longer drifted). The rules are the pure core's
 * (`disruption/candidates.ts` `consolidatableState`, `disruption/drift-reason.ts` `driftReason`), evaluated on the
 * disruption controller's input each pass so `kubectl get nodeclaims` shows what disruption sees.
 */
import type { Condition, NodeClaim, NodePool } from '../../../apis/karpenter.ts';
import { LabelInstanceType } from '../../../apis/labels.ts';
import { consolidatableState } from '../../../disruption/candidates.ts';
import { driftReason } from '../../../disruption/drift-reason.ts';
import type { DisruptionInput } from '../../../disruption/index.ts';
import type { KubeClient } from '../../../kube/client.ts';
import type { Clock } from '../../../kube/clock.ts';
import { isConflict, isNotFound } from '../../../kube/errors.ts';
import { ConditionSet } from '../../runtime/index.ts';
import { NodeClaimDependents } from '../lifecycle/context.ts';

/** Condition type: `consolidateAfter` has elapsed (upstream `ConditionTypeConsolidatable`). */
export const ConditionConsolidatable = 'Consolidatable';
/** Condition type: the NodeClaim no longer matches its NodePool/NodeClass (upstream `ConditionTypeDrifted`). */
export const ConditionDrifted = 'Drifted';

/** The wanted disruption conditions of one NodeClaim: `undefined` = absent, else the True condition's reason. */
export interface WantedConditions {
  consolidatable: string | undefined;
  drifted: string | undefined;
}

/** Computes the wanted conditions for every managed node of `input` (NodeClaim name → wanted). Pure. */
export function wantedDisruptionConditions(input: DisruptionInput): Map<string, WantedConditions> {
  const pools = new Map<string, NodePool>(input.nodePools.map((np) => [np.metadata.name, np]));
  const out = new Map<string, WantedConditions>();
  for (const dn of input.nodes) {
    const nc = dn.nodeClaim;
    if (!nc || nc.metadata.deletionTimestamp) continue;
    const pool = pools.get(nc.metadata.labels?.['karpenter.sh/nodepool'] ?? '');
    if (!pool) continue;
    const initialized = (nc.status?.conditions ?? []).some(
      (c) => c.type === 'Initialized' && c.status === 'True',
    );
    if (!initialized) continue;
    // evaluate drift afresh: an existing Drifted condition must not decide its own removal
    const fresh: NodeClaim = {
      ...nc,
      status: {
        ...nc.status,
        conditions: (nc.status?.conditions ?? []).filter((c) => c.type !== ConditionDrifted),
      },
    };
    const typeName = dn.node.metadata.labels?.[LabelInstanceType] ?? nc.metadata.labels?.[LabelInstanceType];
    const types = input.instanceTypes[pool.metadata.name];
    const it = typeName ? types?.find((t) => t.name === typeName) : undefined;
    const drift = driftReason({ ...dn, nodeClaim: fresh }, pool, types, it);
    const cons = consolidatableState(fresh, dn.node, pool, input.now);
    out.set(nc.metadata.name as string, {
      consolidatable: cons.consolidatable ? ConditionConsolidatable : undefined,
      drifted: drift,
    });
  }
  return out;
}

function differs(cur: Condition | undefined, reason: string | undefined): boolean {
  if (reason === undefined) return cur !== undefined;
  return cur?.status !== 'True' || cur.reason !== reason;
}

/**
 * Writes the wanted conditions onto the NodeClaims of `input` whose conditions differ (merge patch with the
 * resourceVersion; conflicts and vanished NodeClaims are skipped until the next pass). Returns the names patched.
 */
export async function syncDisruptionConditions(
  client: KubeClient,
  clock: Clock,
  input: DisruptionInput,
): Promise<string[]> {
  const wanted = wantedDisruptionConditions(input);
  const byName = new Map(
    input.nodes.flatMap((dn) => (dn.nodeClaim ? [[dn.nodeClaim.metadata.name, dn.nodeClaim]] : [])),
  );
  const patched: string[] = [];
  for (const [name, w] of wanted) {
    const nc = byName.get(name);
    if (!nc) continue;
    const conds = nc.status?.conditions ?? [];
    const cons = conds.find((c) => c.type === ConditionConsolidatable);
    const drift = conds.find((c) => c.type === ConditionDrifted);
    if (!differs(cons, w.consolidatable) && !differs(drift, w.drifted)) continue;
    const copy = structuredClone(nc);
    const set = new ConditionSet(copy, NodeClaimDependents, clock);
    if (w.consolidatable) set.setTrue(ConditionConsolidatable, w.consolidatable);
    else set.clear(ConditionConsolidatable);
    if (w.drifted) set.setTrue(ConditionDrifted, w.drifted, `NodeClaim is drifted: ${w.drifted}`);
    else set.clear(ConditionDrifted);
    try {
      await client.patchStatus(
        'NodeClaim',
        name,
        undefined,
        { metadata: { resourceVersion: nc.metadata.resourceVersion }, status: { conditions: set.list() } },
        { type: 'merge' },
      );
      patched.push(name);
    } catch (err) {
      if (!isConflict(err) && !isNotFound(err)) throw err;
    }
  }
  return patched;
}
