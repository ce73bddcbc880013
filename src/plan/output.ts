/**
 * `capenter plan`'s output: the `-o json` document (stable, documented in docs/plan.md) and the table, and the
 * API server's wording of a proposed object's validation errors.
 */
import type { LoadError } from '../apis/load.ts';
import { renderTable } from '../simulate/output.ts';
import { resourceName } from './merge.ts';
import type { PlanReport } from './plan.ts';

/** The `-o json` document's `apiVersion` (bumped on an incompatible change). */
export const PLAN_JSON_VERSION = 'capenter.io/plan/v1';

/** The `-o json` document: {@link PlanReport} under a version. */
export function planJSON(report: PlanReport): Record<string, unknown> {
  return { apiVersion: PLAN_JSON_VERSION, ...report };
}

const usd = (v: number) => `$${v.toFixed(4)}`;

/**
 * The human-readable plan: changes, drifted nodes (with whether AMI/subnet/security-group/capacity-reservation
 * drift was evaluated),
 * waves, replacements, launches, unschedulable pods, cost. */
export function formatPlan(r: PlanReport): string {
  const out: string[] = [];
  out.push(`Plan (region ${r.region}, at ${r.now}; a wave lasts ${r.waveSeconds}s: launch, then drain)`);
  for (const c of r.changes) out.push(`  ${c.kind}/${c.name} ${c.result}${c.file ? ` (${c.file})` : ''}`);
  out.push('');
  if (r.nodes.length === 0) out.push('No node drifts.');
  else {
    out.push(`Nodes replaced or removed (${r.nodes.length}):`);
    // a NODECLAIM column when some NodeClaim is not named as its Node (EKS: ip-….ec2.internal)
    const claims = r.nodes.some((n) => n.nodeClaim !== undefined && n.nodeClaim !== n.node);
    const rows = [
      [
        'NODE',
        ...(claims ? ['NODECLAIM'] : []),
        'NODEPOOL',
        'TYPE',
        'PRICE/H',
        'PODS',
        'WAVE',
        'REASON',
        'WHY',
      ],
    ];
    for (const n of r.nodes)
      rows.push([
        n.node,
        ...(claims ? [n.nodeClaim ?? '-'] : []),
        n.nodePool,
        n.instanceType,
        usd(n.priceUSDPerHour),
        String(n.pods),
        n.wave !== undefined ? String(n.wave) : 'blocked',
        n.reason,
        n.blocked ?? n.detail,
      ]);
    out.push(renderTable(rows, claims ? new Set([4, 5]) : new Set([3, 4])));
  }
  const sd = r.selectorDrift;
  const classes = sd.nodeClasses
    .map(
      (n) =>
        `EC2NodeClass "${n}" (${sd.changed.includes(n) ? 'proposed selector terms' : 'selector terms unchanged, resolved now'})`,
    )
    .join(', ');
  if (sd.evaluated)
    out.push(
      `AMI, subnet, security-group and capacity-reservation drift: evaluated against AWS for ${classes}.`,
    );
  else if (sd.reason !== undefined)
    out.push(
      `AMI, subnet, security-group and capacity-reservation drift: NOT evaluated for ${classes}: ${sd.reason}.`,
    );
  if (r.waves.length > 0) {
    out.push('', "Waves (the Drifted disruption budgets; a deleted NodePool's nodes go at once):");
    const rows = [['WAVE', 'START', 'AFTER', 'NODES']];
    for (const w of r.waves) rows.push([String(w.wave), w.start, `+${w.offsetSeconds}s`, w.nodes.join(',')]);
    out.push(renderTable(rows));
  }
  for (const [title, list] of [
    ['Replacements', r.replacements],
    ['Launches for pending pods', r.launches],
  ] as const) {
    if (list.length === 0) continue;
    out.push('', `${title}:`);
    const rows = [['NODEPOOL', 'TYPE', 'ZONE', 'CAPACITY', 'PRICE/H', 'PODS', 'WAVE', 'REPLACES']];
    for (const c of list)
      rows.push([
        c.nodePool,
        c.instanceType,
        c.zone,
        c.capacityType,
        usd(c.priceUSDPerHour),
        String(c.pods.length),
        c.wave !== undefined ? String(c.wave) : '-',
        c.replaces.join(',') || '-',
      ]);
    out.push(renderTable(rows, new Set([4, 5])));
  }
  if (r.unschedulable.length > 0) {
    out.push('', `Unschedulable pods (${r.unschedulable.length}):`);
    const rows = [['POD', 'RUNS ON TODAY', 'REASON']];
    for (const u of r.unschedulable) rows.push([u.pod, u.from ?? '(pending)', u.reason]);
    out.push(renderTable(rows));
  }
  const c = r.cost;
  const sign = c.deltaUSDPerHour >= 0 ? '+' : '-';
  out.push(
    '',
    `Cost: ${usd(c.beforeUSDPerHour)}/h before, ${usd(c.afterUSDPerHour)}/h after (${sign}${usd(Math.abs(c.deltaUSDPerHour))}/h)`,
  );
  if (r.notices.length > 0) out.push('', 'Notices:', ...r.notices.map((n) => `  - ${n}`));
  return `${out.join('\n')}\n`;
}

/**
 * A load error in the API server's words, with the file first:
 * `np.yaml:3: NodePool.karpenter.sh "x" is invalid: spec.disruption.budgets[0].nodes: Invalid value: "abc": ...`.
 * Errors without a kind (YAML syntax, unreadable file) keep the loader's message.
 */
export function formatInvalid(errors: readonly LoadError[]): string[] {
  const groups = new Map<string, LoadError[]>();
  const plain: string[] = [];
  for (const e of errors) {
    if (!e.kind || e.fieldPath === undefined) {
      plain.push(e.message);
      continue;
    }
    const key = `${e.file}\0${e.index}\0${e.item ?? ''}`;
    groups.set(key, [...(groups.get(key) ?? []), e]);
  }
  const out: string[] = [...plain];
  for (const list of groups.values()) {
    const first = list[0] as LoadError;
    const causes = list.map((e) => `${e.fieldPath}: ${detailOf(e)}`);
    const where = `${first.file}${first.line !== undefined ? `:${first.line}` : ''}`;
    const what = `${resourceName(first.kind ?? '')} "${first.name ?? ''}" is invalid: `;
    out.push(
      `${where}: ${kindResource(first.kind ?? '')}${what.slice(what.indexOf(' '))}${causes.length > 1 ? `[${causes.join(', ')}]` : causes[0]}`,
    );
  }
  return out;
}

/** `NodePool.karpenter.sh` from the kind (the API server's `Kind.group`). */
function kindResource(kind: string): string {
  const r = resourceName(kind);
  const dot = r.indexOf('.');
  return dot < 0 ? kind : `${kind}${r.slice(dot)}`;
}

/** The part of a loader message after `Kind "name": field: `, with `Invalid value X:` as `Invalid value: X:`. */
function detailOf(e: LoadError): string {
  const marker = `${e.fieldPath}: `;
  const i = e.message.indexOf(marker);
  const d = i >= 0 ? e.message.slice(i + marker.length) : e.message;
  const rule = e.rule !== undefined ? ` (rule: ${e.rule})` : undefined;
  const bare = rule && d.endsWith(rule) ? d.slice(0, -rule.length) : d;
  return bare.replace(/^Invalid value (?!:)/, 'Invalid value: ');
}
