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

import type { NodeClaim } from '../../../apis/karpenter.ts';
import { FinalizerTermination } from '../../../apis/labels.ts';
import type { CloudProvider } from '../../../cloudprovider/types.ts';
import { isConflict, isNotFound } from '../../../kube/errors.ts';
import type { NodePoolHealth } from '../../../state/nodepoolhealth.ts';
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
  withFinalizer,
} from '../../runtime/index.ts';
import { lifecycleMetrics } from '../metrics.ts';
import type { LifecycleContext, StepResult } from './context.ts';
import { Initialization } from './initialization.ts';
import { Launch } from './launch.ts';
import { Liveness } from './liveness.ts';
import { Registration } from './registration.ts';
import { NodeClaimTermination } from './termination.ts';

/** Options of {@link NodeClaimLifecycleController}. */
export interface NodeClaimLifecycleOptions extends ControllerDeps, InformerSyncOptions {
  /** Parallel reconciles (default 10). */
  concurrency?: number;
  /** Registration TTL override in seconds (default 900). */
  registrationTimeoutSeconds?: number;
  /** Launch TTL override in seconds (default 300). */
  launchTimeoutSeconds?: number;
  /** Registration outcomes shared with the `nodepool` controller (`NodeRegistrationHealthy`). */
  nodePoolHealth?: NodePoolHealth;
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
  private readonly kit: InformerController;
  private readonly ctx: LifecycleContext;
  private readonly launch: Launch;
  private readonly registration: Registration;
  private readonly initialization: Initialization;
  private readonly liveness: Liveness;
  private readonly termination: NodeClaimTermination;

  constructor(private readonly opts: NodeClaimLifecycleOptions) {
    const logger = opts.logger.child({ controller: this.name });
    this.ctx = {
      client: opts.client,
      cloudProvider: opts.cloudProvider,
      clock: opts.clock,
      logger,
      recorder: opts.recorder,
      metrics: lifecycleMetrics(opts.registry),
      nodePoolHealth: opts.nodePoolHealth,
      nodesFor: (nc) => {
        const nodes = this.kit.cache('Node');
        return nodes ? nodesForNodeClaim(nodes, nc) : [];
      },
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
    const byName = (nc: NodeClaim): string => nc.metadata.name as string;
    this.kit = defineController({
      name: this.name,
      deps: opts,
      concurrency: opts.concurrency,
      watches: [
        watch('NodeClaim', { index: indexProviderID, map: byName }),
        watch('Node', {
          index: indexProviderID,
          // by provider ID, else by owner reference
          map: (n) => {
            const claims = this.kit.cache('NodeClaim');
            const names = new Set(claims ? nodeClaimsForNode(claims, n).map(byName) : []);
            for (const o of n.metadata.ownerReferences ?? []) if (o.kind === 'NodeClaim') names.add(o.name);
            return names;
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
