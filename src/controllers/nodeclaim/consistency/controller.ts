/**
 * `nodeclaim.consistency`: checks that a NodeClaim's Node is what was launched, after kubernetes-sigs/karpenter
 * `pkg/controllers/nodeclaim/consistency/{controller,nodeshape,events}.go` (v1.14). Keyed by NodeClaim name;
 * NodeClaim events and Node events (mapped by provider ID) enqueue it. A reconcile:
 * - skips NodeClaims of NodeClass kinds this provider does not launch and NodeClaims without a provider ID;
 * - scans a NodeClaim at most once per {@link ConsistencyScanSeconds} (10 min; earlier events requeue at the end
 *   of the window);
 * - needs exactly one Node with the provider ID (none or several: nothing to check, the lifecycle reports it);
 * - runs the checks ({@link nodeShapeIssues}): each issue is a Warning Event `FailedConsistencyCheck` on the
 *   NodeClaim with the issue as message; the NodeClaim condition `ConsistentStateFound` becomes True when none
 *   was found, False `ConsistencyCheckFailed` "Consistency Check Failed" otherwise (not a dependent of `Ready`);
 * - patches the status with its resourceVersion (a conflict requeues) and looks again in 10 min.
 */
import type { Node } from '../../../apis/core.ts';
import type { NodeClaim } from '../../../apis/karpenter.ts';
import { parseQuantity } from '../../../apis/quantity.ts';
import { isConflict, isNotFound } from '../../../kube/errors.ts';
import {
  type Controller,
  type ControllerDeps,
  defineController,
  type InformerController,
  type InformerSyncOptions,
  indexProviderID,
  nodeClaimsForNode,
  nodesForNodeClaim,
  type ReconcileResult,
  watch,
} from '../../runtime/index.ts';
import { ConditionInitialized, nodeClaimConditions } from '../lifecycle/context.ts';
import { isManaged } from '../lifecycle/controller.ts';

/** Seconds between two scans of one NodeClaim (upstream `scanPeriod`, 10 min). */
export const ConsistencyScanSeconds = 600;
/** NodeClaim condition type set by the checks (upstream `ConditionTypeConsistentStateFound`). */
export const ConditionConsistentStateFound = 'ConsistentStateFound';
/** Share of a resource's expected capacity below which the Node's shape is an issue (upstream 90%). */
export const NodeShapeMinRatio = 0.9;

/**
 * The NodeShape check (upstream `nodeshape.go`): for every resource the NodeClaim requests (non-zero) whose
 * expected capacity (`status.capacity`) is non-zero, an issue when the Node's `status.capacity` is below 90% of it:
 * `expected <q> of resource <name>, but found <q> (<pct>% of expected)`. Deleting and not yet initialized
 * NodeClaims have no issues. Unparsable quantities count as 0. Pure.
 */
export function nodeShapeIssues(node: Node, nodeClaim: NodeClaim): string[] {
  if (nodeClaim.metadata.deletionTimestamp) return [];
  const initialized = nodeClaim.status?.conditions?.find((c) => c.type === ConditionInitialized);
  if (initialized?.status !== 'True') return [];
  const q = (v: string | number | undefined): number => {
    try {
      return v === undefined ? 0 : parseQuantity(v);
    } catch {
      return 0;
    }
  };
  const issues: string[] = [];
  for (const [name, requested] of Object.entries(nodeClaim.spec.resources?.requests ?? {})) {
    const expected = nodeClaim.status?.capacity?.[name];
    const found = node.status?.capacity?.[name];
    if (q(requested) === 0 || q(expected) === 0) continue;
    const pct = q(found) / q(expected);
    if (pct < NodeShapeMinRatio)
      issues.push(
        `expected ${expected} of resource ${name}, but found ${found ?? '0'} (${(pct * 100).toFixed(1)}% of expected)`,
      );
  }
  return issues;
}

/** Options of {@link NodeClaimConsistencyController}. */
export interface ConsistencyOptions extends ControllerDeps, InformerSyncOptions {}

/** The consistency controller; see the module doc. */
export class NodeClaimConsistencyController implements Controller {
  readonly name = 'nodeclaim.consistency';
  private readonly kit: InformerController;
  /** NodeClaim UID → when it was last scanned (ms). */
  private readonly lastScanned = new Map<string, number>();

  constructor(private readonly opts: ConsistencyOptions) {
    const byName = (nc: NodeClaim): string => nc.metadata.name as string;
    this.kit = defineController({
      name: this.name,
      deps: opts,
      concurrency: 10,
      watches: [
        watch('NodeClaim', { index: indexProviderID, map: byName }),
        watch('Node', {
          index: indexProviderID,
          map: (n) => {
            const claims = this.kit.cache('NodeClaim');
            return claims ? nodeClaimsForNode(claims, n).map(byName) : [];
          },
        }),
      ],
      reconcile: (key) => this.reconcile(key),
    });
  }

  /** Runs until `signal` aborts (see {@link defineController}); never rejects. */
  start(signal: AbortSignal): Promise<void> {
    return this.kit.start(signal);
  }

  /** Checks one NodeClaim by name (exposed for tests). */
  async reconcile(name: string): Promise<ReconcileResult> {
    const { client, clock } = this.opts;
    const nodeClaim = await client.tryGet('NodeClaim', name);
    if (!nodeClaim || !isManaged(nodeClaim, this.opts.cloudProvider)) return {};
    if (!nodeClaim.status?.providerID) return {};
    const uid = nodeClaim.metadata.uid ?? name;
    const now = clock.now();
    const last = this.lastScanned.get(uid);
    if (last !== undefined && now - last < ConsistencyScanSeconds * 1000)
      return { requeueAfter: ConsistencyScanSeconds - (now - last) / 1000 };
    this.lastScanned.set(uid, now);
    if (this.lastScanned.size > 50_000) this.forgetOld(now);
    const nodes = await this.nodesFor(nodeClaim);
    if (nodes.length !== 1) return {};
    const issues = nodeShapeIssues(nodes[0] as Node, nodeClaim);
    for (const issue of issues) {
      this.opts.logger.info({ controller: this.name, nodeclaim: name, issue }, 'failed consistency check');
      void this.opts.recorder.publish(nodeClaim, 'Warning', 'FailedConsistencyCheck', issue);
    }
    const conds = nodeClaimConditions(nodeClaim, clock);
    const before = JSON.stringify(conds.list());
    if (issues.length > 0)
      conds.setFalse(ConditionConsistentStateFound, 'ConsistencyCheckFailed', 'Consistency Check Failed');
    else if (!conds.isTrue(ConditionConsistentStateFound)) conds.setTrue(ConditionConsistentStateFound);
    if (JSON.stringify(conds.list()) !== before) {
      try {
        await client.patchStatus(
          'NodeClaim',
          name,
          undefined,
          {
            metadata: { resourceVersion: nodeClaim.metadata.resourceVersion },
            status: { conditions: conds.list() },
          },
          { type: 'merge' },
        );
      } catch (err) {
        if (isConflict(err)) return { requeue: true };
        if (!isNotFound(err)) throw err;
      }
    }
    return { requeueAfter: ConsistencyScanSeconds };
  }

  private async nodesFor(nodeClaim: NodeClaim): Promise<Node[]> {
    const cache = this.kit.cache('Node');
    if (cache) return nodesForNodeClaim(cache, nodeClaim);
    const id = nodeClaim.status?.providerID;
    return (await this.opts.client.list('Node')).items.filter((n) => n.spec?.providerID === id);
  }

  private forgetOld(now: number): void {
    for (const [uid, at] of this.lastScanned)
      if (now - at >= ConsistencyScanSeconds * 1000) this.lastScanned.delete(uid);
  }
}
