/**
 * `interruption`: long-polls the SQS interruption queue (`--interruption-queue`, fed by EventBridge rules) and acts
 * on each message as aws/karpenter-provider-aws `pkg/controllers/interruption/{controller,utils}.go` does:
 * - spot interruption warning → Events `SpotInterrupted`, the offering (type × zone × spot) marked unavailable,
 *   the NodeClaim deleted (graceful: its replacement is provisioned while the node drains, inside the 2 minutes);
 * - scheduled change (AWS Health) → Event `InstanceUnhealthy`, NodeClaim deleted;
 * - instance state change stopping/stopped → `InstanceStopping`, shutting-down/terminated →
 *   `InstanceTerminating`, NodeClaim deleted;
 * - capacity reservation interruption warning (an interruptible reservation reclaims its instance) → Event
 *   `CapacityReservationInstanceInterrupted`, the reservation marked full until the next describe, NodeClaim deleted;
 * - rebalance recommendation → Event `SpotRebalanceRecommendation` only;
 * - other messages are no-ops.
 * Deletions publish `TerminatingOnInterruption` and count `karpenter_nodeclaims_disrupted_total{reason=<kind>}`.
 * Handled and unparseable messages are deleted from the queue; a message whose handling failed (API error) is
 * left for redelivery. Metrics (upstream names): `karpenter_interruption_received_messages_total{message_type}`,
 * `karpenter_interruption_deleted_messages_total`, `karpenter_interruption_message_queue_duration_seconds`.
 */
import {
  DeleteMessageCommand,
  GetQueueUrlCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { Counter, Histogram, type Registry } from 'prom-client';
import type { Node } from '../../../../apis/core.ts';
import type { NodeClaim } from '../../../../apis/karpenter.ts';
import { DURATION_BUCKETS } from '../../../../controllers/provisioning/metrics.ts';
import {
  type Controller,
  errorMessage,
  type Recorder,
  SingletonController,
} from '../../../../controllers/runtime/index.ts';
import type { KubeClient } from '../../../../kube/client.ts';
import type { Clock } from '../../../../kube/clock.ts';
import type { Logger } from '../../../../kube/logger.ts';
import { handleInterruption, type UnavailableOfferings } from './handler.ts';
import { type InterruptionMessage, parseMessage } from './messages.ts';

export type { UnavailableOfferings } from './handler.ts';

/** Metric names (upstream `pkg/controllers/interruption/metrics.go`). */
export const METRIC_RECEIVED = 'karpenter_interruption_received_messages_total';
export const METRIC_DELETED = 'karpenter_interruption_deleted_messages_total';
export const METRIC_QUEUE_DURATION = 'karpenter_interruption_message_queue_duration_seconds';

/** Options of {@link InterruptionController}. */
export interface InterruptionControllerOptions {
  client: KubeClient;
  sqs: SQSClient;
  /** Queue name (`--interruption-queue`) or full queue URL. */
  queue: string;
  clock: Clock;
  logger: Logger;
  recorder: Recorder;
  registry: Registry;
  /** Where spot-interrupted offerings are marked unavailable (optional). */
  unavailableOfferings?: UnavailableOfferings | undefined;
  /** SQS long-poll seconds (upstream 20). */
  waitTimeSeconds?: number;
  /** Seconds a received message stays invisible to other readers (upstream 20). */
  visibilityTimeoutSeconds?: number;
}

/** What one poll did (for tests and logs). */
export interface PollResult {
  received: number;
  deleted: number;
  /** NodeClaim names deleted. */
  nodeClaims: string[];
}

interface Metrics {
  received: Counter<'message_type'>;
  deleted: Counter<string>;
  latency: Histogram<string>;
}

function metrics(registry: Registry): Metrics {
  const received =
    (registry.getSingleMetric(METRIC_RECEIVED) as Counter<'message_type'> | undefined) ??
    new Counter({
      name: METRIC_RECEIVED,
      help: 'Count of messages received from the SQS queue. Broken down by message type and whether the message was actionable.',
      labelNames: ['message_type'],
      registers: [registry],
    });
  const deleted =
    (registry.getSingleMetric(METRIC_DELETED) as Counter<string> | undefined) ??
    new Counter({
      name: METRIC_DELETED,
      help: 'Count of messages deleted from the SQS queue.',
      registers: [registry],
    });
  const latency =
    (registry.getSingleMetric(METRIC_QUEUE_DURATION) as Histogram<string> | undefined) ??
    new Histogram({
      name: METRIC_QUEUE_DURATION,
      help: 'Amount of time an interruption message is on the queue before it is processed by karpenter.',
      buckets: [...DURATION_BUCKETS],
      registers: [registry],
    });
  return { received, deleted, latency };
}

/** The interruption controller (a singleton loop: poll, handle, poll again at once). */
export class InterruptionController implements Controller {
  readonly name = 'interruption';
  private readonly loop: SingletonController;
  private readonly metrics: Metrics;
  private queueURL: string | undefined;
  private announced = false;

  constructor(private readonly opts: InterruptionControllerOptions) {
    this.metrics = metrics(opts.registry);
    this.loop = new SingletonController({
      name: this.name,
      clock: opts.clock,
      logger: opts.logger,
      reconcile: async (signal) => {
        await this.poll(signal);
        return { requeueAfter: 0 };
      },
    });
  }

  start(signal: AbortSignal): Promise<void> {
    return this.loop.start(signal);
  }

  /**
   * One long poll: receives up to 10 messages, handles them (10 in parallel), deletes the handled and unparseable
   * ones. Throws when the queue cannot be read (the loop retries after 5 s); per-message failures are logged and
   * the message is left on the queue.
   */
  async poll(signal?: AbortSignal): Promise<PollResult> {
    const log = this.opts.logger.child({ controller: this.name, queue: this.opts.queue });
    const url = await this.url(signal);
    if (!this.announced) {
      this.announced = true;
      log.info('watching interruption queue');
    }
    let messages: Message[];
    try {
      const out = await this.opts.sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: url,
          MaxNumberOfMessages: 10,
          VisibilityTimeout: this.opts.visibilityTimeoutSeconds ?? 20,
          WaitTimeSeconds: this.opts.waitTimeSeconds ?? 20,
          MessageAttributeNames: ['All'],
        }),
        signal ? { abortSignal: signal } : {},
      );
      messages = out.Messages ?? [];
    } catch (err) {
      if (signal?.aborted) return { received: 0, deleted: 0, nodeClaims: [] };
      throw new Error(`getting messages from queue ${this.opts.queue}: ${errorMessage(err)}`, { cause: err });
    }
    const result: PollResult = { received: messages.length, deleted: 0, nodeClaims: [] };
    if (messages.length === 0) return result;
    const [claims, nodes] = await Promise.all([
      this.opts.client.list('NodeClaim').then((l) => l.items as NodeClaim[]),
      this.opts.client.list('Node').then((l) => l.items as Node[]),
    ]);
    await Promise.all(
      messages.map(async (m) => {
        let msg: InterruptionMessage;
        try {
          msg = parseMessage(m.Body);
        } catch (err) {
          log.error(
            { err: errorMessage(err), messageId: m.MessageId },
            'failed parsing interruption message',
          );
          if (await this.delete(url, m, log)) result.deleted++;
          return;
        }
        this.metrics.received.inc({ message_type: msg.kind });
        try {
          result.nodeClaims.push(...(await handleInterruption(this.opts, msg, claims, nodes, log)).deleted);
        } catch (err) {
          log.error({ err: errorMessage(err), kind: msg.kind, id: msg.id }, 'handling interruption message');
          return;
        }
        if (Number.isFinite(msg.time))
          this.metrics.latency.observe(Math.max(0, (this.opts.clock.now() - msg.time) / 1000));
        if (await this.delete(url, m, log)) result.deleted++;
      }),
    );
    return result;
  }

  private async url(signal?: AbortSignal): Promise<string> {
    if (this.queueURL) return this.queueURL;
    if (/^https?:\/\//.test(this.opts.queue)) this.queueURL = this.opts.queue;
    else {
      const out = await this.opts.sqs
        .send(new GetQueueUrlCommand({ QueueName: this.opts.queue }), signal ? { abortSignal: signal } : {})
        .catch((err: unknown) => {
          throw new Error(
            `interruption queue "${this.opts.queue}" not found (--interruption-queue): ${errorMessage(err)}`,
            { cause: err },
          );
        });
      if (!out.QueueUrl) throw new Error(`interruption queue "${this.opts.queue}" has no URL`);
      this.queueURL = out.QueueUrl;
    }
    return this.queueURL;
  }

  private async delete(url: string, m: Message, log: Logger): Promise<boolean> {
    try {
      await this.opts.sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: m.ReceiptHandle }));
      this.metrics.deleted.inc();
      return true;
    } catch (err) {
      log.error({ err: errorMessage(err), messageId: m.MessageId }, 'deleting sqs message');
      return false;
    }
  }
}
