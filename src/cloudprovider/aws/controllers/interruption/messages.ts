/**
 * EventBridge messages on the interruption queue, parsed as aws/karpenter-provider-aws
 * `pkg/controllers/interruption/{parser.go,messages/*}` does. A message is recognised by
 * `(version, source, detail-type)`:
 * - `0`, `aws.ec2`, `EC2 Spot Instance Interruption Warning` → `spot_interrupted` (`detail.instance-id`);
 * - `0`, `aws.ec2`, `EC2 Instance Rebalance Recommendation` → `rebalance_recommendation`;
 * - `0`, `aws.ec2`, `EC2 Instance State-change Notification` with `detail.state` stopping/stopped →
 *   `instance_stopped`, shutting-down/terminated → `instance_terminated`, any other state → `no_op`;
 * - `0`, `aws.health`, `AWS Health Event` with `detail.service` `EC2` and `detail.eventTypeCategory`
 *   `scheduledChange` → `scheduled_change` (every `detail.affectedEntities[].entityValue`), else `no_op`;
 * - anything else that is a JSON object → `no_op`; an empty body → `no_op`.
 * Pure: no I/O, no clock.
 */
import { errorMessage } from '../../../../controllers/runtime/errors.ts';

/** Message kinds, spelled as upstream's `message_type` metric label values. */
export type MessageKind =
  | 'spot_interrupted'
  | 'rebalance_recommendation'
  | 'scheduled_change'
  | 'instance_stopped'
  | 'instance_terminated'
  | 'capacity_reservation_interrupted'
  // kinds from EC2 DescribeInstanceStatus categories (upstream `messages.InstanceStatusKind` ...; not on the queue)
  | 'instance_status'
  | 'system_status'
  | 'event_status'
  | 'no_op';

/** A parsed interruption message. */
export interface InterruptionMessage {
  kind: MessageKind;
  /** EC2 instance IDs the message is about (`i-…`). */
  instanceIDs: string[];
  /** The event's `time` in ms since epoch (NaN when absent or invalid). */
  time: number;
  /** EventBridge `id`, for logs. */
  id: string;
  /** `detail-type`, for logs. */
  detailType: string;
}

/** Thrown by {@link parseMessage} for a body that is not a JSON object or has a malformed `detail`. */
export class MessageParseError extends Error {
  override readonly name = 'MessageParseError';
}

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

/**
 * Parses one SQS message body.
 * @throws MessageParseError when the body is not a JSON object, or a recognised kind lacks its instance ID(s)
 * (the controller logs it and deletes the message, as upstream).
 */
export function parseMessage(body: string | undefined): InterruptionMessage {
  const base = { instanceIDs: [] as string[], time: Number.NaN, id: '', detailType: '' };
  if (!body) return { kind: 'no_op', ...base };
  let raw: unknown;
  try {
    raw = JSON.parse(body);
  } catch (err) {
    throw new MessageParseError(`unmarshalling the message as Metadata, ${errorMessage(err)}`);
  }
  if (!isObject(raw)) throw new MessageParseError('unmarshalling the message as Metadata, not a JSON object');
  const meta = {
    id: str(raw.id),
    detailType: str(raw['detail-type']),
    time: Date.parse(str(raw.time)),
  };
  const version = str(raw.version);
  const source = str(raw.source);
  const detail = isObject(raw.detail) ? raw.detail : undefined;
  const noop: InterruptionMessage = { kind: 'no_op', instanceIDs: [], ...meta };
  if (version !== '0') return noop;
  const one = (kind: MessageKind, what: string): InterruptionMessage => {
    const id = str(detail?.['instance-id']);
    if (!id) throw new MessageParseError(`parsing event message, ${what} has no detail.instance-id`);
    return { kind, instanceIDs: [id], ...meta };
  };
  if (source === 'aws.ec2') {
    switch (meta.detailType) {
      case 'EC2 Spot Instance Interruption Warning':
        return one('spot_interrupted', 'EC2SpotInstanceInterruptionWarning');
      case 'EC2 Capacity Reservation Instance Interruption Warning':
        // an interruptible capacity reservation takes its instance back (upstream capacityreservationinterruption)
        return one('capacity_reservation_interrupted', 'EC2CapacityReservationInterruptionWarning');
      case 'EC2 Instance Rebalance Recommendation':
        return one('rebalance_recommendation', 'EC2InstanceRebalanceRecommendation');
      case 'EC2 Instance State-change Notification': {
        const state = str(detail?.state).toLowerCase();
        if (state === 'stopping' || state === 'stopped')
          return one('instance_stopped', 'EC2InstanceStateChangeNotification');
        if (state === 'shutting-down' || state === 'terminated')
          return one('instance_terminated', 'EC2InstanceStateChangeNotification');
        return noop;
      }
      default:
        return noop;
    }
  }
  if (source === 'aws.health' && meta.detailType === 'AWS Health Event') {
    if (str(detail?.service) !== 'EC2' || str(detail?.eventTypeCategory) !== 'scheduledChange') return noop;
    const entities = Array.isArray(detail?.affectedEntities) ? detail.affectedEntities : [];
    const ids = entities.map((e) => (isObject(e) ? str(e.entityValue) : '')).filter(Boolean);
    return { kind: 'scheduled_change', instanceIDs: ids, ...meta };
  }
  return noop;
}

/**
 * What the controller does for a kind (upstream `actionForMessage`): delete the NodeClaim (`CordonAndDrain`), set
 * its `karpenter.sh/nodeclaim-termination-timestamp` to now and delete it (`ForcefulTermination`: a failed
 * instance or system status check; the drain bypasses PDBs and `do-not-disrupt`), or only an Event.
 */
export function actionFor(kind: MessageKind): 'CordonAndDrain' | 'ForcefulTermination' | 'NoAction' {
  switch (kind) {
    case 'instance_status':
    case 'system_status':
      return 'ForcefulTermination';
    case 'event_status':
    case 'spot_interrupted':
    case 'scheduled_change':
    case 'instance_stopped':
    case 'instance_terminated':
    case 'capacity_reservation_interrupted':
      return 'CordonAndDrain';
    default:
      return 'NoAction';
  }
}

/** The Event (type, reason, message) published on the NodeClaim and its Node for a kind (upstream `events.go`). */
export function notificationFor(
  kind: MessageKind,
): { type: 'Normal' | 'Warning'; reason: string; message: string } | undefined {
  switch (kind) {
    case 'rebalance_recommendation':
      return {
        type: 'Normal',
        reason: 'SpotRebalanceRecommendation',
        message: 'Spot rebalance recommendation was triggered',
      };
    case 'scheduled_change':
    case 'instance_status':
    case 'system_status':
    case 'event_status':
      return {
        type: 'Warning',
        reason: 'InstanceUnhealthy',
        message: 'An unhealthy warning was triggered for the instance',
      };
    case 'spot_interrupted':
      return {
        type: 'Warning',
        reason: 'SpotInterrupted',
        message: 'Spot interruption warning was triggered',
      };
    case 'instance_stopped':
      return { type: 'Warning', reason: 'InstanceStopping', message: 'Instance is stopping' };
    case 'capacity_reservation_interrupted':
      return {
        type: 'Warning',
        reason: 'CapacityReservationInstanceInterrupted',
        message: 'Capacity Reservation interruption warning was triggered',
      };
    case 'instance_terminated':
      return { type: 'Warning', reason: 'InstanceTerminating', message: 'Instance is terminating' };
    default:
      return undefined;
  }
}

/** The EC2 instance ID of an `aws:///<zone>/<instance-id>` provider ID (`undefined` for other forms). */
export function instanceIDOf(providerID: string | undefined): string | undefined {
  const m = /^aws:\/\/\/[^/]*\/(i-[0-9a-zA-Z]+)$/.exec(providerID ?? '');
  return m?.[1];
}
