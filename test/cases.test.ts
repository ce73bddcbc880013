/**
 * The scenario cases of `../shared/cases` (vendored in `test/cases/`), each checked against the decision users
 * expect (format and meaning of every `expect` key: `test/cases/README.md`). Provisioning and catalog cases
 * run through the same path as `capenter simulate` (parseManifests → simulate). Cases of the other kinds run in
 * the test files listed in {@link COVERED_ELSEWHERE}; this file checks that each of them is listed there, so a
 * new case (or case kind) without a test fails here.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { LabelSelector, Pod, TopologySpreadConstraint } from '../src/apis/core.ts';
import type { EC2NodeClass } from '../src/apis/karpenter.ts';
import { parseManifests } from '../src/apis/load.ts';
import { parseResource, type Resources } from '../src/apis/quantity.ts';
import { getInstanceTypes } from '../src/cloudprovider/aws/catalog/index.ts';
import { selectorMatches } from '../src/scheduling/labelselector.ts';
import { type SimulationResult, simulate } from '../src/simulate/run.ts';
import {
  type AllocatableExpect,
  type Case,
  caseFiles,
  cases,
  casesDir,
  checkBounds,
  PROVISIONING_EXPECT_KEYS,
} from './casefile.ts';
import { daemonOverheadOracle, minDaemonOverheadOracle, podRequestsOracle, sumOracle } from './oracles.ts';

const here = dirname(fileURLToPath(import.meta.url));
/** `shared/cases` beside the checkout (a clone) or beside its parent (a worktree under `wt/`); '' when absent. */
const sharedCasesDir =
  [join(here, '..', '..', 'shared', 'cases'), join(here, '..', '..', '..', 'shared', 'cases')].find((d) =>
    existsSync(d),
  ) ?? '';

/** The case kinds this file runs. */
const KINDS_HERE: ReadonlySet<string> = new Set(['provisioning', 'catalog']);

/**
 * Where the cases of the other kinds run. `kinds`: the file runs EVERY case of that kind that has the named
 * `expect` key (it filters on both); `ids`: single cases it runs by id.
 */
const COVERED_ELSEWHERE: ReadonlyArray<{
  file: string;
  kinds?: Readonly<Record<string, string>>;
  ids?: readonly string[];
}> = [
  // pure core through simulateDisruption: first command, candidates, replacement types and price
  { file: 'test/disruption/cases.test.ts', kinds: { consolidation: 'disruption', drift: 'disruption' } },
  // the disruption controller on the simulated API server; the termination case through the termination controllers
  {
    file: 'test/controllers/disruption/cases.test.ts',
    kinds: { consolidation: 'disruption', drift: 'disruption' },
    ids: ['expire-with-blocking-pdb-terminates-after-grace-period'],
  },
];

/** The zonal topology spread constraint of the case's workload (first one found). */
function zonalSpread(
  result: SimulationResult,
): { tsc: TopologySpreadConstraint; namespace: string } | undefined {
  const pods = [...result.built.input.pods, ...result.built.input.existingNodes.flatMap((n) => n.pods)];
  for (const p of pods) {
    const tsc = p.spec.topologySpreadConstraints?.find(
      (t) => t.topologyKey === 'topology.kubernetes.io/zone',
    );
    if (tsc) return { tsc, namespace: p.metadata.namespace ?? 'default' };
  }
  return undefined;
}

function maxZoneSkew(
  result: SimulationResult,
  selector: LabelSelector | undefined,
  namespace: string,
): number {
  const counts = new Map<string, number>();
  const inc = (zone: string | undefined) => {
    if (zone) counts.set(zone, (counts.get(zone) ?? 0) + 1);
  };
  const matches = (p: Pod) =>
    (p.metadata.namespace ?? 'default') === namespace && selectorMatches(selector, p.metadata.labels ?? {});
  const nodeZone = new Map<string, string | undefined>();
  for (const n of result.built.input.existingNodes) {
    const zone = n.node.metadata.labels?.['topology.kubernetes.io/zone'];
    nodeZone.set(n.node.metadata.name ?? '', zone);
    for (const p of n.pods) if (matches(p)) inc(zone);
  }
  const claimZone = new Map(result.nodeClaims.map((nc) => [nc.name, nc.zone]));
  const pods = new Map(
    result.built.input.pods.map((p) => [`${p.metadata.namespace ?? 'default'}/${p.metadata.name}`, p]),
  );
  for (const pl of result.placements) {
    const p = pods.get(pl.pod);
    if (!p || !matches(p)) continue;
    inc(pl.target === 'new' ? claimZone.get(pl.node) : nodeZone.get(pl.node));
  }
  const values = [...counts.values()];
  return values.length ? Math.max(...values) - Math.min(...values) : 0;
}

function checkAllocatable(c: Case, exp: AllocatableExpect[]) {
  const loaded = parseManifests(c.input, `${c.id}.yaml`);
  const nodeClass = loaded.objects.map((o) => o.object).find((o) => o.kind === 'EC2NodeClass') as
    | EC2NodeClass
    | undefined;
  if (!nodeClass) throw new Error(`case ${c.id} has no EC2NodeClass`);
  const { instanceTypes } = getInstanceTypes({ region: c.region, nodeClass });
  for (const e of exp) {
    const t = instanceTypes.find((x) => x.name === e.type);
    expect(t, `instance type ${e.type} in the ${c.region} catalog`).toBeDefined();
    const actual = {
      cpu: t!.allocatable.cpu,
      memory: t!.allocatable.memory,
      pods: t!.allocatable.pods,
    };
    const wanted = {
      cpu: parseResource('cpu', e.cpu),
      memory: parseResource('memory', e.memory),
      pods: parseResource('pods', e.pods),
    };
    expect(actual, `allocatable of ${e.type} (memory in bytes, cpu in millicores)`).toEqual(wanted);
  }
}

describe('vendored cases', () => {
  it.skipIf(!sharedCasesDir)('test/cases/*.yaml equal ../shared/cases/*.yaml', () => {
    const shared = readdirSync(sharedCasesDir)
      .filter((f) => f.endsWith('.yaml'))
      .sort();
    expect(caseFiles).toEqual(shared);
    for (const f of shared) {
      expect(readFileSync(join(casesDir, f), 'utf8'), `test/cases/${f}`).toBe(
        readFileSync(join(sharedCasesDir, f), 'utf8'),
      );
    }
  });

  it('every case has an id equal to its file name and a known kind', () => {
    expect(cases.length).toBeGreaterThan(0);
    caseFiles.forEach((f, i) => {
      expect(cases[i]!.id).toBe(f.replace(/\.yaml$/, ''));
      expect(['provisioning', 'consolidation', 'drift', 'termination', 'catalog']).toContain(cases[i]!.kind);
    });
  });
});

describe('cases run by other test files', () => {
  const elsewhere = cases.filter((c) => !KINDS_HERE.has(c.kind));

  it('every case of another kind is run by a listed test file', () => {
    expect(elsewhere.length).toBeGreaterThan(0);
    for (const c of elsewhere) {
      const by = COVERED_ELSEWHERE.filter((e) => {
        const key = e.kinds?.[c.kind];
        return e.ids?.includes(c.id) || (key !== undefined && key in c.expect);
      });
      expect(
        by.map((e) => e.file),
        `case ${c.id} (kind ${c.kind}) is run by no test: add one and list it in COVERED_ELSEWHERE`,
      ).not.toEqual([]);
    }
  });

  it('the listed test files exist and name the kinds and ids they run', () => {
    for (const e of COVERED_ELSEWHERE) {
      const path = join(here, '..', e.file);
      expect(existsSync(path), `${e.file} exists`).toBe(true);
      const text = readFileSync(path, 'utf8');
      for (const [kind, key] of Object.entries(e.kinds ?? {})) {
        expect(text, `${e.file} filters on kind '${kind}'`).toContain(`'${kind}'`);
        expect(text, `${e.file} filters on expect.${key}`).toContain(`expect.${key}`);
      }
      for (const id of e.ids ?? []) {
        expect(text, `${e.file} runs case ${id}`).toContain(`'${id}'`);
        expect(
          cases.map((c) => c.id),
          `case ${id} listed for ${e.file} exists`,
        ).toContain(id);
      }
    }
  });
});

/**
 * Cases that fail until the named issue is done: run as expected failures (`it.fails`), so they turn red
 * the moment they start passing and the entry must be removed. Never skipped, never deleted.
 */
const EXPECTED_FAILURES: Readonly<Record<string, string>> = {};

describe('scenario cases', () => {
  for (const c of cases.filter((x) => KINDS_HERE.has(x.kind))) {
    const xfail = EXPECTED_FAILURES[c.id];
    (xfail ? it.fails : it)(
      `${c.id} (${c.kind}): ${c.title}${xfail ? ` [expected failure until ${xfail}]` : ''}`,
      async () => {
        const unknown = Object.keys(c.expect).filter((k) => !PROVISIONING_EXPECT_KEYS.has(k));
        expect(unknown, 'expect keys this test knows how to check').toEqual([]);

        const loaded = parseManifests(c.input, `${c.id}.yaml`);
        expect(loaded.errors, 'the case input loads without errors').toEqual([]);
        const result = await simulate(loaded, { region: c.region });
        expect(result.errors, 'no simulation errors').toEqual([]);
        const e = c.expect;
        const summary = result.nodeClaims.map(
          (nc) =>
            `${nc.nodePool}/${nc.instanceType} ${nc.zone} [${nc.pods.length} pods, ${JSON.stringify(nc.requests)}]`,
        );

        if (e.unschedulablePods !== undefined) {
          expect(
            result.unschedulable.length,
            `unschedulable pods: ${JSON.stringify(result.unschedulable.map((u) => `${u.pod}: ${u.code}`))}`,
          ).toBe(e.unschedulablePods);
        }
        if (e.nodeClaims) {
          expect(result.nodeClaims.length, `NodeClaims: ${summary.join('; ')}`).toBeGreaterThanOrEqual(
            e.nodeClaims.min,
          );
          expect(result.nodeClaims.length, `NodeClaims: ${summary.join('; ')}`).toBeLessThanOrEqual(
            e.nodeClaims.max,
          );
        }
        if (e.everyNodeClaimFits) {
          for (const plan of result.scheduling.newNodeClaims) {
            // overhead and requests computed independently of the scheduler (test/oracles.ts)
            const nodePool = result.built.input.nodePools.find((np) => np.metadata.name === plan.nodePool)!;
            const daemonSets = result.built.input.daemonSets;
            const overhead = minDaemonOverheadOracle(nodePool, daemonSets, plan.instanceTypeOptions);
            for (const r of ['cpu', 'memory', 'pods'])
              expect(plan.daemonOverhead[r] ?? 0, `${plan.nodePool} daemon overhead ${r}`).toBe(
                overhead[r] ?? 0,
              );
            const podsNeed: Resources = {};
            for (const p of plan.pods) {
              for (const [k, v] of Object.entries(podRequestsOracle(p))) podsNeed[k] = (podsNeed[k] ?? 0) + v;
            }
            podsNeed.pods = plan.pods.length;
            expect(
              plan.instanceTypeOptions.length,
              `${plan.nodePool} NodeClaim has instance type options`,
            ).toBeGreaterThan(0);
            for (const t of plan.instanceTypeOptions) {
              // each option holds the pods plus the DaemonSets that run on THAT type
              const need = sumOracle(podsNeed, daemonOverheadOracle(nodePool, daemonSets, t));
              for (const r of ['cpu', 'memory', 'pods']) {
                expect(
                  need[r] ?? 0,
                  `${plan.nodePool} NodeClaim option ${t.name}: ${r} requested ${need[r] ?? 0} (pods + daemon overhead) > allocatable ${t.allocatable[r] ?? 0}`,
                ).toBeLessThanOrEqual(t.allocatable[r] ?? 0);
              }
            }
          }
        }
        if (e.instanceTypes)
          checkBounds(
            'cheapest instance type',
            result.nodeClaims.map((nc) => nc.instanceType),
            e.instanceTypes,
          );
        if (e.nodePools)
          checkBounds(
            'NodePool',
            result.nodeClaims.map((nc) => nc.nodePool),
            e.nodePools,
          );
        if (e.zones) {
          const zones = new Set(result.nodeClaims.map((nc) => nc.zone));
          if (e.zones.distinctAtLeast !== undefined)
            expect(zones.size, `zones: ${[...zones].join(', ')}`).toBeGreaterThanOrEqual(
              e.zones.distinctAtLeast,
            );
          if (e.zones.allIn) checkBounds('NodeClaim zone', [...zones], { allIn: e.zones.allIn });
        }
        if (e.maxPodsPerZoneSkew !== undefined) {
          const spread = zonalSpread(result);
          expect(spread, 'the case has a zonal topology spread constraint').toBeDefined();
          expect(
            maxZoneSkew(result, spread!.tsc.labelSelector, spread!.namespace),
            'per-zone skew',
          ).toBeLessThanOrEqual(e.maxPodsPerZoneSkew);
        }
        if (e.allocatable)
          checkAllocatable(c, Array.isArray(e.allocatable) ? e.allocatable : [e.allocatable]);
      },
    );
  }
});
