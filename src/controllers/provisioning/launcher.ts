/**
 * The one place NodeClaims are created: the provisioner's new capacity and the disruption orchestrator's
 * replacements both launch through one {@link NodeClaimLauncher} (upstream kubernetes-sigs/karpenter: disruption
 * calls `provisioner.CreateNodeClaims`, and both read one cluster state). Right before each create the NodePool's
 * `spec.limits` are checked against cluster state — every NodeClaim of the pool, in-flight ones included — plus
 * the creates this launcher has on the wire, so two callers racing for the last of a limit never overshoot it
 * together (the check and the reservation happen in one synchronous step).
 */
import type { Logger } from 'pino';
import type { NodeClaim, NodePool } from '../../apis/karpenter.ts';
import type { Resources } from '../../apis/quantity.ts';
import type { CloudProvider, InstanceType } from '../../cloudprovider/types.ts';
import type { KubeClient } from '../../kube/client.ts';
import { objectRef } from '../../kube/logger.ts';
import { exceeds, planCapacity, poolUsage } from '../../scheduling/limits.ts';
import { MAX_INSTANCE_TYPES } from '../../scheduling/nodeclaim.ts';
import type { NodeClaimPlan } from '../../scheduling/types.ts';
import { type Cluster, nominatedPodUids } from '../../state/cluster.ts';
import { podKey } from '../../state/pods.ts';
import { errorMessage } from '../runtime/index.ts';
import { instanceTypeIndex } from './input.ts';
import { type NodePoolHash, nodeClaimFromPlan, templateHash } from './nodeclaim.ts';

/** Dependencies of {@link NodeClaimLauncher}. */
export interface NodeClaimLauncherDeps {
  client: KubeClient;
  cluster: Cluster;
  /** Resolves a NodePool's instance types when the caller passes no index (capacity of in-flight NodeClaims). */
  cloudProvider: Pick<CloudProvider, 'instanceTypes'>;
  logger: Logger;
  /** The NodePool hash stamped on NodeClaims; default {@link templateHash}. */
  nodePoolHash?: (nodePool: NodePool) => NodePoolHash;
}

/** Options of one {@link NodeClaimLauncher.launch}. */
export interface LaunchOptions {
  /**
   * Instance types by name, to size NodeClaims that have no `status.capacity` yet (the provisioner passes the
   * pass's index); resolved from the cloud provider for the plan's NodePool when absent.
   */
  instanceTypes?: ReadonlyMap<string, InstanceType>;
  /**
   * NodeClaim names whose capacity does not count against the limits: a disruption command's candidates, which
   * the replacement simulation already sized the NodePool without (upstream `SimulateScheduling`).
   */
  excludeFromUsage?: ReadonlySet<string>;
  /** Extra annotations on the NodeClaim (e.g. which candidates a replacement is for). */
  annotations?: Readonly<Record<string, string>>;
  /**
   * Refuse (`code: 'claimed'`) when a pending pod of the plan is nominated to another NodeClaim: the plan was
   * computed before that capacity was bought (disruption replacements pass this). Pods another create on the
   * wire is for are always refused.
   */
  refuseClaimedPods?: boolean;
  /** Seconds the plan's pending pods stay nominated to the created NodeClaim (default: the cluster's 20 s). */
  nominationTTLSeconds?: number;
}

/** What {@link NodeClaimLauncher.launch} did: the created NodeClaim, or why none was created. */
export type LaunchResult =
  | { ok: true; nodeClaim: NodeClaim }
  | {
      ok: false;
      /** `limits`: the NodePool's `spec.limits` would be exceeded (or are malformed); `gone`: NodePool missing or deleting; `api`: the create failed. */
      code: 'limits' | 'gone' | 'claimed' | 'api';
      /** Human-readable, names the NodePool (e.g. `NodePool "a" limits exceeded: cpu: 8 needed, 2 of 10 remaining`). */
      reason: string;
      /** For `limits`: the exceeded part alone (`cpu: 8 needed, ...`). */
      over?: string;
    };

/** Creates NodeClaims from plans under the NodePool limits; see the module doc. One per operator, shared. */
export class NodeClaimLauncher {
  /** NodePool → capacity (+ `nodes`) of creates on the wire: counted against limits until state has them. */
  private readonly creating = new Map<string, Resources>();
  /** Pending pods (namespace/name) a create on the wire is for → how many such creates. */
  private readonly launchingFor = new Map<string, number>();

  constructor(private readonly deps: NodeClaimLauncherDeps) {}

  /** NodePool usage (internal units) of the creates this launcher has in flight, by NodePool name. */
  inFlight(): ReadonlyMap<string, Readonly<Resources>> {
    return this.creating;
  }

  private reserve(pool: string, capacity: Resources, sign: 1 | -1): void {
    const r = this.creating.get(pool) ?? {};
    for (const [k, v] of Object.entries(capacity)) r[k] = (r[k] ?? 0) + sign * v;
    this.creating.set(pool, r);
  }

  /**
   * Creates the NodeClaim of `plan` when its NodePool exists, is not deleting, and its limits hold for
   * usage (state, minus `excludeFromUsage`, plus in-flight creates) + the plan's capacity (per resource, the largest
   * of the instance-type options the NodeClaim keeps: `scheduling/limits.ts` `planCapacity`). The created NodeClaim enters cluster state at once. Never throws: API
   * failures come back as `code: 'api'`.
   */
  async launch(plan: NodeClaimPlan, o: LaunchOptions = {}): Promise<LaunchResult> {
    const { cluster, client } = this.deps;
    let index = o.instanceTypes;
    if (!index) {
      const np = cluster.getNodePool(plan.nodePool);
      try {
        index = instanceTypeIndex({
          [plan.nodePool]: np ? await this.deps.cloudProvider.instanceTypes(np) : plan.instanceTypeOptions,
        });
      } catch {
        index = instanceTypeIndex({ [plan.nodePool]: plan.instanceTypeOptions });
      }
    }
    // From here to the reservation nothing awaits: the limit check and the reservation are one step.
    const pool = cluster.getNodePool(plan.nodePool);
    if (!pool || pool.metadata.deletionTimestamp)
      return {
        ok: false,
        code: 'gone',
        reason: `NodePool "${plan.nodePool}" no longer exists or is being deleted`,
      };
    const capacity = planCapacity(plan, MAX_INSTANCE_TYPES);
    let over: string | undefined;
    try {
      const exclude = o.excludeFromUsage;
      const nodes = cluster
        .stateNodes()
        .filter((sn) => !exclude?.has(sn.nodeClaim?.metadata.name ?? sn.name));
      over = exceeds(
        pool,
        poolUsage(plan.nodePool, nodes, index, this.creating.get(plan.nodePool)),
        capacity,
      );
    } catch (err) {
      over = `spec.limits is malformed: ${errorMessage(err)}`;
    }
    if (over)
      return {
        ok: false,
        code: 'limits',
        over,
        reason: `NodePool "${plan.nodePool}" limits exceeded: ${over}`,
      };
    const pending = plan.pods.map((p) => podKey(p)).filter((k) => !cluster.getPod(k)?.spec?.nodeName);
    for (const key of pending) {
      const n = o.refuseClaimedPods ? cluster.nominationFor(key) : undefined;
      const other = this.launchingFor.has(key)
        ? 'a NodeClaim being created'
        : n?.target.kind === 'nodeclaim'
          ? `nodeclaim ${n.target.name}`
          : undefined;
      if (other)
        return {
          ok: false,
          code: 'claimed',
          reason: `pending pod ${key} already has capacity coming (${other}); not launching for it twice`,
        };
    }
    this.warnRelaunch(pending);
    for (const key of pending) this.launchingFor.set(key, (this.launchingFor.get(key) ?? 0) + 1);
    const release = () => {
      for (const key of pending) {
        const c = (this.launchingFor.get(key) ?? 1) - 1;
        if (c <= 0) this.launchingFor.delete(key);
        else this.launchingFor.set(key, c);
      }
    };
    const nodeClaim = nodeClaimFromPlan(plan, pool, (this.deps.nodePoolHash ?? templateHash)(pool));
    if (o.annotations)
      nodeClaim.metadata.annotations = { ...(nodeClaim.metadata.annotations ?? {}), ...o.annotations };
    this.reserve(plan.nodePool, capacity, 1);
    let created: NodeClaim;
    try {
      created = (await client.create(nodeClaim)) as NodeClaim;
    } catch (err) {
      this.reserve(plan.nodePool, capacity, -1);
      release();
      this.deps.logger.error(
        { nodepool: plan.nodePool, err: errorMessage(err) },
        'creating nodeclaim failed',
      );
      return { ok: false, code: 'api', reason: `creating nodeclaim: ${errorMessage(err)}` };
    }
    cluster.updateNodeClaim(created);
    this.reserve(plan.nodePool, capacity, -1);
    // nominate before releasing the pods, so no other launch sees them unclaimed in between
    const byKey = new Map(plan.pods.map((p) => [podKey(p), p]));
    for (const key of pending) {
      const pod = byKey.get(key);
      if (pod)
        cluster.nominate(
          pod,
          { kind: 'nodeclaim', name: created.metadata.name ?? '' },
          o.nominationTTLSeconds,
        );
    }
    release();
    return { ok: true, nodeClaim: created };
  }

  /**
   * Warns for each pending pod of this launch that another in-flight NodeClaim (not initialized, not being
   * deleted) lists in its `capenter.dev/nominated-pods`: capacity is already coming for the pod, and only a
   * lost nomination lets it be planned again. The warning says how cluster state last saw the pod's nomination
   * end. The soak's `duplicate-nodeclaim` invariant catches the outcome; this says why.
   */
  private warnRelaunch(pending: readonly string[]): void {
    const { cluster } = this.deps;
    const keyByUid = new Map<string, string>();
    for (const key of pending) {
      const uid = cluster.getPod(key)?.metadata.uid;
      if (uid) keyByUid.set(uid, key);
    }
    if (keyByUid.size === 0) return;
    for (const nc of cluster.listNodeClaims()) {
      if (nc.metadata.deletionTimestamp || cluster.nodeClaimInitialized(nc)) continue;
      for (const uid of nominatedPodUids(nc)) {
        const key = keyByUid.get(uid);
        if (!key) continue;
        const ended = cluster.endedNomination(key);
        const [namespace, podName] = key.includes('/') ? key.split('/', 2) : ['', key];
        this.deps.logger.warn(
          {
            Pod: objectRef(podName, namespace),
            NodeClaim: objectRef(nc.metadata.name),
            pod: key,
            nodeclaim: nc.metadata.name,
            nomination: ended
              ? `${ended.target.kind}/${ended.target.name}: ${ended.reason} at ${new Date(ended.at).toISOString()}`
              : 'none ended in this process',
          },
          'launching for a pending pod that an in-flight nodeclaim was created for',
        );
      }
    }
  }
}
