/**
 * `capenter simulate --disruption` on `examples/microservices-demo-scaled/state.yaml`: the bundled Online Boutique
 * example after a scale-up to four nodes (one c6a.2xlarge, three c7a.medium) and a scale-down back to one replica
 * per Deployment, exported with `kubectl get … -A -o yaml` from `capenter start` (the exact commands are in that
 * folder's README.md). The state is read as a user reads it: the folder, through the manifest loader.
 *
 * Expected, from the state and the catalog (us-east-1 on-demand prices: c7a.medium $0.05132/h, c6a.2xlarge
 * $0.306/h, c6a.large $0.0765/h):
 * - three nodes run only the node-exporter DaemonSet pod, so Emptiness wins the pass; the NodePool's default budget
 *   `nodes: 10%` of 4 nodes rounds up to 1, so ONE empty node is deleted (saving its price, $0.05132/h) and the
 *   other two are blocked by the budget;
 * - the following passes (each applied as the controller would: the deleted node, its NodeClaim and its pods gone)
 *   delete the other two empty nodes one by one, then replace the c6a.2xlarge, now holding the 12 Online Boutique
 *   pods (1570m CPU, 1368Mi) plus node-exporter (112m, 200Mi), with a c6a.large: $0.306 − $0.0765 = $0.2295/h.
 *   This is the sequence the live controller ran in `capenter start` after the export (66qs2, 828cs, zrh8t
 *   deleted, then general-purpose-ljcz5 replaced by a c6a.large).
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../src/apis/core.ts';
import { type LoadResult, loadManifestPaths } from '../src/apis/load.ts';
import { parseResources } from '../src/apis/quantity.ts';
import { runSimulate } from '../src/cli/simulate.ts';
import { onDemandPrice } from '../src/cloudprovider/aws/catalog/index.ts';
import { type DisruptionReport, simulateDisruption } from '../src/simulate/disruption.ts';
import type { SourcedObject } from '../src/simulate/input.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const folder = join(root, 'examples', 'microservices-demo-scaled');
/** A moment just after the export (the newest object was created at 16:50:54Z). */
const now = Date.parse('2026-11-29T16:51:30Z');

const BIG = 'general-purpose-ljcz5';
const EMPTY = ['general-purpose-66qs2', 'general-purpose-828cs', 'general-purpose-zrh8t'];
const BOUTIQUE = [
  'adservice',
  'cartservice',
  'checkoutservice',
  'currencyservice',
  'emailservice',
  'frontend',
  'loadgenerator',
  'paymentservice',
  'productcatalogservice',
  'recommendationservice',
  'redis-cart',
  'shippingservice',
];

const price = (type: string): number => {
  const p = onDemandPrice(type, 'us-east-1');
  if (!p) throw new Error(`no on-demand price for ${type}`);
  return p.priceUSDPerHour;
};

type Obj = KubeObject & { spec?: Record<string, unknown> };

/** Removes what the controller removes once a delete/replace command ran: the Nodes, their NodeClaims and pods. */
function without(objects: readonly SourcedObject[], nodes: readonly string[]): SourcedObject[] {
  const gone = new Set(nodes);
  return objects.filter(({ object }) => {
    const o = object as Obj;
    if ((o.kind === 'Node' || o.kind === 'NodeClaim') && gone.has(o.metadata?.name ?? '')) return false;
    return !(o.kind === 'Pod' && gone.has(String(o.spec?.nodeName ?? '')));
  });
}

/** Sum of the containers' requests (millicores, bytes) of the pods bound to `node`. */
function boundRequests(objects: readonly SourcedObject[], node: string) {
  let cpu = 0;
  let memory = 0;
  for (const { object } of objects) {
    const o = object as Obj;
    if (o.kind !== 'Pod' || o.spec?.nodeName !== node) continue;
    for (const c of (o.spec.containers ?? []) as Array<{
      resources?: { requests?: Record<string, string> };
    }>) {
      const r = parseResources(c.resources?.requests);
      cpu += r.cpu ?? 0;
      memory += r.memory ?? 0;
    }
  }
  return { cpu, memory };
}

describe('simulate --disruption on examples/microservices-demo-scaled (after a scale-down)', () => {
  let loaded: LoadResult;
  let first: DisruptionReport;
  beforeAll(async () => {
    loaded = await loadManifestPaths([folder]);
    first = await simulateDisruption({ objects: loaded.objects }, { now });
  });

  it('reads the kubectl List export without errors: 4 Nodes, 4 NodeClaims, 16 Pods, NodePool, EC2NodeClass, DaemonSet', () => {
    expect(loaded.errors).toEqual([]);
    expect(loaded.unknownKinds).toEqual({});
    const kinds: Record<string, number> = {};
    for (const { object } of loaded.objects) {
      const k = object.kind ?? '?';
      kinds[k] = (kinds[k] ?? 0) + 1;
    }
    expect(kinds).toEqual({ Node: 4, NodeClaim: 4, Pod: 16, NodePool: 1, EC2NodeClass: 1, DaemonSet: 1 });
    expect(first.errors).toEqual([]);
    // Every Node is managed and gets the listed NodeClaim (matched by name), none synthesized.
    const claimUid = new Map(
      loaded.objects
        .filter((o) => o.object.kind === 'NodeClaim')
        .map((o) => [o.object.metadata?.name, o.object.metadata?.uid]),
    );
    expect(first.input.nodes.map((n) => [n.node.metadata.name, n.nodeClaim?.metadata.uid])).toEqual(
      [...EMPTY.slice(0, 2), BIG, EMPTY[2]].map((n) => [n, claimUid.get(n)]),
    );
    expect([...claimUid.values()].every((u) => typeof u === 'string' && u.length > 0)).toBe(true);
  });

  it('the first pass deletes one empty c7a.medium; the budget (10% of 4 nodes → 1) blocks the other two', () => {
    expect(first.now).toBe('2026-11-29T16:51:30.000Z');
    expect(first.commands).toEqual([
      {
        decision: 'delete',
        reason: 'Empty',
        method: 'Emptiness',
        candidates: ['general-purpose-66qs2'],
        replacements: [],
        savingsUSDPerHour: 0.05132,
      },
    ]);
    // The savings are the deleted node's on-demand price.
    const node = first.input.nodes.find((n) => n.node.metadata.name === 'general-purpose-66qs2');
    const type = node?.node.metadata.labels?.['node.kubernetes.io/instance-type'];
    expect(type).toBe('c7a.medium');
    expect(first.commands[0]?.savingsUSDPerHour).toBe(price('c7a.medium'));
    // Only the node-exporter pod runs on it.
    expect(node?.pods.map((p) => p.metadata.name?.replace(/-[a-z0-9]{5}$/, ''))).toEqual(['node-exporter']);
    const budget =
      'Emptiness: empty, but the disruption budget of NodePool "general-purpose" allows no more Empty disruptions now';
    expect(first.blocked).toEqual([
      { node: 'general-purpose-828cs', reason: budget },
      { node: BIG, reason: 'not evaluated: Emptiness chose a command first this pass' },
      { node: 'general-purpose-zrh8t', reason: budget },
    ]);
  });

  it('the next passes delete the other empty nodes, then replace the c6a.2xlarge with a c6a.large', async () => {
    let objects = without(loaded.objects, ['general-purpose-66qs2']);
    const deleted: string[] = ['general-purpose-66qs2'];
    for (let pass = 0; pass < 2; pass++) {
      const r = await simulateDisruption({ objects }, { now });
      expect(r.commands.map((c) => [c.decision, c.reason, c.savingsUSDPerHour])).toEqual([
        ['delete', 'Empty', price('c7a.medium')],
      ]);
      const candidates = r.commands[0]?.candidates ?? [];
      expect(candidates).toHaveLength(1);
      deleted.push(...candidates);
      objects = without(objects, candidates);
    }
    expect(deleted).toEqual(EMPTY);

    const last = await simulateDisruption({ objects }, { now });
    expect(last.blocked).toEqual([]);
    expect(last.commands).toHaveLength(1);
    const cmd = last.commands[0]!;
    expect(cmd).toMatchObject({
      decision: 'replace',
      reason: 'Underutilized',
      method: 'SingleNodeConsolidation',
      candidates: [BIG],
    });
    expect(cmd.replacements).toHaveLength(1);
    const rep = cmd.replacements[0]!;
    // upstream's flexible on-demand replacement (the default): c6a.large first, then every type still cheaper
    // than the candidate, so a capacity error on c6a.large still leaves a saving launch
    expect(rep.instanceTypeOptions[0]).toBe('c6a.large');
    expect(rep.instanceTypeOptions.length).toBeGreaterThan(1);
    for (const t of rep.instanceTypeOptions) expect(price(t), t).toBeLessThan(price('c6a.2xlarge'));
    expect(rep).toMatchObject({
      nodePool: 'general-purpose',
      instanceType: 'c6a.large',
      zone: 'us-east-1a',
      capacityType: 'on-demand',
      priceUSDPerHour: 0.0765,
    });
    expect(
      rep.pods.map((p) => p.replace(/^default\//, '').replace(/-[a-z0-9]+-[a-z0-9]{5}$/, '')).sort(),
    ).toEqual(BOUTIQUE);
    expect(cmd.savingsUSDPerHour).toBe(0.2295);
    expect(cmd.savingsUSDPerHour).toBeCloseTo(price('c6a.2xlarge') - price('c6a.large'), 9);

    // Cross-check the choice against the catalog: the 12 pods plus node-exporter need 1682m / 1568Mi;
    // c6a.large is the cheapest allowed on-demand type with room for them.
    const need = boundRequests(objects, BIG);
    expect(need).toEqual({ cpu: 1682, memory: 1568 * 2 ** 20 });
    const pool = last.input.instanceTypes['general-purpose'] ?? [];
    const fits = pool.filter(
      (t) =>
        ['c', 'm', 'r'].includes(t.labels['karpenter.k8s.aws/instance-category'] ?? '') &&
        Number(t.labels['karpenter.k8s.aws/instance-generation']) > 2 &&
        t.labels['kubernetes.io/arch'] === 'amd64' &&
        (t.allocatable.cpu ?? 0) >= need.cpu &&
        (t.allocatable.memory ?? 0) >= need.memory &&
        (t.allocatable.pods ?? 0) >= 13 &&
        t.offerings.some((o) => o.capacityType === 'on-demand' && o.available),
    );
    const cheapest = Math.min(...fits.map((t) => price(t.name)));
    expect(cheapest).toBe(0.0765);
    expect(fits.filter((t) => price(t.name) === cheapest).map((t) => t.name)).toEqual(['c6a.large']);
    // The c7a.medium the empty nodes ran on (940m allocatable) could not take them.
    expect(pool.find((t) => t.name === 'c7a.medium')?.allocatable.cpu).toBe(940);
  });

  it('30 days later (the default expireAfter 720h) every node is Expired instead', async () => {
    // The NodeClaims were created 2026-11-29 16:50:40Z (ljcz5) to 16:50:54Z (828cs); expireAfter is 720h.
    const justBefore = await simulateDisruption(
      { objects: loaded.objects },
      { now: Date.parse('2026-12-29T16:50:39Z') },
    );
    expect(justBefore.commands.map((c) => c.reason)).toEqual(['Empty']);
    const later = await simulateDisruption(
      { objects: loaded.objects },
      { now: Date.parse('2026-12-29T16:50:55Z') },
    );
    expect(later.commands.map((c) => [c.decision, c.reason, c.method, c.candidates.join()])).toEqual(
      expect.arrayContaining([BIG, ...EMPTY].map((n) => ['delete', 'Expired', 'Expiration', n])),
    );
    expect(later.commands).toHaveLength(4);
  });

  it('the CLI prints the same command and blocked reasons (table and -o json), exit code 0', async () => {
    const run = async (output: string) => {
      let out = '';
      let err = '';
      const code = await runSimulate(
        { filenames: [folder], output, disruption: true },
        { stdout: (t) => (out += t), stderr: (t) => (err += t) },
      );
      return { code, out, err };
    };
    const json = await run('json');
    expect(json.code).toBe(0);
    expect(json.err).toBe('');
    const doc = JSON.parse(json.out);
    expect(doc.nodeClaims).toEqual([]);
    expect(doc.unschedulable).toEqual([]);
    expect(doc.disruption.commands).toEqual(first.commands);
    expect(doc.disruption.blocked).toEqual(first.blocked);

    const table = await run('table');
    expect(table.code).toBe(0);
    expect(table.out).toMatch(/delete\s+Empty\s+Emptiness\s+general-purpose-66qs2\s+-\s+-\s+\$0\.0513/);
    expect(table.out).toMatch(/general-purpose-828cs\s+Emptiness: empty, but the disruption budget/);
    expect(table.out).toMatch(/general-purpose-ljcz5\s+not evaluated: Emptiness chose a command first/);
  });
});
