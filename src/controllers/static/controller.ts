/**
 * `static.capacity`: keeps a static NodePool (`spec.replicas` set) at exactly `replicas` NodeClaims — upstream
 * kubernetes-sigs/karpenter v1.14 `pkg/controllers/static/provisioning` and `static/deprovisioning` in one
 * controller keyed by NodePool name (both reconcile the same key on the same events; here one pass does the
 * direction that applies). Registered always; acts only with the `StaticCapacity` feature gate on.
 *
 * A reconcile of NodePool `name`:
 * - skips NodePools that are gone, deleting, dynamic (no `spec.replicas`) or on a NodeClass kind the provider
 *   does not support (upstream `IsManaged`);
 * - gate off: upstream registers no static controller and its provisioner skips static NodePools, so they get
 *   no capacity at all; capenter says so: a Warning Event `StaticCapacityDisabled` on the NodePool and a log line;
 * - above replicas (`active − replicas` > 0): deletes the NodeClaims {@link staticScaleDownCandidates} picks
 *   (unresolved, then empty, then cheapest to disrupt) — no wait for the state sync, as upstream;
 * - below replicas: with the NodePool `Ready` and cluster state synced, creates {@link staticScaleUp} NodeClaims
 *   from the NodePool template through the shared {@link NodeClaimLauncher} (which checks `limits.nodes` against
 *   every NodeClaim of the pool and the creates on the wire). The NodeClaims carry the template requirements and
 *   no instance-type list: the cloud provider's `create` picks the cheapest compatible offering, as upstream
 *   (`NodeClaimTemplate.ToNodeClaim` skips the instance-type injection for static NodeClaims). When `limits.nodes`
 *   stops it, upstream only logs "nodepool node limit reached"; capenter also publishes a Warning Event
 *   `NodeLimitReached` on the NodePool naming replicas, limit and counts;
 * - requeues after 60 s (30 s while limited), as upstream.
 * NodeClaim create and delete events of a static NodePool (by the `karpenter.sh/nodepool` label) re-enqueue it.
 */
import type { NodeClaim, NodePool } from '../../apis/karpenter.ts';
import { LabelNodePool } from '../../apis/labels.ts';
import {
  nodeLimitOf,
  type StaticCounts,
  type StaticMember,
  staticPlan,
  staticScaleDownCandidates,
  staticScaleDownCount,
  staticScaleUp,
} from '../../disruption/static.ts';
import { type Cluster, conditionOf, type StateNode } from '../../state/cluster.ts';
import { AnnotationReplacementFor } from '../disruption/orchestration.ts';
import type { NodeClaimLauncher } from '../provisioning/launcher.ts';
import {
  type Controller,
  type ControllerDeps,
  defineController,
  errorMessage,
  type InformerController,
  type InformerSyncOptions,
  type ReconcileResult,
  watch,
} from '../runtime/index.ts';

/** Seconds between resyncs of a static NodePool (upstream `RequeueAfter: time.Minute`). */
export const STATIC_RESYNC_SECONDS = 60;
/** Seconds before retrying while `limits.nodes` blocks scale-up (upstream 30 s). */
export const STATIC_LIMITED_SECONDS = 30;

/** Options of {@link StaticCapacityController}. */
export interface StaticCapacityOptions extends ControllerDeps, InformerSyncOptions {
  cluster: Cluster;
  /** The operator's shared launcher (the provisioner's), so limits see every create on the wire. */
  launcher: NodeClaimLauncher;
  /** The `StaticCapacity` feature gate (upstream default false). */
  enabled: boolean;
}

/**
 * A static NodePool's members and counts in cluster state (upstream `NodePoolState.GetNodeCount`): deleting =
 * NodeClaim or Node being deleted; pending disruption = marked for deletion (a disruption command's candidate), or
 * named in a live NodeClaim's `capenter.dev/replacement-for` annotation — the orchestrator launches a replacement
 * before it taints and marks the candidate, while upstream marks first, so without this a reconcile in between
 * would see `replicas + 1` active NodeClaims and scale the new replacement away. Such candidates are never picked
 * for scale-down.
 */
export function staticState(
  cluster: Cluster,
  nodePool: string,
): { counts: StaticCounts; members: StaticMember[] } {
  const counts: StaticCounts = { active: 0, deleting: 0, pendingDisruption: 0 };
  const members: StaticMember[] = [];
  const nodes = cluster.stateNodes().filter((sn) => sn.nodePool === nodePool && sn.nodeClaim);
  const replaced = new Set<string>();
  for (const sn of nodes) {
    const nc = sn.nodeClaim as NodeClaim;
    if (nc.metadata.deletionTimestamp) continue;
    for (const n of (nc.metadata.annotations?.[AnnotationReplacementFor] ?? '').split(','))
      if (n) replaced.add(n);
  }
  for (const sn of nodes) {
    const nc = sn.nodeClaim as NodeClaim;
    const deleting = !!nc.metadata.deletionTimestamp || !!sn.node?.metadata.deletionTimestamp;
    const pending = sn.markedForDeletion || replaced.has(nc.metadata.name ?? '');
    if (deleting) counts.deleting++;
    else if (pending) counts.pendingDisruption++;
    else counts.active++;
    members.push({ nodeClaim: nc, pods: podsOf(sn), deleting: deleting || pending });
  }
  return { counts, members };
}

function podsOf(sn: StateNode) {
  return [...sn.pods, ...sn.daemonSetPods];
}

/** The static capacity controller; see the module doc. */
export class StaticCapacityController implements Controller {
  readonly name = 'static.capacity';
  private readonly kit: InformerController;
  /** NodePool name → generation already told that the gate is off (one Event per generation). */
  private readonly toldDisabled = new Map<string, number>();

  constructor(private readonly opts: StaticCapacityOptions) {
    const poolOf = (nc: NodeClaim) => nc.metadata.labels?.[LabelNodePool];
    this.kit = defineController({
      name: this.name,
      deps: opts,
      watches: [
        watch('NodePool', {
          map: (np, ev) => {
            if (np.spec?.replicas === undefined || ev.type === 'delete') return undefined;
            if (ev.type === 'add') return np.metadata.name;
            const was = ev.old;
            const readyNow = conditionOf(np, 'Ready')?.status === 'True';
            const readyBefore = conditionOf(was, 'Ready')?.status === 'True';
            const changed = was.spec?.replicas !== np.spec.replicas || (readyNow && !readyBefore);
            return changed ? np.metadata.name : undefined;
          },
        }),
        watch('NodeClaim', {
          map: (nc, ev) => {
            if (ev.type === 'update' && (ev.old.metadata.deletionTimestamp || !nc.metadata.deletionTimestamp))
              return undefined;
            const pool = poolOf(nc);
            return pool && opts.cluster.getNodePool(pool)?.spec.replicas !== undefined ? pool : undefined;
          },
        }),
      ],
      reconcile: (key) => this.reconcile(key),
    });
  }

  /** Runs until `signal` aborts (see {@link defineController}); never rejects. */
  start(signal: AbortSignal): Promise<void> {
    return this.kit.start(signal);
  }

  /** Reconciles one NodePool by name (exposed for tests). */
  async reconcile(name: string): Promise<ReconcileResult> {
    const np = await this.opts.client.tryGet('NodePool', name);
    if (!np || np.spec.replicas === undefined || np.metadata.deletionTimestamp) return {};
    const ref = np.spec.template.spec.nodeClassRef;
    const kinds = this.opts.cloudProvider.supportedNodeClasses();
    if (!kinds.some((k) => k.group === ref.group && k.kind === ref.kind)) return {};
    if (!this.opts.enabled) return this.disabled(np);
    const { counts, members } = staticState(this.opts.cluster, name);
    const replicas = np.spec.replicas;
    const down = staticScaleDownCount(replicas, counts);
    if (down > 0) return this.scaleDown(np, members, down, counts);
    if (conditionOf(np, 'Ready')?.status !== 'True') return {};
    if (!(await this.opts.cluster.synced())) return { requeueAfter: 1 };
    return this.scaleUp(np, counts);
  }

  private async disabled(np: NodePool): Promise<ReconcileResult> {
    const name = np.metadata.name as string;
    const gen = np.metadata.generation ?? 0;
    if (this.toldDisabled.get(name) === gen) return {};
    this.toldDisabled.set(name, gen);
    const msg = `NodePool "${name}" sets spec.replicas=${np.spec.replicas} (static capacity) but the StaticCapacity feature gate is off, so no NodeClaims are created or removed for it and provisioning does not use it; enable it with --feature-gates StaticCapacity=true (FEATURE_GATES), or recreate the NodePool without spec.replicas (a NodePool cannot switch between static and dynamic)`;
    this.opts.logger.warn({ controller: this.name, nodepool: name }, msg);
    await this.opts.recorder.publish(np, 'Warning', 'StaticCapacityDisabled', msg);
    return {};
  }

  private async scaleUp(np: NodePool, counts: StaticCounts): Promise<ReconcileResult> {
    const name = np.metadata.name as string;
    const replicas = np.spec.replicas as number;
    let limit: number;
    try {
      limit = nodeLimitOf(np);
    } catch (err) {
      await this.opts.recorder.publish(np, 'Warning', 'InvalidLimits', errorMessage(err));
      return { requeueAfter: STATIC_LIMITED_SECONDS };
    }
    const d = staticScaleUp(replicas, counts, limit);
    const log = this.opts.logger.child({ controller: this.name, nodepool: name });
    if (d.create === 0 && !d.limited) return { requeueAfter: STATIC_RESYNC_SECONDS };
    let created = 0;
    if (d.create > 0) {
      const plan = staticPlan(np, await this.opts.cloudProvider.instanceTypes(np));
      if (typeof plan === 'string') {
        await this.opts.recorder.publish(np, 'Warning', 'NoCompatibleInstanceTypes', plan);
        return { requeueAfter: STATIC_LIMITED_SECONDS };
      }
      log.info(
        { current: counts.active, desired: replicas, 'provision-count': d.create },
        'provisioning nodeclaims to satisfy replica count',
      );
      for (let i = 0; i < d.create; i++) {
        const r = await this.opts.launcher.launch(plan);
        if (r.ok) {
          created++;
          continue;
        }
        if (r.code === 'limits') break;
        log.error({ reason: r.reason }, 'creating static nodeclaim failed');
        return { requeue: true };
      }
    }
    if (created < replicas - counts.active) {
      const msg = `NodePool "${name}" has ${counts.active + created} of ${replicas} replicas; spec.limits.nodes=${np.spec.limits?.nodes} allows no more (active ${counts.active + created}, deleting ${counts.deleting}, pending disruption ${counts.pendingDisruption}); raise limits.nodes or lower replicas`;
      log.info({ msg }, 'nodepool node limit reached');
      await this.opts.recorder.publish(np, 'Warning', 'NodeLimitReached', msg);
      return { requeueAfter: STATIC_LIMITED_SECONDS };
    }
    return { requeueAfter: STATIC_RESYNC_SECONDS };
  }

  private async scaleDown(
    np: NodePool,
    members: StaticMember[],
    count: number,
    counts: StaticCounts,
  ): Promise<ReconcileResult> {
    const name = np.metadata.name as string;
    const picks = staticScaleDownCandidates(np, members, count, this.opts.clock.now());
    const log = this.opts.logger.child({ controller: this.name, nodepool: name });
    log.info(
      { current: counts.active, desired: np.spec.replicas, 'deprovision-count': count },
      'deprovisioning nodeclaims to satisfy replica count',
    );
    const failed: string[] = [];
    for (const p of picks) {
      const ncName = p.nodeClaim.metadata.name as string;
      try {
        await this.opts.client.tryDelete('NodeClaim', ncName);
        const now = await this.opts.client.tryGet('NodeClaim', ncName);
        if (now) this.opts.cluster.updateNodeClaim(now);
        log.debug({ nodeclaim: ncName, why: p.why }, 'deleting nodeclaim');
      } catch (err) {
        failed.push(`${ncName}: ${errorMessage(err)}`);
      }
    }
    const deleted = picks.map((p) => `${p.nodeClaim.metadata.name} (${p.why})`).join(', ');
    await this.opts.recorder.publish(
      np,
      'Normal',
      'ScaledDown',
      `NodePool "${name}" replicas ${np.spec.replicas}: deleting overprovisioned NodeClaims ${deleted}`,
    );
    if (failed.length > 0) throw new Error(`failed to deprovision nodeclaims: ${failed.join('; ')}`);
    return { requeueAfter: STATIC_RESYNC_SECONDS };
  }
}
