/**
 * The summary of an embedded run (`capenter start` in every mode): a point-in-time view of the cluster (pods,
 * NodeClaims, Nodes, Events; from the client or the informer caches), the summary built from it (settled or not,
 * NodeClaims with instance type, zone, capacity type and catalog price, pods per NodeClaim, pending pods and why),
 * the progress line and the text table. Pure but for the two view readers; used by `./settle.ts`.
 */
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Node, Pod } from '../apis/core.ts';
import type { NodeClaim } from '../apis/karpenter.ts';
import { getInstanceTypes, isSupportedRegion } from '../cloudprovider/aws/catalog/index.ts';
import type { KubeClient } from '../kube/client.ts';
import type { SharedInformers } from '../kube/informer.ts';
import type { KubeEvent } from '../kube/types.ts';

/** One NodeClaim row of the summary. */
export interface NodeClaimSummary {
  name: string;
  nodePool: string;
  instanceType: string;
  zone: string;
  capacityType: string;
  /** USD per hour (on-demand list price or spot estimate of the catalog), 0 when unknown (as `simulate`'s). */
  priceUSDPerHour: number;
  /** Pods bound to its Node (DaemonSet pods included). */
  pods: number;
  /** Lifecycle: Launching, Registered, Initialized, Deleting. */
  state: string;
}

/** A pod that is not Running, and why (the controller's `FailedScheduling` Event, else the PodScheduled condition). */
export interface PendingPod {
  /** `namespace/name`. */
  pod: string;
  /** Pod phase (`Pending`, ...). */
  phase: string;
  /**
   * Why it is not running: for a pod bound to a node, that it waits for the node's kubelet; else the scheduling
   * failure (see {@link pendingReason}); `""` when nothing says.
   */
  reason: string;
}

/** The summary printed when the cluster settles (or times out). */
export interface StartSummary {
  /** Every pod Running and no NodeClaim launching, registering or being deleted. */
  settled: boolean;
  /** `--timeout` passed before the cluster settled. */
  timedOut: boolean;
  elapsedSeconds: number;
  kubeconfig: string;
  region: string;
  /** Live pods (not finished, not deleting): all, Running, not Running. */
  pods: { total: number; running: number; pending: number };
  nodeClaims: NodeClaimSummary[];
  /** `pods`: pods on the NodeClaims' nodes (the sum of the rows); `deleting`: NodeClaims being deleted. */
  totals: { nodeClaims: number; deleting: number; nodes: number; pods: number; priceUSDPerHour: number };
  /** Pods not Running, with the reason. */
  pendingPods: PendingPod[];
}

/** A point-in-time view of the cluster for progress lines and the summary. */
export interface ClusterView {
  pods: Pod[];
  nodeClaims: NodeClaim[];
  nodes: Node[];
  /** Events (only read for the final summary: the reasons of pending pods). */
  events?: KubeEvent[];
}

/** Reads pods, NodeClaims and Nodes (and Events when `withEvents`) through the client. */
export async function readClusterView(client: KubeClient, withEvents = false): Promise<ClusterView> {
  const [pods, nodeClaims, nodes, events] = await Promise.all([
    client.list('Pod'),
    client.list('NodeClaim'),
    client.list('Node'),
    withEvents ? client.list('Event') : undefined,
  ]);
  return {
    pods: pods.items as Pod[],
    nodeClaims: nodeClaims.items as NodeClaim[],
    nodes: nodes.items as Node[],
    ...(events ? { events: events.items as KubeEvent[] } : {}),
  };
}

/**
 * The same view from the embedded cluster's shared informer caches (Pods, Nodes, NodeClaims): no list of every
 * pod over HTTP each progress tick (at 10,000 pods that was a 30 MB response parsed every second). Waits for
 * the NodeClaim informer (created on first call) to sync. The caches may trail the server by a watch event.
 */
export async function informerClusterView(informers: SharedInformers): Promise<ClusterView> {
  const nodeClaims = informers.informerFor('NodeClaim');
  await nodeClaims.waitForSync(30_000);
  return {
    pods: informers.informerFor('Pod').cache.list(),
    nodeClaims: nodeClaims.cache.list(),
    nodes: informers.informerFor('Node').cache.list(),
  };
}

/** The newest `FailedScheduling` Events per pod (`namespace/name`): capenter's own (component `karpenter`) and any. */
export type FailedSchedulingIndex = Map<string, { own?: KubeEvent; any?: KubeEvent }>;

/**
 * Indexes `events` for {@link pendingReason}: one pass, newest by `lastTimestamp` (of equal ones the later in the
 * list), so a summary of n pending pods reads m Events once instead of n × m times.
 */
export function failedSchedulingIndex(events: readonly KubeEvent[]): FailedSchedulingIndex {
  const out: FailedSchedulingIndex = new Map();
  const newer = (e: KubeEvent, cur: KubeEvent | undefined) =>
    !cur || (e.lastTimestamp ?? '').localeCompare(cur.lastTimestamp ?? '') >= 0;
  for (const e of events) {
    if (e.reason !== 'FailedScheduling' || e.involvedObject?.kind !== 'Pod') continue;
    const key = `${e.involvedObject.namespace ?? ''}/${e.involvedObject.name ?? ''}`;
    const cur = out.get(key) ?? {};
    if (newer(e, cur.any)) cur.any = e;
    if (e.source?.component === 'karpenter' && newer(e, cur.own)) cur.own = e;
    out.set(key, cur);
  }
  return out;
}

/**
 * Why `pod` is not running. A pod bound to a node (`spec.nodeName`) waits for that node's kubelet to start it:
 * its `FailedScheduling` Events and `PodScheduled=False` condition are from before it was bound, so they are not
 * the reason (a summary taken between the bind and the kubelet's start said `no nodes available to schedule pods`
 * of a pod on a node; issue 24). Otherwise the newest `FailedScheduling` Event of capenter (component `karpenter`,
 * as upstream), else the newest of any component, else the `PodScheduled=False` condition's message, else `""`.
 * `events` is the Events' {@link failedSchedulingIndex}.
 */
export function pendingReason(pod: Pod, events: FailedSchedulingIndex): string {
  if (pod.spec?.nodeName) return `bound to node ${pod.spec.nodeName}, waiting for its kubelet to start it`;
  const mine = events.get(`${pod.metadata.namespace ?? ''}/${pod.metadata.name ?? ''}`);
  const ev = mine?.own ?? mine?.any;
  if (ev?.message) return ev.message;
  const cond = pod.status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False');
  return cond?.message ?? '';
}

const isTrue = (nc: NodeClaim, t: string): boolean =>
  nc.status?.conditions?.some((c) => c.type === t && c.status === 'True') ?? false;

function ncState(nc: NodeClaim): string {
  if (nc.metadata.deletionTimestamp) return 'Deleting';
  if (isTrue(nc, 'Initialized')) return 'Initialized';
  if (isTrue(nc, 'Registered')) return 'Registered';
  if (isTrue(nc, 'Launched')) return 'Launched';
  return 'Launching';
}

/** Pods that count for settling: not finished (Succeeded/Failed) and not being deleted. */
function livePods(pods: readonly Pod[]): Pod[] {
  return pods.filter(
    (p) => p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed' && !p.metadata.deletionTimestamp,
  );
}

/** USD/hour of an instance type × zone × capacity type in `region`'s catalog (0 when unknown). */
export function priceOf(region: string, instanceType: string, zone: string, capacityType: string): number {
  if (!isSupportedRegion(region)) return 0;
  const it = getInstanceTypes({ region }).instanceTypes.find((t) => t.name === instanceType);
  const o = it?.offerings.find((x) => x.zone === zone && x.capacityType === capacityType);
  return o?.priceUSDPerHour ?? 0;
}

/**
 * Builds the summary of `view` (`timedOut`: `--timeout` passed). `listPending: false` leaves `pendingPods`
 * empty: the progress loop, which runs every second and prints only counts, skips sorting up to every pod by
 * name (at 10,000 pending pods about 25 ms a tick).
 */
export function summarize(
  view: ClusterView,
  region: string,
  kubeconfig: string,
  elapsedSeconds: number,
  timedOut = false,
  listPending = true,
): StartSummary {
  const pods = livePods(view.pods);
  const running = pods.filter((p) => p.status?.phase === 'Running');
  const reasons = failedSchedulingIndex(
    listPending && running.length < pods.length ? (view.events ?? []) : [],
  );
  const podsByNode = new Map<string, number>();
  for (const p of pods)
    if (p.spec?.nodeName) podsByNode.set(p.spec.nodeName, (podsByNode.get(p.spec.nodeName) ?? 0) + 1);
  const rows: NodeClaimSummary[] = view.nodeClaims
    .map((nc) => {
      const l = nc.metadata.labels ?? {};
      const instanceType = l['node.kubernetes.io/instance-type'] ?? '';
      const zone = l['topology.kubernetes.io/zone'] ?? '';
      const capacityType = l['karpenter.sh/capacity-type'] ?? '';
      return {
        name: nc.metadata.name ?? '',
        nodePool: l['karpenter.sh/nodepool'] ?? '',
        instanceType,
        zone,
        capacityType,
        priceUSDPerHour: instanceType ? priceOf(region, instanceType, zone, capacityType) : 0,
        pods: podsByNode.get(nc.status?.nodeName ?? nc.metadata.name ?? '') ?? 0,
        state: ncState(nc),
      };
    })
    .sort((a, b) => a.nodePool.localeCompare(b.nodePool) || a.name.localeCompare(b.name));
  const inFlight = rows.some((r) => r.state !== 'Initialized');
  const settled = pods.length === running.length && pods.length > 0 && !inFlight;
  return {
    settled,
    timedOut,
    elapsedSeconds: Math.round(elapsedSeconds * 10) / 10,
    kubeconfig,
    region,
    pods: { total: pods.length, running: running.length, pending: pods.length - running.length },
    nodeClaims: rows,
    totals: {
      nodeClaims: rows.length,
      deleting: rows.filter((r) => r.state === 'Deleting').length,
      nodes: view.nodes.length,
      pods: rows.reduce((n, r) => n + r.pods, 0),
      priceUSDPerHour: Math.round(rows.reduce((n, r) => n + r.priceUSDPerHour, 0) * 10000) / 10000,
    },
    pendingPods: (listPending ? pods : [])
      .filter((p) => p.status?.phase !== 'Running')
      .map((p) => ({
        pod: `${p.metadata.namespace ?? ''}/${p.metadata.name ?? ''}`,
        phase: p.status?.phase ?? 'Pending',
        reason: pendingReason(p, reasons),
      }))
      .sort((a, b) => a.pod.localeCompare(b.pod)),
  };
}

/** One progress line: pods, NodeClaims by lifecycle state (deleting included), nodes, $/h. */
export function progressLine(s: StartSummary): string {
  const by = (st: string) => s.nodeClaims.filter((r) => r.state === st).length;
  return (
    `[${s.elapsedSeconds.toFixed(1)}s] pods ${s.pods.running}/${s.pods.total} running (${s.pods.pending} pending) · ` +
    `nodeclaims ${s.totals.nodeClaims} (launching ${by('Launching') + by('Launched')}, registered ${by('Registered')}, ` +
    `initialized ${by('Initialized')}, deleting ${by('Deleting')}) · nodes ${s.totals.nodes} · ` +
    `$${s.totals.priceUSDPerHour.toFixed(4)}/h`
  );
}

/** The summary as a text table (NodeClaims, then totals). */
export function formatSummaryTable(s: StartSummary): string {
  const head = ['NODECLAIM', 'NODEPOOL', 'INSTANCE TYPE', 'ZONE', 'CAPACITY', '$/H', 'PODS'];
  const rows = s.nodeClaims.map((r) => [
    r.name,
    r.nodePool,
    r.instanceType,
    r.zone,
    r.capacityType,
    r.priceUSDPerHour.toFixed(4),
    String(r.pods),
  ]);
  // TOTAL sums the rows (pods not on a NodeClaim's node are counted in the line below)
  rows.push(['TOTAL', '', '', '', '', s.totals.priceUSDPerHour.toFixed(4), String(s.totals.pods)]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) =>
    r
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  const out = [line(head), ...rows.map(line)];
  const status = s.settled ? 'Settled' : s.timedOut ? 'NOT settled (timed out)' : 'NOT settled';
  out.push(
    '',
    `${status} after ${s.elapsedSeconds}s: ${s.pods.running}/${s.pods.total} pods running, ${s.totals.pods} of them on ` +
      `${s.totals.nodeClaims} NodeClaim(s)${s.totals.deleting > 0 ? ` (${s.totals.deleting} deleting)` : ''}, ` +
      `$${s.totals.priceUSDPerHour.toFixed(4)}/h (${s.region}).`,
  );
  if (!s.settled && s.pendingPods.length > 0) {
    out.push('Not running:');
    for (const p of s.pendingPods.slice(0, 10))
      out.push(`  ${p.pod} (${p.phase}): ${p.reason || 'no reason reported yet'}`);
    if (s.pendingPods.length > 10) out.push(`  and ${s.pendingPods.length - 10} more`);
  }
  return `${out.join('\n')}\n`;
}

/**
 * The bundled example (`examples/microservices-demo` of the package): the nearest `examples/microservices-demo`
 * above this module, so it is found from `src/cli/` (tsx) and from `dist/` (the compiled program) alike.
 */
export function defaultExamplePath(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  for (let dir = here; ; dir = dirname(dir)) {
    const candidate = join(dir, 'examples', 'microservices-demo');
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) return resolve(here, '..', '..', 'examples', 'microservices-demo');
  }
}
