/**
 * Issue 26 item 5: every metric a Grafana dashboard queries exists after a provisioning + consolidation run.
 * The dashboards are upstream's (aws/karpenter-provider-aws v1.14.1,
 * `website/content/en/v1.14/getting-started/getting-started-with-karpenter/karpenter-{capacity,performance}-dashboard.json`)
 * and capenter's own (`charts/capenter/dashboards/*.json`, read from disk so a new panel is covered without
 * editing this test). The run: three nodes provisioned for a DaemonSet, a `keep` pod and two `web` pods; `web` is
 * scaled to zero and the two emptied nodes are consolidated away, so both counters of a disruption and gauges of a
 * live node are populated when `/metrics` is scraped over HTTP. The kept node, not empty in a `WhenEmpty` pool,
 * gets upstream's `Unconsolidatable` Event once on its Node and once on its NodeClaim despite a pass every second
 * (the web nodes get it too when a pass sees them non-empty before the scale-down, which depends on the machine's speed).
 */
import { readFileSync } from 'node:fs';
import type { Registry } from 'prom-client';
import { afterAll, describe, expect, it } from 'vitest';
import type { NodeClaim } from '../../src/apis/karpenter.ts';
import type { KubeEvent } from '../../src/kube/types.ts';
import { PARITY_TABLE } from '../../src/parity/table.ts';
import {
  allRunning,
  deploymentYaml,
  type E2E,
  eventually,
  kwokNodeClassYaml,
  scale,
  startE2E,
} from './harness.ts';

/** Metric names in upstream's v1.14.1 Grafana dashboards, by dashboard file. */
const UPSTREAM_DASHBOARD_METRICS: Record<string, readonly string[]> = {
  'karpenter-capacity-dashboard.json': [
    'karpenter_nodeclaims_disrupted_total',
    'karpenter_nodepools_limit',
    'karpenter_nodepools_usage',
    'karpenter_nodes_allocatable',
    'karpenter_nodes_created_total',
    'karpenter_nodes_terminated_total',
    'karpenter_nodes_total_daemon_requests',
    'karpenter_nodes_total_pod_requests',
    'karpenter_pods_state',
    'karpenter_voluntary_disruption_decisions_total',
    'karpenter_voluntary_disruption_eligible_nodes',
  ],
  'karpenter-performance-dashboard.json': [
    'karpenter_nodes_termination_duration_seconds',
    'karpenter_pods_startup_duration_seconds',
  ],
};

/**
 * Metrics that may legitimately have no sample after a run without failures (a counter with no labelled child
 * yet exports only its `# HELP`/`# TYPE` lines, as upstream's client_golang vectors export nothing): their
 * family must still be declared.
 */
const ERROR_ONLY = new Set(['karpenter_cloudprovider_errors_total']);

/**
 * Gauges that only have a sample while work is in flight: upstream sets `karpenter_scheduler_queue_depth` per
 * running simulation and deletes it when the simulation ends (`scheduling/scheduler.go`), as capenter does; a
 * scrape after the run sees its family only.
 */
const IN_FLIGHT_ONLY = new Set(['karpenter_scheduler_queue_depth']);

/** Metric names in `charts/capenter/dashboards/<file>`, from the PromQL expressions of its panels. */
function chartDashboardMetrics(): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const file of ['capacity.json', 'performance.json']) {
    const text = readFileSync(new URL(`../../charts/capenter/dashboards/${file}`, import.meta.url), 'utf8');
    out[`charts/capenter/dashboards/${file}`] = [
      ...new Set(text.match(/\b(karpenter|operator)_[a-z_]+/g) ?? []),
    ];
  }
  return out;
}

/** The family of a sample name (`x_bucket` → `x` when `x` is a histogram in `text`). */
function familyOf(name: string, text: string): string {
  const base = name.replace(/_(bucket|count|sum)$/, '');
  return base !== name && text.includes(`# TYPE ${base} histogram`) ? base : name;
}

/** True when `text` has at least one sample line of `name` (or of its histogram series). */
function hasSample(name: string, text: string): boolean {
  const esc = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`^${esc}(_bucket|_count|_sum)?[{ ]`, 'm').test(text);
}

/** One sample line of a Prometheus text exposition. */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The sample lines of a Prometheus text exposition (comments skipped). */
function samples(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[l[1]!] = l[2]!;
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

/** One metric of test/fixtures/upstream/metrics-v1.14.1.json. */
interface UpstreamMetric {
  name: string;
  type: string;
  labels: string[];
}

/** Upstream's v1.14.1 metrics (name, type, label names). */
const UPSTREAM_METRICS = (
  JSON.parse(readFileSync(new URL('../fixtures/upstream/metrics-v1.14.1.json', import.meta.url), 'utf8')) as {
    metrics: UpstreamMetric[];
  }
).metrics;

/**
 * Upstream labels Nodes' status metrics with its EC2NodeClass label key; the run's provider is KWOK, whose node
 * class label key takes its place (upstream `v1.NodeClassLabelKey` of each supported node class).
 */
const PROVIDER_LABEL: Record<string, string> = {
  karpenter_k8s_aws_ec2nodeclass: 'karpenter_kwok_sh_kwoknodeclass',
};

/**
 * For each metric the parity table marks `works` outside the AWS provider scope with this file as its test
 * (other rows name a test asserting the metric, test/parity.test.ts checks): problems with its `# TYPE` line
 * in `text` (upstream's type) and with its label names, read from `registry` (a labelled metric without series
 * exports no label names) and from its sample lines when it has any (`le`/`quantile` aside).
 */
function upstreamMetricProblems(text: string, registry: Registry): string[] {
  const works = new Set(
    PARITY_TABLE.filter(
      (r) =>
        r.kind === 'metric' && r.status === 'works' && !r.scope && r.test === 'test/e2e/dashboards.test.ts',
    ).flatMap((r) => r.names),
  );
  const problems: string[] = [];
  const all = samples(text);
  for (const m of UPSTREAM_METRICS.filter((u) => works.has(u.name))) {
    if (!text.includes(`# TYPE ${m.name} ${m.type}\n`))
      problems.push(`${m.name}: not exported as a ${m.type}`);
    const want = m.labels.map((l) => PROVIDER_LABEL[l] ?? l);
    const declared = (registry.getSingleMetric(m.name) as unknown as { labelNames?: string[] } | undefined)
      ?.labelNames;
    const absent = want.filter((l) => !declared?.includes(l));
    if (absent.length > 0) problems.push(`${m.name}: labels ${absent.join(', ')} not declared`);
    const series = all.find((x) => x.name === m.name || familyOf(x.name, text) === m.name);
    const unlabelled = series ? want.filter((l) => !(l in series.labels)) : [];
    if (unlabelled.length > 0) problems.push(`${m.name}: a sample without ${unlabelled.join(', ')}`);
  }
  expect(works.size).toBeGreaterThanOrEqual(80);
  return problems;
}

let env: E2E | undefined;
afterAll(async () => {
  await env?.stop();
});

describe('dashboard metrics', () => {
  it('exports every metric of upstream and capenter dashboards after provisioning and consolidation', async () => {
    env = await startE2E({ operator: false });
    const { client } = env;
    const op = await env.startOperator(
      { leaderElect: false, metricsPeriodSeconds: 1 },
      {
        tuning: {
          nominationTTLSeconds: 2,
          instanceTypeMetricsSeconds: 1,
          disruption: { pollSeconds: 1, validationSeconds: 1 },
        },
      },
    );
    await env.apply(`${kwokNodeClassYaml()}---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  limits: {cpu: "100"}
  disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: 0s, budgets: [{nodes: "100%"}]}
  template:
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
        - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
        - {key: karpenter.k8s.aws/instance-size, operator: In, values: [large]}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: default}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      terminationGracePeriodSeconds: 0
      containers:
        - name: agent
          image: registry.k8s.io/pause:3.10
          resources: {requests: {cpu: 50m, memory: 32Mi}}
---
${deploymentYaml('keep', 1, '1500m', '256Mi')}---
${deploymentYaml('web', 2, '1500m', '256Mi').replace('      containers:', '      terminationGracePeriodSeconds: 0\n      containers:')}`);
    await eventually(() => allRunning(client, 3), 'keep and web pods running', 60_000);
    expect((await client.list('Node')).items).toHaveLength(3);
    await scale(client, 'web', 0);
    await eventually(
      async () => (await client.list('Node')).items.length === 1,
      'the two emptied nodes consolidated',
      60_000,
    ).catch(async (err: Error) => {
      const pods = (await client.list('Pod')).items.map(
        (p) => `${p.metadata.name}@${(p as { spec?: { nodeName?: string } }).spec?.nodeName}`,
      );
      const pass = op.disruption.lastPass;
      throw new Error(
        `${err.message}; pods ${pods.join(' ')}; last pass ${JSON.stringify({ blocked: pass?.result?.blocked, abandoned: pass?.abandoned })}`,
      );
    });

    const dashboards: Record<string, readonly string[]> = {
      ...UPSTREAM_DASHBOARD_METRICS,
      ...chartDashboardMetrics(),
    };
    const wanted = [...new Set(Object.values(dashboards).flat())].sort();
    expect(wanted.length).toBeGreaterThanOrEqual(20);
    const base = `http://127.0.0.1:${op.metricsPort}`;
    const missing = (text: string): string[] =>
      wanted.filter((n) => {
        const family = familyOf(n, text);
        if (!text.includes(`# TYPE ${family} `)) return true;
        return !ERROR_ONLY.has(family) && !IN_FLIGHT_ONLY.has(family) && !hasSample(n, text);
      });
    let last = '';
    await eventually(
      async () => {
        last = await (await fetch(`${base}/metrics`)).text();
        // the cluster-state and node gauges follow on the metrics controllers' 1 s cadence (each its own pass);
        // the consolidated NodeClaim's status-condition series go when its deletion reaches that controller
        return (
          missing(last).length === 0 &&
          /^karpenter_cluster_state_node_count 1$/m.test(last) &&
          samples(last).filter((x) => x.name === 'karpenter_nodes_current_lifetime_seconds').length === 1 &&
          samples(last).filter(
            (x) => x.name === 'operator_nodeclaim_status_condition_count' && x.labels.type === 'Ready',
          ).length === 1
        );
      },
      'dashboard metrics exported',
      30_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}; missing: ${missing(last).join(', ')}`);
    });
    expect(missing(last)).toEqual([]);
    // every metric the parity table marks works (outside the AWS provider scope): upstream's type and labels
    expect(upstreamMetricProblems(last, op.registry)).toEqual([]);

    // the run's real values, under upstream's labels
    const sum = (name: string, labels: Record<string, string> = {}): number =>
      samples(last)
        .filter((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v))
        .reduce((acc, x) => acc + x.value, 0);
    const zones = new Set(
      samples(last)
        .filter((x) => x.name === 'karpenter_nodes_created_total')
        .map((x) => x.labels.zone),
    );
    expect(
      [...zones].every((z) => /^[a-z]+-[a-z]+-\d[a-z]$/.test(z ?? '')),
      [...zones].join(),
    ).toBe(true);
    expect(sum('karpenter_nodes_created_total', { nodepool: 'default' })).toBe(3);
    expect(sum('karpenter_nodes_terminated_total', { nodepool: 'default' })).toBe(2);
    expect(
      sum('karpenter_nodeclaims_terminated_total', { nodepool: 'default', capacity_type: 'on-demand' }),
    ).toBe(2);
    expect(sum('karpenter_nodeclaims_disrupted_total', { reason: 'empty', nodepool: 'default' })).toBe(2);
    expect(
      sum('karpenter_voluntary_disruption_decisions_total', { decision: 'delete', reason: 'empty' }),
    ).toBe(1);
    expect(
      sum('karpenter_voluntary_disruption_decisions_by_nodepool_total', {
        nodepool: 'default',
        reason: 'empty',
      }),
    ).toBe(1);
    expect(sum('karpenter_nodes_termination_duration_seconds_count', { nodepool: 'default' })).toBe(2);
    expect(sum('karpenter_nodes_lifetime_duration_seconds_count', { nodepool: 'default' })).toBe(2);
    // keep and the 2 web pods went Pending → Running through provisioning; DaemonSet pods that start between two
    // metrics passes are observed only when the stand-in kubelet stamps a Ready transition time
    const startups = sum('karpenter_pods_startup_duration_seconds_count');
    expect(startups).toBeGreaterThanOrEqual(3);
    expect(startups).toBeLessThanOrEqual(6);
    const bound = sum('karpenter_pods_bound_duration_seconds_count');
    expect(bound).toBeGreaterThanOrEqual(3);
    expect(bound).toBeLessThanOrEqual(6);
    // keep and the 2 web pods: each seen provisionable by the pod trigger and decided by one simulation (DaemonSet
    // pods are not provisionable, so they have no provisioning times); each found schedulable, then bound and
    // started — keep always, a web pod only if a 1 s metrics pass saw it bound / Running before scale-down
    expect(sum('karpenter_pods_scheduling_decision_duration_seconds_count')).toBe(3);
    for (const h of ['bound', 'startup']) {
      const n = sum(`karpenter_pods_provisioning_${h}_duration_seconds_count`);
      expect(n, h).toBeGreaterThanOrEqual(1);
      expect(n, h).toBeLessThanOrEqual(3);
      expect(sum(`karpenter_pods_provisioning_${h}_duration_seconds_sum`), h).toBeLessThan(20 * n);
    }
    // nothing is pending any more: the per-pod gauges are declared, without series
    for (const g of [
      'karpenter_pods_unbound_time_seconds',
      'karpenter_pods_unstarted_time_seconds',
      'karpenter_pods_provisioning_unbound_time_seconds',
      'karpenter_pods_provisioning_unstarted_time_seconds',
      'karpenter_pods_provisioning_scheduling_undecided_time_seconds',
    ]) {
      expect(last).toContain(`# TYPE ${g} gauge`);
      expect(hasSample(g, last), g).toBe(false);
    }
    expect(sum('karpenter_nodepools_limit', { nodepool: 'default', resource_type: 'cpu' })).toBe(100);
    expect(sum('karpenter_nodes_total_daemon_requests', { resource_type: 'cpu' })).toBeCloseTo(0.05, 6);
    expect(sum('karpenter_cluster_state_node_count')).toBe(1);
    expect(sum('karpenter_build_info', { version: '0.1.0' })).toBe(1);
    expect(last).toMatch(/^karpenter_scheduler_ignored_pods_count 0$/m);
    expect(last).toMatch(/^karpenter_cluster_state_synced 1$/m);
    expect(last).toMatch(/^karpenter_cluster_state_unsynced_time_seconds 0$/m);
    // the catalog gauges of the instance type the kept node runs
    const keptType = samples(last).find((x) => x.name === 'karpenter_nodes_allocatable')!.labels
      .instance_type!;
    expect(sum('karpenter_cloudprovider_instance_type_cpu_cores', { instance_type: keptType })).toBe(2);
    expect(
      sum('karpenter_cloudprovider_instance_type_memory_bytes', { instance_type: keptType }),
    ).toBeGreaterThan(3 * 2 ** 30);
    const offering = { instance_type: keptType, capacity_type: 'on-demand', zone: 'us-east-1a' };
    expect(sum('karpenter_cloudprovider_instance_type_offering_available', offering)).toBe(1);
    expect(sum('karpenter_cloudprovider_instance_type_offering_price_estimate', offering)).toBeGreaterThan(0);
    // the kept node: keep (1500m) + its agent (50m) over one large node's allocatable cpu
    const cpuAlloc = sum('karpenter_nodes_allocatable', { resource_type: 'cpu' });
    expect(sum('karpenter_cluster_utilization_percent', { resource_type: 'cpu' })).toBeCloseTo(
      (100 * 1.55) / cpuAlloc,
      6,
    );
    const kept = samples(last).filter((x) => x.name === 'karpenter_nodes_current_lifetime_seconds');
    expect(kept).toHaveLength(1);
    expect(kept[0]!.value).toBeGreaterThan(0);
    expect(kept[0]!.value).toBeLessThan(60);

    const keptNode = (await client.list('Node')).items[0]!.metadata.name!;
    // upstream's newer labels on the kept node and its pod
    const keepPod = samples(last).find(
      (x) => x.name === 'karpenter_pods_state' && x.labels.name?.startsWith('keep-'),
    )!;
    expect([keepPod.labels.scheduled, keepPod.labels.ready, keepPod.labels.managed]).toEqual([
      'true',
      'true',
      'true',
    ]);
    expect([kept[0]!.labels.managed, kept[0]!.labels.windows_build]).toEqual(['true', '']);
    // operatorpkg's status metrics: the kept NodeClaim is Ready, for less than the run
    const ready = (name: string, labels: Record<string, string> = {}): Sample[] =>
      samples(last).filter(
        (x) =>
          x.name === name &&
          x.labels.type === 'Ready' &&
          Object.entries(labels).every(([k, v]) => x.labels[k] === v),
      );
    expect(ready('operator_nodeclaim_status_condition_count').map((x) => [x.labels.status, x.value])).toEqual(
      [['True', 1]],
    );
    const readyFor = ready('operator_nodeclaim_status_condition_current_status_seconds')[0]!.value;
    expect(readyFor).toBeGreaterThan(0);
    expect(readyFor).toBeLessThan(60);
    const readyTransitions = sum('operator_nodeclaim_status_condition_transitions_total', {
      type: 'Ready',
      status: 'True',
    });
    expect(readyTransitions).toBeGreaterThanOrEqual(1);
    expect(readyTransitions).toBeLessThanOrEqual(3);
    expect(
      ready('operator_node_status_condition_count', {
        name: keptNode,
        karpenter_sh_nodepool: 'default',
        status: 'True',
      }).map((x) => x.value),
    ).toEqual([1]);
    expect(
      ready('operator_status_condition_count', {
        kind: 'NodePool',
        group: 'karpenter.sh',
        name: 'default',
      }).map((x) => [x.labels.status, x.value]),
    ).toEqual([['True', 1]]);
    expect(
      ready('operator_kwoknodeclass_status_condition_count', { name: 'default' }).map((x) => x.labels.status),
    ).toEqual(['True']);

    // client-go's request counter: the three NodeClaims were created (201) by POSTs, and lists/gets answered 200
    expect(sum('client_go_request_total', { code: '201', method: 'POST' })).toBeGreaterThanOrEqual(3);
    expect(sum('client_go_request_total', { code: '200', method: 'GET' })).toBeGreaterThan(0);

    // the kept node is not empty under a WhenEmpty policy: upstream's Unconsolidatable Event, once per object.
    // The two web nodes get the same Event only if a pass saw them non-empty and no longer nominated (2 s) before
    // web was scaled to zero: on a loaded machine it does, on a quiet one not; so the kept node's Events are
    // compared exactly, and every Unconsolidatable Event (theirs too) is the WhenEmpty one, once per object.
    const whenEmpty = 'NodePool "default" has consolidation policy WhenEmpty, but node is not empty';
    const keptClaim = ((await client.list('NodeClaim')).items as NodeClaim[]).find(
      (n) => n.status?.nodeName === keptNode,
    )?.metadata.name;
    expect(keptClaim, 'the NodeClaim of the kept node').toBeDefined();
    const onKept = (e: KubeEvent): boolean =>
      (e.involvedObject.kind === 'Node' && e.involvedObject.name === keptNode) ||
      (e.involvedObject.kind === 'NodeClaim' && e.involvedObject.name === keptClaim);
    let uncons: KubeEvent[] = [];
    await eventually(
      async () => {
        await op.recorder.flush();
        uncons = ((await client.list('Event')).items as KubeEvent[]).filter(
          (e) => e.reason === 'Unconsolidatable',
        );
        return uncons.filter(onKept).length >= 2;
      },
      'the Unconsolidatable Events of the kept Node and NodeClaim',
      20_000,
    );
    expect(kept[0]!.labels.node_name).toBe(keptNode);
    expect(
      uncons
        .filter(onKept)
        .map((e) => [e.involvedObject.kind, e.involvedObject.name, e.count ?? 1, e.message])
        .sort(),
    ).toEqual([
      ['Node', keptNode, 1, whenEmpty],
      ['NodeClaim', keptClaim, 1, whenEmpty],
    ]);
    // the web nodes' (if any): the same message, once per object (upstream dedupes on the object's UID)
    expect(new Set(uncons.map((e) => e.message))).toEqual(new Set([whenEmpty]));
    expect(uncons.every((e) => (e.count ?? 1) === 1)).toBe(true);
    const objects = uncons.map((e) => `${e.involvedObject.kind}/${e.involvedObject.name}`);
    expect(new Set(objects).size, objects.join(' ')).toBe(objects.length);
    expect(uncons.filter((e) => e.involvedObject.kind === 'Node')).toHaveLength(
      uncons.filter((e) => e.involvedObject.kind === 'NodeClaim').length,
    );
    expect(uncons.length).toBeLessThanOrEqual(6);
  }, 200_000); // startup + the waits (60 + 60 + 30 + 20 s): generous bounds for a loaded 2-core machine
});
