/**
 * What the NodeClaim lifecycle sub-steps (launch, registration, initialization, liveness, termination) share:
 * injected dependencies and the step result shape. Each step mutates the in-memory NodeClaim (status conditions,
 * labels, status fields); the controller diffs and patches once at the end, like upstream's composite reconciler
 * (kubernetes-sigs/karpenter `pkg/controllers/nodeclaim/lifecycle/controller.go`).
 */
import type { Node } from '../../../apis/core.ts';
import type { NodeClaim } from '../../../apis/karpenter.ts';
import type { CloudProvider } from '../../../cloudprovider/types.ts';
import type { KubeClient } from '../../../kube/client.ts';
import type { Clock } from '../../../kube/clock.ts';
import { type Logger, objectRef, reconcileFields } from '../../../kube/logger.ts';
import type { NodePoolHealth } from '../../../state/nodepoolhealth.ts';
import { ConditionSet, type Recorder } from '../../runtime/index.ts';
import type { LifecycleMetrics } from '../metrics.ts';

/**
 * The reconcile logger of `nodeClaim`, with the keys upstream's lines carry (controller-runtime's `controller`,
 * `controllerGroup: karpenter.sh`, `controllerKind: NodeClaim`, `NodeClaim: {name}`, `namespace`, `name`, then
 * `provider-id` and `Node: {name}` when the status has them, as `controller.go`'s `Reconcile` adds them). `ctx.logger`
 * already carries `controller`.
 */
export function nodeClaimLogger(ctx: LifecycleContext, nodeClaim: NodeClaim): Logger {
  const { controller: _c, ...fields } = reconcileFields(
    '',
    'karpenter.sh',
    'NodeClaim',
    nodeClaim.metadata.name,
  );
  const providerID = nodeClaim.status?.providerID;
  const nodeName = nodeClaim.status?.nodeName;
  return ctx.logger.child({
    ...fields,
    ...(providerID ? { 'provider-id': providerID } : {}),
    ...(nodeName ? { Node: objectRef(nodeName) } : {}),
  });
}

/** NodeClaim condition types (upstream `pkg/apis/v1/nodeclaim_status.go`). */
export const ConditionLaunched = 'Launched';
export const ConditionRegistered = 'Registered';
export const ConditionInitialized = 'Initialized';
export const ConditionInstanceTerminating = 'InstanceTerminating';
/** Dependents of the NodeClaim's root `Ready` condition. */
export const NodeClaimDependents = [ConditionLaunched, ConditionRegistered, ConditionInitialized] as const;

/** Dependencies of every lifecycle step. */
export interface LifecycleContext {
  client: KubeClient;
  cloudProvider: CloudProvider;
  clock: Clock;
  logger: Logger;
  recorder: Recorder;
  metrics: LifecycleMetrics;
  /** Registration outcomes per NodePool (`NodeRegistrationHealthy`); absent: not tracked. */
  nodePoolHealth?: NodePoolHealth | undefined;
  /** Nodes whose `spec.providerID` equals the NodeClaim's `status.providerID` (usually from an informer cache). */
  nodesFor(nodeClaim: NodeClaim): Node[] | Promise<Node[]>;
}

/** Result of one step. `deleted`: the step deleted the NodeClaim, later steps and the status patch are skipped. */
export interface StepResult {
  /** Re-run after this many seconds. */
  requeueAfter?: number;
  /** Re-run with rate-limited backoff. */
  requeue?: boolean;
  deleted?: boolean;
}

/** The NodeClaim's conditions with `Ready` over Launched/Registered/Initialized. */
export function nodeClaimConditions(nodeClaim: NodeClaim, clock: Clock): ConditionSet {
  return new ConditionSet(nodeClaim, NodeClaimDependents, clock);
}

/** Seconds elapsed since an RFC 3339 time (0 when absent or unparsable). */
export function secondsSince(clock: Clock, time: string | undefined): number {
  const t = Date.parse(time ?? '');
  return Number.isFinite(t) ? (clock.now() - t) / 1000 : 0;
}
