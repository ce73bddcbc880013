/**
 * NodeClass status (`nodeclass.status`): sets `ValidationSucceeded` and the root `Ready` on the NodeClass kinds
 * the cloud provider supports (KWOKNodeClass, EC2NodeClass), from `apis/validation.ts`: an invalid spec gives
 * `Ready=False` reason `ValidationFailed` with every issue. Provider-specific readiness (AWS subnets, security
 * groups, AMIs, instance profile) adds more dependents via `extraDependents` when that controller exists. A valid
 * spec leaves a `ValidationSucceeded=False` the provider set for its own reason (see `heldByProvider`).
 */
import type { KubeObject } from '../../apis/core.ts';
import { ConditionSet, type ReconcileResult, type Watch, watch } from '../runtime/index.ts';
import { StatusController, type StatusControllerOptions } from './statuscontroller.ts';
import { specValidationError } from './validation.ts';

/** Options of {@link NodeClassStatusController}. */
export interface NodeClassStatusOptions extends StatusControllerOptions {
  /** More dependents of `Ready` per kind (e.g. `{EC2NodeClass: ['SubnetsReady', ...]}`), set by other controllers. */
  extraDependents?: Record<string, string[]>;
}

/** Resolves to `undefined` when the NodeClass spec is valid, else to every issue in one message. */
export function nodeClassValidationError(nodeClass: KubeObject): Promise<string | undefined> {
  return specValidationError(nodeClass);
}

/**
 * Whether `ValidationSucceeded` is False for a reason this controller does not own (not `ValidationFailed`): the
 * provider's own validation (e.g. the aws `ClusterCIDRResolutionFailed` of an AL2023 class) set it, and a valid
 * spec must not flip it back to True; the provider's controller sets it True once its check passes.
 */
function heldByProvider(conds: ConditionSet): boolean {
  const c = conds.get('ValidationSucceeded');
  return c?.status === 'False' && c.reason !== 'ValidationFailed';
}

/** The NodeClass status controller (key: `<Kind>/<name>`). */
export class NodeClassStatusController extends StatusController<NodeClassStatusOptions> {
  constructor(opts: NodeClassStatusOptions) {
    super('nodeclass.status', opts);
  }

  protected watches(): Watch[] {
    return this.nodeClassTypes().map((rt) =>
      watch(rt, { events: ['add', 'update'], map: (o) => `${rt.kind}.${rt.group}/${o.metadata?.name}` }),
    );
  }

  /** Reconciles `<Kind.group>/<name>` (exposed for tests). */
  async reconcile(key: string): Promise<ReconcileResult> {
    const i = key.indexOf('/');
    const kind = key.slice(0, i);
    const name = key.slice(i + 1);
    const rt = this.opts.client.registry.forKind(kind);
    if (!rt) return {};
    const obj = await this.opts.client.tryGet(rt, name);
    if (!obj || obj.metadata?.deletionTimestamp) return {};
    const stored = JSON.stringify(obj.status ?? {});
    const conds = new ConditionSet(
      obj,
      ['ValidationSucceeded', ...(this.opts.extraDependents?.[rt.kind] ?? [])],
      this.opts.clock,
    );
    const invalid = await nodeClassValidationError(obj);
    if (invalid) conds.setFalse('ValidationSucceeded', 'ValidationFailed', invalid);
    else if (!heldByProvider(conds)) conds.setTrue('ValidationSucceeded');
    if (JSON.stringify(obj.status) === stored) return {};
    const failed = await this.writeStatus(rt, obj);
    if (failed) return failed;
    if (invalid) void this.opts.recorder.publish(obj, 'Warning', 'ValidationFailed', invalid);
    return {};
  }
}
