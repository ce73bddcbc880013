/**
 * API conformance: leader election on a coordination.k8s.io/v1 Lease with two electors — only one
 * leads; the other takes over after release, after expiry, and a leader whose lease is taken steps
 * down — through src/kube only. Short durations (2 s lease) keep it fast.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeaderElector, RealClock, updateWithRetry } from '../../src/kube/index.ts';
import { eventually, startCluster, type TestCluster } from './harness.ts';

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
}

function candidate(lockName: string, identity: string, releaseOnCancel = true): Candidate {
  const log: string[] = [];
  const elector = new LeaderElector({
    client: c.newClient(),
    clock,
    lockName,
    lockNamespace: c.namespace,
    identity,
    leaseDurationSeconds: 2,
    renewDeadlineSeconds: 1.5,
    retryPeriodSeconds: 0.2,
    releaseOnCancel,
    callbacks: {
      onStartedLeading: () => log.push('started'),
      onStoppedLeading: () => log.push('stopped'),
      onNewLeader: (id) => log.push(`leader:${id}`),
    },
  });
  return { elector, log };
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
    const a = candidate('lock-release', 'cand-a');
    const b = candidate('lock-release', 'cand-b');
    a.elector.start();
    b.elector.start();
    const leader = await eventually(
      () => (a.elector.isLeader() ? a : b.elector.isLeader() ? b : undefined),
      'a leader',
    );
    const follower = leader === a ? b : a;
    // stays stable over several renew periods
    await new Promise((r) => setTimeout(r, 1000));
    expect(leader.elector.isLeader()).toBe(true);
    expect(follower.elector.isLeader()).toBe(false);
    expect(follower.log).not.toContain('started');
    const lease = await c.client.get('Lease', 'lock-release', c.namespace);
    const leaderId = leader === a ? 'cand-a' : 'cand-b';
    expect(lease.spec?.holderIdentity).toBe(leaderId);
    expect(lease.spec?.leaseDurationSeconds).toBe(2);
    expect(follower.elector.getLeader()).toBe(leaderId);
    const released = Date.now();
    await leader.elector.stop();
    expect(leader.log.slice(-2)).toEqual(['started', 'stopped']);
    await eventually(() => follower.elector.isLeader(), 'follower takes over after release');
    // a released lease is taken on the next retry, well before the 2 s lease duration
    expect(Date.now() - released).toBeLessThan(1500);
    const after = await c.client.get('Lease', 'lock-release', c.namespace);
    expect(after.spec?.holderIdentity).toBe(leader === a ? 'cand-b' : 'cand-a');
    expect(after.spec?.leaseTransitions).toBe(1);
    await follower.elector.stop();
  });

  it('a crashed leader (no release) is replaced after the lease expires', async () => {
    const a = candidate('lock-expire', 'cand-a', false);
    a.elector.start();
    await eventually(() => a.elector.isLeader(), 'a leads');
    const b = candidate('lock-expire', 'cand-b');
    b.elector.start();
    await new Promise((r) => setTimeout(r, 500));
    expect(b.elector.isLeader()).toBe(false);
    const crashed = Date.now();
    await a.elector.stop(); // stops renewing, keeps the lease
    expect((await c.client.get('Lease', 'lock-expire', c.namespace)).spec?.holderIdentity).toBe('cand-a');
    await eventually(() => b.elector.isLeader(), 'b takes over after expiry', 10_000);
    expect(Date.now() - crashed).toBeGreaterThanOrEqual(1000);
    await b.elector.stop();
  });

  it('a leader that cannot renew (lease taken) steps down within the renew deadline', async () => {
    const a = candidate('lock-steal', 'cand-a');
    a.elector.start();
    await eventually(() => a.elector.isLeader(), 'a leads');
    await updateWithRetry(c.client, { kind: 'Lease', name: 'lock-steal', namespace: c.namespace }, (l) => {
      l.spec = { ...l.spec, holderIdentity: 'intruder', leaseDurationSeconds: 3600 };
    });
    await eventually(() => a.log.includes('stopped'), 'a steps down', 10_000);
    expect(a.elector.isLeader()).toBe(false);
    expect(a.log).toContain('leader:intruder');
    await a.elector.stop();
  });
});
