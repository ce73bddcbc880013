/**
 * `nodeclaim.garbagecollection`: a singleton loop (every 2 min by default) that reconciles the cloud with the
 * cluster, after kubernetes-sigs/karpenter `pkg/controllers/nodeclaim/garbagecollection/controller.go` and the
 * AWS provider's instance garbage collection:
 * - a Registered NodeClaim whose instance the provider no longer lists (and whose Node is not Ready) is deleted,
 *   counted in `karpenter_nodeclaims_disrupted_total{reason="garbage_collected"}`;
 * - a provider instance with no NodeClaim (by provider ID) that was launched more than `instanceGraceSeconds`
 *   ago (default 30 s) is deleted, and its Node with it.
 * The provider's instances are listed before the NodeClaims, as upstream's AWS garbage collection does, so a launch
 * whose provider ID is written between the two lists is seen as claimed. An instance whose NodeClaim (by the name
 * the provider reports, the `karpenter.sh/nodeclaim` tag on AWS) exists without a provider ID yet is a launch whose
 * status write is in flight and is kept whatever its age: the grace period alone compares the controller's clock
 * with the cloud's launch time, and a skew or a slow status write (API errors, a restart) would outlast it.
 */
import type { NodeClaim } from '../../../apis/karpenter.ts';
import { isNodeClaimNotFoundError } from '../../../cloudprovider/types.ts';
import {
  ConditionSet,
  type Controller,
  type ControllerDeps,
  capacityTypeOf,
  nodePoolOf,
  SingletonController,
} from '../../runtime/index.ts';
import { ConditionRegistered, NodeClaimDependents } from '../lifecycle/context.ts';
import { lifecycleMetrics } from '../metrics.ts';

/** Options of {@link NodeClaimGarbageCollectionController}. */
export interface GarbageCollectionOptions extends ControllerDeps {
  /** Seconds between passes (upstream 120). */
  periodSeconds?: number;
  /** Minimum age in seconds of an instance without NodeClaim before it is deleted (default 30). */
  instanceGraceSeconds?: number;
}

/** What one pass removed (for logs and tests). */
export interface GarbageCollectionResult {
  /** NodeClaim names deleted because their instance is gone. */
  nodeClaims: string[];
  /** Provider IDs of instances deleted because no NodeClaim owns them. */
  instances: string[];
}

/** The garbage-collection controller. */
export class NodeClaimGarbageCollectionController implements Controller {
  readonly name = 'nodeclaim.garbagecollection';
  private readonly loop: SingletonController;

  constructor(private readonly opts: GarbageCollectionOptions) {
    this.loop = new SingletonController({
      name: this.name,
      clock: opts.clock,
      logger: opts.logger,
      reconcile: async () => {
        await this.collect();
        return { requeueAfter: opts.periodSeconds ?? 120 };
      },
    });
  }

  start(signal: AbortSignal): Promise<void> {
    return this.loop.start(signal);
  }

  /** Runs the next pass now. */
  trigger(): void {
    this.loop.trigger();
  }

  /** One pass (exposed for tests). Throws on API/provider errors (the loop retries). */
  async collect(): Promise<GarbageCollectionResult> {
    const { client, cloudProvider, clock } = this.opts;
    const log = this.opts.logger.child({ controller: this.name });
    const metrics = lifecycleMetrics(this.opts.registry);
    const out: GarbageCollectionResult = { nodeClaims: [], instances: [] };
    // instances first (upstream's order): a NodeClaim listed after them already names any instance launched before
    const instances = (await cloudProvider.list()).filter((i) => !i.metadata.deletionTimestamp);
    const nodeClaims = (await client.list('NodeClaim')).items;
    const nodes = (await client.list('Node')).items;
    const cloudIDs = new Set(instances.map((i) => i.status?.providerID).filter((x): x is string => !!x));
    const claimedIDs = new Set(nodeClaims.map((n) => n.status?.providerID).filter((x): x is string => !!x));
    /** NodeClaims launching: stored, no provider ID written yet. */
    const launching = new Set(
      nodeClaims.filter((n) => !n.status?.providerID).map((n) => n.metadata.name as string),
    );

    for (const nc of nodeClaims) {
      const id = nc.status?.providerID;
      if (!id || nc.metadata.deletionTimestamp || cloudIDs.has(id)) continue;
      if (!new ConditionSet(structuredClone(nc), NodeClaimDependents, clock).isTrue(ConditionRegistered))
        continue;
      const node = nodes.find((n) => n.spec?.providerID === id);
      if (node && (node.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True'))
        continue;
      if (await client.tryDelete('NodeClaim', nc.metadata.name as string)) {
        out.nodeClaims.push(nc.metadata.name as string);
        log.info(
          { nodeclaim: nc.metadata.name, 'provider-id': id },
          'garbage collecting nodeclaim with no cloudprovider representation',
        );
        metrics.disrupted.inc({
          reason: 'garbage_collected',
          nodepool: nodePoolOf(nc),
          capacity_type: capacityTypeOf(nc),
        });
      }
    }

    const grace = (this.opts.instanceGraceSeconds ?? 30) * 1000;
    for (const inst of instances) {
      const id = inst.status?.providerID;
      if (!id || claimedIDs.has(id)) continue;
      if (inst.metadata.name && launching.has(inst.metadata.name)) continue; // its status write is in flight
      const created = Date.parse(inst.metadata.creationTimestamp ?? '');
      if (Number.isFinite(created) && clock.now() - created < grace) continue;
      try {
        await cloudProvider.delete(inst as NodeClaim);
      } catch (err) {
        if (!isNodeClaimNotFoundError(err)) throw err;
      }
      for (const n of nodes)
        if (n.spec?.providerID === id) await client.tryDelete('Node', n.metadata.name as string);
      out.instances.push(id);
      log.info({ 'provider-id': id }, 'garbage collected cloudprovider instance without nodeclaim');
    }
    return out;
  }
}
