/**
 * NodeClass status (`nodeclass.status`): sets `ValidationSucceeded` and the root `Ready` on the NodeClass kinds
 * the cloud provider supports (KWOKNodeClass, EC2NodeClass), from `apis/validation.ts`: an invalid spec gives
 * `Ready=False` reason `ValidationFailed` with every issue. Provider-specific readiness (AWS subnets, security
 * groups, AMIs, instance profile) adds more dependents via `extraDependents` when that controller exists.
 */
import type { KubeObject } from '../../apis/core.ts';
import { validateObject } from '../../apis/validation.ts';
import { isConflict, isNotFound } from '../../kube/errors.ts';
import { SharedInformers } from '../../kube/informer.ts';
import type { ResourceType } from '../../kube/resources.ts';
import { ConditionSet } from '../nodeclaim/conditions.ts';
import type { ControllerDeps } from '../nodeclaim/lifecycle/controller.ts';
import { type Controller, QueueController, type ReconcileResult } from '../runtime.ts';

/** Options of {@link NodeClassStatusController}. */
export interface NodeClassStatusOptions extends ControllerDeps {
  /** More dependents of `Ready` per kind (e.g. `{EC2NodeClass: ['SubnetsReady', ...]}`), set by other controllers. */
  extraDependents?: Record<string, string[]>;
  syncTimeoutMs?: number;
}

/** `undefined` when the NodeClass spec is valid, else every issue in one message. Pure. */
export function nodeClassValidationError(nodeClass: KubeObject): string | undefined {
  const { status: _s, ...rest } = nodeClass;
  const meta = { ...(rest.metadata ?? {}) };
  for (const k of [
    'managedFields',
    'resourceVersion',
    'uid',
    'creationTimestamp',
    'generation',
    'deletionTimestamp',
    'finalizers',
  ])
    delete (meta as Record<string, unknown>)[k];
  const r = validateObject({ ...rest, metadata: meta });
  return r.ok ? undefined : r.issues.map((i) => i.message).join('; ');
}

/** The NodeClass status controller (key: `<Kind>/<name>`). */
export class NodeClassStatusController implements Controller {
  readonly name = 'nodeclass.status';
  readonly queue: QueueController;
  private readonly informers: SharedInformers;
  private readonly ownInformers: boolean;

  constructor(private readonly opts: NodeClassStatusOptions) {
    this.ownInformers = opts.informers === undefined;
    this.informers = opts.informers ?? new SharedInformers(opts.client, { clock: opts.clock });
    this.queue = new QueueController({
      name: this.name,
      clock: opts.clock,
      logger: opts.logger,
      reconcile: (k) => this.reconcile(k),
    });
  }

  private types(): ResourceType[] {
    return this.opts.cloudProvider
      .supportedNodeClasses()
      .map((k) => this.opts.client.registry.forKind(`${k.kind}.${k.group}`))
      .filter((r): r is ResourceType => r !== undefined);
  }

  async start(signal: AbortSignal): Promise<void> {
    const offs = this.types().map((rt) => {
      const enq = (o: KubeObject): void => this.queue.enqueue(`${rt.kind}.${rt.group}/${o.metadata?.name}`);
      return this.informers.informerFor(rt).on({ add: enq, update: (_, o) => enq(o) });
    });
    this.informers.start();
    try {
      await this.informers.waitForSync(this.opts.syncTimeoutMs ?? 60_000);
      await this.queue.start(signal);
    } catch (err) {
      this.opts.logger.error({ controller: this.name, err: String(err) }, 'informers did not sync');
    } finally {
      for (const off of offs) off();
      if (this.ownInformers) await this.informers.stop();
    }
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
    const invalid = nodeClassValidationError(obj);
    if (invalid) conds.setFalse('ValidationSucceeded', 'ValidationFailed', invalid);
    else conds.setTrue('ValidationSucceeded');
    if (JSON.stringify(obj.status) === stored) return {};
    try {
      await this.opts.client.patchStatus(
        rt,
        name,
        undefined,
        { metadata: { resourceVersion: obj.metadata?.resourceVersion }, status: obj.status },
        { type: 'merge' },
      );
    } catch (err) {
      if (isNotFound(err)) return {};
      if (isConflict(err)) return { requeue: true };
      throw err;
    }
    if (invalid) void this.opts.recorder.publish(obj, 'Warning', 'ValidationFailed', invalid);
    return {};
  }
}
