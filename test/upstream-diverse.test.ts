/**
 * The `upstream-diverse` bench workload reproduces upstream Karpenter's `makeDiversePods` pod for pod: the
 * TypeScript port of Go's math/rand (bench/upstream-diverse.ts) must give the same pods as the shared
 * `diverse-pods.py`, whose output is vendored as digests in bench/upstream/diverse-pods.expected.json.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  compareWithUpstream,
  type DiversePod,
  formatUpstreamComparison,
  loadUpstreamMeasured,
  makeUpstreamDiversePods,
  runUpstreamDiverse,
  type UpstreamDiverseRow,
  upstreamFakeCatalog,
} from '../bench/upstream-diverse.ts';

const expected = JSON.parse(
  readFileSync(new URL('../bench/upstream/diverse-pods.expected.json', import.meta.url), 'utf8'),
) as { sha256: Record<string, string>; first: string[] };

/** JSON with sorted keys and no spaces (Python `json.dumps(sort_keys=True, separators=(',', ':'))`). */
function canonical(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  const o = v as Record<string, unknown>;
  return `{${Object.keys(o)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`)
    .join(',')}}`;
}

const line = (p: DiversePod) => [p.kind, canonical(p.labels), canonical(p.extra), p.cpu, p.memory].join('|');

describe('upstream-diverse workload', () => {
  it('matches diverse-pods.py pod for pod at 1k, 2k, 5k and 10k pods', () => {
    const pods1k = makeUpstreamDiversePods(1000).map(line);
    expect([0, 1, 199, 200, 201, 400, 600, 800, 999].map((i) => pods1k[i])).toEqual(expected.first);
    for (const n of [1000, 2000, 5000, 10000]) {
      const digest = createHash('sha256')
        .update(makeUpstreamDiversePods(n).map(line).join('\n'))
        .digest('hex');
      expect(digest, `${n} pods`).toBe(expected.sha256[String(n)]);
    }
  });

  it('builds the fake catalog as upstream (fake-it-i: i+1 vCPU, 2(i+1) GiB, five offerings, PriceFromResources)', () => {
    const cat = upstreamFakeCatalog();
    expect(cat).toHaveLength(400);
    const it3 = cat[3]!;
    expect(it3.name).toBe('fake-it-3');
    expect(it3.allocatable).toEqual({ cpu: 3900, memory: 8 * 1024 ** 3 - 10 * 1024 ** 2, pods: 40 });
    expect(it3.offerings.map((o) => `${o.capacityType}/${o.zone}/${o.priceUSDPerHour}`)).toEqual([
      'spot/test-zone-1/1.258993',
      'spot/test-zone-2/1.258993',
      'on-demand/test-zone-1/1.258993',
      'on-demand/test-zone-2/1.258993',
      'on-demand/test-zone-3/1.258993',
    ]);
    // upstream fake.PriceFromResources: 0.1 per vCPU + 0.1 per 10^9 bytes of memory (4 vCPU, 8 GiB)
    expect(it3.offerings[0]!.priceUSDPerHour).toBeCloseTo(0.4 + (0.1 * 8 * 1024 ** 3) / 1e9, 6);
  });

  it('schedules 500 of the pods with nothing left over', () => {
    const row = runUpstreamDiverse(500, 1);
    expect(row.unschedulable).toBe(0);
    expect(row.nodeClaims).toBeGreaterThanOrEqual(100); // 100 hostname anti-affinity pods need a node each
  });

  it('prints capenter next to the recorded upstream figures, with the ratio against 20x', () => {
    const m = loadUpstreamMeasured();
    expect(m.sizes.map((x) => x.pods)).toEqual([1000, 2000, 5000, 10000]);
    for (const x of m.sizes) {
      const runs = [...x.runs].sort((a, b) => a - b);
      expect(runs).toContain(x.podsPerSecond); // an odd number of runs: the median is one of them
      expect(x.podsPerSecond).toBe(runs[(runs.length - 1) / 2]);
      expect(x.backToBack.ratio).toHaveLength(x.runs.length);
    }
    const u1k = m.sizes[0]!.podsPerSecond;
    const row = (podsPerSecond: number): UpstreamDiverseRow => ({
      pods: 1000,
      podsPerSecond,
      solveSeconds: 1000 / podsPerSecond,
      solveCpuSeconds: 0,
      firstSolveSeconds: 2000 / podsPerSecond,
      firstSolveCpuSeconds: 0,
      nodeClaims: 200,
      priceUSDPerHour: 237.635,
      unschedulable: 0,
    });
    const fast = row(Math.ceil(u1k * 20));
    const slow = row(Math.floor(u1k * 19));
    expect(compareWithUpstream(fast, m)).toMatchObject({ upstreamPodsPerSecond: u1k, pass: true });
    expect(compareWithUpstream(slow, m)?.pass).toBe(false);
    expect(compareWithUpstream({ ...fast, pods: 3000 }, m)).toBeUndefined();
    const text = formatUpstreamComparison([fast, slow], m, 1.5);
    expect(text).toContain('RECORDED in bench/upstream/upstream-measured.json');
    expect(text).toContain('NOT measured in this run (load average now 1.5)');
    expect(text).toContain('bench/upstream/README.md');
    expect(text).toMatch(/ {2}1000 +\d+ +\d+\.\d +20\.\dx +PASS/);
    expect(text).toMatch(/ {2}1000 +\d+ +\d+\.\d +1[89]\.\dx +FAIL/);
  });
});
