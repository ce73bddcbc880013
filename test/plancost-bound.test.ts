import { describe, expect, it } from 'vitest';
import { hostnameExclusiveClique, lpLowerBound, makeDiversePods } from '../bench/scheduling.ts';

describe('bench plan-cost lower bound', () => {
  it('solves the LP relaxation: min c·x, A x ≥ b, x ≥ 0', () => {
    // A: 2 cpu / 4 GiB at $1, B: 2 cpu / 16 GiB at $2; need 4 cpu, 20 GiB: x = (1, 1) costs $3, while
    // one resource at a time gives only max(4 × $0.5, 20 × $0.125) = $2.5
    expect(
      lpLowerBound(
        [
          [2, 4],
          [2, 16],
        ],
        [1, 2],
        [4, 20],
      ),
    ).toBeCloseTo(3, 9);
    // a node-count row: at least 5 nodes of either type, 4 cpu → 5 × A
    expect(
      lpLowerBound(
        [
          [2, 4, 1],
          [2, 16, 1],
        ],
        [1, 2],
        [4, 0, 5],
      ),
    ).toBeCloseTo(5, 9);
    // nothing supplies the second row: no plan exists
    expect(lpLowerBound([[2, 0]], [1], [4, 1])).toBe(Number.POSITIVE_INFINITY);
  });

  it('counts the mutually exclusive hostname anti-affinity pods of the diverse mix', () => {
    const clique = hostnameExclusiveClique(makeDiversePods(100));
    expect(clique).toHaveLength(20);
    expect(new Set(clique.map((p) => p.metadata.labels?.app))).toEqual(new Set(['nginx']));
  });
});
