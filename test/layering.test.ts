/**
 * The layer picture of DESIGN.md ("Layers", "Rules"), checked on the import statements of `src/` (static
 * `import`/`export … from`, side-effect imports and `import()`; type-only imports count like any other):
 *
 *   cli → embedded → operator → controllers → state → cloudprovider → scheduling / disruption → apis
 *   kube (the client: beside the pure cores, above apis)   sim (its own package: apis + kube only)
 *
 * Rules, each a test below:
 * 1. Product files import only what {@link ALLOWED} lists for their folder (imports point down; `sim` and
 *    `embedded` are imported by no product folder below them). `controllers/` and `state/` see the cloud only
 *    through the CloudProvider contract: the files directly in `src/cloudprovider/`, never a provider's folder.
 * 2. `sim/` imports only `apis/`, `kube/` and its own files (the embedded ring's stand-ins carry no product logic;
 *    the rules they evaluate are injected through the declared face, `src/embedded/rules.ts`). Rule 1 enforces it
 *    for every non-test file of `src/sim`; src/sim keeps no package.json of its own: a nested package.json
 *    without npm workspaces stops no relative import, and workspaces would need a new install step.
 * 3. The scheduling core (`src/scheduling`) imports only `src/apis` and its own files: no packages, no `node:`
 *    modules (pure: no I/O, no clock, no randomness).
 * 4. No cycles between files, type-only edges included.
 * 5. Product files never import test support (test files, testing helpers).
 *
 * Kinds of files: *test files* (`*.test.ts`) are exempt from rules 1–3 (a test builds fixtures from any layer);
 * *testing helpers* (`testing.ts` beside product files, `src/testing/`, the conformance suite
 * `src/cloudprovider/conformance/`) may import what their folder's product files may, plus `sim/` and
 * `embedded/` (an embedded API server, stand-ins and the default rules are their fixtures), other test
 * support and a provider's folder (a concrete provider is a fixture); *product files* are all others.
 *
 * A provider's own controllers and setup (`src/cloudprovider/<provider>/controllers/`, `.../setup.ts`) may also
 * import `controllers/` and `state/` ({@link PROVIDER_CONTROLLERS_ALLOWED}). Known violations would go in
 * {@link ALLOWED_VIOLATIONS} and {@link ALLOWED_CYCLES}, each with what removes it; both are empty since issue 25's
 * moves landed. The lists are exact: a new violation fails, and so does an entry that no longer occurs.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** A top-level folder of `src/`. */
type Layer =
  | 'cli'
  | 'embedded'
  | 'operator'
  | 'controllers'
  | 'state'
  | 'cloudprovider'
  | 'scheduling'
  | 'disruption'
  | 'apis'
  | 'kube'
  | 'sim'
  | 'simulate'
  | 'doctor'
  | 'plan'
  | 'config'
  | 'dashboard'
  | 'parity'
  | 'testing';

/**
 * Which folders a folder's product files may import (besides its own files), with the reason. Derived from
 * DESIGN.md's picture (down only, any number of floors) and the review's fourteen "never" edges
 * ({@link NEVER}); `doctor/` and `simulate/` are CLI features the picture does not draw; `config/` is the settings
 * registry machinery (flags and variables) below the layers that declare settings.
 */
const ALLOWED: Record<Exclude<Layer, 'testing'>, Partial<Record<Layer, string>>> = {
  cli: {
    embedded: 'capenter start runs the embedded stacks',
    operator: 'capenter controller runs the composition root',
    controllers: 'capenter convert uses the vintage converter',
    cloudprovider: 'commands list settings, instance types and providers',
    scheduling: 'capenter instance-types filters with the core',
    apis: 'commands load and print API objects',
    kube: 'commands talk to a cluster',
    config: 'capenter controller builds its flags from the settings registry',
    sim: 'capenter apiserver serves sim’s API server alone',
    simulate: 'capenter simulate',
    doctor: 'capenter doctor',
    dashboard: 'capenter controller --dashboard-port serves the dashboard',
    plan: 'capenter plan',
  },
  embedded: {
    operator: 'runs the product (the composition root) against the simulator',
    controllers: 'embedded stacks start controllers beside the operator',
    state: 'reads cluster state for the summary',
    cloudprovider: 'the declared face implements sim’s rules with the providers’ code',
    scheduling: 'the declared face hands sim the scheduling predicates',
    apis: 'API objects of the sample scenarios',
    kube: 'clients of the simulated clusters',
    sim: 'the simulator it assembles',
    doctor: 'each summary of capenter start carries a doctor line',
    dashboard: 'capenter start serves the dashboard',
  },
  operator: {
    controllers: 'the composition root starts the controllers',
    state: 'it builds the cluster state',
    cloudprovider: 'it picks the provider module',
    scheduling: 'settings name scheduling policies',
    disruption: 'settings name disruption policies',
    apis: 'CRDs and settings',
    kube: 'client, leader election, informers',
    config: 'core settings are registry entries',
  },
  controllers: {
    state: 'reconcilers read cluster state',
    cloudprovider: 'the cloud only through CloudProvider (contract files only)',
    scheduling: 'provisioning solves with the core',
    disruption: 'the disruption controller runs the core',
    apis: 'the objects they reconcile',
    kube: 'the cluster only through kube/',
  },
  state: {
    cloudprovider: 'instance types through the contract (contract files only)',
    scheduling: 'requirements and resources of the core',
    apis: 'the objects it tracks',
    kube: 'fed by informers',
  },
  cloudprovider: {
    scheduling: 'requirements and offering order of the core',
    apis: 'NodeClaims, NodeClasses, instance types',
    kube: 'providers that talk to a cluster (clusterapi)',
    config: 'a provider module declares its settings',
  },
  scheduling: { apis: 'PURE: API types only' },
  disruption: {
    scheduling: 'the same scheduling simulation proves pods fit elsewhere',
    apis: 'PURE: API types only',
  },
  apis: {},
  kube: { apis: 'the client speaks the API types' },
  sim: { apis: 'API types and built-in validation', kube: 'stand-ins talk through the same client' },
  simulate: {
    cloudprovider: 'the embedded AWS catalog and the instance-type contract',
    scheduling: 'runs the scheduling core offline',
    disruption: 'runs the disruption core offline',
    apis: 'loads manifests',
  },
  doctor: {
    scheduling: 'checks use the core’s predicates',
    apis: 'the objects it checks',
    kube: 'reads a cluster',
  },
  plan: {
    simulate: 'builds the scheduling input as simulate does',
    cloudprovider:
      'the embedded catalog, the providers’ NodeClass hashes and the aws selector resolvers and drift rule',
    scheduling: 'replacements from the scheduling core',
    disruption: 'drift rules and budgets of the disruption core',
    apis: 'the objects it plans',
    kube: 'reads the live cluster',
  },
  config: {},
  parity: {},
  dashboard: {
    state: 'the view is built from cluster state',
    controllers: 'the provisioner’s and disruption controller’s pass listeners feed the decision log',
    disruption: 'budgets allowed now and the core’s types',
    scheduling: 'the plans of the provisioning decisions',
    cloudprovider: 'instance type prices through the contract (contract files only)',
    apis: 'labels, quantities, durations',
    kube: 'the client of the credential probe, node:http',
  },
};

/**
 * A provider's own controllers and their wiring (`src/cloudprovider/<provider>/controllers/`, `.../setup.ts`) sit
 * on the controllers floor, in the provider's folder (as karpenter-provider-aws's `pkg/controllers` build on the
 * core's packages): besides what `cloudprovider/` may import, they may import `controllers/` (the controller kit,
 * the shared metrics, the NodeClass validation of `nodeclass.status`) and `state/`. The reverse edge, core
 * controllers → a provider's folder, stays forbidden ({@link CONTRACT_ONLY}).
 */
const PROVIDER_CONTROLLERS_ALLOWED: Partial<Record<Layer, string>> = {
  controllers: 'the controller kit, shared metrics and NodeClass validation',
  state: 'cluster state, like any controller',
};

/** Whether `file` is a provider's own controller or its setup (see {@link PROVIDER_CONTROLLERS_ALLOWED}). */
function isProviderController(file: string): boolean {
  const p = file.split('/');
  return (
    p[1] === 'cloudprovider' &&
    p.length >= 4 &&
    (p[3] === 'controllers' || (p.length === 4 && p[3] === 'setup.ts'))
  );
}

/**
 * The review's fourteen "never" edges (architecture-2026-12-02, "Layering rules that would fail today"), held
 * against {@link ALLOWED} so the table cannot silently allow one.
 */
const NEVER: Array<[Exclude<Layer, 'testing'>, Layer | 'cloudprovider/<provider>']> = [
  ['scheduling', 'kube'],
  ['scheduling', 'state'],
  ['scheduling', 'cloudprovider'],
  ['disruption', 'kube'],
  ['disruption', 'state'],
  ['operator', 'sim'],
  ['sim', 'scheduling'],
  ['controllers', 'operator'],
  ['cloudprovider', 'sim'],
  ['simulate', 'sim'],
  ['sim', 'cloudprovider'],
  ['state', 'cloudprovider/<provider>'],
  ['controllers', 'sim'],
  ['sim', 'controllers'],
];

/** Folders whose files are the CloudProvider contract's users only: they may not import a provider's folder. */
const CONTRACT_ONLY: ReadonlySet<Layer> = new Set(['controllers', 'state', 'dashboard']);

/**
 * Today's violations, `importer → imported`, and the item of issue 25 that removes each. Exact: see the
 * module doc.
 */
const ALLOWED_VIOLATIONS: Record<string, string> = {};

/** Import cycles of today (sorted member lists), and the item that removes each. Exact, like the above. */
const ALLOWED_CYCLES: Record<string, string> = {};

// ---------------------------------------------------------------------------------------------- scanner

function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(join(root, dir), { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...tsFiles(p));
    else if (e.name.endsWith('.ts')) out.push(p);
  }
  return out;
}

/** Module specifiers of every static import/export-from, side-effect import and dynamic import in `text`. */
function importsIn(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/^\s*(?:import|export)\s[^;]*?\sfrom\s+'([^']+)'/gms)) out.push(m[1]!);
  for (const m of text.matchAll(/^\s*import\s+'([^']+)'/gm)) out.push(m[1]!);
  for (const m of text.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g)) out.push(m[1]!);
  return out;
}

function importsOf(file: string): string[] {
  return importsIn(readFileSync(join(root, file), 'utf8'));
}

/** `spec` resolved to a path relative to the repository root, or the bare specifier for packages. */
function target(file: string, spec: string): string {
  if (!spec.startsWith('.')) return spec;
  return relative(root, resolve(root, dirname(file), spec));
}

type Kind = 'test' | 'testing' | 'product';

function kindOf(file: string): Kind {
  if (file.endsWith('.test.ts')) return 'test';
  if (
    file.endsWith('/testing.ts') ||
    file.startsWith('src/testing/') ||
    file.startsWith('src/cloudprovider/conformance/')
  )
    return 'testing';
  return 'product';
}

function layerOf(file: string): Layer {
  return file.split('/')[1] as Layer;
}

/** A file directly in `src/cloudprovider/` (the contract, its decorators and fakes), not a provider's folder. */
function isContractFile(file: string): boolean {
  return file.startsWith('src/cloudprovider/') && file.split('/').length === 3;
}

/**
 * Why the import `from → to` (both repository paths of `src/` files) breaks rule 1, 2 or 5, or undefined when
 * it is allowed. Test files are never checked.
 */
function violation(from: string, to: string): string | undefined {
  const kind = kindOf(from);
  if (kind === 'test') return undefined;
  if (kind === 'product' && kindOf(to) !== 'product') return 'product code imports test support';
  const a = layerOf(from);
  const b = layerOf(to);
  if (a === b) return undefined;
  if (kind === 'testing' && (b === 'sim' || b === 'embedded' || b === 'testing' || kindOf(to) === 'testing'))
    return undefined;
  if (a === 'testing') return undefined;
  if (kind === 'product' && isProviderController(from) && PROVIDER_CONTROLLERS_ALLOWED[b]) return undefined;
  if (!ALLOWED[a][b]) return `${a} may not import ${b}`;
  if (kind === 'product' && CONTRACT_ONLY.has(a) && b === 'cloudprovider' && !isContractFile(to))
    return `${a} sees the cloud only through the CloudProvider contract`;
  return undefined;
}

/** Every `src/` file and its `src/` imports. */
function graph(): Map<string, string[]> {
  const g = new Map<string, string[]>();
  for (const f of tsFiles('src'))
    g.set(
      f,
      importsOf(f)
        .map((s) => target(f, s))
        .filter((t) => t.startsWith('src/')),
    );
  return g;
}

/** The strongly connected components of more than one file (Tarjan), each sorted; the list sorted. */
function cycles(g: ReadonlyMap<string, readonly string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    on.add(v);
    for (const w of g.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1) out.push(scc.sort());
    }
  };
  for (const v of [...g.keys()].sort()) if (!index.has(v)) visit(v);
  return out.sort((x, y) => x.join().localeCompare(y.join()));
}

/** Every import breaking rules 1, 2 and 5, as `importer → imported`, sorted. */
function violations(g: ReadonlyMap<string, readonly string[]>): string[] {
  const out = new Set<string>();
  for (const [f, ts] of g) for (const t of ts) if (violation(f, t)) out.add(`${f} → ${t}`);
  return [...out].sort();
}

// ---------------------------------------------------------------------------------------------- tests

describe('layering', () => {
  const g = graph();

  it('every folder of src/ has a row in the table, and the table allows none of the review’s "never" edges', () => {
    const folders = new Set([...g.keys()].map(layerOf));
    for (const f of folders) expect(f === 'testing' || f in ALLOWED, `src/${f} has no row`).toBe(true);
    for (const [a, b] of NEVER)
      if (b === 'cloudprovider/<provider>') expect(CONTRACT_ONLY.has(a), `${a} → ${b}`).toBe(true);
      else expect(ALLOWED[a][b], `${a} → ${b}`).toBeUndefined();
    expect(ALLOWED.sim).toEqual({ apis: expect.any(String), kube: expect.any(String) });
  });

  it('imports point down the layer table, sim imports only apis and kube, product code never imports test support (rules 1, 2, 5)', () => {
    expect(violations(g)).toEqual(Object.keys(ALLOWED_VIOLATIONS).sort());
  });

  it('the scheduling core imports only src/apis and its own files (rule 3)', () => {
    const files = [...g.keys()].filter((f) => f.startsWith('src/scheduling/') && kindOf(f) === 'product');
    expect(files).toContain(join('src', 'scheduling', 'scheduler.ts'));
    const bad: string[] = [];
    for (const f of files)
      for (const spec of importsOf(f)) {
        const t = target(f, spec);
        if (!t.startsWith('src/scheduling/') && !t.startsWith('src/apis/')) bad.push(`${f} → ${spec}`);
      }
    expect(bad).toEqual([]);
  });

  it('no import cycles between files, type-only edges included (rule 4)', () => {
    expect(cycles(g).map((c) => c.join(' ↔ '))).toEqual(Object.keys(ALLOWED_CYCLES).sort());
  });

  it('the checks can fail: the scanner sees multi-line, type-only and dynamic imports; the rules flag bad edges', () => {
    const specs = importsOf(join('src', 'scheduling', 'scheduler.ts'));
    expect(specs.length).toBeGreaterThan(5);
    expect(specs).toContain('../apis/core.ts');
    expect(
      importsIn(
        "import type {\n  A,\n  B,\n} from './a.ts';\nconst m = await import('./b.ts');\nexport * from './c.ts';",
      ),
    ).toEqual(['./a.ts', './c.ts', './b.ts']);
    expect(target('src/controllers/x.ts', '../sim/cluster.ts')).toBe('src/sim/cluster.ts');
    expect(violation('src/controllers/x.ts', 'src/sim/cluster.ts')).toBe('controllers may not import sim');
    expect(violation('src/sim/x.ts', 'src/scheduling/predicates.ts')).toBe('sim may not import scheduling');
    expect(violation('src/operator/x.ts', 'src/embedded/rules.ts')).toBe('operator may not import embedded');
    expect(violation('src/state/x.ts', 'src/cloudprovider/kwok/nodes.ts')).toContain('contract');
    expect(violation('src/state/x.ts', 'src/cloudprovider/types.ts')).toBeUndefined();
    expect(
      violation('src/cloudprovider/aws/controllers/x.ts', 'src/controllers/runtime/index.ts'),
    ).toBeUndefined();
    expect(violation('src/cloudprovider/aws/setup.ts', 'src/controllers/runtime/index.ts')).toBeUndefined();
    expect(violation('src/cloudprovider/aws/provider.ts', 'src/controllers/runtime/index.ts')).toBe(
      'cloudprovider may not import controllers',
    );
    expect(violation('src/cloudprovider/aws/controllers/x.ts', 'src/operator/operator.ts')).toBe(
      'cloudprovider may not import operator',
    );
    expect(violation('src/controllers/x.ts', 'src/cloudprovider/aws/controllers/nodeclass.ts')).toContain(
      'contract',
    );
    expect(violation('src/operator/x.ts', 'src/controllers/nodeclaim/testing.ts')).toBe(
      'product code imports test support',
    );
    expect(violation('src/controllers/nodeclaim/testing.ts', 'src/sim/apiserver/index.ts')).toBeUndefined();
    expect(violation('src/controllers/nodeclaim/testing.ts', 'src/cli/start.ts')).toBe(
      'controllers may not import cli',
    );
    expect(violation('src/controllers/x.test.ts', 'src/cli/start.ts')).toBeUndefined();
    expect(
      cycles(
        new Map([
          ['a', ['b']],
          ['b', ['c']],
          ['c', ['a']],
          ['d', ['a']],
        ]),
      ),
    ).toEqual([['a', 'b', 'c']]);
  });
});
