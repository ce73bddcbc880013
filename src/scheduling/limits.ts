/**
 * NodePool `spec.limits` accounting (upstream `NodePool.spec.limits`, `pkg/controllers/provisioning/scheduling`
 * `filterByRemainingResources` / `subtractMax`, and the NodePool counter's `nodes` resource): every resource named
 * in `limits` is a running total. Capacity resources (cpu, memory, extended resources) count the capacity of each
 * node or planned NodeClaim; `nodes` counts one per node or NodeClaim.
 *
 * Pure. Used by the scheduler (`nodeclaim.ts` {@link PoolContext}), the usage it starts from (state, simulate,
 * the disruption simulation) and the provisioner's final check before a NodeClaim is created.
 */
import type { Resources } from '../apis/quantity.ts';

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
