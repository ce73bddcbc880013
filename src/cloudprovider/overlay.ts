/**
 * The NodeOverlay decorator of a CloudProvider (upstream kubernetes-sigs/karpenter v1.14.1
 * `pkg/cloudprovider/overlay/cloudprovider.go` and the `InstanceTypeStore` of `pkg/controllers/nodeoverlay/store.go`):
 * `instanceTypes(nodePool)` returns the provider's instance types with the NodeOverlays applied, as last evaluated
 * by the nodeoverlay controller (`controllers/nodeoverlay/controller.ts`), which publishes each evaluation into a
 * {@link NodeOverlayStore}. Built only when the `NodeOverlay` feature gate is on; every other method passes
 * through unchanged (upstream decorates `GetInstanceTypes` only).
 */
import type { NodeClaim, NodeOverlay, NodePool } from '../apis/karpenter.ts';
import {
  applyNodeOverlays,
  type NodeOverlayEvaluation,
  unpricedTypeOverlayPrices,
} from '../scheduling/nodeoverlay.ts';
import type { CloudProvider, InstanceType, NodeClassKind, RepairPolicy } from './types.ts';

/**
 * The latest NodeOverlay evaluation (upstream `InstanceTypeStore`, swapped atomically by the controller). Empty
 * until the first evaluation: every NodePool is then unevaluated and its instance types are refused.
 */
export class NodeOverlayStore {
  private current: NodeOverlayEvaluation | undefined;
  private unpriced: ReadonlyMap<string, number> = new Map();

  /** Replaces the evaluation (upstream `UpdateStore`). */
  update(evaluation: NodeOverlayEvaluation): void {
    this.current = evaluation;
  }

  /**
   * Stores the prices NodeOverlays give instance types without a price of their own (preview types; pure rule
   * `unpricedTypeOverlayPrices`), from the overlays as listed, their `ValidationSucceeded` conditions included.
   * The nodeoverlay controller calls it at the start of each reconcile, before it lists instance types.
   */
  setOverlays(overlays: readonly NodeOverlay[]): void {
    this.unpriced = unpricedTypeOverlayPrices(overlays);
  }

  /**
   * Instance type name → USD/hour for offerings that have no price (upstream aws `GetOverlayPrice`); the aws
   * provider reads it when it builds offerings. Empty before the first reconcile.
   */
  unpricedTypePrices(): ReadonlyMap<string, number> {
    return this.unpriced;
  }

  /** The latest evaluation, or undefined before the first one. */
  get evaluation(): NodeOverlayEvaluation | undefined {
    return this.current;
  }

  /**
   * `instanceTypes` of `nodePool` with the stored overlays applied (upstream `ApplyAll`).
   * @throws Error naming the NodePool when it has not been evaluated yet (upstream `UnevaluatedNodePoolError`).
   */
  apply(nodePool: string, instanceTypes: readonly InstanceType[]): InstanceType[] {
    const ev = this.current ?? {
      order: [],
      verdicts: new Map(),
      updates: new Map(),
      evaluatedNodePools: new Set<string>(),
    };
    return applyNodeOverlays(ev, nodePool, instanceTypes);
  }
}

/**
 * `provider` with NodeOverlays applied to `instanceTypes` from `store` (upstream `overlay.Decorate`). Errors of the
 * provider pass through; an unevaluated NodePool rejects with the store's error ("applying nodeoverlays, ...").
 */
export function withNodeOverlays(provider: CloudProvider, store: NodeOverlayStore): CloudProvider {
  return {
    get name(): string {
      return provider.name;
    },
    supportedNodeClasses: (): NodeClassKind[] => provider.supportedNodeClasses(),
    repairPolicies: (): RepairPolicy[] => provider.repairPolicies(),
    create: (nodeClaim: NodeClaim): Promise<NodeClaim> => provider.create(nodeClaim),
    delete: (nodeClaim: NodeClaim): Promise<void> => provider.delete(nodeClaim),
    get: (providerID: string): Promise<NodeClaim> => provider.get(providerID),
    list: (): Promise<NodeClaim[]> => provider.list(),
    instanceTypes: async (nodePool: NodePool): Promise<InstanceType[]> => {
      const types = await provider.instanceTypes(nodePool);
      try {
        return store.apply(nodePool.metadata.name, types);
      } catch (e) {
        throw new Error(`applying nodeoverlays, ${(e as Error).message}`);
      }
    },
    isDrifted: (nodeClaim: NodeClaim): Promise<string | undefined> => provider.isDrifted(nodeClaim),
  };
}
