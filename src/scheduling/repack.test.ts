import { describe, expect, it } from 'vitest';
import { type NewNodeClaim, openNewNodeClaim } from './nodeclaim.ts';
import { buildPodInfo, type PodInfo } from './podinfo.ts';
import { repack } from './repack.ts';
import { makeInstanceType, makeNodePool, makePod, poolFixture } from './testing.ts';

function setup() {
  const types = [
    makeInstanceType({ name: 'c1.large', cpu: 2, memoryGiB: 4, price: 1 }),
    makeInstanceType({ name: 'c1.xlarge', cpu: 4, memoryGiB: 8, price: 2 }),
  ];
  const np = makeNodePool('p');
  const { index, pool, topology } = poolFixture(np, types);
  const pod = (name: string, cpu: string) =>
    buildPodInfo(makePod(name, { cpu, memory: '100Mi' }), index, topology);
  const open = (p: PodInfo, hostname: string): NewNodeClaim => {
    const r = openNewNodeClaim(pool, p, topology, hostname);
    if (!('pods' in r)) throw new Error(r.message);
    return r;
  };
  const add = (plan: NewNodeClaim, p: PodInfo) => {
    const r = plan.canAdd(p, topology, true);
    if ('code' in r) throw new Error(r.message);
    plan.commit(p, r, topology);
  };
  return { topology, pod, open, add };
}

describe('repack', () => {
  it('moves a pod when its NodeClaim shrinks by more than the other grows', () => {
    const { topology, pod, open, add } = setup();
    // A: 1.5 + 1 cpu = 2.5 → c1.xlarge ($2); B: 0.5 cpu → c1.large ($1, 1.4 cpu free)
    const a1 = pod('a1', '1500m');
    const a2 = pod('a2', '1');
    const b1 = pod('b1', '500m');
    const a = open(a1, 'host-a');
    add(a, a2);
    const b = open(b1, 'host-b');
    expect([a.price(), b.price()]).toEqual([2, 1]);
    const moves: string[] = [];
    // a1 would push B to c1.xlarge (+$1 for a $1 gain: no move); a2 fits B's c1.large as it is
    expect(repack([a, b], topology, (p, to) => moves.push(`${p.pod.metadata.name}->${to.hostname}`))).toBe(1);
    expect(moves).toEqual(['a2->host-b']);
    expect([a.price(), b.price()]).toEqual([1, 1]);
    expect(a.pods.map((p) => p.pod.metadata.name)).toEqual(['a1']);
    expect(b.pods.map((p) => p.pod.metadata.name)).toEqual(['b1', 'a2']);
    expect(a.fittingOptions().map((p) => p.t.it.name)).toEqual(['c1.large', 'c1.xlarge']);
  });

  it('leaves a plan alone when no move lowers the total', () => {
    const { topology, pod, open, add } = setup();
    const a = open(pod('a1', '1500m'), 'host-a');
    add(a, pod('a2', '1500m'));
    const b = open(pod('b1', '1500m'), 'host-b');
    expect(repack([a, b], topology, () => undefined)).toBe(0);
    expect([a.price(), b.price()]).toEqual([2, 1]);
  });
});
