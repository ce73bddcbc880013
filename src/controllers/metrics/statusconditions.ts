/**
 * Status-condition and termination metrics of NodeClaims, NodePools, Nodes and node classes, as upstream exposes
 * them through awslabs/operatorpkg's status controllers (`status/metrics.go`, `status/controller.go`; registered by
 * kubernetes-sigs/karpenter `pkg/controllers/controllers.go` and the provider for its node class):
 *
 * - `operator_<kind>_status_condition_count{namespace, name, type, status, reason, …}`: 1 per condition of each
 *   object; `…_current_status_seconds` (same labels): seconds since the condition's `lastTransitionTime`;
 * - `operator_<kind>_status_condition_transitions_total{type, status, reason, …}`: one per observed change of a
 *   condition's status (a condition seen for the first time counts, as upstream);
 * - `operator_<kind>_status_condition_transition_seconds{type, status, …}`: on a change, the seconds the
 *   condition spent in its previous status (new `lastTransitionTime` − previous), labelled by the previous status;
 * - `operator_<kind>_termination_current_time_seconds{namespace, name, …}`: seconds since a terminating object's
 *   `deletionTimestamp`; `operator_<kind>_termination_duration_seconds{…}`: observed when a terminating object is
 *   gone, `deletionTimestamp` → the pass that saw it gone.
 *
 * `…` are the kind's extra labels: for Nodes upstream's `WithLabels` (`<nodeclass group>/<nodeclass kind>`,
 * `karpenter.sh/nodepool`, `karpenter.sh/initialized`, with `/`, `.`, `-` → `_`). Kinds upstream registers with
 * `EmitDeprecatedMetrics` (NodeClaim, NodePool, the node class) are also exported under operatorpkg's generic
 * names (`operator_status_condition_*`, `operator_termination_*`) labelled `group` and `kind` instead.
 *
 * Like upstream the transitions are best-effort: a change and its reversal between two passes are not seen.
 * The pass is synchronous; the gauges are rebuilt from scratch each pass.
 */
import type { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { KubeObject } from '../../apis/core.ts';
import type { Condition } from '../../apis/karpenter.ts';
import { registeredCounter, registeredGauge, registeredHistogram } from '../../kube/metrics.ts';

/** One object kind whose status conditions are measured. */
export interface StatusKind {
  /** The lower-case kind in the metric names: `nodeclaim`, `nodepool`, `node`, `ec2nodeclass`. */
  metricName: string;
  /** API group (`karpenter.sh`; `''` for core Nodes) and kind, the `group`/`kind` labels of the generic metrics. */
  group: string;
  kind: string;
  /** Also export the generic (deprecated upstream) metrics: upstream's `status.EmitDeprecatedMetrics`. */
  deprecated: boolean;
  /** Object label keys exported as extra labels (upstream `status.WithLabels`), e.g. `karpenter.sh/nodepool`. */
  labelKeys: readonly string[];
  /** The objects now (cached, read-only). */
  list: () => readonly KubeObject[];
}

/** Histogram buckets (seconds) of the transition and termination durations: karpenter's 0.5 × 2^0..14. */
export const STATUS_DURATION_BUCKETS: readonly number[] = Array.from({ length: 15 }, (_, i) => 0.5 * 2 ** i);

/** A label key as upstream's `toPrometheusLabel`: `/`, `.` and `-` → `_`. */
export function prometheusLabel(key: string): string {
  return key.replaceAll(/[/.-]/g, '_');
}

type L = string;

/** The six metrics of one name prefix. */
interface Family {
  count: Gauge<L>;
  current: Gauge<L>;
  transitions: Counter<L>;
  duration: Histogram<L>;
  terminating: Gauge<L>;
  termination: Histogram<L>;
}

/** What a pass remembers of one object. */
interface Observed {
  conditions: Map<string, { status: string; at: number }>;
  deletedAt?: number;
  extra: Record<string, string>;
}

const HELP = {
  count: 'The number of a condition for a given object, type and status. e.g. Alarm := Available=False > 0',
  current:
    'The current amount of time in seconds that a status condition has been in a specific state. Alarm := P99(Updated=Unknown) > 5 minutes',
  transitions: 'The count of transitions of a given object, type and status.',
  duration:
    'The amount of time a condition was in a given state before transitioning. e.g. Alarm := P99(Updated=False) > 5 minutes',
  terminating: 'The current amount of time in seconds that an object has been in terminating state.',
  termination: 'The amount of time taken by an object to terminate completely.',
};

/** The metrics of `prefix` (`operator_nodeclaim_` or `operator_`) with `extra` label names after upstream's. */
function family(registry: Registry, prefix: string, extra: readonly string[]): Family {
  const sc = `${prefix}status_condition_`;
  const obj = ['namespace', 'name'];
  const cond = ['type', 'status', 'reason'];
  const b = STATUS_DURATION_BUCKETS;
  return {
    count: registeredGauge(registry, `${sc}count`, HELP.count, [...obj, ...cond, ...extra]),
    current: registeredGauge(registry, `${sc}current_status_seconds`, HELP.current, [
      ...obj,
      ...cond,
      ...extra,
    ]),
    transitions: registeredCounter(registry, `${sc}transitions_total`, HELP.transitions, [...cond, ...extra]),
    duration: registeredHistogram(
      registry,
      `${sc}transition_seconds`,
      HELP.duration,
      ['type', 'status', ...extra],
      b,
    ),
    terminating: registeredGauge(registry, `${prefix}termination_current_time_seconds`, HELP.terminating, [
      ...obj,
      ...extra,
    ]),
    termination: registeredHistogram(
      registry,
      `${prefix}termination_duration_seconds`,
      HELP.termination,
      extra,
      b,
    ),
  };
}

/** Milliseconds of an RFC 3339 time, or undefined. */
function millis(t: string | undefined): number | undefined {
  const ms = Date.parse(t ?? '');
  return Number.isFinite(ms) ? ms : undefined;
}

/**
 * The status-condition metrics of `kinds` in `registry`; {@link update} is one pass at `now` (ms since epoch).
 * A kind whose `metricName` repeats another's shares its metrics (registered once per registry).
 */
export class StatusConditionMetrics {
  private readonly perKind: Family[];
  private readonly generic: Family | undefined;
  private readonly observed: Map<string, Observed>[];

  constructor(
    registry: Registry,
    private readonly kinds: readonly StatusKind[],
  ) {
    this.perKind = kinds.map((k) =>
      family(registry, `operator_${k.metricName}_`, k.labelKeys.map(prometheusLabel)),
    );
    this.generic = kinds.some((k) => k.deprecated)
      ? family(registry, 'operator_', ['group', 'kind'])
      : undefined;
    this.observed = kinds.map(() => new Map());
  }

  /** One pass over every kind's objects at `now` (ms since epoch). */
  update(now: number): void {
    for (const f of [...this.perKind, ...(this.generic ? [this.generic] : [])]) {
      f.count.reset();
      f.current.reset();
      f.terminating.reset();
    }
    this.kinds.forEach((k, i) => {
      this.updateKind(k, this.perKind[i]!, this.observed[i]!, now);
    });
  }

  private updateKind(k: StatusKind, f: Family, observed: Map<string, Observed>, now: number): void {
    const gk = k.deprecated ? { group: k.group, kind: k.kind } : undefined;
    const seen = new Set<string>();
    for (const o of k.list()) {
      const namespace = o.metadata?.namespace ?? '';
      const name = o.metadata?.name ?? '';
      const key = `${namespace}/${name}`;
      seen.add(key);
      const extra = Object.fromEntries(
        k.labelKeys.map((l) => [prometheusLabel(l), o.metadata?.labels?.[l] ?? '']),
      );
      const both = (
        fn: (fam: Family, labels: Record<string, string>) => void,
        labels: Record<string, string>,
      ) => {
        fn(f, { ...labels, ...extra });
        if (gk && this.generic) fn(this.generic, { ...labels, ...gk });
      };
      const deletedAt = millis(o.metadata?.deletionTimestamp);
      if (deletedAt !== undefined)
        both((fam, l) => fam.terminating.set(l, Math.max(0, (now - deletedAt) / 1000)), { namespace, name });
      const prev = observed.get(key);
      const next: Observed = {
        conditions: new Map(),
        extra,
        ...(deletedAt !== undefined ? { deletedAt } : {}),
      };
      const conditions = (o as { status?: { conditions?: Condition[] } }).status?.conditions ?? [];
      for (const c of conditions) {
        const at = millis(c.lastTransitionTime);
        const cond = { type: c.type, status: c.status, reason: c.reason ?? '' };
        both((fam, l) => fam.count.set(l, 1), { namespace, name, ...cond });
        if (at !== undefined)
          both((fam, l) => fam.current.set(l, Math.max(0, (now - at) / 1000)), { namespace, name, ...cond });
        next.conditions.set(c.type, { status: c.status, at: at ?? now });
        const before = prev?.conditions.get(c.type);
        if (before?.status === c.status) continue;
        both((fam, l) => fam.transitions.inc(l), cond);
        if (before && at !== undefined)
          both((fam, l) => fam.duration.observe(l, Math.max(0, (at - before.at) / 1000)), {
            type: c.type,
            status: before.status,
          });
      }
      observed.set(key, next);
    }
    for (const [key, o] of observed) {
      if (seen.has(key)) continue;
      observed.delete(key);
      if (o.deletedAt === undefined) continue;
      const seconds = Math.max(0, (now - o.deletedAt) / 1000);
      f.termination.observe(o.extra, seconds);
      if (gk && this.generic) this.generic.termination.observe(gk, seconds);
    }
  }
}
