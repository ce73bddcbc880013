/**
 * The dashboard's live side: subscribes to cluster state (`Cluster.onChange`, fed by the informers), the
 * provisioner's and the disruption controller's pass listeners, and turns them into messages for the viewers:
 * a full `snapshot` on connect, then at most one `patch` per {@link DashboardHubOptions.throttleMs} (default
 * 250 ms, longer when building the view takes more than a fifth of that; without viewers one view per chart
 * interval, 5 s) with the rows that changed, and `decision` messages for new log entries. Viewers never cause API
 * requests: one view is built per change batch, whatever the number of viewers. The only API request the hub
 * makes is one `list nodes?limit=1` every 5 s while the informers have not synced, to tell "the API server refused
 * the controller's credentials" (401/403) or "cannot reach the API server" from "still starting".
 */
import type { InstanceType } from '../apis/instancetype.ts';
import type { CloudProvider } from '../cloudprovider/types.ts';
import type { DisruptionPass } from '../controllers/disruption/controller.ts';
import type { ProvisioningResult } from '../controllers/provisioning/provisioner.ts';
import type { KubeClient } from '../kube/client.ts';
import { KubeApiError } from '../kube/errors.ts';
import { Resources } from '../kube/resources.ts';
import type { Cluster } from '../state/cluster.ts';
import { type DecisionEntry, DecisionLog, disruptionEntries, provisioningEntries } from './decisions.ts';
import { diffView, type ViewPatch } from './patch.ts';
import { buildDashboardView, type DashboardView, type MachinePoolView, type Totals } from './view.ts';

/** What the hub observes: the operator's parts (an `Operator` fits). */
export interface DashboardSources {
  cluster: Cluster;
  client: KubeClient;
  cloudProvider?: Pick<CloudProvider, 'instanceTypes'>;
  /** CAPI: the KarpenterMachinePools with their MachinePools (`machinePoolViews` over the management informers). */
  machinePools?: () => MachinePoolView[];
  /** Time of the log entries (the operator's clock; default the wall clock). */
  clock?: { now(): number };
  provisioner?: { passListeners: Set<(r: ProvisioningResult) => void> };
  disruption?: {
    passListeners: Set<(p: DisruptionPass) => void>;
    lastPass: DisruptionPass | undefined;
    orchestrator: { disruptingNodes(): ReadonlySet<string> };
  };
}

/** Options of {@link DashboardHub}. */
export interface DashboardHubOptions {
  /** Minimum ms between two patches (default 250). */
  throttleMs?: number;
  /** Points kept for the charts (default 720: an hour at one point per 5 s). */
  historySize?: number;
  /** ms between two chart points (default 5000; a point is also taken when the totals change). */
  historyEveryMs?: number;
  /** ms between two credential probes while not synced (default 5000). */
  probeEveryMs?: number;
}

/** A message to the viewers (the SSE event name and its JSON data). */
export type HubMessage =
  | { event: 'snapshot'; data: { view: DashboardView; log: DecisionEntry[]; history: Totals[] } }
  | { event: 'patch'; data: ViewPatch }
  | { event: 'decision'; data: DecisionEntry };

/** The text the page shows when the API server refuses the controller's credentials or cannot be reached. */
export function probeError(err: unknown): string {
  if (err instanceof KubeApiError && (err.code === 401 || err.code === 403))
    return (
      `the API server refused the controller's credentials (${err.code} ${err.reason}): ` +
      `fix the token or client certificate of the kubeconfig the controller runs with`
    );
  return `cannot read the cluster: ${(err as Error).message}`;
}

/** See the module doc. Call {@link close} to unsubscribe and stop the timers. */
export class DashboardHub {
  readonly log = new DecisionLog();
  private readonly history: Totals[] = [];
  private readonly viewers = new Set<(m: HubMessage) => void>();
  private readonly unsubscribe: Array<() => void> = [];
  private readonly instanceTypes: Record<string, InstanceType[]> = {};
  private readonly blocks = new Map<string, string>();
  private unschedulable = new Map<string, string>();
  private current: DashboardView | undefined;
  private timer: NodeJS.Timeout | undefined;
  private probeTimer: NodeJS.Timeout | undefined;
  private lastFlush = 0;
  /** ms the last view took to build: the throttle waits at least 4× that, so the hub takes ≤ 20% of a core. */
  private lastBuildMs = 0;
  /** State changed since the current view was built. */
  private dirty = true;
  private closed = false;
  private error: string | undefined;
  private pricing: Promise<void> | undefined;

  constructor(
    private readonly src: DashboardSources,
    private readonly opts: DashboardHubOptions = {},
  ) {
    this.unsubscribe.push(src.cluster.onChange((c) => this.changed(c.kind === 'NodePool')));
    const onProvision = (r: ProvisioningResult): void => this.provisioned(r);
    const onPass = (p: DisruptionPass): void => this.passed(p);
    src.provisioner?.passListeners.add(onProvision);
    src.disruption?.passListeners.add(onPass);
    this.unsubscribe.push(() => src.provisioner?.passListeners.delete(onProvision));
    this.unsubscribe.push(() => src.disruption?.passListeners.delete(onPass));
    this.unsubscribe.push(this.log.onEntry((e) => this.send({ event: 'decision', data: e })));
    this.probeTimer = setInterval(() => void this.probe(), opts.probeEveryMs ?? 5000);
    this.probeTimer.unref();
    void this.probe();
    this.refreshPrices();
  }

  /** The current view (built now when state changed since the last one). */
  view(): DashboardView {
    if (!this.current || this.dirty) this.flush();
    return this.current as DashboardView;
  }

  /** Subscribes a viewer: it gets the snapshot at once, then patches and decisions. Returns the unsubscribe. */
  connect(viewer: (m: HubMessage) => void): () => void {
    viewer({
      event: 'snapshot',
      data: { view: this.view(), log: this.log.entries(), history: [...this.history] },
    });
    this.viewers.add(viewer);
    return () => this.viewers.delete(viewer);
  }

  /**
   * Checks the controller's credentials once while the informers have not synced (see the module doc); clears the
   * error once they have. Exposed for tests.
   */
  async probe(): Promise<void> {
    if (this.src.cluster.informersSynced()) {
      if (this.error !== undefined) this.setError(undefined);
      return;
    }
    try {
      await this.src.client.list(Resources.Node, { limit: 1 });
      if (this.error !== undefined) this.setError(undefined);
    } catch (err) {
      this.setError(probeError(err));
    }
  }

  /** Builds the view now and sends the patch to the viewers (the throttle's flush; exposed for tests). */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.lastFlush = performance.now();
    this.dirty = false;
    const prev = this.current;
    const started = performance.now();
    const next = this.build();
    this.lastBuildMs = performance.now() - started;
    this.current = next;
    this.record(next.totals);
    if (prev && this.viewers.size > 0) {
      const patch = diffView(prev, next);
      if (patch) this.send({ event: 'patch', data: patch });
    }
  }

  /** Tells the hub something its sources do not report changed (e.g. a KarpenterMachinePool); no-op once closed. */
  notify(): void {
    if (!this.closed) this.changed();
  }

  /** Unsubscribes from the sources and stops the timers. */
  close(): void {
    this.closed = true;
    for (const u of this.unsubscribe.splice(0)) u();
    if (this.timer) clearTimeout(this.timer);
    if (this.probeTimer) clearInterval(this.probeTimer);
    this.viewers.clear();
  }

  private build(): DashboardView {
    const d = this.src.disruption;
    const pass = d?.lastPass;
    if (pass?.input) Object.assign(this.instanceTypes, pass.input.instanceTypes);
    const byName = new Map<string, InstanceType>();
    for (const list of Object.values(this.instanceTypes)) for (const it of list) byName.set(it.name, it);
    const view = buildDashboardView({
      snapshot: this.src.cluster.snapshot(),
      instanceTypes: this.instanceTypes,
      ...(pass ? { disruption: pass.result } : {}),
      ...(d ? { disrupting: d.orchestrator.disruptingNodes() } : {}),
      unschedulable: this.unschedulable,
      usage: this.src.cluster.nodePoolUsage(byName),
      ...(this.src.machinePools ? { machinePools: this.src.machinePools() } : {}),
      ...(this.error !== undefined ? { error: this.error } : {}),
    });
    if (this.history.length === 0) this.record(view.totals);
    return view;
  }

  private record(t: Totals): void {
    const last = this.history.at(-1);
    const every = this.opts.historyEveryMs ?? 5000;
    const same =
      last &&
      last.nodes === t.nodes &&
      last.pendingPods === t.pendingPods &&
      last.costUSDPerHour === t.costUSDPerHour;
    if (last && same && t.at - last.at < every) return;
    this.history.push(t);
    if (this.history.length > (this.opts.historySize ?? 720)) this.history.shift();
  }

  private changed(pools = false): void {
    if (pools) this.refreshPrices();
    this.dirty = true;
    if (this.timer) return;
    // without viewers only the charts' history needs a view: one per history interval
    const base = this.viewers.size > 0 ? (this.opts.throttleMs ?? 250) : (this.opts.historyEveryMs ?? 5000);
    const every = Math.max(base, 4 * this.lastBuildMs);
    const wait = Math.max(0, every - (performance.now() - this.lastFlush));
    this.timer = setTimeout(() => this.flush(), wait);
    this.timer.unref();
  }

  /** Resolves each NodePool's instance types (prices) through the provider, one refresh at a time. */
  private refreshPrices(): void {
    const cp = this.src.cloudProvider;
    if (!cp || this.pricing) return;
    this.pricing = (async () => {
      for (const np of this.src.cluster.listNodePools()) {
        try {
          this.instanceTypes[np.metadata.name ?? ''] = await cp.instanceTypes(np);
        } catch {
          // the disruption pass's input fills prices in later; the view shows them as unknown meanwhile
        }
      }
    })().finally(() => {
      this.pricing = undefined;
      this.changed();
    });
  }

  private setError(e: string | undefined): void {
    this.error = e;
    this.changed();
  }

  private provisioned(r: ProvisioningResult): void {
    const m = new Map<string, string>();
    for (const u of r.result?.unschedulable ?? [])
      m.set(
        `${u.pod.metadata.namespace ?? 'default'}/${u.pod.metadata.name ?? ''}`,
        `${u.code}: ${u.message}`,
      );
    for (const s of r.skipped)
      for (const p of s.plan.pods)
        m.set(`${p.metadata.namespace ?? 'default'}/${p.metadata.name ?? ''}`, s.reason);
    this.unschedulable = m;
    for (const e of provisioningEntries(r, this.src.clock?.now() ?? Date.now())) this.log.add(e);
    this.changed();
  }

  private passed(p: DisruptionPass): void {
    for (const e of disruptionEntries(p, this.blocks)) this.log.add(e);
    this.changed();
  }

  private send(m: HubMessage): void {
    for (const v of this.viewers) v(m);
  }
}
