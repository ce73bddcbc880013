/**
 * The parity table's types (src/parity/table.ts holds the rows of CRD fields, settings and gates,
 * src/parity/observability.ts those of metrics and Event reasons). Types only.
 */

/**
 * What capenter does with an upstream feature:
 * - `works`: implemented as upstream does; the row's test proves it.
 * - `refused`: a value that would need the feature is refused with an error naming it (the row says where);
 *   upstream's default value is accepted.
 * - `no-effect`: accepted and warned about at start (`has no effect in capenter (why)`); upstream-internal
 *   settings (Go runtime, webhooks) that have no meaning in capenter.
 * - `missing`: accepted (the CRD schema has the field) but not acted on, without a warning. The gaps.
 */
export type ParityStatus = 'works' | 'refused' | 'no-effect' | 'missing';

/**
 * Which upstream surface a row covers: a CRD kind (its `spec` field paths), a setting, a feature gate, a
 * Prometheus metric or an Event reason (rows of the last two in src/parity/observability.ts).
 */
export type ParityKind =
  | 'NodePool'
  | 'NodeClaim'
  | 'EC2NodeClass'
  | 'setting'
  | 'feature gate'
  | 'metric'
  | 'event';

/** One row: some names of one kind sharing a status and a test. */
export interface ParityRow {
  kind: ParityKind;
  /**
   * For CRD kinds, `spec` field paths as the schema walk in test/parity.test.ts spells them: dot-separated
   * properties, `[]` after an array (`spec.template.spec.requirements[].minValues`); maps stop at the map
   * (`spec.limits`). For settings, upstream environment variable names; for gates, gate names; for metrics,
   * upstream metric names; for events, upstream Event reasons.
   */
  names: readonly string[];
  /** When set, the row covers these names only in this case (e.g. `amiFamily AL2, Bottlerocket`). */
  scope?: string;
  status: ParityStatus;
  /** What capenter does: for `refused` where and how, for `no-effect` the warning, for `missing` what is absent. */
  note: string;
  /**
   * Repository-relative path of the test file that proves the status; for `missing`, the existing test file where
   * the feature's test belongs (beside the code that would implement it).
   */
  test: string;
}
