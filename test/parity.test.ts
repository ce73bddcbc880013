/**
 * The parity table (src/parity/table.ts) against upstream Karpenter v1.14.1 (issue 26 item 1): every `spec` field
 * path of upstream's NodePool, NodeClaim and EC2NodeClass CRDs (the byte-for-byte copies in ../shared/data/crds/,
 * or test/fixtures/crds/ where the shared copy is absent), every upstream setting and feature gate has a row; every
 * row names an upstream path and an existing test file; the settings rows agree with capenter's settings registry;
 * docs/parity.md is exactly the generator's output. A new upstream field, setting or gate fails here by name.
 * Metrics and Event reasons (issue 26 item 5): every metric of upstream's v1.14 metrics reference and every Event
 * reason upstream publishes (test/fixtures/upstream/{metrics,events}-v1.14.1.json) has exactly one row, and a
 * `works` Event row names a test that asserts that reason.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { AWS_SETTINGS, AWS_UPSTREAM_ONLY_SETTINGS } from '../src/cloudprovider/aws/settings.ts';
import type { Setting } from '../src/config/settings.ts';
import { DEFAULT_FEATURE_GATES, SETTINGS, UPSTREAM_FEATURE_GATES } from '../src/operator/options.ts';
import { UPSTREAM_ONLY_SETTINGS } from '../src/operator/upstream-settings.ts';
import { renderParityDoc } from '../src/parity/render.ts';
import {
  PARITY_TABLE,
  type ParityKind,
  UPSTREAM_CRD_FILES,
  UPSTREAM_GATES,
  UPSTREAM_SETTINGS,
} from '../src/parity/table.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const SHARED_CRDS = resolve(root, '../shared/data/crds');
const FIXTURE_CRDS = join(root, 'test/fixtures/crds');

/** One metric of test/fixtures/upstream/metrics-v1.14.1.json. */
interface UpstreamMetric {
  name: string;
  type: 'counter' | 'gauge' | 'histogram' | 'summary';
  labels: string[];
  source: string;
}

/** One Event reason of test/fixtures/upstream/events-v1.14.1.json. */
interface UpstreamEvent {
  reason: string;
  kinds: string[];
  source: string;
}

const UPSTREAM_METRICS = (
  JSON.parse(readFileSync(join(root, 'test/fixtures/upstream/metrics-v1.14.1.json'), 'utf8')) as {
    metrics: UpstreamMetric[];
  }
).metrics;
const UPSTREAM_EVENTS = (
  JSON.parse(readFileSync(join(root, 'test/fixtures/upstream/events-v1.14.1.json'), 'utf8')) as {
    events: UpstreamEvent[];
  }
).events;

/** A JSON schema node of a CRD's openAPIV3Schema (the parts the walk reads). */
interface SchemaNode {
  type?: string;
  properties?: Record<string, SchemaNode>;
  items?: SchemaNode;
}

/** Field paths of `node` at `path` and below: `.prop` for properties, `[]` after an array; maps stop. */
function fieldPaths(node: SchemaNode, path: string, out: string[] = []): string[] {
  out.push(path);
  const props = node.type === 'array' ? node.items : node;
  const at = node.type === 'array' ? `${path}[]` : path;
  for (const [name, child] of Object.entries(props?.properties ?? {}))
    fieldPaths(child, `${at}.${name}`, out);
  return out;
}

/** The upstream CRD file: ../shared/data/crds/<file>, else the repository's fixture copy. */
function crdPath(file: string): string {
  const shared = join(SHARED_CRDS, file);
  return existsSync(shared) ? shared : join(FIXTURE_CRDS, file);
}

/** Every `spec` field path of each served version of the upstream CRDs, by kind. */
function upstreamSpecPaths(): Map<ParityKind, Set<string>> {
  const out = new Map<ParityKind, Set<string>>();
  for (const { kind, file } of UPSTREAM_CRD_FILES) {
    const crd = parse(readFileSync(crdPath(file), 'utf8')) as {
      spec: {
        names: { kind: string };
        versions: { served: boolean; schema: { openAPIV3Schema: SchemaNode } }[];
      };
    };
    expect(crd.spec.names.kind, file).toBe(kind);
    const paths = out.get(kind) ?? new Set<string>();
    for (const v of crd.spec.versions.filter((x) => x.served)) {
      const spec = v.schema.openAPIV3Schema.properties?.spec;
      expect(spec, `${file} has no spec`).toBeDefined();
      for (const p of fieldPaths(spec!, 'spec')) paths.add(p);
    }
    out.set(kind, paths);
  }
  return out;
}

/** The names of the table's rows of `kind`. */
function tableNames(kind: ParityKind): Set<string> {
  return new Set(PARITY_TABLE.filter((r) => r.kind === kind).flatMap((r) => r.names));
}

describe('parity table vs upstream v1.14.1 (issue 26)', () => {
  const upstream = upstreamSpecPaths();

  it('every spec field path of the upstream CRDs has a row, and every field row names an upstream path', () => {
    expect([...upstream.keys()]).toEqual(['NodePool', 'NodeClaim', 'EC2NodeClass']);
    expect([...upstream.values()].map((s) => s.size)).toEqual([38, 24, 74]);
    for (const [kind, paths] of upstream) {
      const names = tableNames(kind);
      const noRow = [...paths].filter((p) => !names.has(p));
      expect(noRow, `${kind} field paths of the upstream CRD without a row in src/parity/table.ts`).toEqual(
        [],
      );
      const notUpstream = [...names].filter((n) => !paths.has(n));
      expect(notUpstream, `${kind} rows naming no upstream field path`).toEqual([]);
    }
  });

  it('covers every karpenter.sh / karpenter.k8s.aws CRD of upstream (a new one, e.g. NodeOverlay, fails here)', () => {
    const dirs = ['karpenter', 'karpenter-provider-aws'];
    const base = existsSync(SHARED_CRDS) ? SHARED_CRDS : FIXTURE_CRDS;
    const files = dirs.flatMap((d) =>
      readdirSync(join(base, d))
        .filter((f) => /^karpenter\.(sh|k8s\.aws)_.*\.yaml$/.test(f))
        .map((f) => `${d}/${f}`),
    );
    expect(files.sort()).toEqual(UPSTREAM_CRD_FILES.map((c) => c.file).sort());
  });

  it('names one path at most once per scope, and a scoped path is covered by scoped rows only', () => {
    const seen = new Map<string, Set<string>>();
    for (const r of PARITY_TABLE) {
      for (const n of r.names) {
        const key = `${r.kind} ${n}`;
        const scopes = seen.get(key) ?? new Set<string>();
        expect(scopes.has(r.scope ?? ''), `${key} twice in scope "${r.scope ?? ''}"`).toBe(false);
        scopes.add(r.scope ?? '');
        seen.set(key, scopes);
      }
    }
    const mixed = [...seen].filter(([, s]) => s.size > 1 && s.has('')).map(([k]) => k);
    expect(mixed).toEqual([]);
  });

  it("every row's test file exists and is a test", () => {
    const absent = PARITY_TABLE.map((r) => r.test).filter(
      (t) => !t.endsWith('.test.ts') || !existsSync(join(root, t)),
    );
    expect(absent).toEqual([]);
  });

  it("every upstream setting has a row, and the rows agree with capenter's settings registry", () => {
    expect(UPSTREAM_SETTINGS).toHaveLength(34);
    const registry = new Map<string, Setting>(
      [...SETTINGS, ...AWS_SETTINGS, ...AWS_UPSTREAM_ONLY_SETTINGS].map((s) => [s.env, s as Setting]),
    );
    const upstreamOnly = new Set<string>(
      [...UPSTREAM_ONLY_SETTINGS, ...AWS_UPSTREAM_ONLY_SETTINGS].map((s) => s.env),
    );
    expect([...tableNames('setting')].sort()).toEqual(UPSTREAM_SETTINGS.map((s) => s.env).sort());
    const disagree: string[] = [];
    for (const row of PARITY_TABLE.filter((r) => r.kind === 'setting')) {
      for (const env of row.names) {
        const s = registry.get(env);
        const flag = UPSTREAM_SETTINGS.find((u) => u.env === env)?.flag;
        if (!s || s.flag !== flag) disagree.push(`${env}: not a setting under --${flag}`);
        else if (!upstreamOnly.has(env) && row.status !== 'works')
          disagree.push(`${env}: implemented, row ${row.status}`);
        else if (upstreamOnly.has(env)) {
          const expected = s.accepts.includes('refused') ? 'refused' : 'no-effect';
          if (row.status !== expected) disagree.push(`${env}: accepts "${s.accepts}", row ${row.status}`);
        }
      }
    }
    expect(disagree).toEqual([]);
  });

  it('every upstream feature gate has a row: works when capenter implements it, refused otherwise', () => {
    expect(Object.keys(UPSTREAM_FEATURE_GATES)).toEqual(UPSTREAM_GATES);
    const rows = PARITY_TABLE.filter((r) => r.kind === 'feature gate');
    expect(rows.flatMap((r) => r.names).sort()).toEqual([...UPSTREAM_GATES].sort());
    expect(
      rows.flatMap((r) => r.names.map((g) => [g, r.status])),
      'a gate of DEFAULT_FEATURE_GATES works; an upstream-only gate is refused at true',
    ).toEqual(rows.flatMap((r) => r.names.map((g) => [g, g in DEFAULT_FEATURE_GATES ? 'works' : 'refused'])));
  });

  it('every upstream metric has exactly one row, and every metric row names an upstream metric', () => {
    expect(UPSTREAM_METRICS).toHaveLength(127);
    expect(new Set(UPSTREAM_METRICS.map((m) => m.name)).size).toBe(127);
    const rows = PARITY_TABLE.filter((r) => r.kind === 'metric').flatMap((r) => r.names);
    expect(rows.length, 'a metric named by two rows').toBe(new Set(rows).size);
    expect([...rows].sort()).toEqual(UPSTREAM_METRICS.map((m) => m.name).sort());
    // the zone label upstream v1.14 added to the terminated counters is in the fixture
    const labels = new Map(UPSTREAM_METRICS.map((m) => [m.name, m.labels]));
    expect(labels.get('karpenter_nodes_terminated_total')).toEqual(['nodepool', 'zone']);
    expect(labels.get('karpenter_nodeclaims_terminated_total')).toEqual([
      'nodepool',
      'capacity_type',
      'zone',
    ]);
    expect(labels.get('karpenter_scheduler_pending_pods_by_effective_zone_count')).toEqual([
      'controller',
      'zone',
    ]);
  });

  it('every upstream Event reason has exactly one row; a works row names a test asserting the reason', () => {
    expect(UPSTREAM_EVENTS).toHaveLength(35);
    const rows = PARITY_TABLE.filter((r) => r.kind === 'event');
    const names = rows.flatMap((r) => r.names);
    expect(names.length, 'a reason named by two rows').toBe(new Set(names).size);
    expect([...names].sort()).toEqual(UPSTREAM_EVENTS.map((e) => e.reason).sort());
    const unasserted = rows
      .filter((r) => r.status === 'works')
      .flatMap((r) => {
        const text = readFileSync(join(root, r.test), 'utf8');
        return r.names.filter((n) => !text.includes(n)).map((n) => `${n} (${r.test})`);
      });
    expect(unasserted).toEqual([]);
  });

  it('a works metric row names a test asserting the metric (the dashboards e2e checks its rows generically)', () => {
    const unasserted = PARITY_TABLE.filter(
      (r) => r.kind === 'metric' && r.status === 'works' && r.test !== 'test/e2e/dashboards.test.ts',
    ).flatMap((r) => {
      const text = readFileSync(join(root, r.test), 'utf8');
      return r.names.filter((n) => !text.includes(n)).map((n) => `${n} (${r.test})`);
    });
    expect(unasserted).toEqual([]);
  });

  it('docs/parity.md is the output of the generator (npm run generate:parity)', () => {
    expect(readFileSync(join(root, 'docs/parity.md'), 'utf8')).toBe(renderParityDoc());
  });
});
