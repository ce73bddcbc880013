/**
 * Printing a {@link SimulationResult}: the stable JSON document (`-o json`, documented in docs/simulate.md)
 * and the human table (`-o table`, default), plus the error lines written to stderr.
 */
import type { SimulationIssue } from './input.ts';
import type { SimulationResult } from './run.ts';

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
  if (result.unschedulable.length > 0) {
    out.push('');
    out.push(`Unschedulable pods (${result.unschedulable.length}):`);
    for (const u of result.unschedulable) out.push(`  ${u.pod}: ${u.code}: ${u.reason}`);
  }
  if (opts.explain) {
    out.push('');
    out.push('Placements:');
    const byPod = new Map(result.explanations.map((e) => [e.pod, e]));
    const describe = new Map(result.nodeClaims.map((nc) => [nc.name, `${nc.nodePool}, ${nc.instanceType}`]));
    for (const p of result.placements) {
      const what =
        p.target === 'new'
          ? `new NodeClaim ${p.node} (${describe.get(p.node) ?? ''})`
          : `${p.target} ${p.node}`;
      out.push(`  ${p.pod} -> ${what}`);
      const e = byPod.get(p.pod);
      if (e) {
        if (e.decision) out.push(`      ${e.decision}`);
        for (const d of e.details) out.push(`      ${d}`);
      }
    }
    for (const u of result.unschedulable) {
      out.push(`  ${u.pod} -> unschedulable (${u.code})`);
      const e = byPod.get(u.pod);
      if (e) {
        if (e.decision) out.push(`      ${e.decision}`);
        for (const d of e.details) out.push(`      ${d}`);
      }
    }
  }
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
