/**
 * The pod `karpenter.sh/do-not-disrupt` annotation, after kubernetes-sigs/karpenter v1.12+ `pkg/utils/pod/
 * scheduling.go` (`IsDoNotDisruptActive`, `parseDoNotDisrupt`) and `pkg/utils/pod/events.go` (PR #2874):
 *
 * - `"true"` protects the pod for as long as it carries the annotation;
 * - a positive Go duration (`"30m"`, `"1h30m"`, `"87600h"`; Go `time.ParseDuration`, see
 *   {@link parseGoDuration}) protects it from its `status.startTime` until the duration has elapsed
 *   (active while `now − startTime < duration`); without a `startTime` it protects (upstream "fail safe");
 * - anything else (`"abc"`, `"false"`, `"0s"`, `"-5m"`, `"1d"`) is invalid and, as upstream, ignored: the pod is
 *   not protected and a Warning Event `InvalidDoNotDisruptAnnotation` says why.
 *
 * Only pods take durations: upstream reads a Node's or NodeClaim's annotation as `== "true"` only
 * (`statenode.go` `ValidateNodeDisruptable`). Everything here is pure: `now` is an input (ms since the epoch).
 */
import type { Pod } from './core.ts';
import { parseGoDuration } from './duration.ts';
import { AnnotationDoNotDisrupt } from './labels.ts';

/**
 * What the pod's `karpenter.sh/do-not-disrupt` annotation means at a given time:
 * - `none`: no annotation;
 * - `active`: protected; `untilMs` (ms since the epoch) is when a duration's protection ends, absent for `"true"`
 *   or when the pod has no `status.startTime`;
 * - `elapsed`: a duration whose protection ended at `untilMs`;
 * - `invalid`: not `"true"` nor a positive Go duration; `message` is upstream's error text (not protected).
 */
export type DoNotDisruptState =
  | { state: 'none' }
  | { state: 'active'; value: string; untilMs?: number }
  | { state: 'elapsed'; value: string; untilMs: number }
  | { state: 'invalid'; value: string; message: string };

/**
 * Reads the pod's `karpenter.sh/do-not-disrupt` annotation at `nowMs` (ms since the epoch). Upstream
 * `IsDoNotDisruptActive` without the recorder (see {@link doNotDisruptEvent}). A `status.startTime` that is not a
 * timestamp counts as missing (protected). Pure; never throws.
 */
export function doNotDisruptState(pod: Pod, nowMs: number): DoNotDisruptState {
  const value = pod.metadata.annotations?.[AnnotationDoNotDisrupt];
  if (value === undefined) return { state: 'none' };
  if (value === 'true') return { state: 'active', value };
  const d = parseGoDuration(value);
  if (!d.ok)
    return { state: 'invalid', value, message: `failed to parse "${value}" as a duration: ${d.goError}` };
  if (d.seconds <= 0) return { state: 'invalid', value, message: `duration "${value}" must be positive` };
  const started = Date.parse(pod.status?.startTime ?? '');
  if (!Number.isFinite(started)) return { state: 'active', value };
  const untilMs = started + d.seconds * 1000;
  return nowMs < untilMs ? { state: 'active', value, untilMs } : { state: 'elapsed', value, untilMs };
}

/** True while the annotation protects the pod at `nowMs` (upstream `IsDoNotDisruptActive`). Pure. */
export function isDoNotDisruptActive(pod: Pod, nowMs: number): boolean {
  return doNotDisruptState(pod, nowMs).state === 'active';
}

/** An Event on the pod about its `karpenter.sh/do-not-disrupt` annotation (upstream `pkg/utils/pod/events.go`). */
export interface DoNotDisruptEvent {
  type: 'Normal' | 'Warning';
  reason: 'InvalidDoNotDisruptAnnotation' | 'DoNotDisruptUntil' | 'DoNotDisruptGracePeriodElapsed';
  message: string;
}

/** Go's `time.RFC3339` for a UTC instant: second precision, `Z` (`2036-10-29T00:00:00Z`). */
function rfc3339(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

/**
 * The Event upstream's `IsDoNotDisruptActive` publishes for `s`, with upstream's reasons and messages:
 * invalid → Warning `InvalidDoNotDisruptAnnotation`; a duration still running → Normal `DoNotDisruptUntil` (when
 * it elapses); a duration elapsed → Normal `DoNotDisruptGracePeriodElapsed`. None for no annotation, `"true"` or a
 * duration on a pod without `startTime`. Pure.
 */
export function doNotDisruptEvent(s: DoNotDisruptState): DoNotDisruptEvent | undefined {
  switch (s.state) {
    case 'invalid':
      return {
        type: 'Warning',
        reason: 'InvalidDoNotDisruptAnnotation',
        message: `Invalid karpenter.sh/do-not-disrupt annotation: ${s.message}, ignoring annotation`,
      };
    case 'active':
      if (s.untilMs === undefined) return undefined;
      return {
        type: 'Normal',
        reason: 'DoNotDisruptUntil',
        message: `The karpenter.sh/do-not-disrupt grace period will elapse at ${rfc3339(s.untilMs)}`,
      };
    case 'elapsed':
      return {
        type: 'Normal',
        reason: 'DoNotDisruptGracePeriodElapsed',
        message: 'The karpenter.sh/do-not-disrupt grace period has elapsed, pod is now disruptable',
      };
    default:
      return undefined;
  }
}
