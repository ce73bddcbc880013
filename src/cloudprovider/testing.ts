/**
 * A recording fake cloud provider for tests (not used by production code): wraps a real provider (usually the
 * kwok one), records every call, and lets a test inject an error or a different answer per method instead of
 * spreading ad-hoc objects over the provider.
 */
import type { NodeClaim, NodePool } from '../apis/karpenter.ts';
import type { CloudProvider, InstanceType, NodeClassKind, RepairPolicy } from './types.ts';

/** The asynchronous methods of {@link CloudProvider}. */
export type CloudProviderMethod = 'create' | 'delete' | 'get' | 'list' | 'instanceTypes' | 'isDrifted';

/** One recorded call: method, argument (NodeClaim, provider ID or NodePool; none for `list`) and outcome. */
export interface RecordedCall {
  method: CloudProviderMethod;
  arg?: NodeClaim | NodePool | string;
  /** `ok`, or the error's `code` (`CreateError`, `NodeClaimNotFound`, …) / message. */
  outcome: string;
}

type Handler = (arg: never) => Promise<unknown>;

/** See the module doc. `calls` lists every call in order; `fail`/`answer` steer a method until `reset`. */
export class RecordingCloudProvider implements CloudProvider {
  readonly calls: RecordedCall[] = [];
  private readonly overrides = new Map<CloudProviderMethod, { handler: Handler; times: number }>();

  constructor(readonly inner: CloudProvider) {}

  get name(): string {
    return this.inner.name;
  }

  /** Makes `method` throw `error` (the next `times` calls; default every call until {@link reset}). */
  fail(method: CloudProviderMethod, error: Error, times = Number.POSITIVE_INFINITY): this {
    return this.answer(
      method,
      async () => {
        throw error;
      },
      times,
    );
  }

  /** Makes `method` answer with `handler` (given the call's argument) instead of the inner provider. */
  answer<M extends CloudProviderMethod>(
    method: M,
    handler: (arg: Parameters<CloudProvider[M]>[0]) => ReturnType<CloudProvider[M]>,
    times = Number.POSITIVE_INFINITY,
  ): this {
    this.overrides.set(method, { handler: handler as unknown as Handler, times });
    return this;
  }

  /** Removes every injected error and answer (recorded calls are kept). */
  reset(): void {
    this.overrides.clear();
  }

  /** The recorded calls of one method. */
  callsOf(method: CloudProviderMethod): RecordedCall[] {
    return this.calls.filter((c) => c.method === method);
  }

  private async call<T>(method: CloudProviderMethod, arg: unknown, real: () => Promise<T>): Promise<T> {
    const o = this.overrides.get(method);
    let run = real;
    if (o && o.times > 0) {
      o.times--;
      run = () => o.handler(arg as never) as Promise<T>;
    }
    const entry: RecordedCall = { method, outcome: 'ok' };
    if (arg !== undefined) entry.arg = arg as NodeClaim | NodePool | string;
    this.calls.push(entry);
    try {
      return await run();
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      entry.outcome = typeof code === 'string' ? code : String((err as Error).message ?? err);
      throw err;
    }
  }

  supportedNodeClasses(): NodeClassKind[] {
    return this.inner.supportedNodeClasses();
  }
  repairPolicies(): RepairPolicy[] {
    return this.inner.repairPolicies();
  }
  create(nodeClaim: NodeClaim): Promise<NodeClaim> {
    return this.call('create', nodeClaim, () => this.inner.create(nodeClaim));
  }
  delete(nodeClaim: NodeClaim): Promise<void> {
    return this.call('delete', nodeClaim, () => this.inner.delete(nodeClaim));
  }
  get(providerID: string): Promise<NodeClaim> {
    return this.call('get', providerID, () => this.inner.get(providerID));
  }
  list(): Promise<NodeClaim[]> {
    return this.call('list', undefined, () => this.inner.list());
  }
  instanceTypes(nodePool: NodePool): Promise<InstanceType[]> {
    return this.call('instanceTypes', nodePool, () => this.inner.instanceTypes(nodePool));
  }
  isDrifted(nodeClaim: NodeClaim): Promise<string | undefined> {
    return this.call('isDrifted', nodeClaim, () => this.inner.isDrifted(nodeClaim));
  }
}
