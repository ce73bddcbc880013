/**
 * `nodeoverlay.controller` (upstream kubernetes-sigs/karpenter v1.14.1 `pkg/controllers/nodeoverlay/controller.go`;
 * run only with the `NodeOverlay` feature gate): one reconcile evaluates every NodeOverlay against every NodePool's
 * instance types (the undecorated provider's) with the pure core `scheduling/nodeoverlay.ts`, writes each overlay's
 * conditions, publishes the evaluation to the {@link NodeOverlayStore} that the decorated provider
 * (`cloudprovider/overlay.ts`) applies, and marks the cluster unconsolidated (prices may have changed):
 * - `ValidationSucceeded` True; False reason `RuntimeValidation` (restricted label / well-known resource) or
 *   `Conflict` ("conflict with another overlay": same weight, same offering price or capacity resource);
 * - `Ready` follows `ValidationSucceeded` (upstream `NewReadyConditions(ValidationSucceeded)`).
 * Before listing instance types it hands the overlays to the store, whose prices for unpriced (preview) instance
 * types the provider reads (`NodeOverlayStore.setOverlays`; upstream aws `GetOverlayPrice` reads overlays whose
 * `ValidationSucceeded` is True, so a new overlay prices them from the reconcile after the one that validated it,
 * which its own status write triggers).
 * Triggered by NodeOverlay, NodePool and NodeClass events (one shared key); re-evaluated every 6 h. A NodePool
 * whose instance types cannot be resolved is left out (its overlays are not applied there) and the reconcile
 * fails after storing, so it is retried with backoff, as upstream returns the aggregated error.
 */
import type { NodeOverlay, NodePool } from '../../apis/karpenter.ts';
import type { NodeOverlayStore } from '../../cloudprovider/overlay.ts';
import { evaluateNodeOverlays, type NodePoolInstanceTypes } from '../../scheduling/nodeoverlay.ts';
import { StatusController, type StatusControllerOptions } from '../nodepool/statuscontroller.ts';
import { ConditionSet, type ReconcileResult, type Watch, watch } from '../runtime/index.ts';

/** Condition type set by this controller (with the root `Ready`). */
export const ConditionNodeOverlayValidationSucceeded = 'ValidationSucceeded';

/** The one work-queue key: every reconcile compares every overlay with every other. */
export const NodeOverlayKey = 'nodeoverlays';

/** Seconds between full re-evaluations (upstream `RequeueAfter: 6 * time.Hour`). */
export const NodeOverlayResyncSeconds = 6 * 3600;

/** Options of {@link NodeOverlayController}. `cloudProvider` must be the provider WITHOUT overlays. */
export interface NodeOverlayControllerOptions extends StatusControllerOptions {
  /** Where the evaluation is published for the decorated provider. */
  store: NodeOverlayStore;
  /** Cluster state, told after each evaluation that consolidation must look again (upstream `MarkUnconsolidated`). */
  cluster?: { markUnconsolidated(): void };
}

/** The nodeoverlay controller; see the module comment. */
export class NodeOverlayController extends StatusController<NodeOverlayControllerOptions> {
  constructor(opts: NodeOverlayControllerOptions) {
    super('nodeoverlay.controller', opts, 1);
  }

  protected watches(): Watch[] {
    const all = (): string => NodeOverlayKey;
    return [
      watch('NodeOverlay', { map: all }),
      watch('NodePool', { map: all }),
      ...this.nodeClassTypes().map((rt) => watch(rt, { map: all })),
    ];
  }

  /** Evaluates every overlay, writes their conditions, publishes the evaluation (exposed for tests). */
  async reconcile(_key: string): Promise<ReconcileResult> {
    const { client, cloudProvider, store, clock, logger } = this.opts;
    const [overlays, nodePools] = await Promise.all([client.list('NodeOverlay'), client.list('NodePool')]);
    // preview instance types (upstream aws PR #9249): prices of unpriced types from the validated overlays, before
    // the instance types are listed, so that the evaluation below sees their offerings
    store.setOverlays(overlays.items as NodeOverlay[]);
    const pools: NodePoolInstanceTypes[] = [];
    const failures: string[] = [];
    for (const np of nodePools.items as NodePool[]) {
      if (np.metadata.deletionTimestamp) continue;
      try {
        pools.push({ nodePool: np, instanceTypes: await cloudProvider.instanceTypes(np) });
      } catch (e) {
        failures.push(`listing instance types for nodepool "${np.metadata.name}", ${(e as Error).message}`);
      }
    }
    const evaluation = evaluateNodeOverlays(overlays.items as NodeOverlay[], pools);
    for (const overlay of overlays.items as NodeOverlay[]) {
      const stored = structuredClone(overlay);
      const conds = new ConditionSet(overlay, [ConditionNodeOverlayValidationSucceeded], clock);
      const v = evaluation.verdicts.get(overlay.metadata.name);
      if (!v || v.ok) conds.setTrue(ConditionNodeOverlayValidationSucceeded);
      else conds.setFalse(ConditionNodeOverlayValidationSucceeded, v.reason, v.message);
      if (JSON.stringify(stored.status ?? {}) === JSON.stringify(overlay.status)) continue;
      const failed = await this.writeStatus('NodeOverlay', overlay);
      // a conflict or a vanished overlay: the verdicts may be stale, evaluate again (upstream requeues)
      if (failed) return { requeue: true };
      if (v && !v.ok)
        logger.warn(
          { controller: this.name, nodeoverlay: overlay.metadata.name, reason: v.reason, detail: v.message },
          'nodeoverlay not applied',
        );
    }
    store.update(evaluation);
    this.opts.cluster?.markUnconsolidated();
    if (failures.length > 0) throw new Error(failures.join('; '));
    return { requeueAfter: NodeOverlayResyncSeconds };
  }
}

/** Options of {@link NodeOverlayGateOffNotice}. */
export interface NodeOverlayGateOffNoticeOptions {
  client: StatusControllerOptions['client'];
  logger: StatusControllerOptions['logger'];
}

/**
 * `nodeoverlay.gateoff` (capenter addition; runs only with the `NodeOverlay` gate OFF): lists the NodeOverlays once
 * at start and, when there are any, logs one warning that they are ignored and how to turn the gate on. Upstream
 * ignores them silently; capenter applies nothing either, it only says so. A cluster without the NodeOverlay CRD,
 * or any API error, is silent. Then waits for `signal`.
 */
export class NodeOverlayGateOffNotice {
  readonly name = 'nodeoverlay.gateoff';
  constructor(private readonly opts: NodeOverlayGateOffNoticeOptions) {}

  /** Checks once, then resolves when `signal` aborts. Never rejects. */
  async start(signal: AbortSignal): Promise<void> {
    try {
      const names = (await this.opts.client.list('NodeOverlay')).items.map((o) => o.metadata?.name ?? '');
      if (names.length > 0)
        this.opts.logger.warn(
          {
            controller: this.name,
            nodeoverlays: names,
            fix: 'set FEATURE_GATES=NodeOverlay=true (chart: settings.featureGates.nodeOverlay=true)',
          },
          `${names.length} NodeOverlay(s) ignored: the NodeOverlay feature gate is off (alpha; default false, as upstream)`,
        );
    } catch {
      // no CRD, no permission or no API server: nothing to say
    }
    if (signal.aborted) return;
    await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
  }
}
