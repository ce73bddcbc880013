/**
 * Printing a {@link SimulationResult}: the stable JSON document (`-o json`, documented in docs/simulate.md)
 * and the human table (`-o table`, default), plus the error lines written to stderr.
 */
import type { NodePool } from '../apis/karpenter.ts';
import type { Resources } from '../apis/quantity.ts';
import type { InstanceType } from '../cloudprovider/types.ts';
import { daemonOverheadGroups } from '../scheduling/daemonoverhead.ts';
import { instanceTypeIncompatibility, providerKeys } from '../scheduling/instancetypes.ts';
import { Requirements } from '../scheduling/requirements.ts';
import { fits } from '../scheduling/resources.ts';
import type { NodeClaimPlan } from '../scheduling/types.ts';
import type { SimulationIssue } from './input.ts';
import { plusDaemons, type SimulationResult } from './run.ts';

/** The `-o json` document. Keys and their meaning are stable (docs/simulate.md). */
export interface SimulationJSON {
  region: string;
  nodeClaims: SimulationResult['nodeClaims'];
  placements: SimulationResult['placements'];
  unschedulable: SimulationResult['unschedulable'];
  totals: SimulationResult['totals'];
  notices: string[];
  unknownKinds: Record<string, number>;
  errors: SimulationIssue[];
  /** Present only with `--explain`. */
  explanations?: SimulationResult['explanations'];
}

/** Builds the `-o json` document (plain data, deterministic key order). */
export function toJSON(result: SimulationResult, opts: { explain?: boolean } = {}): SimulationJSON {
  const doc: SimulationJSON = {
    region: result.region,
    nodeClaims: result.nodeClaims,
    placements: result.placements,
    unschedulable: result.unschedulable,
    totals: result.totals,
    notices: result.notices,
    unknownKinds: result.unknownKinds,
    errors: result.errors,
  };
  if (opts.explain) doc.explanations = result.explanations;
  return doc;
}

/** One stderr line per input problem: `error: <file>:<line> (document <i>): <Kind> "<name>": <field>: <text>`. */
export function formatIssue(e: SimulationIssue): string {
  return `error: ${e.message}`;
}

/** Left-aligned padded text table (first row is the header). */
export function renderTable(rows: string[][], rightAligned: ReadonlySet<number> = new Set()): string {
  const widths: number[] = [];
  for (const r of rows) {
    r.forEach((c, i) => {
      widths[i] = Math.max(widths[i] ?? 0, c.length);
    });
  }
  return rows
    .map((r) =>
      r
        .map((c, i) => (rightAligned.has(i) ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

const pct = (v: number) => `${(v * 100).toFixed(1)}%`;
const usd = (v: number) => `$${v.toFixed(4)}`;

/** The human-readable plan (`-o table`); `explain` adds one line per pod. */
export function formatTable(result: SimulationResult, opts: { explain?: boolean } = {}): string {
  const out: string[] = [];
  const { totals } = result;
  const placedNew = result.placements.filter((p) => p.target === 'new').length;
  const placedExisting = result.placements.length - placedNew;
  out.push(
    `Region ${result.region}: ${result.placements.length + result.unschedulable.length} pending pods, ` +
      `${placedNew} on new NodeClaims, ${placedExisting} on existing capacity, ${result.unschedulable.length} unschedulable.`,
  );
  out.push('');
  if (result.nodeClaims.length > 0) {
    const rows: string[][] = [
      [
        'NODECLAIM',
        'NODEPOOL',
        'INSTANCE TYPE',
        'OPTIONS',
        'ZONE',
        'CAPACITY',
        '$/HOUR',
        'PODS',
        'CPU REQ/ALLOC',
        'MEMORY REQ/ALLOC',
      ],
    ];
    for (const nc of result.nodeClaims) {
      rows.push([
        nc.name,
        nc.nodePool,
        nc.instanceType,
        String(nc.instanceTypeOptions.length),
        nc.zone,
        nc.capacityType,
        usd(nc.priceUSDPerHour),
        String(nc.pods.length),
        `${nc.requests.cpu ?? '0'}/${nc.allocatable.cpu ?? '0'}`,
        `${nc.requests.memory ?? '0'}/${nc.allocatable.memory ?? '0'}`,
      ]);
    }
    out.push(renderTable(rows, new Set([3, 6, 7])));
    const relaxed = result.nodeClaims.filter((nc) => nc.minValuesRelaxed).map((nc) => nc.name);
    if (relaxed.length > 0)
      out.push(`minValues relaxed (--min-values-policy BestEffort) on: ${relaxed.join(', ')}`);
    out.push('');
    out.push(
      `Total: ${totals.nodeClaims} NodeClaim${totals.nodeClaims === 1 ? '' : 's'}, ${usd(totals.priceUSDPerHour)}/hour ` +
        `($${totals.priceUSDPerMonth.toFixed(2)}/month at 730 h), utilisation of allocatable: ` +
        `cpu ${pct(totals.cpuUtilization)}, memory ${pct(totals.memoryUtilization)}.`,
    );
  } else {
    out.push('No new NodeClaims needed.');
  }
  if (placedExisting > 0) {
    const byNode = new Map<string, number>();
    for (const p of result.placements) {
      if (p.target !== 'new') byNode.set(p.node, (byNode.get(p.node) ?? 0) + 1);
    }
    out.push('');
    out.push('Pods placed on existing capacity:');
    for (const [node, n] of byNode) out.push(`  ${node}: ${n} pod${n === 1 ? '' : 's'}`);
  }
  if (result.unschedulable.length > 0 && !opts.explain) {
    out.push('');
    out.push(`Unschedulable pods (${result.unschedulable.length}):`);
    for (const u of result.unschedulable) out.push(`  ${u.pod}: ${u.code}: ${u.reason}`);
  }
  if (opts.explain) out.push('', ...explainLines(result));
  const kinds = Object.entries(result.unknownKinds);
  if (result.notices.length > 0 || kinds.length > 0) {
    out.push('');
    out.push('Notices:');
    for (const n of result.notices) out.push(`  - ${n}`);
    if (kinds.length > 0) {
      out.push(
        `  - Ignored kinds (not used by the simulation): ${kinds
          .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
          .map(([k, n]) => `${k} ×${n}`)
          .join(', ')}`,
      );
    }
  }
  if (result.errors.length > 0) {
    out.push('');
    out.push(
      `${result.errors.length} input error${result.errors.length === 1 ? '' : 's'} (see stderr); the plan above covers the valid objects only.`,
    );
  }
  return `${out.join('\n')}\n`;
}

/** Cheapest available offering of `it` that `reqs` allow (zone, capacity type), USD/hour; `undefined` without one. */
function cheapestPrice(it: InstanceType, reqs: Requirements): number | undefined {
  const zone = reqs.get('topology.kubernetes.io/zone');
  const ct = reqs.get('karpenter.sh/capacity-type');
  let best: number | undefined;
  for (const o of it.offerings) {
    if (!o.available || (zone && !zone.has(o.zone)) || (ct && !ct.has(o.capacityType))) continue;
    if (best === undefined || o.priceUSDPerHour < best) best = o.priceUSDPerHour;
  }
  return best;
}

/**
 * The requests `plan` would put on instance type `it`: its pods plus the DaemonSets that run on `it`
 * (`scheduling/daemonoverhead.ts` `daemonOverheadGroups`), internal units; the plan's own requests when the
 * NodePool is unknown or malformed (already reported as an issue).
 */
function requestsOn(
  result: SimulationResult,
  plan: NodeClaimPlan,
  pool: NodePool | undefined,
  it: InstanceType,
): Resources {
  if (!pool) return plan.requests;
  try {
    const types = result.built.input.instanceTypes[plan.nodePool] ?? [];
    const groups = daemonOverheadGroups(pool, [it], providerKeys(types), result.built.input.daemonSets);
    return plusDaemons(plan.requests, plan.daemonOverhead, groups.byType.get(it)?.requests ?? {});
  } catch {
    return plan.requests;
  }
}

/**
 * The `--explain` answer to the three questions a user asks, once per NodeClaim and per pod (never repeated):
 * why this NodePool and instance type (with the next cheaper types that were rejected, by rule and numbers), why
 * a pod is pending, why not a cheaper plan. Uses the scheduler's plans (`result.scheduling`) and the instance
 * types each NodePool could launch (`result.built.input.instanceTypes`).
 */
export function explainLines(result: SimulationResult): string[] {
  const out: string[] = [];
  const plans = result.scheduling.newNodeClaims;
  const pools = result.built.input.nodePools;
  if (result.nodeClaims.length > 0) {
    out.push('Why these NodeClaims (NodePool and instance type):');
    result.nodeClaims.forEach((nc, i) => {
      const plan = plans[i];
      const pool = pools.find((p) => p.metadata.name === nc.nodePool);
      const weight = pool?.spec?.weight;
      const others = pools.filter((p) => p.metadata.name !== nc.nodePool).map((p) => p.metadata.name);
      out.push(
        `  ${nc.name}: NodePool ${nc.nodePool}` +
          (others.length === 0
            ? ' (the only NodePool)'
            : ` (weight ${weight ?? 0}; NodePools are tried by weight, then name: ${others.join(', ')} also exist)`),
      );
      out.push(
        `      ${nc.instanceType} ${nc.capacityType} in ${nc.zone} at $${nc.priceUSDPerHour.toFixed(4)}/h: the cheapest of ` +
          `${nc.instanceTypeOptions.length} instance type(s) that satisfy the requirements and fit its ${nc.pods.length} pod(s) ` +
          `(requests ${Object.entries(nc.requests)
            .map(([k, v]) => `${k} ${v}`)
            .join(', ')}; allocatable ${Object.entries(nc.allocatable)
            .map(([k, v]) => `${k} ${v}`)
            .join(', ')})`,
      );
      if (!plan) return;
      // why not cheaper: the types of this NodePool priced below the choice (offerings its requirements allow),
      // and the rule each broke: a NodePool requirement, too small for the pods, or the pods' own requirements
      const reqs = Requirements.fromNodeSelector(pool?.spec?.template?.spec?.requirements ?? []);
      const options = new Set(nc.instanceTypeOptions);
      const cheaper = (result.built.input.instanceTypes[nc.nodePool] ?? [])
        .map((it) => ({ it, price: cheapestPrice(it, reqs) }))
        .filter(
          (x): x is { it: InstanceType; price: number } =>
            x.price !== undefined && x.price < nc.priceUSDPerHour && !options.has(x.it.name),
        )
        .sort((a, b) => b.price - a.price || a.it.name.localeCompare(b.it.name));
      if (cheaper.length === 0) {
        out.push('      no instance type of this NodePool is cheaper');
        return;
      }
      for (const { it, price } of cheaper.slice(0, 2)) {
        const why =
          instanceTypeIncompatibility(it, reqs) ??
          (fits(requestsOn(result, plan, pool, it), it.allocatable)
            ? `${it.name}: too small: ${fits(requestsOn(result, plan, pool, it), it.allocatable)}`
            : undefined) ??
          `${it.name}: excluded by the pods' own requirements (node selector, affinity, tolerations, topology)`;
        out.push(
          `      rejected cheaper ${it.name} ($${price.toFixed(4)}/h): ${why.replace(`${it.name}: `, '')}`,
        );
      }
      if (cheaper.length > 2)
        out.push(`      (and ${cheaper.length - 2} cheaper type(s) rejected for such reasons)`);
    });
    out.push('');
    out.push('Why not a cheaper plan:');
    out.push(
      `  each NodeClaim above uses the cheapest instance type that holds its pods; a cheaper one breaks the rule shown. ` +
        `Total $${result.totals.priceUSDPerHour.toFixed(4)}/h at cpu ${pct(result.totals.cpuUtilization)}, ` +
        `memory ${pct(result.totals.memoryUtilization)} of allocatable.`,
    );
    out.push('');
    out.push('Where each pod goes:');
    const byNode = new Map<string, string[]>();
    for (const p of result.placements) byNode.set(p.node, [...(byNode.get(p.node) ?? []), p.pod]);
    for (const [node, pods] of byNode) {
      const p = result.placements.find((x) => x.node === node);
      const kind =
        p?.target === 'new' ? 'new NodeClaim' : p?.target === 'inflight' ? 'in-flight NodeClaim' : 'node';
      out.push(`  ${kind} ${node} <- ${pods.length} pod(s): ${pods.join(', ')}`);
    }
  }
  if (result.unschedulable.length > 0) {
    out.push('');
    out.push(`Why these pods are pending (${result.unschedulable.length}):`);
    const byPod = new Map(result.explanations.map((e) => [e.pod, e]));
    for (const u of result.unschedulable) {
      out.push(`  ${u.pod}: ${u.code}: ${u.reason}`);
      const extra = new Set(
        (byPod.get(u.pod)?.details ?? []).filter(
          (d) =>
            d !== u.reason && !u.reason.includes(d) && !d.includes(u.reason) && !/^retry pass \d+$/.test(d),
        ),
      );
      for (const d of extra) out.push(`      ${d}`);
    }
  }
  return out;
}
