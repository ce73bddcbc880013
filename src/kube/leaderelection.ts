/**
 * Leader election on a coordination.k8s.io/v1 Lease, after client-go `tools/leaderelection`:
 * candidates try to acquire every `retryPeriod` (jittered ×1.2); a holder whose record has not changed
 * for `leaseDuration` (measured on OUR clock since we last saw the record change, so clock skew between
 * candidates does not matter) may be taken over; the leader renews every `retryPeriod` and gives up when
 * it cannot renew within `renewDeadline`; on stop the leader releases the lease (empty holder) so another
 * candidate takes over at once. Defaults are upstream's: 15 s / 10 s / 2 s. All timing uses the Clock.
 */
import type { KubeClient } from './client.ts';
import type { Clock } from './clock.ts';
import { isAlreadyExists, isConflict, isNotFound } from './errors.ts';
import type { Lease } from './types.ts';

/** Leadership callbacks. */
export interface LeaderCallbacks {
  /** Became leader. `signal` aborts when leadership ends (lost or stopped). */
  onStartedLeading(signal: AbortSignal): void;
  /** Leadership ended (lost or released). Only called after onStartedLeading. */
  onStoppedLeading(): void;
  /** The observed leader changed (including to ourselves). */
  onNewLeader?(identity: string): void;
}

/** Options of {@link LeaderElector}. */
export interface LeaderElectionOptions {
  client: KubeClient;
  clock: Clock;
  /** Lease name (e.g. `karpenter-leader-election`). */
  lockName: string;
  /** Lease namespace. */
  lockNamespace: string;
  /** This candidate's identity (e.g. pod name + random suffix); must be unique. */
  identity: string;
  /** Seconds a non-renewed lease stays valid (default 15, integer ≥ 1). */
  leaseDurationSeconds?: number;
  /** Seconds the leader keeps retrying a renewal before giving up (default 10). */
  renewDeadlineSeconds?: number;
  /** Seconds between attempts (default 2). */
  retryPeriodSeconds?: number;
  /** Release the lease on stop (default true). */
  releaseOnCancel?: boolean;
  callbacks: LeaderCallbacks;
  /** Receives API errors of acquire/renew attempts (default: ignore). */
  onError?: (err: unknown) => void;
  /** Randomness for jitter (default Math.random). */
  random?: () => number;
}

const JITTER = 1.2;

/** RFC 3339 with microseconds (metav1.MicroTime). */
function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

/** Runs one candidate. `start()` then `stop()`; or `await run()` which resolves when it is over. */
export class LeaderElector {
  private readonly leaseDurationMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;
  private readonly random: () => number;
  private readonly abort = new AbortController();
  private leading: AbortController | undefined;
  private observedKey = '';
  private observedTime = 0;
  private observedLease: Lease | undefined;
  private leader = '';
  private running: Promise<void> | undefined;

  /** Throws when durations are inconsistent (leaseDuration > renewDeadline > 1.2 × retryPeriod, as client-go). */
  constructor(private readonly opts: LeaderElectionOptions) {
    const ld = opts.leaseDurationSeconds ?? 15;
    const rd = opts.renewDeadlineSeconds ?? 10;
    const rp = opts.retryPeriodSeconds ?? 2;
    if (!Number.isInteger(ld) || ld < 1)
      throw new Error(`leader election: leaseDurationSeconds must be an integer ≥ 1 (got ${ld})`);
    if (ld <= rd)
      throw new Error(
        `leader election: leaseDurationSeconds (${ld}) must be greater than renewDeadlineSeconds (${rd})`,
      );
    if (rd <= JITTER * rp)
      throw new Error(
        `leader election: renewDeadlineSeconds (${rd}) must be greater than 1.2 × retryPeriodSeconds (${rp})`,
      );
    if (!opts.identity) throw new Error('leader election: identity must not be empty');
    this.leaseDurationMs = ld * 1000;
    this.renewDeadlineMs = rd * 1000;
    this.retryPeriodMs = rp * 1000;
    this.random = opts.random ?? Math.random;
  }

  /** True while this candidate holds the lease (as of its last successful renewal). */
  isLeader(): boolean {
    return this.leading !== undefined && !this.leading.signal.aborted;
  }

  /** Identity of the last observed leader (`''` when unknown or released). */
  getLeader(): string {
    return this.leader;
  }

  /** Starts the election loop in the background (idempotent). */
  start(): this {
    this.running ??= this.loop();
    return this;
  }

  /** Runs until leadership is lost or `stop()` is called. */
  run(): Promise<void> {
    this.start();
    return this.running as Promise<void>;
  }

  /** Stops campaigning; a leader releases the lease (if `releaseOnCancel`) and gets onStoppedLeading. */
  async stop(): Promise<void> {
    this.abort.abort();
    await this.running;
  }

  private get stopped(): boolean {
    return this.abort.signal.aborted;
  }

  private async loop(): Promise<void> {
    // acquire
    while (!this.stopped) {
      if (await this.tryAcquireOrRenew()) break;
      await this.opts.clock.sleep(this.retryPeriodMs * (1 + this.random() * JITTER), this.abort.signal);
    }
    if (this.stopped) return;
    this.leading = new AbortController();
    this.safe(() => this.opts.callbacks.onStartedLeading((this.leading as AbortController).signal));
    // renew
    for (;;) {
      const deadline = this.opts.clock.now() + this.renewDeadlineMs;
      let renewed = false;
      while (!this.stopped) {
        if (await this.tryAcquireOrRenew()) {
          renewed = true;
          break;
        }
        if (this.opts.clock.now() + this.retryPeriodMs > deadline) break;
        await this.opts.clock.sleep(this.retryPeriodMs, this.abort.signal);
      }
      if (this.stopped || !renewed) break;
      await this.opts.clock.sleep(this.retryPeriodMs, this.abort.signal);
      if (this.stopped) break;
    }
    if (this.stopped && (this.opts.releaseOnCancel ?? true)) await this.release();
    this.leading.abort();
    this.safe(() => this.opts.callbacks.onStoppedLeading());
  }

  private safe(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.opts.onError?.(err);
    }
  }

  private observe(lease: Lease, now: number): void {
    const s = lease.spec ?? {};
    const key = `${s.holderIdentity ?? ''}|${s.renewTime ?? ''}|${s.leaseTransitions ?? 0}|${s.acquireTime ?? ''}`;
    if (key !== this.observedKey) {
      this.observedKey = key;
      this.observedTime = now;
    }
    this.observedLease = lease;
    const holder = s.holderIdentity ?? '';
    if (holder !== this.leader) {
      this.leader = holder;
      if (holder) this.safe(() => this.opts.callbacks.onNewLeader?.(holder));
    }
  }

  /** One acquire/renew attempt; true when we hold the lease afterwards. */
  private async tryAcquireOrRenew(): Promise<boolean> {
    const { client, lockName, lockNamespace, identity } = this.opts;
    const now = this.opts.clock.now();
    const spec = {
      holderIdentity: identity,
      leaseDurationSeconds: this.leaseDurationMs / 1000,
      acquireTime: microTime(now),
      renewTime: microTime(now),
      leaseTransitions: 0,
    };
    try {
      const existing = await client.tryGet('Lease', lockName, lockNamespace);
      if (!existing) {
        const created = await client.create<Lease>({
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name: lockName, namespace: lockNamespace },
          spec,
        });
        this.observe(created, now);
        return true;
      }
      this.observe(existing, now);
      const cur = existing.spec ?? {};
      const holder = cur.holderIdentity ?? '';
      const curDuration = (cur.leaseDurationSeconds ?? this.leaseDurationMs / 1000) * 1000;
      if (holder !== '' && holder !== identity && this.observedTime + curDuration > now) return false;
      if (holder === identity) {
        spec.acquireTime = cur.acquireTime ?? spec.acquireTime;
        spec.leaseTransitions = cur.leaseTransitions ?? 0;
      } else {
        spec.leaseTransitions = (cur.leaseTransitions ?? 0) + 1;
      }
      const updated = await client.update<Lease>({ ...existing, spec: { ...cur, ...spec } });
      this.observe(updated, now);
      return true;
    } catch (err) {
      if (!isConflict(err) && !isAlreadyExists(err)) this.opts.onError?.(err);
      return false;
    }
  }

  private async release(): Promise<void> {
    const lease = this.observedLease;
    if (!lease || lease.spec?.holderIdentity !== this.opts.identity) return;
    const now = this.opts.clock.now();
    try {
      const updated = await this.opts.client.update<Lease>({
        ...lease,
        spec: {
          ...lease.spec,
          holderIdentity: '',
          leaseDurationSeconds: 1,
          acquireTime: microTime(now),
          renewTime: microTime(now),
        },
      });
      this.observedLease = updated;
      this.leader = '';
    } catch (err) {
      if (!isConflict(err) && !isNotFound(err)) this.opts.onError?.(err);
    }
  }
}
