/**
 * What the two interruption controllers (the SQS queue's `interruption` and DescribeInstanceStatus's
 * `interruption.instancestatus`) do with one message, after aws/karpenter-provider-aws v1.14.1
 * `pkg/controllers/interruption/utils.go` (`InterruptionHandler.handleMessage`, `handleNodeClaim`): for every
 * NodeClaim of each of the message's instances (matched by `status.providerID` `aws:///<zone>/<instance-id>`):
 * 1. the kind's Event ({@link notificationFor}) on the NodeClaim and its Node;
 * 2. `spot_interrupted`: the offering (type × zone × spot) marked unavailable; `capacity_reservation_interrupted`:
 *    the NodeClaim's reservation marked full;
 * 3. the kind's action ({@link actionFor}): `ForcefulTermination` sets `karpenter.sh/nodeclaim-termination-timestamp`
 *    to now (kept when present) and deletes the NodeClaim, `CordonAndDrain` deletes it, `NoAction` nothing. A
 *    deletion (of a NodeClaim not already being deleted) logs "initiating delete from interruption message",
 *    publishes Warning `TerminatingOnInterruption` and counts
 *    `karpenter_nodeclaims_disrupted_total{reason=<kind>,nodepool,capacity_type}`.
 */
import type { Registry } from 'prom-client';
import type { KubeObject, Node } from '../../../../apis/core.ts';
import type { NodeClaim } from '../../../../apis/karpenter.ts';
import {
  AnnotationNodeClaimTerminationTimestamp,
  LabelCapacityReservationID,
  LabelInstanceType,
  LabelTopologyZone,
} from '../../../../apis/labels.ts';
import { lifecycleMetrics } from '../../../../controllers/nodeclaim/metrics.ts';
import {
  capacityTypeOf,
  errorMessage,
  nodePoolOf,
  type Recorder,
  rfc3339,
} from '../../../../controllers/runtime/index.ts';
import type { KubeClient } from '../../../../kube/client.ts';
import type { Clock } from '../../../../kube/clock.ts';
import { isNotFound } from '../../../../kube/errors.ts';
import type { Logger } from '../../../../kube/logger.ts';
import type { CapacityType } from '../../../types.ts';
import { actionFor, instanceIDOf, type MessageKind, notificationFor } from './messages.ts';

/** Marks offerings unavailable (the provider's ICE cache); the kwok and aws providers both have it. */
export interface UnavailableOfferings {
  markUnavailable(instanceType: string, zone: string, capacityType: CapacityType, reason?: string): void;
  /** The provider's reservation counts: an interrupted reservation takes no launch until the next describe. */
  capacityReservations?: { markUnavailable(reservationID: string): void };
}

/** What {@link handleInterruption} needs. */
export interface InterruptionHandlerDeps {
  client: KubeClient;
  clock: Clock;
  recorder: Recorder;
  registry: Registry;
  /** Where spot-interrupted offerings are marked unavailable (optional). */
  unavailableOfferings?: UnavailableOfferings | undefined;
}

/** What {@link handleInterruption} did. */
export interface HandleResult {
  /** True when at least one NodeClaim belongs to one of the message's instances (upstream `found`). */
  found: boolean;
  /** NodeClaim names deleted. */
  deleted: string[];
}

/**
 * Acts on the NodeClaims of `msg`'s instances (see the module comment). `claims` and `nodes` are the current lists.
 * @throws Error "deleting the node on interruption message, …" (or the annotation patch's error) when the API
 * server refuses; a NodeClaim already gone is skipped.
 */
export async function handleInterruption(
  deps: InterruptionHandlerDeps,
  msg: { kind: MessageKind; instanceIDs: readonly string[] },
  claims: readonly NodeClaim[],
  nodes: readonly Node[],
  log: Logger,
): Promise<HandleResult> {
  const result: HandleResult = { found: false, deleted: [] };
  if (msg.kind === 'no_op') return result;
  const action = actionFor(msg.kind);
  const note = notificationFor(msg.kind);
  for (const id of msg.instanceIDs) {
    for (const nc of claims.filter((c) => instanceIDOf(c.status?.providerID) === id)) {
      result.found = true;
      const node = nodes.find((n) => n.spec?.providerID === nc.status?.providerID);
      const publish = (
        type: 'Normal' | 'Warning',
        reason: string,
        message: string,
        nodeMessage = message,
      ) => {
        void deps.recorder.publish(nc as KubeObject, type, reason, message);
        if (node) void deps.recorder.publish(node as KubeObject, type, reason, nodeMessage);
      };
      if (note) publish(note.type, note.reason, note.message);
      markUnavailable(deps, msg.kind, nc);
      if (action === 'NoAction') continue;
      if (action === 'ForcefulTermination' && !(await annotateTerminationTimestamp(deps, nc))) continue;
      if (nc.metadata.deletionTimestamp) continue;
      const name = nc.metadata.name ?? '';
      try {
        await deps.client.delete('NodeClaim', name);
      } catch (err) {
        if (isNotFound(err)) continue;
        throw new Error(`deleting the node on interruption message, ${errorMessage(err)}`, { cause: err });
      }
      log.info(
        { nodeclaim: name, kind: msg.kind, action, 'instance-id': id },
        'initiating delete from interruption message',
      );
      publish(
        'Warning',
        'TerminatingOnInterruption',
        'Interruption triggered termination for the NodeClaim',
        'Interruption triggered termination for the Node',
      );
      lifecycleMetrics(deps.registry).disrupted.inc({
        reason: msg.kind,
        nodepool: nodePoolOf(nc),
        capacity_type: capacityTypeOf(nc),
      });
      result.deleted.push(name);
    }
  }
  return result;
}

/** Upstream `markUnavailableOfferings`: a spot interruption's offering, an interrupted reservation. */
function markUnavailable(deps: InterruptionHandlerDeps, kind: MessageKind, nc: NodeClaim): void {
  if (kind === 'spot_interrupted') {
    const zone = nc.metadata.labels?.[LabelTopologyZone];
    const type = nc.metadata.labels?.[LabelInstanceType];
    if (zone && type) deps.unavailableOfferings?.markUnavailable(type, zone, 'spot', 'SpotInterruption');
  }
  const reservation = nc.metadata.labels?.[LabelCapacityReservationID];
  if (kind === 'capacity_reservation_interrupted' && reservation)
    deps.unavailableOfferings?.capacityReservations?.markUnavailable(reservation);
}

/**
 * Upstream `annotateTerminationTimestamp`: sets `karpenter.sh/nodeclaim-termination-timestamp` to now (RFC 3339)
 * unless the NodeClaim has one, so the termination controller deletes its pods at once (PDBs and `do-not-disrupt`
 * bypassed: the instance is broken). False when the NodeClaim is gone. @throws the API server's other errors.
 */
async function annotateTerminationTimestamp(deps: InterruptionHandlerDeps, nc: NodeClaim): Promise<boolean> {
  if (nc.metadata.annotations?.[AnnotationNodeClaimTerminationTimestamp] !== undefined) return true;
  try {
    await deps.client.patch(
      'NodeClaim',
      nc.metadata.name as string,
      undefined,
      { metadata: { annotations: { [AnnotationNodeClaimTerminationTimestamp]: rfc3339(deps.clock.now()) } } },
      { type: 'merge' },
    );
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
  return true;
}
