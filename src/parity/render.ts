/**
 * Renders the parity table ({@link PARITY_TABLE}) as docs/parity.md: counts per kind and status, the names that do
 * not work, then one section per kind. scripts/generate-parity.ts writes the file; test/parity.test.ts compares it
 * with this output, so the page cannot go stale. Pure string formatting.
 */
import {
  PARITY_KINDS,
  PARITY_STATUSES,
  PARITY_TABLE,
  type ParityKind,
  type ParityRow,
  type ParityStatus,
} from './table.ts';

const HEADINGS: Record<ParityKind, string> = {
  NodePool: 'NodePool (`karpenter.sh/v1`) spec fields',
  NodeClaim: 'NodeClaim (`karpenter.sh/v1`) spec fields',
  EC2NodeClass: 'EC2NodeClass (`karpenter.k8s.aws/v1`) spec fields',
  setting: 'Settings (environment variables; each is also a `capenter controller` flag)',
  'feature gate': 'Feature gates (`FEATURE_GATES`)',
  metric: 'Metrics (Prometheus `/metrics`, upstream’s names, types and label names)',
  event: 'Event reasons',
};

/** The first column's heading of a kind's section. */
const NAME_HEADS: Partial<Record<ParityKind, string>> = {
  setting: 'upstream variable',
  'feature gate': 'gate',
  metric: 'upstream metric',
  event: 'upstream reason',
};

/** `|` and newlines made safe inside a Markdown table cell. */
function cell(text: string): string {
  return text.replaceAll('|', '\\|').replaceAll('\n', ' ');
}

/** Entries of `rows`: one per name of each row (a name in two scoped rows counts twice). */
function countEntries(rows: readonly ParityRow[], status: ParityStatus): number {
  return rows.filter((r) => r.status === status).reduce((n, r) => n + r.names.length, 0);
}

/** The counts table: one line per kind and a total line. */
function countsTable(rows: readonly ParityRow[]): string[] {
  const line = (label: string, rs: readonly ParityRow[]): string => {
    const counts = PARITY_STATUSES.map((s) => countEntries(rs, s));
    return `| ${label} | ${counts.join(' | ')} | ${counts.reduce((a, b) => a + b, 0)} |`;
  };
  return [
    `| | ${PARITY_STATUSES.join(' | ')} | entries |`,
    `|---|${PARITY_STATUSES.map(() => '---:').join('|')}|---:|`,
    ...PARITY_KINDS.map((k) =>
      line(
        k,
        rows.filter((r) => r.kind === k),
      ),
    ),
    line('**total**', rows),
  ];
}

/** `- **status** kind: names (scope)` for each row that is neither `works` nor `refused`. */
function gapList(rows: readonly ParityRow[]): string[] {
  return rows
    .filter((r) => r.status === 'missing' || r.status === 'no-effect')
    .sort((a, b) => PARITY_STATUSES.indexOf(b.status) - PARITY_STATUSES.indexOf(a.status))
    .map(
      (r) =>
        `- **${r.status}** ${r.kind}: ${r.names.map((n) => `\`${n}\``).join(', ')}` +
        `${r.scope ? ` (${r.scope})` : ''}`,
    );
}

/** One kind's section: a row per table row. */
function section(kind: ParityKind, rows: readonly ParityRow[]): string[] {
  const head = NAME_HEADS[kind] ?? 'upstream field path';
  return [
    `## ${HEADINGS[kind]}`,
    '',
    `| ${head} | status | capenter | test |`,
    '|---|---|---|---|',
    ...rows
      .filter((r) => r.kind === kind)
      .map((r) => {
        const names = r.names.map((n) => `\`${n}\``).join('<br>');
        const scope = r.scope ? `<br>(${cell(r.scope)})` : '';
        return `| ${names}${scope} | ${r.status} | ${cell(r.note)} | [${r.test}](../${r.test}) |`;
      }),
    '',
  ];
}

/** docs/parity.md for `rows` (default: the table). */
export function renderParityDoc(rows: readonly ParityRow[] = PARITY_TABLE): string {
  return [
    '# Parity with upstream Karpenter v1.14.1',
    '',
    '<!-- Generated from src/parity/table.ts by `npm run generate:parity`; do not edit by hand. -->',
    '',
    'What capenter does with every `spec` field of upstream’s NodePool, NodeClaim and EC2NodeClass CRDs, every',
    'upstream setting and feature gate, every metric upstream documents and every Event reason upstream publishes.',
    'The table lives in `src/parity/table.ts` and `src/parity/observability.ts`; `test/parity.test.ts` walks the',
    'upstream CRDs (`../shared/data/crds/`, v1.14.1), upstream’s settings and gates and the upstream metric and',
    'Event lists (`test/fixtures/upstream/{metrics,events}-v1.14.1.json`, with source file and commit), and fails',
    'on any name without a row, on a row naming a test file that does not exist, and when this page differs from',
    'the table. `test/e2e/dashboards.test.ts` scrapes `/metrics` after a provisioning and consolidation run and',
    'checks every metric whose works row names it (outside the AWS provider scope) under upstream’s type and label',
    'names; any other works metric row names a test containing the metric.',
    '',
    'Status: **works** — implemented, the named test proves it · **refused** — upstream’s default is accepted, a',
    'value needing the feature is refused with an error naming it · **no-effect** — upstream-internal, accepted',
    'with a warning at start (for a metric or Event: not exported, with the reason) · **missing** — accepted by',
    'the CRD schema but not acted on, without a warning; for a metric or Event, not exported (the named test file',
    'is where its test belongs). A row with a scope covers its names only in that case.',
    '',
    '## Counts',
    '',
    'One entry per field path, setting, gate, metric or Event reason of a row (a path split by scope counts once per scope).',
    '',
    ...countsTable(rows),
    '',
    '## Not working',
    '',
    ...gapList(rows),
    '',
    ...PARITY_KINDS.flatMap((k) => section(k, rows)),
  ].join('\n');
}
