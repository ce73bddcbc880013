/**
 * `nodeclaim.expiration`: deletes NodeClaims older than their `spec.expireAfter` (else their NodePool template's;
 * `Never` = never), after kubernetes-sigs/karpenter v1 `pkg/controllers/nodeclaim/expiration/controller.go`:
 * forceful — no disruption budgets, no do-not-disrupt or PDB checks at decision time (the drain is bounded by
 * `terminationGracePeriod`). Like upstream it does not stamp condition `DisruptionReason` (only the disruption
 * queue does, upstream `queue.go` markDisrupted), so the drain counts `karpenter_pods_drained_total{reason="Forceful
 * Termination"}`; after deleting it counts `karpenter_nodeclaims_disrupted_total{reason="expired"}`. A NodeClaim not yet expired is re-checked at its expiry.
 */
import { tryParseDuration } from '../../../apis/duration.ts';
import type { NodeClaim, NodePool } from '../../../apis/karpenter.ts';
import { LabelNodePool } from '../../../apis/labels.ts';
import {
  type Controller,
  type ControllerDeps,
  capacityTypeOf,
  defineController,
  type InformerController,
  type InformerSyncOptions,
  nodePoolOf,
  type ReconcileResult,
  watch,
} from '../../runtime/index.ts';
import { lifecycleMetrics } from '../metrics.ts';

/** Options of {@link ExpirationController}. */
export interface ExpirationOptions extends Omit<ControllerDeps, 'cloudProvider'>, InformerSyncOptions {}

/**
 * When `nc` expires (ms since the epoch): creation + `spec.expireAfter` (else `nodePool`'s template value), or
 * undefined when it never does (`Never`, unparsable, no creation time). Pure.
 */
export function expirationTime(nc: NodeClaim, nodePool: NodePool | undefined): number | undefined {
  const after = nc.spec.expireAfter ?? nodePool?.spec.template.spec.expireAfter;
  if (after === undefined) return undefined;
  const d = tryParseDuration(after);
  if (!d.ok || !Number.isFinite(d.seconds)) return undefined;
  const created = Date.parse(nc.metadata.creationTimestamp ?? '');
  return Number.isFinite(created) ? created + d.seconds * 1000 : undefined;
}

/** The expiration controller. */
export class ExpirationController implements Controller {
  readonly name = 'nodeclaim.expiration';
  private readonly kit: InformerController;

  constructor(private readonly opts: ExpirationOptions) {
    const byName = (nc: NodeClaim): string => nc.metadata.name as string;
    this.kit = defineController({
      name: this.name,
      deps: opts,
      concurrency: 5,
      watches: [
        watch('NodeClaim', { events: ['add', 'update'], map: byName }),
        // a NodePool's expireAfter applies to its NodeClaims
        watch('NodePool', {
          events: ['update'],
          map: (np) =>
            (this.kit.cache('NodeClaim')?.list() ?? [])
              .filter((nc) => nc.metadata.labels?.[LabelNodePool] === np.metadata.name)
              .map(byName),
        }),
      ],
      reconcile: (key) => this.reconcile(key),
    });
  }

  /** Runs until `signal` aborts (see {@link defineController}); never rejects. */
  start(signal: AbortSignal): Promise<void> {
    return this.kit.start(signal);
  }

  /** One check of NodeClaim `name` (exposed for tests): deletes it when expired, else re-checks at its expiry. */
  async reconcile(name: string): Promise<ReconcileResult> {
    const nc = this.kit.cache('NodeClaim')?.get(name) ?? (await this.opts.client.tryGet('NodeClaim', name));
    if (!nc || nc.metadata.deletionTimestamp) return {};
    const poolName = nc.metadata.labels?.[LabelNodePool];
    const pool = poolName
      ? (this.kit.cache('NodePool')?.get(poolName) ?? (await this.opts.client.tryGet('NodePool', poolName)))
      : undefined;
    const at = expirationTime(nc, pool);
    if (at === undefined) return {};
    const now = this.opts.clock.now();
    if (now < at) return { requeueAfter: Math.min((at - now) / 1000, 24 * 3600) };
    if (!(await this.opts.client.tryDelete('NodeClaim', name))) return {};
    lifecycleMetrics(this.opts.registry).disrupted.inc({
      reason: 'expired',
      nodepool: nodePoolOf(nc),
      capacity_type: capacityTypeOf(nc),
    });
    this.opts.logger.info(
      {
        controller: this.name,
        nodeclaim: name,
        expireAfter: nc.spec.expireAfter ?? pool?.spec.template.spec.expireAfter,
      },
      'deleting expired nodeclaim',
    );
    return {};
  }
}
