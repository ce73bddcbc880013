/**
 * The dashboard hub on an embedded API server: a viewer gets the snapshot on connect, then only the rows that
 * changed (a new pending pod), the provisioner's unschedulable reason on that row, a decision entry per pass, and
 * nothing after it unsubscribes or the hub closes; the credential probe's text for a refused token.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProvisioningResult } from '../controllers/provisioning/provisioner.ts';
import { pendingPod } from '../controllers/provisioning/testing.ts';
import { type SimulatedCluster, startSimulatedCluster } from '../embedded/cluster.ts';
import { FakeClock } from '../kube/clock.ts';
import { KubeApiError } from '../kube/errors.ts';
import { SharedInformers } from '../kube/informer.ts';
import { Cluster } from '../state/cluster.ts';
import { eventually } from '../testing/eventually.ts';
import { DashboardHub, type HubMessage, probeError } from './hub.ts';

describe('DashboardHub', () => {
  let sim: SimulatedCluster;
  let informers: SharedInformers;
  let cluster: Cluster;
  const clock = new FakeClock(Date.parse('2026-12-03T08:00:00Z'));

  beforeAll(async () => {
    sim = await startSimulatedCluster({
      clock,
      components: { scheduler: false, kubelet: false, podGC: false, workloads: false },
    });
    informers = new SharedInformers(sim.client, { clock });
    cluster = new Cluster({
      client: sim.client,
      informers,
      clock,
      nodeClassKinds: [{ group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass' }],
    });
    informers.start();
    await informers.waitForSync(10_000);
  });
  afterAll(async () => {
    cluster.close();
    await informers.stop();
    await sim.stop();
  });

  it('sends the snapshot, then row patches and decisions, and nothing once unsubscribed or closed', async () => {
    const provisioner = { passListeners: new Set<(r: ProvisioningResult) => void>() };
    const hub = new DashboardHub({ cluster, client: sim.client, clock, provisioner }, { throttleMs: 60_000 });
    const got: HubMessage[] = [];
    const off = hub.connect((m) => got.push(m));
    expect(got.map((m) => m.event)).toEqual(['snapshot']);
    const snap = got[0] as Extract<HubMessage, { event: 'snapshot' }>;
    expect(snap.data.view.pendingPods).toEqual([]);
    expect(snap.data.view.totals).toMatchObject({ nodes: 0, pendingPods: 0, costUSDPerHour: 0 });
    expect(snap.data.history).toHaveLength(1);

    const pod = pendingPod('web', { cpu: '500m', memory: '1Gi' });
    await sim.client.create(pod);
    await eventually(() => cluster.getPod('default/web'), 'state sees the pod');
    hub.flush(); // the throttle's flush, now (the throttle is a minute here)
    const patch = got.at(-1) as Extract<HubMessage, { event: 'patch' }>;
    expect(patch.event).toBe('patch');
    expect(patch.data.pendingPods).toEqual({
      upsert: [{ pod: 'default/web', reason: 'pending' }],
      remove: [],
    });
    expect(patch.data.nodes).toBeUndefined(); // unchanged lists are not sent
    expect(patch.data.totals).toMatchObject({ pendingPods: 1, nodes: 0 });

    // A provisioning pass leaving the pod unschedulable: one decision, then its reason on the pod's row.
    const stored = cluster.getPod('default/web')!;
    for (const l of provisioner.passListeners)
      l({
        synced: true,
        created: [],
        skipped: [],
        skippedNodePools: [],
        result: {
          placements: [],
          plans: [],
          unschedulable: [
            { pod: stored, code: 'NoCompatibleInstanceType', message: 'no instance type fits' },
          ],
        },
      } as unknown as ProvisioningResult);
    const decision = got.find((m) => m.event === 'decision') as Extract<HubMessage, { event: 'decision' }>;
    expect(decision.data).toMatchObject({
      kind: 'unschedulable',
      summary: '1 pod(s) could not be scheduled',
      details: ['default/web: NoCompatibleInstanceType: no instance type fits'],
    });
    hub.flush();
    const reasonPatch = got.at(-1) as Extract<HubMessage, { event: 'patch' }>;
    expect(reasonPatch.data.pendingPods?.upsert).toEqual([
      { pod: 'default/web', reason: 'NoCompatibleInstanceType: no instance type fits' },
    ]);

    off();
    const before = got.length;
    await sim.client.delete('Pod', 'web', 'default');
    await eventually(() => !cluster.getPod('default/web'), 'state drops the pod');
    hub.flush();
    expect(got).toHaveLength(before);
    expect(hub.view().pendingPods).toEqual([]);
    hub.close();
    hub.notify(); // no-op once closed
    expect(got).toHaveLength(before);
  });

  it('names the fix when the API server refuses the credentials', () => {
    const refused = new KubeApiError(
      401,
      'Unauthorized',
      'Unauthorized',
      { code: 401 } as never,
      'GET /api/v1/nodes',
    );
    expect(probeError(refused)).toBe(
      "the API server refused the controller's credentials (401 Unauthorized): fix the token or client certificate of the kubeconfig the controller runs with",
    );
    expect(probeError(new Error('connect ECONNREFUSED 127.0.0.1:6443'))).toBe(
      'cannot read the cluster: connect ECONNREFUSED 127.0.0.1:6443',
    );
  });
});
