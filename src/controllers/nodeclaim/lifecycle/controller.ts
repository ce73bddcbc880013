/**
 * `nodeclaim.lifecycle`: the composite NodeClaim controller (kubernetes-sigs/karpenter
 * `pkg/controllers/nodeclaim/lifecycle/controller.go`). Keyed by NodeClaim name; NodeClaim events and Node events
 * (mapped to their NodeClaim by provider ID, else by owner reference) enqueue it. A reconcile:
 * - skips NodeClaims whose NodeClass kind the cloud provider does not support;
 * - finalizes deleting NodeClaims ({@link NodeClaimTermination});
 * - adds the `karpenter.sh/termination` finalizer before anything is launched (no leaked instances);
 * - runs launch → registration → initialization → liveness on one in-memory copy, then patches metadata
 *   (labels, annotations) and status once; step errors are returned after the patch so failure conditions are
 *   persisted; the smallest requeue wins.
 */

import type { Registry } from 'prom-client';
import type { Node } from '../../../apis/core.ts';
import type { NodeClaim } from '../../../apis/karpenter.ts';
import { FinalizerTermination } from '../../../apis/labels.ts';
import type { CloudProvider } from '../../../cloudprovider/types.ts';
import type { Cache } from '../../../kube/cache.ts';
import type { KubeClient } from '../../../kube/client.ts';
import type { Clock } from '../../../kube/clock.ts';
import { isConflict, isNotFound } from '../../../kube/errors.ts';
import { SharedInformers } from '../../../kube/informer.ts';
import type { Logger } from '../../../kube/logger.ts';
import {
  type Controller,
  type InformerSyncOptions,
  QueueController,
  type ReconcileResult,
  runQueueWithInformers,
} from '../../runtime.ts';
import { lifecycleMetrics } from '../metrics.ts';
import {
  indexProviderID,
  nodeClaimsForNode,
  nodesForNodeClaim,
  type Recorder,
  withFinalizer,
} from '../util.ts';
import type { LifecycleContext, StepResult } from './context.ts';
import { Initialization } from './initialization.ts';
import { Launch } from './launch.ts';
import { Liveness } from './liveness.ts';
import { Registration } from './registration.ts';
import { NodeClaimTermination } from './termination.ts';

/** Dependencies and options shared by capenter's controllers. */
export interface ControllerDeps {
  client: KubeClient;
  cloudProvider: CloudProvider;
  clock: Clock;
  logger: Logger;
  recorder: Recorder;
  /** prom-client registry the metrics are registered in. */
  registry: Registry;
  /** Shared informers (the operator's); without them the controller runs private ones. */
  informers?: SharedInformers;
}

/** Options of {@link NodeClaimLifecycleController}. */
export interface NodeClaimLifecycleOptions extends ControllerDeps, InformerSyncOptions {
  /** Parallel reconciles (default 10). */
  concurrency?: number;
  /** Registration TTL override in seconds (default 900). */
  registrationTimeoutSeconds?: number;
  /** Launch TTL override in seconds (default 300). */
  launchTimeoutSeconds?: number;
}

/** True when the provider launches from this NodeClaim's NodeClass kind (upstream `IsManaged`). */
export function isManaged(nodeClaim: NodeClaim, cloudProvider: CloudProvider): boolean {
  const ref = nodeClaim.spec?.nodeClassRef;
  if (!ref) return false;
  return cloudProvider.supportedNodeClasses().some((k) => k.group === ref.group && k.kind === ref.kind);
}

/** The NodeClaim lifecycle controller. */
export class NodeClaimLifecycleController implements Controller {
  readonly name = 'nodeclaim.lifecycle';
  readonly queue: QueueController;
  private readonly ctx: LifecycleContext;
  private readonly informers: SharedInformers;
  private readonly ownInformers: boolean;
  private nodes: Cache<Node> | undefined;
  private readonly launch: Launch;
  private readonly registration: Registration;
  private readonly initialization: Initialization;
  private readonly liveness: Liveness;
  private readonly termination: NodeClaimTermination;

  constructor(private readonly opts: NodeClaimLifecycleOptions) {
    this.ownInformers = opts.informers === undefined;
    this.informers = opts.informers ?? new SharedInformers(opts.client, { clock: opts.clock });
    const logger = opts.logger.child({ controller: this.name });
    this.ctx = {
      client: opts.client,
      cloudProvider: opts.cloudProvider,
      clock: opts.clock,
      logger,
      recorder: opts.recorder,
      metrics: lifecycleMetrics(opts.registry),
      nodesFor: (nc) => (this.nodes ? nodesForNodeClaim(this.nodes, nc) : []),
    };
    this.launch = new Launch(this.ctx);
    this.registration = new Registration(this.ctx);
    this.initialization = new Initialization(this.ctx);
    this.liveness = new Liveness(this.ctx, {
      ...(opts.registrationTimeoutSeconds !== undefined
        ? { registrationTimeoutSeconds: opts.registrationTimeoutSeconds }
        : {}),
      ...(opts.launchTimeoutSeconds !== undefined ? { launchTimeoutSeconds: opts.launchTimeoutSeconds } : {}),
    });
    this.termination = new NodeClaimTermination(this.ctx);
    this.queue = new QueueController({
      name: this.name,
      clock: opts.clock,
      logger: opts.logger,
      concurrency: opts.concurrency ?? 10,
      reconcile: (key) => this.reconcile(key),
    });
  }

  async start(signal: AbortSignal): Promise<void> {
    const ncInf = this.informers.informerFor('NodeClaim');
    const nodeInf = this.informers.informerFor('Node');
    indexProviderID(ncInf.cache);
    indexProviderID(nodeInf.cache);
    this.nodes = nodeInf.cache;
    const enqueueNode = (n: Node): void => {
      const names = new Set(nodeClaimsForNode(ncInf.cache, n).map((nc) => nc.metadata.name as string));
      for (const o of n.metadata.ownerReferences ?? []) if (o.kind === 'NodeClaim') names.add(o.name);
      for (const name of names) this.queue.enqueue(name);
    };
    const offs = [
      ncInf.on({
        add: (nc) => this.queue.enqueue(nc.metadata.name as string),
        update: (_, nc) => this.queue.enqueue(nc.metadata.name as string),
        delete: (nc) => this.queue.enqueue(nc.metadata.name as string),
      }),
      nodeInf.on({ add: enqueueNode, update: (_, n) => enqueueNode(n), delete: enqueueNode }),
    ];
    await runQueueWithInformers({
      name: this.name,
      logger: this.ctx.logger,
      informers: this.informers,
      ownInformers: this.ownInformers,
      queue: this.queue,
      signal,
      offs,
      syncTimeoutMs: this.opts.syncTimeoutMs,
    });
  }

  /** Reconciles one NodeClaim by name (exposed for tests). */
  async reconcile(name: string): Promise<ReconcileResult> {
    const nodeClaim = await this.opts.client.tryGet('NodeClaim', name);
    if (!nodeClaim) return {};
    if (!isManaged(nodeClaim, this.opts.cloudProvider)) return {};
    if (nodeClaim.metadata.deletionTimestamp) {
      const r = await this.termination.reconcile(nodeClaim);
      if (r.deleted && nodeClaim.metadata.uid) this.launch.forget(nodeClaim.metadata.uid);
      return toResult([r]);
    }
    if (!(nodeClaim.metadata.finalizers ?? []).includes(FinalizerTermination)) {
      try {
        const updated = await this.opts.client.patch(
          'NodeClaim',
          name,
          undefined,
          {
            metadata: {
              finalizers: withFinalizer(nodeClaim.metadata.finalizers, FinalizerTermination),
              resourceVersion: nodeClaim.metadata.resourceVersion,
            },
          },
          { type: 'merge' },
        );
        nodeClaim.metadata = updated.metadata;
      } catch (err) {
        if (isConflict(err)) return { requeue: true };
        if (isNotFound(err)) return {};
        throw err;
      }
    }
    const stored = structuredClone(nodeClaim);
    const results: StepResult[] = [];
    const errors: unknown[] = [];
    for (const step of [this.launch, this.registration, this.initialization, this.liveness]) {
      try {
        const r = await step.reconcile(nodeClaim);
        results.push(r);
        if (r.deleted) return {};
      } catch (err) {
        errors.push(err);
      }
    }
    await this.persist(stored, nodeClaim);
    if (errors.length > 0) {
      throw errors.length === 1 ? errors[0] : new AggregateError(errors, errors.map(String).join('; '));
    }
    return toResult(results);
  }

  private async persist(stored: NodeClaim, nodeClaim: NodeClaim): Promise<void> {
    const name = nodeClaim.metadata.name as string;
    const metaChanged =
      JSON.stringify(stored.metadata.labels ?? {}) !== JSON.stringify(nodeClaim.metadata.labels ?? {}) ||
      JSON.stringify(stored.metadata.annotations ?? {}) !==
        JSON.stringify(nodeClaim.metadata.annotations ?? {});
    const statusChanged = JSON.stringify(stored.status ?? {}) !== JSON.stringify(nodeClaim.status ?? {});
    try {
      if (metaChanged) {
        await this.opts.client.patch(
          'NodeClaim',
          name,
          undefined,
          {
            metadata: {
              labels: nodeClaim.metadata.labels ?? {},
              annotations: nodeClaim.metadata.annotations ?? {},
            },
          },
          { type: 'merge' },
        );
      }
      if (statusChanged) {
        // Only the fields the steps changed: other controllers write status too (e.g. `lastPodEventTime`),
        // and a whole-status merge from a stale copy would undo their writes.
        const before = (stored.status ?? {}) as Record<string, unknown>;
        const after = (nodeClaim.status ?? {}) as Record<string, unknown>;
        const changed: Record<string, unknown> = {};
        for (const k of new Set([...Object.keys(before), ...Object.keys(after)])) {
          if (JSON.stringify(before[k]) !== JSON.stringify(after[k])) changed[k] = after[k] ?? null;
        }
        await this.opts.client.patchStatus(
          'NodeClaim',
          name,
          undefined,
          { status: changed },
          { type: 'merge' },
        );
      }
    } catch (err) {
      if (isNotFound(err)) return;
      throw err;
    }
  }
}

/** Combines step results: rate-limited requeue if any asked, else the smallest `requeueAfter`. */
function toResult(results: StepResult[]): ReconcileResult {
  if (results.some((r) => r.requeue)) return { requeue: true };
  const after = results.map((r) => r.requeueAfter).filter((x): x is number => x !== undefined);
  return after.length > 0 ? { requeueAfter: Math.min(...after) } : {};
}
