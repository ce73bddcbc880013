/**
 * NodePool `spec.limits` accounting in one place (upstream `NodePool.spec.limits`,
 * `pkg/controllers/provisioning/scheduling` `filterByRemainingResources` / `subtractMax`,
 * `pkg/controllers/provisioning/provisioner.go` the limit check before a create, and the NodePool counter
 * `pkg/controllers/nodepool/counter` for `status.resources`): every resource named in `limits` is a running total.
 * Capacity resources (cpu, memory, extended resources) count the capacity of each node or planned NodeClaim;
 * `nodes` counts one per node or NodeClaim.
 *
 * The rules, each one function:
 * - what one node or NodeClaim uses: {@link limitUse}, {@link limitCapacity}, {@link nodeClaimCapacity},
 *   {@link planCapacity};
 * - what a pool uses: {@link usageByPool} / {@link poolUsage} (limits: NodeClaim capacity first), the running
 *   totals a simulation keeps of bare Nodes ({@link nodeLimitCapacity}, {@link addUsage}, {@link copyUsage}) and
 *   {@link statusResources} (`status.resources`: Node capacity first, as upstream's counter);
 * - what is left and whether a NodeClaim fits: {@link remainingLimits}, {@link withinRemaining}, {@link exceeds}.
 *
 * Pure (imports only `apis/` and `scheduling/`). Used by the scheduler (`nodeclaim.ts` `PoolContext`), cluster
 * state, the NodePool status controller, the provisioner's launcher (its final check before a create), the
 * disruption orchestrator and simulator (`disruption/context.ts`) and the offline simulation's input
 * (`simulate/input.ts`).
 */
import type { Node } from '../apis/core.ts';
import type { InstanceType } from '../apis/instancetype.ts';
import type { NodeClaim, NodePool } from '../apis/karpenter.ts';
import { LabelInstanceType, LabelNodePool } from '../apis/labels.ts';
import { formatResources, parseResources, type Resources } from '../apis/quantity.ts';
import { addInto } from './resources.ts';

/** The `limits` / `status.resources` key counting nodes (upstream `resources.nodes`). */
export const LimitNodes = 'nodes';

/**
 * How much of limited resource `name` one node with `capacity` uses: 1 for {@link LimitNodes}, else its capacity
 * of that resource (0 when it has none). Units are the internal ones of `apis/quantity.ts`.
 */
export function limitUse(name: string, capacity: Readonly<Resources>): number {
  return name === LimitNodes ? 1 : (capacity[name] ?? 0);
}

/**
 * A node's contribution to NodePool usage: its capacity plus `nodes: 1`. Returns a new object.
 */
export function limitCapacity(capacity: Readonly<Resources>): Resources {
  return { ...capacity, [LimitNodes]: 1 };
}

/**
 * The capacity a Node without a NodeClaim counts against its NodePool's limits (an existing node of an offline
 * simulation or of a disruption pass): its `status.capacity`, else its `status.allocatable`, plus `nodes: 1`.
 * @throws QuantityParseError when that list is malformed: the caller reports it or counts the node as
 * `limitCapacity({})` (one node, no capacity).
 */
export function nodeLimitCapacity(node: Node): Resources {
  return limitCapacity(parseResources(node.status?.capacity ?? node.status?.allocatable));
}

/** Per resource, the largest capacity among `types` (upstream `subtractMax`'s "max"); `{}` for none. */
export function largestCapacity(types: Iterable<{ readonly capacity: Readonly<Resources> }>): Resources {
  const out: Resources = {};
  for (const it of types) for (const [k, v] of Object.entries(it.capacity)) out[k] = Math.max(out[k] ?? 0, v);
  return out;
}

/**
 * The instance types a NodeClaim may still become: the values of its `node.kubernetes.io/instance-type In`
 * requirement resolved in `instanceTypes` (unknown names dropped), in requirement order. Empty when there is
 * no such requirement or no map.
 */
export function instanceTypeOptionsOf(
  nodeClaim: NodeClaim,
  instanceTypes?: ReadonlyMap<string, InstanceType>,
): InstanceType[] {
  if (!instanceTypes) return [];
  const req = (nodeClaim.spec?.requirements ?? []).find(
    (r) => r.key === LabelInstanceType && r.operator === 'In',
  );
  const out: InstanceType[] = [];
  for (const v of req?.values ?? []) {
    const it = instanceTypes.get(v);
    if (it) out.push(it);
  }
  return out;
}

/**
 * The capacity a NodeClaim counts against its NodePool's limits: its `status.capacity` once launched (`{}` when
 * malformed), else — with `instanceTypes` — the per-resource largest of its instance-type options
 * ({@link instanceTypeOptionsOf}), else `{}`.
 */
export function nodeClaimCapacity(
  nodeClaim: NodeClaim,
  instanceTypes?: ReadonlyMap<string, InstanceType>,
): Resources {
  if (nodeClaim.status?.capacity && Object.keys(nodeClaim.status.capacity).length > 0) {
    try {
      return parseResources(nodeClaim.status.capacity);
    } catch {
      return {};
    }
  }
  return largestCapacity(instanceTypeOptionsOf(nodeClaim, instanceTypes));
}

/**
 * The capacity a planned NodeClaim reserves against the limits: per resource, the largest capacity among the
 * first `maxOptions` of its instance-type options (the ones the NodeClaim keeps; pass the scheduler's
 * `MAX_INSTANCE_TYPES`), plus `nodes: 1`.
 */
export function planCapacity(
  plan: { readonly instanceTypeOptions: readonly InstanceType[] },
  maxOptions: number,
): Resources {
  return limitCapacity(largestCapacity(plan.instanceTypeOptions.slice(0, maxOptions)));
}

/**
 * One node of a pool as limits accounting sees it: the `karpenter.sh/nodepool` it belongs to, its NodeClaim
 * and/or its Node (cluster state's `StateNode` has this shape).
 */
export interface PoolMember {
  nodePool?: string | undefined;
  nodeClaim?: NodeClaim | undefined;
  node?: Node | undefined;
}

/**
 * Resources used per NodePool against `spec.limits` by `members`: each NodeClaim's {@link nodeClaimCapacity}
 * (with `instanceTypes`, a NodeClaim not launched yet counts its largest option), else the Node's
 * `status.capacity` (`{}` when malformed), plus `nodes: 1` each. Members without a NodePool are ignored.
 */
export function usageByPool(
  members: Iterable<PoolMember>,
  instanceTypes?: ReadonlyMap<string, InstanceType>,
): Record<string, Resources> {
  const out: Record<string, Resources> = {};
  for (const m of members) {
    if (!m.nodePool) continue;
    let cap: Resources = {};
    if (m.nodeClaim) cap = nodeClaimCapacity(m.nodeClaim, instanceTypes);
    if (Object.keys(cap).length === 0 && m.node) {
      try {
        cap = parseResources(m.node.status?.capacity);
      } catch {
        cap = {};
      }
    }
    addUsage(out, m.nodePool, limitCapacity(cap));
  }
  return out;
}

/**
 * Adds `use` (a {@link limitCapacity}, or the usage of creates in flight) to `usage[nodePool]` in place, creating
 * the pool's total when absent; with `sign` -1 takes it off instead (a node a simulation removes). Returns
 * `usage`.
 */
export function addUsage(
  usage: Record<string, Resources>,
  nodePool: string,
  use: Readonly<Resources>,
  sign: 1 | -1 = 1,
): Record<string, Resources> {
  const total = usage[nodePool] ?? {};
  usage[nodePool] = total;
  for (const [k, v] of Object.entries(use)) total[k] = (total[k] ?? 0) + sign * v;
  return usage;
}

/** A copy of per-NodePool `usage` whose totals can be changed without touching `usage`'s. */
export function copyUsage(usage: Readonly<Record<string, Readonly<Resources>>>): Record<string, Resources> {
  const out: Record<string, Resources> = {};
  for (const [pool, total] of Object.entries(usage)) out[pool] = { ...total };
  return out;
}

/**
 * What NodePool `nodePool` uses against its limits: {@link usageByPool} of `members` for that pool plus
 * `reserved` (capacity of creates still on the wire, which state does not hold yet). Returns a new object.
 */
export function poolUsage(
  nodePool: string,
  members: Iterable<PoolMember>,
  instanceTypes?: ReadonlyMap<string, InstanceType>,
  reserved?: Readonly<Resources>,
): Resources {
  const usage = { ...(usageByPool(members, instanceTypes)[nodePool] ?? {}) };
  return reserved ? addInto(usage, reserved) : usage;
}

/** `limits` minus `usage`, for the limited resources only (may be negative). Returns a new object. */
export function remainingLimits(
  limits: Readonly<Resources>,
  usage: Readonly<Resources> | undefined,
): Resources {
  const out: Resources = { ...limits };
  for (const [k, v] of Object.entries(usage ?? {})) if (k in out) out[k]! -= v;
  return out;
}

/**
 * True when a node of `capacity` stays within `remaining` for every limited resource (upstream
 * `filterByRemainingResources`; `nodes` counts 1).
 */
export function withinRemaining(remaining: Readonly<Resources>, capacity: Readonly<Resources>): boolean {
  for (const [k, v] of Object.entries(remaining)) if (limitUse(k, capacity) > v) return false;
  return true;
}

/**
 * Why creating a NodeClaim needing `capacity` (see {@link planCapacity}) would exceed the NodePool's
 * `spec.limits` given `usage`, or `undefined` when it fits (or there are no limits). Only limited resources are
 * compared. Message example: `cpu: 8 needed, 4 of 10 remaining` (quantities formatted as in `status.resources`).
 * @throws QuantityParseError when `spec.limits` is malformed.
 */
export function exceeds(
  nodePool: NodePool,
  usage: Readonly<Resources>,
  capacity: Readonly<Resources>,
): string | undefined {
  if (!nodePool.spec.limits) return undefined;
  const limits = parseResources(nodePool.spec.limits);
  const left = remainingLimits(limits, usage);
  const over: string[] = [];
  for (const [k, limit] of Object.entries(limits)) {
    const need = capacity[k] ?? 0;
    const remaining = left[k] ?? limit;
    if (need > remaining)
      over.push(
        `${k}: ${fmt(k, need)} needed, ${fmt(k, Math.max(0, remaining))} of ${fmt(k, limit)} remaining`,
      );
  }
  return over.length ? over.join('; ') : undefined;
}

function fmt(name: string, v: number): string {
  return formatResources({ [name]: v })[name] ?? String(v);
}

/**
 * A NodePool's `status.resources` and `status.nodes` (upstream `pkg/controllers/nodepool/counter`): over the
 * NodeClaims labelled for `nodePool` (each with the Node of its provider ID) and the labelled Nodes no NodeClaim
 * names, the sum of the Node's capacity when it exists, else the NodeClaim's (so in-flight NodeClaims count);
 * malformed capacities add nothing. `resources` are quantity strings with cpu/memory/pods/ephemeral-storage
 * always present, plus `nodes` (their count); `nodes` is the count.
 */
export function statusResources(
  nodePool: string,
  nodeClaims: readonly NodeClaim[],
  nodes: readonly Node[],
): { resources: Record<string, string>; nodes: number } {
  const total: Resources = { cpu: 0, memory: 0, pods: 0, 'ephemeral-storage': 0 };
  const add = (list: Record<string, string | number> | undefined): void => {
    try {
      addInto(total, parseResources(list));
    } catch {
      // a malformed capacity adds nothing
    }
  };
  const byID = new Map<string, Node>();
  for (const n of nodes) if (n.spec?.providerID) byID.set(n.spec.providerID, n);
  const seen = new Set<string>();
  let count = 0;
  for (const nc of nodeClaims) {
    if (nc.metadata.labels?.[LabelNodePool] !== nodePool) continue;
    const id = nc.status?.providerID;
    const node = id ? byID.get(id) : undefined;
    if (id) seen.add(id);
    count++;
    add(node?.status?.capacity ?? nc.status?.capacity);
  }
  for (const n of nodes) {
    if (n.metadata.labels?.[LabelNodePool] !== nodePool) continue;
    if (n.spec?.providerID && seen.has(n.spec.providerID)) continue;
    count++;
    add(n.status?.capacity);
  }
  return { resources: { ...formatResources(total), [LimitNodes]: String(count) }, nodes: count };
}
