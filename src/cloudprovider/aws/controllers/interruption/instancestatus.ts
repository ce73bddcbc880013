/**
 * `interruption.instancestatus`: EC2 instance health checks, after aws/karpenter-provider-aws v1.14.1
 * `pkg/controllers/interruption/instancestatus_controller.go` (upstream registers it always, with or without an
 * interruption queue; no setting or feature gate). Every {@link InstanceStatusPeriodSeconds} (upstream 1 min):
 * 1. the unhealthy instances from `DescribeInstanceStatus` (`../../instancestatus.ts`: an instance or system check
 *    impaired for 2 minutes, or a scheduled `instance-reboot`/`system-reboot`/`system-maintenance`/
 *    `instance-retirement`/`instance-stop` event; failed EBS checks are ignored);
 * 2. per instance and category, a message of kind `instance_status`, `system_status` or `event_status` handled as
 *    the queue's messages are (`./handler.ts`): Warning `InstanceUnhealthy` on the NodeClaim and its Node; for
 *    `instance_status`/`system_status` the NodeClaim gets `karpenter.sh/nodeclaim-termination-timestamp` = now
 *    (forceful: the drain bypasses PDBs and `do-not-disrupt`) and is deleted; for `event_status` it is deleted
 *    (graceful); then `TerminatingOnInterruption` and `karpenter_nodeclaims_disrupted_total{reason=<kind>}`;
 * 3. when the instance has a NodeClaim, `karpenter_interruption_instance_status_unhealthy_total{category}` (category
 *    `InstanceStatus`, `SystemStatus`, `EventStatus`) counts it once per instance and category while it stays
 *    reported; one that disappears from a poll and comes back counts again. Log "detected unhealthy instance owned
 *    by cluster".
 * Instances of other owners are reported by EC2 too and match no NodeClaim: nothing happens to them.
 * Without `ec2:DescribeInstanceStatus` (`UnauthorizedOperation`) it logs an error naming the permission and stops
 * calling EC2 until restarted (upstream's reconciler is never requeued then).
 */

import type { EC2Client } from '@aws-sdk/client-ec2';
import { Counter, type Registry } from 'prom-client';
import type { Node } from '../../../../apis/core.ts';
import type { NodeClaim } from '../../../../apis/karpenter.ts';
import { AnnotationNodeClaimTerminationTimestamp } from '../../../../apis/labels.ts';
import {
  type Controller,
  errorMessage,
  rfc3339,
  SingletonController,
} from '../../../../controllers/runtime/index.ts';
import type { Logger } from '../../../../kube/logger.ts';
import { type HealthCategory, type HealthStatus, listUnhealthyInstances } from '../../instancestatus.ts';
import { handleInterruption, type InterruptionHandlerDeps } from './handler.ts';
import { actionFor, type MessageKind } from './messages.ts';

/** Metric name (upstream `InstanceStatusUnhealthy` in `pkg/controllers/interruption/metrics.go`). */
export const METRIC_INSTANCE_STATUS_UNHEALTHY = 'karpenter_interruption_instance_status_unhealthy_total';

/** Seconds between polls (upstream `InstanceStatusInterval`, 1 min). */
export const InstanceStatusPeriodSeconds = 60;

/** Message kind per category (upstream `categoryToKind`; `EBSStatus` has none and is skipped). */
const KIND_OF: Partial<Record<HealthCategory, MessageKind>> = {
  InstanceStatus: 'instance_status',
  SystemStatus: 'system_status',
  EventStatus: 'event_status',
};

/** Options of {@link InstanceStatusController}. */
export interface InstanceStatusControllerOptions extends InterruptionHandlerDeps {
  ec2: EC2Client;
  logger: Logger;
  /** Seconds between polls, default {@link InstanceStatusPeriodSeconds}. */
  periodSeconds?: number;
}

/** What one poll did (for tests and logs). */
export interface InstanceStatusPollResult {
  /** The unhealthy instances EC2 reported (capenter's or not). */
  unhealthy: HealthStatus[];
  /** NodeClaim names deleted. */
  nodeClaims: string[];
}

function unhealthyCounter(registry: Registry): Counter<'category'> {
  return (
    (registry.getSingleMetric(METRIC_INSTANCE_STATUS_UNHEALTHY) as Counter<'category'> | undefined) ??
    new Counter({
      name: METRIC_INSTANCE_STATUS_UNHEALTHY,
      help: 'Count of unique unhealthy instance statuses detected from EC2 DescribeInstanceStatus. Broken down by status check category.',
      labelNames: ['category'],
      registers: [registry],
    })
  );
}

/** The instance status controller (a singleton loop: poll, wait {@link InstanceStatusPeriodSeconds}, poll). */
export class InstanceStatusController implements Controller {
  readonly name = 'interruption.instancestatus';
  private readonly loop: SingletonController;
  private readonly unhealthy: Counter<'category'>;
  /** `instanceID/category` pairs already counted, while they stay reported. */
  private readonly seen = new Set<string>();
  /** Set on `UnauthorizedOperation`: no more EC2 calls until restarted. */
  private disabled = false;

  constructor(private readonly opts: InstanceStatusControllerOptions) {
    this.unhealthy = unhealthyCounter(opts.registry);
    this.loop = new SingletonController({
      name: this.name,
      clock: opts.clock,
      logger: opts.logger,
      reconcile: async () => {
        await this.poll();
        return { requeueAfter: opts.periodSeconds ?? InstanceStatusPeriodSeconds };
      },
    });
  }

  start(signal: AbortSignal): Promise<void> {
    return this.loop.start(signal);
  }

  /**
   * One pass (see the module comment).
   * @throws Error "getting instance statuses, …" when EC2 fails (other than `UnauthorizedOperation`), or the
   * handler's errors (every instance is still handled first; the loop retries after 5 s).
   */
  async poll(): Promise<InstanceStatusPollResult> {
    const log = this.opts.logger.child({ controller: this.name });
    const result: InstanceStatusPollResult = { unhealthy: [], nodeClaims: [] };
    if (this.disabled) return result;
    try {
      result.unhealthy = await listUnhealthyInstances(this.opts.ec2, this.opts.clock);
    } catch (err) {
      if ((err as { name?: string }).name === 'UnauthorizedOperation') {
        this.disabled = true;
        log.error(
          { err: errorMessage(err) },
          'ec2:DescribeInstanceStatus permission is not allowed, update the IAM policy and restart the Karpenter deployment to enable instance status health checks',
        );
        return result;
      }
      throw new Error(`getting instance statuses, ${errorMessage(err)}`, { cause: err });
    }
    if (result.unhealthy.length === 0) {
      this.seen.clear();
      return result;
    }
    const [listed, nodes] = await Promise.all([
      this.opts.client.list('NodeClaim').then((l) => l.items as NodeClaim[]),
      this.opts.client.list('Node').then((l) => l.items as Node[]),
    ]);
    let claims = listed;
    const current = new Set<string>();
    const errors: string[] = [];
    for (const hs of result.unhealthy) {
      for (const category of new Set(hs.details.map((d) => d.category))) {
        const kind = KIND_OF[category];
        if (!kind) continue;
        try {
          const r = await handleInterruption(
            this.opts,
            { kind, instanceIDs: [hs.instanceID] },
            claims,
            nodes,
            log,
          );
          result.nodeClaims.push(...r.deleted);
          claims = this.markDeleting(claims, r.deleted, actionFor(kind) === 'ForcefulTermination');
          if (r.found) this.record(hs.instanceID, category, current, log);
        } catch (err) {
          errors.push(`${hs.instanceID} ${category}: ${errorMessage(err)}`);
        }
      }
    }
    for (const key of this.seen) if (!current.has(key)) this.seen.delete(key);
    if (errors.length > 0) throw new Error(`handling instance status check message, ${errors.join('; ')}`);
    return result;
  }

  /**
   * `claims` with the `deleted` ones marked as being deleted (and, when `forceful`, annotated with the termination
   * timestamp the handler set): a second category of the same instance then deletes and annotates nothing.
   */
  private markDeleting(claims: NodeClaim[], deleted: readonly string[], forceful: boolean): NodeClaim[] {
    if (deleted.length === 0) return claims;
    const at = rfc3339(this.opts.clock.now());
    return claims.map((c) => {
      if (!deleted.includes(c.metadata.name ?? '')) return c;
      const annotations = forceful
        ? { [AnnotationNodeClaimTerminationTimestamp]: at, ...c.metadata.annotations }
        : c.metadata.annotations;
      return {
        ...c,
        metadata: { ...c.metadata, deletionTimestamp: at, ...(annotations ? { annotations } : {}) },
      };
    });
  }

  /** Counts an unhealthy instance and category the first time it is reported (upstream `recordUnhealthyInstance`). */
  private record(instanceID: string, category: HealthCategory, current: Set<string>, log: Logger): void {
    const key = `${instanceID}/${category}`;
    current.add(key);
    if (this.seen.has(key)) return;
    this.seen.add(key);
    log.info({ instanceID, category }, 'detected unhealthy instance owned by cluster');
    this.unhealthy.inc({ category });
  }
}
