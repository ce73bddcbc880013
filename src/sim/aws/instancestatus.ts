/**
 * EC2 `DescribeInstanceStatus` for the emulator proxy. moto 5.2.3 answers it from its instances, but every running
 * instance's instance and system checks are always `ok` (`reachability` `passed`), it has no scheduled events, and it
 * ignores the `instance-status.status`, `system-status.status` and `event.code` filters (it applies only
 * `instance-state-name`/`-code`): the filter sets Karpenter's health check uses would each return every running
 * instance as healthy. The proxy answers the call itself: the instances (id, zone, state) come from moto's
 * `DescribeInstances`; the checks and events are `ok` unless injected with {@link InstanceHealthStatuses.set}
 * (a test's stand-in for a failing host).
 *
 * Request fields honoured: `InstanceId.N`, `IncludeAllInstances` (default: running instances only), `MaxResults`
 * (5–1000) with `NextToken` (an offset), and the filters `instance-status.status`, `instance-status.reachability`,
 * `system-status.status`, `system-status.reachability`, `event.code`, `instance-state-name`, `instance-state-code`,
 * `availability-zone` (values ORed within a filter, filters ANDed, as EC2). Any other filter is refused with
 * `InvalidParameterValue` naming it (EC2 refuses unknown filters too; silently ignoring it would hide a test bug).
 * An instance that is not running reports `not-applicable` checks, as EC2.
 */
import { randomUUID } from 'node:crypto';

/** A status check summary (`Status` of `InstanceStatus`/`SystemStatus`). */
export type StatusSummary = 'ok' | 'impaired' | 'insufficient-data' | 'initializing';

/** A scheduled event on an instance (EC2 `InstanceStatusEvent`). */
export interface InjectedEvent {
  /** `instance-reboot`, `system-reboot`, `system-maintenance`, `instance-retirement`, `instance-stop`. */
  code: string;
  description?: string;
  /** ISO 8601; default the time of {@link InstanceHealthStatuses.set}. */
  notBefore?: string;
}

/** Injected health of one instance (fields left out stay healthy). */
export interface InjectedHealth {
  instanceStatus?: StatusSummary;
  systemStatus?: StatusSummary;
  /** When an `impaired` check started failing, ISO 8601; default the time of {@link InstanceHealthStatuses.set}. */
  impairedSince?: string;
  events?: InjectedEvent[];
}

/** What the proxy knows of one instance from moto. */
export interface InstanceFacts {
  id: string;
  zone: string;
  stateCode: number;
  stateName: string;
}

const FILTERS = new Set([
  'instance-status.status',
  'instance-status.reachability',
  'system-status.status',
  'system-status.reachability',
  'event.code',
  'instance-state-name',
  'instance-state-code',
  'availability-zone',
]);
const SUMMARIES = new Set<string>(['ok', 'impaired', 'insufficient-data', 'initializing']);

/** Thrown for a request EC2 would refuse; the proxy answers it as an EC2 error. */
export class InstanceStatusRequestError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

function esc(s: string): string {
  return s.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

interface Resolved {
  facts: InstanceFacts;
  instance: { status: string; reachability: string };
  system: { status: string; reachability: string };
  events: InjectedEvent[];
  impairedSince: string;
}

/** The injected health statuses and the `DescribeInstanceStatus` answer built from them. */
export class InstanceHealthStatuses {
  private readonly injected = new Map<string, InjectedHealth & { at: string }>();

  /**
   * Injects the health of instance `id` (replacing an earlier injection).
   * @throws Error naming the field when a status is not ok/impaired/insufficient-data/initializing, a time is not
   * ISO 8601, or an event has no code.
   */
  set(id: string, health: InjectedHealth): void {
    for (const field of ['instanceStatus', 'systemStatus'] as const) {
      const v = health[field];
      if (v !== undefined && !SUMMARIES.has(v))
        throw new Error(
          `instance health of ${id}: ${field} "${v}" is not one of ok, impaired, insufficient-data, initializing`,
        );
    }
    const times = [health.impairedSince, ...(health.events ?? []).map((e) => e.notBefore)];
    for (const t of times)
      if (t !== undefined && !Number.isFinite(Date.parse(t)))
        throw new Error(`instance health of ${id}: "${t}" is not an ISO 8601 time`);
    if ((health.events ?? []).some((e) => !e.code))
      throw new Error(`instance health of ${id}: every event needs a code (e.g. instance-retirement)`);
    this.injected.set(id, { ...health, at: new Date().toISOString() });
  }

  /** Makes every instance healthy again. */
  clear(): void {
    this.injected.clear();
  }

  /**
   * The `DescribeInstanceStatusResponse` XML for `instances` (moto's, all states) and the request `form`.
   * @throws InstanceStatusRequestError for an unknown filter or a `MaxResults` outside 5–1000.
   */
  describe(instances: readonly InstanceFacts[], form: URLSearchParams): string {
    const { ids, includeAll, filters, max, offset } = parseRequest(form);
    const rows = instances
      .filter((f) => (ids.length === 0 || ids.includes(f.id)) && (includeAll || f.stateCode === 16))
      .map((f) => this.resolve(f))
      .filter((r) => matches(r, filters));
    const page = max === undefined ? rows.slice(offset) : rows.slice(offset, offset + max);
    const next = max !== undefined && offset + max < rows.length ? String(offset + max) : undefined;
    return (
      '<?xml version="1.0" encoding="UTF-8"?>' +
      '<DescribeInstanceStatusResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">' +
      `<requestId>${randomUUID()}</requestId><instanceStatusSet>${page.map(itemXml).join('')}</instanceStatusSet>` +
      (next ? `<nextToken>${next}</nextToken>` : '') +
      '</DescribeInstanceStatusResponse>'
    );
  }

  private resolve(facts: InstanceFacts): Resolved {
    const h = this.injected.get(facts.id);
    const running = facts.stateCode === 16;
    const check = (s: StatusSummary | undefined) =>
      running
        ? {
            status: s ?? 'ok',
            reachability:
              s === 'impaired'
                ? 'failed'
                : s === 'insufficient-data'
                  ? 'insufficient-data'
                  : s === 'initializing'
                    ? 'initializing'
                    : 'passed',
          }
        : { status: 'not-applicable', reachability: '' };
    return {
      facts,
      instance: check(h?.instanceStatus),
      system: check(h?.systemStatus),
      events: (h?.events ?? []).map((e) => ({ ...e, notBefore: e.notBefore ?? h?.at ?? '' })),
      impairedSince: h?.impairedSince ?? h?.at ?? '',
    };
  }
}

function parseRequest(form: URLSearchParams): {
  ids: string[];
  includeAll: boolean;
  filters: Map<string, string[]>;
  max: number | undefined;
  offset: number;
} {
  const ids: string[] = [];
  const names = new Map<string, string>();
  const values = new Map<string, string[]>();
  for (const [k, v] of form) {
    if (/^InstanceId\.\d+$/.test(k)) ids.push(v);
    let m = /^Filter\.(\d+)\.Name$/.exec(k);
    if (m) names.set(m[1]!, v);
    m = /^Filter\.(\d+)\.Value\.\d+$/.exec(k);
    if (m) values.set(m[1]!, [...(values.get(m[1]!) ?? []), v]);
  }
  const filters = new Map<string, string[]>();
  for (const [n, name] of names) {
    if (!FILTERS.has(name))
      throw new InstanceStatusRequestError(
        'InvalidParameterValue',
        `The filter '${name}' is invalid (the emulator proxy's DescribeInstanceStatus supports ${[...FILTERS].join(', ')})`,
      );
    filters.set(name, [...(filters.get(name) ?? []), ...(values.get(n) ?? [])]);
  }
  const maxRaw = form.get('MaxResults');
  const max = maxRaw === null ? undefined : Number(maxRaw);
  if (max !== undefined && !(Number.isInteger(max) && max >= 5 && max <= 1000))
    throw new InstanceStatusRequestError(
      'InvalidParameterValue',
      `Value (${maxRaw}) for parameter maxResults is invalid. Expecting a value between 5 and 1000.`,
    );
  const offset = Number(form.get('NextToken') ?? '0');
  return {
    ids,
    includeAll: form.get('IncludeAllInstances') === 'true',
    filters,
    max,
    offset: Number.isInteger(offset) && offset > 0 ? offset : 0,
  };
}

function matches(r: Resolved, filters: Map<string, string[]>): boolean {
  const value: Record<string, string[]> = {
    'instance-status.status': [r.instance.status],
    'instance-status.reachability': [r.instance.reachability],
    'system-status.status': [r.system.status],
    'system-status.reachability': [r.system.reachability],
    'event.code': r.events.map((e) => e.code),
    'instance-state-name': [r.facts.stateName],
    'instance-state-code': [String(r.facts.stateCode)],
    'availability-zone': [r.facts.zone],
  };
  for (const [name, wanted] of filters) if (!value[name]!.some((v) => wanted.includes(v))) return false;
  return true;
}

function summaryXml(tag: string, c: { status: string; reachability: string }, impairedSince: string): string {
  const details = c.reachability
    ? `<details><item><name>reachability</name><status>${c.reachability}</status>${
        c.reachability === 'failed' && impairedSince
          ? `<impairedSince>${esc(impairedSince)}</impairedSince>`
          : ''
      }</item></details>`
    : '';
  return `<${tag}><status>${c.status}</status>${details}</${tag}>`;
}

function itemXml(r: Resolved): string {
  const events = r.events
    .map(
      (e) =>
        `<item><code>${esc(e.code)}</code><description>${esc(e.description ?? `The instance is scheduled for ${e.code}`)}</description>` +
        `<notBefore>${esc(e.notBefore ?? '')}</notBefore></item>`,
    )
    .join('');
  return (
    `<item><instanceId>${esc(r.facts.id)}</instanceId><availabilityZone>${esc(r.facts.zone)}</availabilityZone>` +
    `<instanceState><code>${r.facts.stateCode}</code><name>${esc(r.facts.stateName)}</name></instanceState>` +
    summaryXml('systemStatus', r.system, r.impairedSince) +
    summaryXml('instanceStatus', r.instance, r.impairedSince) +
    (events ? `<eventsSet>${events}</eventsSet>` : '') +
    '</item>'
  );
}
