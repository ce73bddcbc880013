/**
 * E2E provisioning behaviour of the real operator in the simulated cluster: scaling a Deployment, NodePool limits
 * under concurrent batches, fallback when the cheapest offering is unavailable (ICE), and `/metrics` + probes.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { parseResources } from '../../src/apis/quantity.ts';
import type { EmbeddedCloudProvider } from '../../src/cloudprovider/kwok/embedded.ts';
import { priceOf } from '../../src/embedded/summary.ts';
import { whenObjects } from '../../src/testing/watch.ts';
import {
  allRunning,
  deploymentYaml,
  type E2E,
  eventually,
  instanceTypeOf,
  kwokNodeClassYaml,
  livePods,
  nodeClaims,
  nodePoolYaml,
  scale,
  startE2E,
} from './harness.ts';

let env: E2E | undefined;
afterEach(async () => {
  await env?.stop();
  env = undefined;
});

describe('operator e2e: provisioning', () => {
  it('scales a Deployment 10 → 200: pods that fit need no NodeClaim, the rest get nodes, all run', async () => {
    env = await startE2E();
    const { client } = env;
    await env.apply(
      `${kwokNodeClassYaml()}---\n${nodePoolYaml('default')}---\n${deploymentYaml('web', 10, '100m', '128Mi')}`,
    );
    await eventually(() => allRunning(client, 10), '10 pods running');
    const first = await nodeClaims(client);
    expect(first.length).toBe(1);
    // the one node has room for a few more 100m pods: scaling to 12 must not create a NodeClaim
    const alloc = parseResources(first[0]!.status?.allocatable);
    const room = Math.floor(((alloc.cpu ?? 0) - 10 * 100) / 100);
    expect(room).toBeGreaterThanOrEqual(2);
    const before = new Set((await livePods(client)).map((p) => p.metadata.uid));
    await scale(client, 'web', 12);
    await eventually(() => allRunning(client, 12), '12 pods running');
    // both new pods' Scheduled Events are there and neither was ever unschedulable (no FailedScheduling before
    // its Scheduled), so the provisioner had nothing to act on and the one NodeClaim stays alone
    const pods12 = (await livePods(client)).filter((p) => !before.has(p.metadata.uid));
    expect(pods12).toHaveLength(2);
    const events = await eventually(async () => {
      const ev = (await client.list('Event')).items;
      const scheduled = new Set(ev.filter((e) => e.reason === 'Scheduled').map((e) => e.involvedObject?.uid));
      return pods12.every((p) => scheduled.has(p.metadata.uid)) && ev;
    }, 'Scheduled events of the 2 new pods');
    const uids = new Set(pods12.map((p) => p.metadata.uid));
    expect(events.filter((e) => e.reason === 'FailedScheduling' && uids.has(e.involvedObject?.uid))).toEqual(
      [],
    );
    expect((await nodeClaims(client)).length).toBe(1);

    await scale(client, 'web', 200);
    await eventually(() => allRunning(client, 200), '200 pods running', 60_000, 200);
    const after = await nodeClaims(client);
    expect(after.length).toBeGreaterThan(1);
    // every NodeClaim has its Node and carries pods; no empty node was launched
    const pods = await livePods(client);
    const nodes = (await client.list('Node')).items;
    expect(nodes.length).toBe(after.length);
    for (const nc of after) {
      const nodeName = nc.status?.nodeName;
      expect(nodeName).toBeDefined();
      expect(pods.filter((p) => p.spec?.nodeName === nodeName).length).toBeGreaterThan(0);
    }
    // capacity actually requested fits what was launched
    const cpu = after.reduce((s, nc) => s + (parseResources(nc.status?.allocatable).cpu ?? 0), 0);
    expect(cpu).toBeGreaterThanOrEqual(200 * 100);
  }, 90_000);

  it('NodePool limits hold under concurrent batches', async () => {
    env = await startE2E({ operator: { batchIdleSeconds: 0.1, batchMaxSeconds: 0.5 } });
    const { client } = env;
    await env.apply(`${kwokNodeClassYaml()}---\n${nodePoolYaml('capped', { limits: '{cpu: "8"}' })}`);
    // three waves created back to back so that several batches are in flight: each wave's pods are pending (bound or
    // marked unschedulable by the kube-scheduler, which triggers the provisioner) before the next wave is created
    for (let i = 0; i < 3; i++) {
      await env.apply(deploymentYaml(`wave-${i}`, 6, '900m', '512Mi'));
      await whenObjects(
        client,
        'Pod',
        (ps) =>
          ps.length === 6 &&
          ps.every((p) => p.spec?.nodeName || p.status?.conditions?.some((c) => c.type === 'PodScheduled')),
        { namespace: 'default', labelSelector: { app: `wave-${i}` } },
      );
    }
    // settled: every pod Running or refused by the provisioner (a karpenter FailedScheduling Event)
    await eventually(async () => {
      const [pods, events] = await Promise.all([livePods(client), client.list('Event')]);
      const refused = new Set(
        events.items
          .filter((e) => e.reason === 'FailedScheduling' && e.source?.component === 'karpenter')
          .map((e) => e.involvedObject?.uid),
      );
      return (
        pods.length === 18 &&
        pods.some((p) => p.status?.phase === 'Running') &&
        pods.every((p) => p.status?.phase === 'Running' || refused.has(p.metadata.uid))
      );
    }, 'every pod running or refused by the provisioner');
    const ncs = await nodeClaims(client);
    const cpu = ncs.reduce((s, nc) => s + (parseResources(nc.status?.capacity).cpu ?? 0), 0);
    expect(ncs.length).toBeGreaterThan(0);
    expect(cpu).toBeLessThanOrEqual(8000);
    const pending = (await livePods(client)).filter((p) => p.status?.phase !== 'Running');
    expect(pending.length).toBeGreaterThan(0); // 18 × 0.9 cpu cannot fit in 8 cpu
  }, 60_000);

  it('an unavailable offering (ICE) falls back to the next cheapest', async () => {
    env = await startE2E({ operator: false });
    const { client } = env;
    const op = await env.startOperator();
    const provider = op.cloudProvider as EmbeddedCloudProvider;
    // first learn the cheapest choice for a 1.5 cpu pod, in a throwaway namespace-free run
    await env.apply(
      `${kwokNodeClassYaml()}---\n${nodePoolYaml('default')}---\n${deploymentYaml('probe', 1, '1500m', '1Gi')}`,
    );
    await eventually(() => allRunning(client, 1), 'probe running');
    const cheapest = (await nodeClaims(client))[0]!;
    const type = instanceTypeOf(cheapest)!;
    const zone = cheapest.metadata.labels?.['topology.kubernetes.io/zone'];
    expect(type).toBeTruthy();
    for (const z of ['us-east-1a', 'us-east-1b', 'us-east-1c', 'us-east-1d', 'us-east-1e', 'us-east-1f'])
      provider.markUnavailable(type, z, 'on-demand', 'test ICE');
    await env.apply(deploymentYaml('after-ice', 1, '1500m', '1Gi'));
    await eventually(() => allRunning(client, 2), 'second pod running');
    const second = (await nodeClaims(client)).find((n) => n.metadata.name !== cheapest.metadata.name)!;
    expect(second).toBeDefined();
    expect(instanceTypeOf(second)).not.toBe(type);
    // the fallback is the cheapest remaining option: the ICE'd type is no longer offered, the launched one is the
    // first (cheapest) of the NodeClaim's options, and it costs at least as much as the unavailable one
    const options =
      second.spec.requirements.find((r) => r.key === 'node.kubernetes.io/instance-type')?.values ?? [];
    expect(options).not.toContain(type);
    expect(options[0]).toBe(instanceTypeOf(second));
    const z2 = second.metadata.labels?.['topology.kubernetes.io/zone'] ?? '';
    expect(priceOf('us-east-1', instanceTypeOf(second)!, z2, 'on-demand')).toBeGreaterThanOrEqual(
      priceOf('us-east-1', type, zone ?? '', 'on-demand'),
    );
    expect(second.status?.conditions?.find((c) => c.type === 'Launched')?.status).toBe('True');
  }, 60_000);

  it('serves /metrics with upstream metric names, /healthz and /readyz', async () => {
    env = await startE2E();
    const { client } = env;
    const op = env.operators[0]!;
    await env.apply(
      `${kwokNodeClassYaml()}---\n${nodePoolYaml('default', { limits: '{cpu: "100"}' })}---\n${deploymentYaml('m', 3, '250m', '256Mi')}`,
    );
    await eventually(() => allRunning(client, 3), 'pods running');
    const base = `http://127.0.0.1:${op.metricsPort}`;
    const health = `http://127.0.0.1:${op.healthProbePort}`;
    expect((await fetch(`${health}/healthz`)).status).toBe(200);
    expect((await fetch(`${health}/readyz`)).status).toBe(200);
    const names = [
      'karpenter_nodes_allocatable{',
      'karpenter_nodes_total_pod_requests{',
      'karpenter_nodes_system_overhead{',
      'karpenter_pods_state{',
      'karpenter_nodepools_usage{',
      'karpenter_nodepools_limit{',
      'karpenter_nodeclaims_created_total{',
      'karpenter_nodeclaims_launched_total{',
      'karpenter_cloudprovider_duration_seconds_bucket{',
      'karpenter_scheduler_scheduling_duration_seconds_bucket{',
      'karpenter_cluster_state_synced',
      'operator_nodeclaim_status_condition_count{',
    ];
    const limit = /karpenter_nodepools_limit\{nodepool="default",resource_type="cpu"\} 100/;
    const podState =
      /karpenter_pods_state\{name="m-[^"]+",namespace="default",owner="\/apis\/apps\/v1\/namespaces\/default\/replicasets\/m-[^"]+",node="default-[^"]+",nodepool="default"/;
    // the metrics controllers publish on their own cadence (pod state with its node once a pass saw the binding):
    // wait until each family and value has appeared
    const missing = (t: string): string[] => [
      ...names.filter((n) => !t.includes(n)),
      ...[limit, podState].filter((r) => !r.test(t)).map(String),
    ];
    let last = '';
    const text = await eventually(async () => {
      last = await (await fetch(`${base}/metrics`)).text();
      return missing(last).length === 0 ? last : undefined;
    }, 'metrics populated').catch((err: Error) => {
      throw new Error(`${err.message}; missing: ${missing(last).join(', ')}`);
    });
    for (const name of names) expect(text, name).toContain(name);
    expect(text).toMatch(limit);
    expect(text).toMatch(podState);
    expect((await fetch(`${base}/nope`)).status).toBe(404);
  }, 60_000);
});
