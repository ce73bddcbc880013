/**
 * One MachineDeployment's scaler: admits NodeClaims (max-size), raises `spec.replicas` to what they need (one
 * update per pass, however many NodeClaims arrived: the batch), binds new unclaimed Machines to them (label
 * {@link LabelMachineNodeClaim} on the Machine, written with the Machine's resourceVersion so two NodeClaims never
 * share one), and lowers the replicas when a Machine is deleted. Every replica write happens under the
 * deployment's lock, and the replicas are RECOMPUTED from the Machines and the NodeClaims waiting, never
 * incremented:
 *
 *   target = clamp(bound + max(unbound, waiting), minSize, maxSize)
 *
 * where `bound` counts live Machines bound to a NodeClaim, `unbound` live Machines bound to none (just created by
 * the MachineSet, or older spares) and `waiting` the admitted NodeClaims not bound yet. A live Machine is one that
 * is not being deleted and not marked `cluster.x-k8s.io/delete-machine`. The target is never below the live
 * Machines, so a scale-down only ever removes marked Machines; a restart (waiting NodeClaims forgotten, then
 * re-created by the lifecycle controller) recomputes the same target, so it neither doubles nor leaks.
 * Upstream karpenter-provider-cluster-api increments `replicas` per NodeClaim (its issues #70, #74, #79).
 */
import {
  AnnotationDeleteMachine,
  LabelDeploymentName,
  type Machine,
  type MachineDeployment,
  type MachineSet,
} from '../../apis/capi.ts';
import type { KubeClient } from '../../kube/client.ts';
import type { Clock } from '../../kube/clock.ts';
import { isConflict, isNotFound } from '../../kube/errors.ts';
import { CreateError, InsufficientCapacityError } from '../types.ts';
import { AnnotationMaxSize, AnnotationMinSize, preflightBlocked } from './deployments.ts';

/** Machine label: the NodeClaim the Machine is bound to. */
export const LabelMachineNodeClaim = 'karpenter.cluster.x-k8s.io/nodeclaim';
/** Machine annotation: when capenter marked it for deletion (RFC 3339). */
export const AnnotationMachineTerminating = 'karpenter.cluster.x-k8s.io/terminating';

/** True when the Machine is being deleted or marked for deletion (not live). */
export function isMachineGoing(m: Machine): boolean {
  return (
    !!m.metadata.deletionTimestamp ||
    m.metadata.annotations?.[AnnotationDeleteMachine] !== undefined ||
    m.metadata.annotations?.[AnnotationMachineTerminating] !== undefined
  );
}

/**
 * The terminal failure of a Machine that never got a provider ID (phase `Failed`, or the v1beta1 `failureReason`
 * kept under `status.deprecated`), as `reason: message`; undefined when it has none.
 */
export function machineFailure(m: Machine): string | undefined {
  if (m.spec.providerID) return undefined;
  const d = m.status?.deprecated?.v1beta1;
  if (d?.failureReason || d?.failureMessage)
    return `${d.failureReason ?? 'Failed'}: ${d.failureMessage ?? ''}`.trim();
  if (m.status?.phase === 'Failed') return 'Failed';
  return undefined;
}

/**
 * A launch refused because the infrastructure could not make the Machine (an InsufficientCapacityError with
 * `machineFailure` set): the provider marks the offering unavailable and tries the next one.
 */
export class MachineFailedError extends InsufficientCapacityError {
  constructor(
    message: string,
    /** The Machine's failure (`reason: message`). */
    readonly machineFailure: string,
  ) {
    super(message);
  }
}

/** Options of a {@link DeploymentScaler}. */
export interface DeploymentScalerOptions {
  client: KubeClient;
  clock: Clock;
  namespace: string;
  name: string;
  /** Seconds between passes while NodeClaims wait (default 0.2). */
  pollSeconds?: number;
  /** Seconds the first create of a burst waits for the others before the first pass (default 0.05). */
  batchSeconds?: number;
  /** Called after each replica update (counts them). */
  onReplicasUpdate?: (from: number, to: number) => void;
  onError?: (err: unknown) => void;
}

interface Waiter {
  claim: string;
  admitted: boolean;
  /** Bound to a Machine (waiting for its provider ID). */
  bound?: boolean;
  deadline: number;
  resolve: (m: Machine) => void;
  reject: (e: unknown) => void;
}

/**
 * Replica bounds of a MachineDeployment from cluster-autoscaler's min/max-size annotations (min default 0, max
 * undefined = unbounded). @throws Error naming the annotation for a value that is not a non-negative integer.
 */
export function sizeBounds(md: MachineDeployment): { min: number; max: number | undefined } {
  const parse = (k: string): number | undefined => {
    const v = md.metadata.annotations?.[k];
    if (v === undefined) return undefined;
    if (!/^\d+$/.test(v.trim())) throw new Error(`annotation ${k} "${v}" is not a non-negative integer`);
    return Number(v);
  };
  return { min: parse(AnnotationMinSize) ?? 0, max: parse(AnnotationMaxSize) };
}

/** The per-MachineDeployment scaler; see the module comment. */
export class DeploymentScaler {
  private readonly waiters = new Map<string, Waiter>();
  private lock: Promise<unknown> = Promise.resolve();
  private loop: Promise<void> | undefined;
  private stopped = false;
  /** Replica updates written (diagnostics and the benchmark figure). */
  updates = 0;

  constructor(private readonly o: DeploymentScalerOptions) {}

  /** NodeClaims admitted and not yet bound to a Machine (they count in `waiting`). */
  get waitingAdmitted(): number {
    let n = 0;
    for (const w of this.waiters.values()) if (w.admitted && !w.bound) n++;
    return n;
  }

  /** Stops the loop; waiting NodeClaims are rejected (transient: the lifecycle controller retries). */
  stop(): void {
    this.stopped = true;
    for (const w of this.waiters.values()) w.reject(new Error('clusterapi provider stopped'));
    this.waiters.clear();
  }

  /**
   * Resolves with the Machine bound to NodeClaim `claim` once it has a provider ID: an already bound one, or a new
   * unclaimed Machine after the replicas were raised.
   * @throws InsufficientCapacityError when the deployment is at its max size.
   * @throws CreateError `MachineNotReady` when no Machine with a provider ID was bound within `timeoutSeconds`.
   */
  machineFor(claim: string, timeoutSeconds: number): Promise<Machine> {
    const prev = this.waiters.get(claim);
    return new Promise<Machine>((resolve, reject) => {
      const w: Waiter = {
        claim,
        admitted: prev?.admitted ?? false,
        ...(prev?.bound ? { bound: true } : {}),
        deadline: this.o.clock.now() + timeoutSeconds * 1000,
        resolve,
        reject,
      };
      if (prev) {
        // A retried create: the new call takes over (the old promise settles with the same Machine).
        const r0 = prev.resolve;
        const j0 = prev.reject;
        w.resolve = (m) => {
          r0(m);
          resolve(m);
        };
        w.reject = (e) => {
          j0(e);
          reject(e);
        };
      }
      this.waiters.set(claim, w);
      this.kick();
    });
  }

  private kick(): void {
    if (this.loop || this.stopped) return;
    this.loop = (async () => {
      try {
        // The batch window: let the other creates of this burst queue up (one pass, one replica update).
        await this.o.clock.sleep((this.o.batchSeconds ?? 0.05) * 1000);
        while (this.waiters.size > 0 && !this.stopped) {
          try {
            await this.locked(() => this.pass());
          } catch (err) {
            this.o.onError?.(err);
          }
          if (this.waiters.size === 0) break;
          await this.o.clock.sleep((this.o.pollSeconds ?? 0.2) * 1000);
        }
      } finally {
        this.loop = undefined;
        if (this.waiters.size > 0 && !this.stopped) this.kick();
      }
    })();
  }

  /** Runs `fn` under the deployment's lock. */
  locked<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.lock.then(fn, fn);
    this.lock = run.catch(() => {});
    return run;
  }

  private async machines(): Promise<Machine[]> {
    const list = await this.o.client.list('Machine', {
      namespace: this.o.namespace,
      labelSelector: { [LabelDeploymentName]: this.o.name },
    });
    return (list.items as Machine[]).sort(
      (a, b) =>
        String(a.metadata.creationTimestamp ?? '').localeCompare(
          String(b.metadata.creationTimestamp ?? ''),
        ) || String(a.metadata.name).localeCompare(String(b.metadata.name)),
    );
  }

  private async pass(): Promise<void> {
    const { client, namespace, name } = this.o;
    const md = (await client.tryGet('MachineDeployment', name, namespace)) as MachineDeployment | undefined;
    if (!md || md.metadata.deletionTimestamp) {
      for (const w of this.waiters.values())
        w.reject(
          new CreateError(`MachineDeployment ${namespace}/${name} is gone`, 'MachineDeploymentNotFound'),
        );
      this.waiters.clear();
      return;
    }
    const refused: Array<{ w: Waiter; err: MachineFailedError }> = [];
    try {
      await this.reconcile(md, refused);
    } finally {
      // Refusals settle after the replica write (or its failure), so a caller that goes on to the next offering
      // finds this deployment already scaled back.
      for (const { w, err } of refused) w.reject(err);
    }
  }

  /** One pass on MachineDeployment `md`: failed Machines (their waiters go to `refused`), binding, replicas, deadlines. */
  private async reconcile(
    md: MachineDeployment,
    refused: Array<{ w: Waiter; err: MachineFailedError }>,
  ): Promise<void> {
    const { client, namespace, name } = this.o;
    const bounds = sizeBounds(md);
    let live = (await this.machines()).filter((m) => !isMachineGoing(m));
    // Machines the infrastructure failed to make: the NodeClaim bound to one is refused (next offering), the
    // Machine marked for deletion so the replicas drop below it. Failed Machines of launched NodeClaims are left to
    // MachineHealthChecks.
    const at = new Date(this.o.clock.now()).toISOString();
    const marked = new Set<string>();
    for (const m of live) {
      const failure = machineFailure(m);
      const claim = m.metadata.labels?.[LabelMachineNodeClaim];
      if (!failure || (claim && !this.waiters.has(claim))) continue;
      await client.patch(
        'Machine',
        m.metadata.name!,
        namespace,
        { metadata: { annotations: { [AnnotationDeleteMachine]: '', [AnnotationMachineTerminating]: at } } },
        { type: 'merge' },
      );
      marked.add(m.metadata.name ?? '');
      const w = claim ? this.waiters.get(claim) : undefined;
      if (w) {
        this.waiters.delete(w.claim);
        refused.push({
          w,
          err: new MachineFailedError(
            `Machine ${namespace}/${m.metadata.name} of MachineDeployment ${name} failed: ${failure}`,
            failure,
          ),
        });
      }
    }
    live = live.filter((m) => !marked.has(m.metadata.name ?? ''));
    const boundTo = new Map<string, Machine>();
    for (const m of live) {
      const c = m.metadata.labels?.[LabelMachineNodeClaim];
      if (c) boundTo.set(c, m);
    }
    const unbound = live.filter((m) => !m.metadata.labels?.[LabelMachineNodeClaim]);
    let bound = boundTo.size;

    // Waiters already bound (a retried create, or a Machine bound in an earlier pass).
    for (const w of [...this.waiters.values()]) {
      const m = boundTo.get(w.claim);
      if (!m) continue;
      w.admitted = true;
      w.bound = true;
      if (m.spec.providerID) {
        this.waiters.delete(w.claim);
        w.resolve(m);
      }
    }
    const waitingUnbound = (): Waiter[] =>
      [...this.waiters.values()].filter((w) => w.admitted && !boundTo.has(w.claim));

    // Admission (max-size): each new NodeClaim must fit with everything already counted.
    let waiting = waitingUnbound().length;
    for (const w of [...this.waiters.values()]) {
      if (w.admitted) continue;
      const demand = bound + Math.max(unbound.length, waiting + 1);
      if (bounds.max !== undefined && demand > bounds.max) {
        this.waiters.delete(w.claim);
        w.reject(
          new InsufficientCapacityError(
            `MachineDeployment ${namespace}/${name} is at its max size ${bounds.max} (${AnnotationMaxSize})`,
          ),
        );
        continue;
      }
      w.admitted = true;
      waiting++;
    }

    // Bind unclaimed Machines to waiting NodeClaims, oldest Machine first.
    for (const w of waitingUnbound()) {
      const m = unbound.shift();
      if (!m) break;
      const labels = { ...(m.metadata.labels ?? {}), [LabelMachineNodeClaim]: w.claim };
      try {
        const updated = (await client.update({ ...m, metadata: { ...m.metadata, labels } })) as Machine;
        boundTo.set(w.claim, updated);
        w.bound = true;
        bound++;
        if (updated.spec.providerID) {
          this.waiters.delete(w.claim);
          w.resolve(updated);
        }
      } catch (err) {
        if (isNotFound(err)) continue;
        if (!isConflict(err)) throw err;
        // Changed under us (its providerID was set, or it is going): next pass.
      }
    }

    if (unbound.length === 0) await this.refusePreflightBlocked(waitingUnbound(), refused);

    // Replicas, recomputed.
    await this.writeReplicas(md, bounds, bound, unbound.length, waitingUnbound().length);

    // Deadlines.
    const now = this.o.clock.now();
    for (const w of [...this.waiters.values()]) {
      if (now < w.deadline) continue;
      this.waiters.delete(w.claim);
      w.reject(
        new CreateError(
          `no Machine of MachineDeployment ${namespace}/${name} with a provider ID was bound to NodeClaim "${w.claim}" in time`,
          'MachineNotReady',
        ),
      );
    }
  }

  /**
   * MachineSet preflight checks (e.g. a control-plane upgrade) block the Machines the `stuck` NodeClaims need: they
   * are refused now with a {@link MachineFailedError} reason `PreflightCheckFailed` (the provider tries the next
   * offering, or the launch fails with an Event) and leave the waiters, so the replicas written next drop back,
   * instead of waiting out the machine timeout with the increment in place (issue 29).
   */
  private async refusePreflightBlocked(
    stuck: readonly Waiter[],
    refused: Array<{ w: Waiter; err: MachineFailedError }>,
  ): Promise<void> {
    if (stuck.length === 0) return;
    const { client, namespace, name } = this.o;
    const sets = await client.list('MachineSet', {
      namespace,
      labelSelector: { [LabelDeploymentName]: name },
    });
    const why = preflightBlocked(sets.items as MachineSet[]);
    if (!why) return;
    for (const w of stuck) {
      this.waiters.delete(w.claim);
      refused.push({
        w,
        err: new MachineFailedError(
          `MachineDeployment ${namespace}/${name} cannot make Machines now (${why}); reason PreflightCheckFailed`,
          `PreflightCheckFailed: ${why}`,
        ),
      });
    }
  }

  /**
   * Writes `clamp(bound + max(unbound, waiting))` when it differs; returns the target. Caller holds the lock. A 409
   * (the MachineDeployment changed since `md` was read, e.g. its status) re-reads it and writes again, up to 5 times
   * (as client-go's `retry.RetryOnConflict`); the bounds are those of `md`.
   * @throws the last conflict, or any other API error.
   */
  private async writeReplicas(
    md: MachineDeployment,
    bounds: { min: number; max: number | undefined },
    bound: number,
    unbound: number,
    waiting: number,
  ): Promise<number> {
    let target = Math.max(bounds.min, bound + Math.max(unbound, waiting));
    if (bounds.max !== undefined) target = Math.min(bounds.max, Math.max(target, bound + unbound));
    let cur = md;
    for (let attempt = 1; ; attempt++) {
      const current = cur.spec.replicas ?? 0;
      if (target === current) return target;
      try {
        await this.o.client.update({ ...cur, spec: { ...cur.spec, replicas: target } });
        this.updates++;
        this.o.onReplicasUpdate?.(current, target);
        return target;
      } catch (err) {
        if (!isConflict(err) || attempt >= 5) throw err;
        const fresh = (await this.o.client.tryGet('MachineDeployment', this.o.name, this.o.namespace)) as
          | MachineDeployment
          | undefined;
        if (!fresh || fresh.metadata.deletionTimestamp) throw err;
        cur = fresh;
      }
    }
  }

  /**
   * Removes unclaimed Machines nobody waits for (a NodeClaim deleted before its Machine came, a restart that
   * changed the plan, replicas set before capenter managed the deployment): those created more than `graceSeconds`
   * ago, oldest first, down to min-size, each marked `cluster.x-k8s.io/delete-machine` before the replicas are
   * lowered (so the MachineSet removes exactly them). Returns how many were removed. No-op while NodeClaims wait.
   */
  async trimUnclaimed(graceSeconds: number): Promise<number> {
    if (this.waiters.size > 0) return 0;
    return this.locked(async () => {
      const { client, namespace, name } = this.o;
      const md = (await client.tryGet('MachineDeployment', name, namespace)) as MachineDeployment | undefined;
      if (!md || md.metadata.deletionTimestamp || this.waiters.size > 0) return 0;
      const bounds = sizeBounds(md);
      const live = (await this.machines()).filter((m) => !isMachineGoing(m));
      const bound = live.filter((m) => m.metadata.labels?.[LabelMachineNodeClaim]).length;
      const now = this.o.clock.now();
      const stale = live.filter(
        (m) =>
          !m.metadata.labels?.[LabelMachineNodeClaim] &&
          now - (Date.parse(String(m.metadata.creationTimestamp ?? '')) || now) >= graceSeconds * 1000,
      );
      const removable = Math.min(stale.length, Math.max(0, live.length - Math.max(bounds.min, bound)));
      if (removable === 0) return 0;
      const victims = stale.slice(0, removable);
      const at = new Date(now).toISOString();
      for (const v of victims)
        await client.patch(
          'Machine',
          v.metadata.name!,
          namespace,
          {
            metadata: { annotations: { [AnnotationDeleteMachine]: '', [AnnotationMachineTerminating]: at } },
          },
          { type: 'merge' },
        );
      try {
        await this.writeReplicas(md, bounds, bound, live.length - bound - removable, 0);
      } catch (err) {
        for (const v of victims) await this.unmark(v.metadata.name!);
        throw err;
      }
      return removable;
    });
  }

  /** Rollback of a delete mark: removes the delete-machine and terminating annotations of Machine `name` (best effort). */
  private async unmark(name: string): Promise<void> {
    await this.o.client
      .patch(
        'Machine',
        name,
        this.o.namespace,
        {
          metadata: {
            annotations: { [AnnotationDeleteMachine]: null, [AnnotationMachineTerminating]: null },
          },
        },
        { type: 'merge' },
      )
      .catch(() => {});
  }

  /**
   * Deletes Machine `machine` of this deployment: marks it `cluster.x-k8s.io/delete-machine` (so the MachineSet
   * removes exactly it), then lowers the replicas to the recomputed target. When min-size keeps the replicas,
   * the Machine object is deleted instead (the MachineSet replaces it with an unclaimed spare). When the replica
   * update fails the mark is removed again (rollback) and the error propagates.
   */
  async deleteMachine(machine: Machine): Promise<void> {
    await this.locked(async () => {
      const { client, namespace, name } = this.o;
      const now = new Date(this.o.clock.now()).toISOString();
      await client.patch(
        'Machine',
        machine.metadata.name!,
        namespace,
        { metadata: { annotations: { [AnnotationDeleteMachine]: '', [AnnotationMachineTerminating]: now } } },
        { type: 'merge' },
      );
      try {
        const md = (await client.tryGet('MachineDeployment', name, namespace)) as
          | MachineDeployment
          | undefined;
        if (!md) {
          await client.tryDelete('Machine', machine.metadata.name!, namespace);
          return;
        }
        const bounds = sizeBounds(md);
        const live = (await this.machines()).filter((m) => !isMachineGoing(m));
        const bound = live.filter((m) => m.metadata.labels?.[LabelMachineNodeClaim]).length;
        const unbound = live.length - bound;
        const waiting = [...this.waiters.values()].filter(
          (w) => w.admitted && !live.some((m) => m.metadata.labels?.[LabelMachineNodeClaim] === w.claim),
        ).length;
        const target = await this.writeReplicas(md, bounds, bound, unbound, waiting);
        if (target >= (md.spec.replicas ?? 0))
          await client.tryDelete('Machine', machine.metadata.name!, namespace);
      } catch (err) {
        await this.unmark(machine.metadata.name!);
        throw err;
      }
    });
  }
}
