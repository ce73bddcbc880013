/**
 * API conformance: leader election on a coordination.k8s.io/v1 Lease with two electors — only one
 * leads; the other takes over after release, after expiry, and a leader whose lease is taken steps
 * down — through src/kube only. Short durations (2 s lease) keep it fast.
 *
 * The electors run on the wall clock: the server is real (or the embedded one), and what is under test is how the
 * candidates time the Lease against each other through it. The test itself never sleeps: it waits on the electors'
 * callbacks and on the Lease's renewals (watched), and bounds only the durations that decide the behaviour (a
 * lease taken over only after it expired; a released one long before it would have).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeaderElector, RealClock, updateWithRetry } from '../../src/kube/index.ts';
import { whenObjects } from '../../src/testing/watch.ts';
import { startCluster, type TestCluster } from './harness.ts';

let c: TestCluster;
beforeAll(async () => {
  c = await startCluster('le');
});
afterAll(async () => {
  await c?.stop();
});

const clock = new RealClock();

interface Candidate {
  elector: LeaderElector;
  log: string[];
  /** Resolves when the callbacks have logged `entry` (`started`, `stopped`, `leader:<id>`), at once if they have. */
  logged(entry: string): Promise<void>;
}

function candidate(
  lockName: string,
  identity: string,
  o: { releaseOnCancel?: boolean; leaseDurationSeconds?: number; renewDeadlineSeconds?: number } = {},
): Candidate {
  const log: string[] = [];
  const waiters: Array<{ entry: string; resolve: () => void }> = [];
  const push = (entry: string): void => {
    log.push(entry);
    for (const w of waiters.filter((x) => x.entry === entry)) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve();
    }
  };
  const elector = new LeaderElector({
    client: c.newClient(),
    clock,
    lockName,
    lockNamespace: c.namespace,
    identity,
    leaseDurationSeconds: o.leaseDurationSeconds ?? 2,
    renewDeadlineSeconds: o.renewDeadlineSeconds ?? 1.5,
    retryPeriodSeconds: 0.2,
    releaseOnCancel: o.releaseOnCancel ?? true,
    callbacks: {
      onStartedLeading: () => push('started'),
      onStoppedLeading: () => push('stopped'),
      onNewLeader: (id) => push(`leader:${id}`),
    },
  });
  return {
    elector,
    log,
    logged: (entry) =>
      log.includes(entry) ? Promise.resolve() : new Promise((resolve) => waiters.push({ entry, resolve })),
  };
}

/** Resolves once `holder` has renewed Lease `name` `n` times after the state first seen (a watch on its renewTime). */
function renewals(name: string, holder: string, n: number): Promise<unknown> {
  const seen = new Set<string>();
  return whenObjects(
    c.client,
    'Lease',
    (leases) => {
      const spec = leases.find((l) => l.metadata.name === name)?.spec;
      if (spec?.holderIdentity === holder && spec.renewTime) seen.add(spec.renewTime);
      return seen.size > n;
    },
    { namespace: c.namespace },
  );
}

describe('leader election', () => {
  it('validates durations like client-go', () => {
    expect(
      () =>
        new LeaderElector({
          client: c.client,
          clock,
          lockName: 'x',
          lockNamespace: c.namespace,
          identity: 'a',
          leaseDurationSeconds: 10,
          renewDeadlineSeconds: 10,
          callbacks: { onStartedLeading: () => {}, onStoppedLeading: () => {} },
        }),
    ).toThrow(/leaseDurationSeconds \(10\) must be greater than renewDeadlineSeconds \(10\)/);
  });

  it('only one of two candidates leads; the other takes over right after release', async () => {
    // a 30 s lease: taking it over within 15 s of its release can only be the release, not the expiry, however
    // slow the machine
    const durations = { leaseDurationSeconds: 30, renewDeadlineSeconds: 20 };
    const a = candidate('lock-release', 'cand-a', durations);
    const b = candidate('lock-release', 'cand-b', durations);
    a.elector.start();
    b.elector.start();
    const leader = await Promise.race([a.logged('started').then(() => a), b.logged('started').then(() => b)]);
    const follower = leader === a ? b : a;
    const leaderId = leader === a ? 'cand-a' : 'cand-b';
    // stays stable over several renew periods: five renewals later (each a retry period apart, the follower
    // trying as often) the follower still follows
    await follower.logged(`leader:${leaderId}`);
    await renewals('lock-release', leaderId, 5);
    expect(leader.elector.isLeader()).toBe(true);
    expect(follower.elector.isLeader()).toBe(false);
    expect(follower.log).not.toContain('started');
    const lease = await c.client.get('Lease', 'lock-release', c.namespace);
    expect(lease.spec?.holderIdentity).toBe(leaderId);
    expect(lease.spec?.leaseDurationSeconds).toBe(30);
    expect(follower.elector.getLeader()).toBe(leaderId);
    const released = Date.now();
    await leader.elector.stop();
    expect(leader.log.slice(-2)).toEqual(['started', 'stopped']);
    await follower.logged('started');
    expect(follower.elector.isLeader()).toBe(true);
    // a released lease is taken on the next retry (0.2 s), well before the 30 s lease duration
    expect(Date.now() - released).toBeLessThan(15_000);
    const after = await c.client.get('Lease', 'lock-release', c.namespace);
    expect(after.spec?.holderIdentity).toBe(leader === a ? 'cand-b' : 'cand-a');
    expect(after.spec?.leaseTransitions).toBe(1);
    await follower.elector.stop();
  });

  it('a crashed leader (no release) is replaced after the lease expires', async () => {
    const a = candidate('lock-expire', 'cand-a', { releaseOnCancel: false });
    a.elector.start();
    await a.logged('started');
    const b = candidate('lock-expire', 'cand-b');
    b.elector.start();
    // b has seen a lead, and a has renewed three times since (b retrying as often): b does not take over
    await b.logged('leader:cand-a');
    await renewals('lock-expire', 'cand-a', 3);
    expect(b.elector.isLeader()).toBe(false);
    expect(b.log).not.toContain('started');
    const crashed = Date.now();
    await a.elector.stop(); // stops renewing, keeps the lease
    expect((await c.client.get('Lease', 'lock-expire', c.namespace)).spec?.holderIdentity).toBe('cand-a');
    await b.logged('started');
    expect(b.elector.isLeader()).toBe(true);
    // the wall clock is what is under test here: b waited for the 2 s lease (less a's last retry period) to expire
    expect(Date.now() - crashed).toBeGreaterThanOrEqual(1000);
    await b.elector.stop();
  });

  it('a leader that cannot renew (lease taken) steps down within the renew deadline', async () => {
    const a = candidate('lock-steal', 'cand-a');
    a.elector.start();
    await a.logged('started');
    await updateWithRetry(c.client, { kind: 'Lease', name: 'lock-steal', namespace: c.namespace }, (l) => {
      l.spec = { ...l.spec, holderIdentity: 'intruder', leaseDurationSeconds: 3600 };
    });
    await a.logged('stopped');
    expect(a.elector.isLeader()).toBe(false);
    expect(a.log).toContain('leader:intruder');
    await a.elector.stop();
  });
});
