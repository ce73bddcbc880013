/**
 * E2E: every `kind: provisioning` scenario case of test/cases runs through the full controller path — manifests
 * created through the client in the simulated cluster, the real operator provisioning, the kube-scheduler
 * stand-in binding the pods — and must reach the same decision as `capenter simulate` on the same input: the same
 * NodeClaims (NodePool, cheapest instance type, zone), the same pods on each of them (compared by pod shape:
 * namespace, template labels, requests) and the same number of pods left unschedulable. A run is settled by what
 * the cluster shows, not by a quiet period: every NodeClaim Ready (registered to its Node and initialized), and every workload pod Running or
 * answered by the provisioner with an Event (`FailedScheduling` / `Nominated` from component `karpenter`).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import type { KubeObject, Pod } from '../../src/apis/core.ts';
import type { NodeClaim } from '../../src/apis/karpenter.ts';
import { parseManifests } from '../../src/apis/load.ts';
import { simulate } from '../../src/simulate/run.ts';
import { type E2E, eventually, instanceTypeOf, livePods, nodeClaims, startE2E } from './harness.ts';

/**
 * The ServiceAccounts the case's pods and pod templates name but the case leaves out (most cases keep only the
 * objects that matter to scheduling): the API server refuses a pod whose ServiceAccount is missing, so they are
 * created first, as test/cluster/cases.test.ts does for the real control plane.
 */
function missingServiceAccounts(loaded: ReadonlyArray<{ object: KubeObject }>): KubeObject[] {
  const key = (ns: string | undefined, name: string) => `${ns ?? 'default'}/${name}`;
  const declared = new Set(
    loaded
      .filter((o) => o.object.kind === 'ServiceAccount')
      .map((o) => key(o.object.metadata?.namespace, o.object.metadata?.name ?? '')),
  );
  const out = new Map<string, KubeObject>();
  for (const { object: o } of loaded) {
    const spec =
      o.kind === 'Pod'
        ? (o as Pod).spec
        : (o as { spec?: { template?: { spec?: { serviceAccountName?: string } } } }).spec?.template?.spec;
    const sa = typeof spec?.serviceAccountName === 'string' ? spec.serviceAccountName : undefined;
    const k = sa ? key(o.metadata?.namespace, sa) : '';
    if (!sa || sa === 'default' || declared.has(k) || out.has(k)) continue;
    out.set(k, {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: sa, namespace: o.metadata?.namespace ?? 'default' },
    } as KubeObject);
  }
  return [...out.values()];
}

const casesDir = join(dirname(fileURLToPath(import.meta.url)), '..', 'cases');
interface Case {
  id: string;
  kind: string;
  region: string;
  input: string;
}
const cases = readdirSync(casesDir)
  .filter((f) => f.endsWith('.yaml'))
  .sort()
  .map((f) => parseYaml(readFileSync(join(casesDir, f), 'utf8')) as Case)
  .filter((c) => c.kind === 'provisioning');

/**
 * Pods other than DaemonSet pods. The kube-scheduler stand-in may bind workload pods onto a new node before its
 * DaemonSet pod (as a real kube-scheduler can), leaving that DaemonSet pod Pending; Karpenter never provisions
 * for DaemonSet pods, so the decision is compared on the workload pods.
 */
function workloadPods(pods: Pod[]): Pod[] {
  return pods.filter((p) => !p.metadata.ownerReferences?.some((o) => o.kind === 'DaemonSet'));
}

/**
 * A pod whose required node affinity says `karpenter.sh/nodepool DoesNotExist`: Karpenter ignores it (logged,
 * no Event, as upstream), so it waits for a node Karpenter does not manage.
 */
function optsOut(p: Pod): boolean {
  const terms =
    p.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  return (
    terms?.[0]?.matchExpressions?.some(
      (e) => e.key === 'karpenter.sh/nodepool' && e.operator === 'DoesNotExist',
    ) ?? false
  );
}

/** Kinds applied after the case's existing cluster has settled (see the test). */
const WORKLOAD_KINDS = new Set(['Deployment', 'ReplicaSet', 'StatefulSet', 'Job', 'CronJob']);

/** Labels the workload controllers add per pod or revision (not part of what the user wrote). */
const GENERATED_LABELS = new Set([
  'pod-template-hash',
  'controller-revision-hash',
  'pod-template-generation',
  'statefulset.kubernetes.io/pod-name',
  'apps.kubernetes.io/pod-index',
  'batch.kubernetes.io/job-completion-index',
  'batch.kubernetes.io/controller-uid',
  'controller-uid',
  'job-name',
  'batch.kubernetes.io/job-name',
]);

/** What identifies a pod across simulate and the cluster: namespace, template labels and requests. */
function podShape(p: Pod): string {
  const labels = Object.entries(p.metadata.labels ?? {})
    .filter(([k]) => !GENERATED_LABELS.has(k))
    .sort(([a], [b]) => (a < b ? -1 : 1));
  const requests = p.spec.containers.map((c) => c.resources?.requests ?? {});
  return JSON.stringify([p.metadata.namespace ?? 'default', labels, requests]);
}

/**
 * Cases where the kube-scheduler stand-in binds pods differently from Karpenter's nominations (it does not know
 * them, like a real kube-scheduler), so a pod is left Pending for a later batch. For these the decision (NodeClaims)
 * is compared, not the final pod placement.
 */
const PLACEMENT_DIVERGES: Record<string, string> = {
  'kube-prometheus-node-exporter-overhead':
    'MostAllocated packs the 4-pod t3a.micro nodes differently from the plan; one pod waits for a later batch',
  'daemonset-overhead-no-endless-nodeclaims':
    'MostAllocated binds all three replicas to the first node up, before its DaemonSet pod; the plan spread them over two NodeClaims',
  'hostport-taken-by-daemonset-no-nodeclaim':
    'on a loaded machine the web pod can reach a new node before its DaemonSet pod (they race for hostPort 8080, as with a real kube-scheduler); the NodeClaims are still exactly the plan',
};

/**
 * Cases whose controller run differs from simulate until the named issue is done: expected failures
 * (`it.fails`), so the entry must be removed once they pass.
 */
const EXPECTED_FAILURES_E2E: Readonly<Record<string, string>> = {};

let env: E2E | undefined;
afterEach(async () => {
  await env?.stop();
  env = undefined;
});

describe('provisioning cases through the controller (e2e)', () => {
  it('has provisioning cases to run', () => {
    expect(cases.length).toBeGreaterThanOrEqual(8);
  });

  for (const c of cases) {
    const xfail = EXPECTED_FAILURES_E2E[c.id];
    (xfail ? it.fails : it)(
      `${c.id}: same decision as capenter simulate${xfail ? ` [expected failure until ${xfail}]` : ''}`,
      async () => {
        const loaded = parseManifests(c.input, `${c.id}.yaml`);
        expect(loaded.errors.map((e) => e.message)).toEqual([]);
        const sim = await simulate(loaded, { region: c.region });
        const expectedTypes = sim.nodeClaims.map((n) => `${n.nodePool}/${n.instanceType}/${n.zone}`).sort();
        const expectedUnschedulable = sim.unschedulable.length;
        const expectedPlacement = sim.scheduling.newNodeClaims
          .map((plan, i) => {
            const nc = sim.nodeClaims[i]!;
            const shapes = workloadPods(plan.pods).map(podShape).sort();
            return `${nc.nodePool}/${nc.instanceType}/${nc.zone}: ${shapes.join(' ')}`;
          })
          .sort();

        // batch idle 1 s (upstream default) so that the workload controllers' pods land in one batch, as simulate sees them
        // a NodePool's startup taints are removed by their agents (e.g. Cilium's) in a real cluster: here the kubelet
        // stand-in does it 1 s after it first sees one, so the NodeClaims can initialize
        const startupTaintRemoval: Record<string, number> = {};
        for (const o of loaded.objects) {
          if (o.object.kind !== 'NodePool') continue;
          const spec = (
            o.object as { spec?: { template?: { spec?: { startupTaints?: Array<{ key: string }> } } } }
          ).spec;
          for (const t of spec?.template?.spec?.startupTaints ?? []) startupTaintRemoval[t.key] = 1;
        }
        env = await startE2E({
          sim: { startupTaintRemoval },
          operator: { region: c.region, batchIdleSeconds: 1, batchMaxSeconds: 10 },
        });
        const client = env.client;
        // What the case says already runs (Nodes, bound pods, DaemonSets and their pods) is applied and settled
        // first, then the workloads: simulate sees the cluster at once, and a loaded machine must not let the
        // scheduler stand-in bind a new pod before it sees the old ones (a pod on a full static node).
        const objects = [...loaded.objects.map((o) => o.object), ...missingServiceAccounts(loaded.objects)];
        const isWorkload = (o: (typeof objects)[number]): boolean =>
          WORKLOAD_KINDS.has(o.kind ?? '') || (o.kind === 'Pod' && !(o as Pod).spec?.nodeName);
        await env.apply(objects.filter((o) => !isWorkload(o)));
        await eventually(
          async () => {
            const [pods, dss] = await Promise.all([livePods(client), client.list('DaemonSet')]);
            return (
              pods.every((p) => !p.spec.nodeName || p.status?.phase === 'Running') &&
              (
                dss.items as Array<{ status?: { desiredNumberScheduled?: number; numberReady?: number } }>
              ).every(
                (d) =>
                  d.status?.desiredNumberScheduled !== undefined &&
                  (d.status.numberReady ?? 0) === d.status.desiredNumberScheduled,
              )
            );
          },
          `case ${c.id}: its existing pods and DaemonSets running before the workloads`,
          30_000,
          100,
        );
        await env.apply(objects.filter(isWorkload));

        const describe = (n: NodeClaim) =>
          `${n.metadata.labels?.['karpenter.sh/nodepool']}/${instanceTypeOf(n)}/${n.metadata.labels?.['topology.kubernetes.io/zone']}`;
        /** Each NodeClaim with the shapes of the workload pods on its node (sorted), as `expectedPlacement`. */
        const placementOf = (ncs: NodeClaim[], pods: Pod[]): string[] =>
          ncs
            .map((n) => {
              const shapes = workloadPods(pods.filter((p) => p.spec.nodeName === n.status?.nodeName))
                .map(podShape)
                .sort();
              return `${describe(n)}: ${shapes.join(' ')}`;
            })
            .sort();
        const placedCount = (ncs: NodeClaim[], pods: Pod[]): number =>
          ncs.reduce(
            (sum, n) => sum + workloadPods(pods.filter((p) => p.spec.nodeName === n.status?.nodeName)).length,
            0,
          );
        const expectedPlaced = sim.scheduling.newNodeClaims.reduce(
          (sum, plan) => sum + workloadPods(plan.pods).length,
          0,
        );

        // settled: NodeClaims initialized, and each workload pod Running or answered by the provisioner
        await eventually(
          async () => {
            const [ncs, pods, events] = await Promise.all([
              nodeClaims(client),
              livePods(client),
              client.list('Event'),
            ]);
            // Ready (Launched, Registered and Initialized), not Initialized alone: a registration whose NodePool
            // status write conflicts requeues after the Node was synced, and initialization may pass in the same
            // reconcile (upstream's lifecycle steps run in the same order), so a NodeClaim can briefly be
            // Initialized with Registered=Unknown and no status.nodeName, and its pods would match no NodeClaim
            const initialized = ncs.every(
              (n) =>
                !!n.status?.nodeName &&
                n.status.conditions?.some((x) => x.type === 'Ready' && x.status === 'True'),
            );
            const answered = new Set(
              events.items
                .filter(
                  (e) =>
                    (e.source?.component ?? e.reportingComponent) === 'karpenter' &&
                    (e.reason === 'FailedScheduling' || e.reason === 'Nominated'),
                )
                .map((e) => e.involvedObject?.uid),
            );
            const waiting = workloadPods(pods).filter((p) => p.status?.phase !== 'Running');
            return (
              pods.length > 0 &&
              initialized &&
              ncs.length >= expectedTypes.length &&
              (waiting.length === expectedUnschedulable || c.id in PLACEMENT_DIVERGES) &&
              waiting.every((p) => answered.has(p.metadata.uid) || optsOut(p)) &&
              // a workload pod between a deletion and its replacement is in no list: under load a pass could see
              // none Pending and a NodeClaim with no pods (CI of f099c5b, two DaemonSet cases); wait until the
              // placement is whole, the assertion below still compares it
              (c.id in PLACEMENT_DIVERGES || placedCount(ncs, pods) === expectedPlaced)
            );
          },
          `case ${c.id} to settle`,
          60_000,
          100,
        );
        const ncs = await nodeClaims(client);
        expect(ncs.map(describe).sort()).toEqual(expectedTypes);
        const pods = await livePods(client);
        if (!(c.id in PLACEMENT_DIVERGES)) {
          expect(workloadPods(pods).filter((p) => p.status?.phase !== 'Running').length).toBe(
            expectedUnschedulable,
          );
          const placement = placementOf(ncs, pods);
          expect(placement, 'the same pods on each NodeClaim').toEqual(expectedPlacement);
        }
        // every launched NodeClaim has exactly one Node (nothing leaked)
        const nodes = (await client.list('Node')).items;
        for (const nc of ncs)
          expect(nodes.filter((n) => n.spec?.providerID === nc.status?.providerID)).toHaveLength(1);
      },
      // startup + the existing cluster's wait (30 s) + the settle wait (60 s): a loaded 2-core machine needs them
      100_000,
    );
  }
});
