/**
 * The CloudProvider conformance suite: behaviour every provider (kwok, aws, clusterapi) must show, registered as
 * vitest tests for any provider factory. Run it from a provider's `*.conformance.test.ts`:
 *
 * ```ts
 * describeCloudProviderConformance('kwok', async () => ({ provider, nodeClaim, markUnavailable }));
 * ```
 *
 * The suite derives its expectations from the provider's own `instanceTypes(nodePool)` answer (prices, zones,
 * capacity types), so it holds for any catalog. Contract sources: kubernetes-sigs/karpenter
 * `pkg/cloudprovider/types.go` and the lifecycle/termination/garbage-collection controllers that call it.
 */
import { describe, expect, it } from 'vitest';
import type { NodeClaim, NodePool, NodeSelectorRequirementWithMinValues } from '../../apis/karpenter.ts';
import { LabelCapacityType, LabelInstanceType, LabelNodePool, LabelTopologyZone } from '../../apis/labels.ts';
import { parseResources } from '../../apis/quantity.ts';
import {
  type CapacityType,
  type CloudProvider,
  type InstanceType,
  isInsufficientCapacityError,
  isNodeClaimNotFoundError,
  type Offering,
} from '../types.ts';

/** Options for one NodeClaim built by the factory. */
export interface ConformanceNodeClaimOverrides {
  /** `metadata.name`; the factory picks a unique one when omitted. */
  name?: string;
  /** The NodeClaim's whole `spec.requirements` (replacing the factory's defaults) when given. */
  requirements?: NodeSelectorRequirementWithMinValues[];
  /** Extra `metadata.labels`. */
  labels?: Record<string, string>;
}

/** What a provider factory hands the suite; a fresh, empty provider per test. */
export interface ConformanceContext {
  provider: CloudProvider;
  /**
   * Builds a NodeClaim the provider can launch (right `nodeClassRef`, `karpenter.sh/nodepool` label, a unique
   * name unless given) with the overrides applied.
   */
  nodeClaim(overrides?: ConformanceNodeClaimOverrides): NodeClaim;
  /**
   * Makes one offering unavailable the way this provider learns about it (ICE from the cloud, or its
   * unavailable-offerings cache), so that the next `create` cannot launch on it.
   */
  markUnavailable(instanceType: string, zone: string, capacityType: CapacityType): void | Promise<void>;
  /** The NodePool passed to `instanceTypes`; default: one derived from `nodeClaim()` (its nodeClassRef). */
  nodePool?: NodePool;
  /** Advances the provider's clock by `seconds` and lets its timers' work finish (providers with delays). */
  advance?(seconds: number): Promise<void>;
}

/** Builds a {@link ConformanceContext}; called once per test. */
export type ConformanceFactory = () => Promise<ConformanceContext>;

function derivedNodePool(ctx: ConformanceContext): NodePool {
  if (ctx.nodePool) return ctx.nodePool;
  const nc = ctx.nodeClaim();
  return {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodePool',
    metadata: { name: nc.metadata.labels?.[LabelNodePool] ?? 'default' },
    spec: {
      template: { spec: { nodeClassRef: nc.spec.nodeClassRef, requirements: [] } },
      disruption: {
        consolidationPolicy: 'WhenEmptyOrUnderutilized',
        consolidateAfter: '0s',
        budgets: [{ nodes: '10%' }],
      },
    },
  };
}

function available(it: InstanceType): Offering[] {
  return it.offerings.filter((o) => o.available);
}

function cheapest(offerings: readonly Offering[]): number {
  return Math.min(...offerings.map((o) => o.priceUSDPerHour));
}

/**
 * A handful of instance types with available offerings, deterministic (sorted by name), spread over prices: types
 * whose cheapest available offering prices differ, so "the cheapest" is unambiguous.
 */
function pickTypes(types: readonly InstanceType[], count: number): InstanceType[] {
  const usable = types.filter((t) => available(t).length > 0).sort((a, b) => a.name.localeCompare(b.name));
  const out: InstanceType[] = [];
  const prices = new Set<number>();
  // Stride through the list so the pick is not just one family.
  const stride = Math.max(1, Math.floor(usable.length / (count * 3)));
  for (let i = 0; i < usable.length && out.length < count; i += stride) {
    const t = usable[i]!;
    const p = cheapest(available(t));
    if (prices.has(p)) continue;
    prices.add(p);
    out.push(t);
  }
  return out;
}

function inReq(key: string, values: string[]): NodeSelectorRequirementWithMinValues {
  return { key, operator: 'In', values };
}

/** The offering of `it` a launched NodeClaim's labels point at, or undefined. */
function launchedOffering(it: InstanceType, nc: NodeClaim): Offering | undefined {
  const labels = nc.metadata.labels ?? {};
  return it.offerings.find(
    (o) => o.zone === labels[LabelTopologyZone] && o.capacityType === labels[LabelCapacityType],
  );
}

async function expectRejects(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected the call to throw, but it resolved');
}

/** Conformance of `instanceTypes` (valid prices, capacity types, allocatable within capacity, unique names, mostly launchable) and `supportedNodeClasses`. */
function describeInstanceTypesConformance(factory: ConformanceFactory): void {
  describe('instanceTypes and supportedNodeClasses', () => {
    it('instanceTypes(nodePool) is non-empty, unique by name, and every offering has a valid price', async () => {
      const ctx = await factory();
      const types = await ctx.provider.instanceTypes(derivedNodePool(ctx));
      expect(types.length).toBeGreaterThan(0);
      // Collect problems instead of one expect per offering: thousands of offerings, one readable failure.
      const problems: string[] = [];
      for (const t of types) {
        if ((t.labels[LabelInstanceType] ?? t.name) !== t.name)
          problems.push(`${t.name}: instance-type label`);
        for (const o of t.offerings) {
          if (!Number.isFinite(o.priceUSDPerHour) || o.priceUSDPerHour < 0) {
            problems.push(`${t.name} ${o.zone} ${o.capacityType}: price ${o.priceUSDPerHour}`);
          }
          if (!['on-demand', 'spot', 'reserved'].includes(o.capacityType)) {
            problems.push(`${t.name} ${o.zone}: capacity type ${o.capacityType}`);
          }
        }
        for (const [k, v] of Object.entries(t.allocatable)) {
          if (v > (t.capacity[k] ?? Number.POSITIVE_INFINITY))
            problems.push(`${t.name}: allocatable ${k} > capacity`);
        }
      }
      expect(problems).toEqual([]);
      // Types with no offering at all may be listed (upstream: return all types), but most must be launchable.
      const launchable = types.filter((t) => available(t).length > 0).length;
      expect(launchable).toBeGreaterThan(types.length / 2);
      expect(new Set(types.map((t) => t.name)).size, 'instance type names are unique').toBe(types.length);
    });

    it('supportedNodeClasses names the NodeClass kind the NodeClaims reference', async () => {
      const ctx = await factory();
      const ref = ctx.nodeClaim().spec.nodeClassRef;
      const kinds = ctx.provider.supportedNodeClasses();
      expect(kinds.length).toBeGreaterThan(0);
      expect(kinds).toContainEqual({ group: ref.group, kind: ref.kind });
      expect(ctx.provider.name).toMatch(/^[a-z][a-z0-9-]*$/);
    });
  });
}

/** Conformance of `create`: the launched NodeClaim matches its instance type and offering, is the cheapest compatible available one, and honours zone and capacity-type requirements. */
function describeCreateConformance(factory: ConformanceFactory): void {
  describe('create', () => {
    it('create returns providerID, capacity, allocatable and labels consistent with the chosen instance type', async () => {
      const ctx = await factory();
      const types = await ctx.provider.instanceTypes(derivedNodePool(ctx));
      const picked = pickTypes(types, 4);
      expect(picked.length).toBeGreaterThan(0);
      const names = picked.map((t) => t.name);
      const created = await ctx.provider.create(
        ctx.nodeClaim({ requirements: [inReq(LabelInstanceType, names)] }),
      );
      expect(created.status?.providerID).toMatch(/^[a-z][a-z0-9-]*:\/\/.+/);
      const labels = created.metadata.labels ?? {};
      const chosenName = labels[LabelInstanceType];
      expect(names).toContain(chosenName);
      const chosen = picked.find((t) => t.name === chosenName)!;
      for (const [k, v] of Object.entries(chosen.labels)) expect(labels[k], `label ${k}`).toBe(v);
      const offering = launchedOffering(chosen, created);
      expect(offering, `offering ${labels[LabelTopologyZone]}/${labels[LabelCapacityType]}`).toBeDefined();
      expect(offering!.available).toBe(true);
      const capacity = parseResources(created.status?.capacity);
      const allocatable = parseResources(created.status?.allocatable);
      for (const k of ['cpu', 'memory', 'pods']) {
        expect(capacity[k], `capacity ${k}`).toBe(chosen.capacity[k]);
        expect(allocatable[k], `allocatable ${k}`).toBe(chosen.allocatable[k]);
      }
    });

    it('create picks the cheapest compatible available offering', async () => {
      const ctx = await factory();
      const types = await ctx.provider.instanceTypes(derivedNodePool(ctx));
      const picked = pickTypes(types, 6);
      expect(picked.length).toBeGreaterThan(1);
      const expected = Math.min(...picked.map((t) => cheapest(available(t))));
      const created = await ctx.provider.create(
        ctx.nodeClaim({
          requirements: [
            inReq(
              LabelInstanceType,
              picked.map((t) => t.name),
            ),
          ],
        }),
      );
      const chosen = picked.find((t) => t.name === created.metadata.labels?.[LabelInstanceType])!;
      expect(chosen).toBeDefined();
      expect(launchedOffering(chosen, created)?.priceUSDPerHour).toBe(expected);
    });

    it('create honors zone and capacity-type requirements', async () => {
      const ctx = await factory();
      const types = await ctx.provider.instanceTypes(derivedNodePool(ctx));
      // A type with available offerings in ≥2 zones; require the zone its cheapest offering is NOT in.
      const t = types
        .filter((x) => new Set(available(x).map((o) => o.zone)).size >= 2)
        .sort((a, b) => a.name.localeCompare(b.name))[0];
      expect(t, 'an instance type offered in two zones').toBeDefined();
      const offs = available(t!);
      const cheapestZone = offs.reduce((a, b) => (b.priceUSDPerHour < a.priceUSDPerHour ? b : a)).zone;
      const zone = offs.map((o) => o.zone).find((z) => z !== cheapestZone)!;
      const capacityTypes = [
        ...new Set(offs.filter((o) => o.zone === zone).map((o) => o.capacityType)),
      ].sort();
      // Prefer the more expensive capacity type in that zone, so "cheapest" alone would not pick it.
      const byPrice = capacityTypes
        .map((ct) => ({ ct, p: cheapest(offs.filter((o) => o.zone === zone && o.capacityType === ct)) }))
        .sort((a, b) => b.p - a.p);
      const capacityType = byPrice[0]!.ct;
      const created = await ctx.provider.create(
        ctx.nodeClaim({
          requirements: [
            inReq(LabelInstanceType, [t!.name]),
            inReq(LabelTopologyZone, [zone]),
            inReq(LabelCapacityType, [capacityType]),
          ],
        }),
      );
      expect(created.metadata.labels?.[LabelTopologyZone]).toBe(zone);
      expect(created.metadata.labels?.[LabelCapacityType]).toBe(capacityType);
      expect(created.metadata.labels?.[LabelInstanceType]).toBe(t!.name);
    });
  });
}

/** Conformance of `create` when offerings are unavailable: it falls back to the next cheapest, and throws InsufficientCapacityError when none is left. */
function describeCreateUnavailableConformance(factory: ConformanceFactory): void {
  describe('create with unavailable offerings', () => {
    it('create skips unavailable offerings and falls back to the next cheapest', async () => {
      const ctx = await factory();
      const np = derivedNodePool(ctx);
      const picked = pickTypes(await ctx.provider.instanceTypes(np), 4);
      const names = picked.map((t) => t.name);
      const reqs = [inReq(LabelInstanceType, names)];
      const first = await ctx.provider.create(ctx.nodeClaim({ requirements: reqs }));
      const fl = first.metadata.labels ?? {};
      const firstKey = `${fl[LabelInstanceType]}/${fl[LabelTopologyZone]}/${fl[LabelCapacityType]}`;
      await ctx.markUnavailable(
        fl[LabelInstanceType]!,
        fl[LabelTopologyZone]!,
        fl[LabelCapacityType]! as CapacityType,
      );
      // The marked offering now reports unavailable, but the type is still listed.
      const after = await ctx.provider.instanceTypes(np);
      const t = after.find((x) => x.name === fl[LabelInstanceType]);
      expect(t, 'instance type still listed after ICE').toBeDefined();
      expect(launchedOffering(t!, first)?.available).toBe(false);
      const second = await ctx.provider.create(ctx.nodeClaim({ requirements: reqs }));
      const sl = second.metadata.labels ?? {};
      expect(`${sl[LabelInstanceType]}/${sl[LabelTopologyZone]}/${sl[LabelCapacityType]}`).not.toBe(firstKey);
      // And it is the cheapest of what is left.
      const remaining = after
        .filter((x) => names.includes(x.name))
        .flatMap((x) => available(x).map((o) => o.priceUSDPerHour));
      const chosen = after.find((x) => x.name === sl[LabelInstanceType])!;
      expect(launchedOffering(chosen, second)?.priceUSDPerHour).toBe(Math.min(...remaining));
    });

    it('create throws InsufficientCapacityError (code InsufficientCapacity) when every compatible offering is unavailable', async () => {
      const ctx = await factory();
      const types = await ctx.provider.instanceTypes(derivedNodePool(ctx));
      const t = pickTypes(types, 1)[0]!;
      const o = available(t)[0]!;
      const reqs = [
        inReq(LabelInstanceType, [t.name]),
        inReq(LabelTopologyZone, [o.zone]),
        inReq(LabelCapacityType, [o.capacityType]),
      ];
      await ctx.markUnavailable(t.name, o.zone, o.capacityType);
      const err = await expectRejects(ctx.provider.create(ctx.nodeClaim({ requirements: reqs })));
      expect(isInsufficientCapacityError(err), String(err)).toBe(true);
      expect((err as { code: string }).code).toBe('InsufficientCapacity');
      expect((err as Error).message).toMatch(/^insufficient capacity, /);
      expect((err as { offerings: unknown[] }).offerings).toContainEqual(
        expect.objectContaining({ instanceType: t.name, zone: o.zone, capacityType: o.capacityType }),
      );
      expect(await ctx.provider.list()).toEqual([]);
    });
  });
}

/** Conformance of `get` and `list`: a launched instance is found; an unknown provider ID throws NodeClaimNotFoundError. */
function describeGetListConformance(factory: ConformanceFactory): void {
  describe('get and list', () => {
    it('get and list find a launched instance', async () => {
      const ctx = await factory();
      const types = await ctx.provider.instanceTypes(derivedNodePool(ctx));
      const names = pickTypes(types, 3).map((t) => t.name);
      const a = await ctx.provider.create(ctx.nodeClaim({ requirements: [inReq(LabelInstanceType, names)] }));
      const b = await ctx.provider.create(ctx.nodeClaim({ requirements: [inReq(LabelInstanceType, names)] }));
      expect(a.status?.providerID).not.toBe(b.status?.providerID);
      await ctx.advance?.(600);
      const got = await ctx.provider.get(a.status!.providerID!);
      expect(got.status?.providerID).toBe(a.status!.providerID);
      expect(got.metadata.labels?.[LabelInstanceType]).toBe(a.metadata.labels?.[LabelInstanceType]);
      expect(got.metadata.labels?.[LabelTopologyZone]).toBe(a.metadata.labels?.[LabelTopologyZone]);
      const listed = (await ctx.provider.list()).map((n) => n.status?.providerID).sort();
      expect(listed).toEqual([a.status!.providerID, b.status!.providerID].sort());
    });

    it('get of an unknown provider ID throws NodeClaimNotFoundError', async () => {
      const ctx = await factory();
      const err = await expectRejects(ctx.provider.get(`${ctx.provider.name}://nowhere/zone/i-doesnotexist`));
      expect(isNodeClaimNotFoundError(err), String(err)).toBe(true);
      expect((err as { code: string }).code).toBe('NodeClaimNotFound');
    });
  });
}

/** Conformance of `delete`: a deleted or never-launched instance is gone (NodeClaimNotFoundError on get and on a second delete). */
function describeDeleteConformance(factory: ConformanceFactory): void {
  describe('delete', () => {
    it('delete then get throws NodeClaimNotFoundError; a second delete throws it too', async () => {
      const ctx = await factory();
      const types = await ctx.provider.instanceTypes(derivedNodePool(ctx));
      const names = pickTypes(types, 2).map((t) => t.name);
      const created = await ctx.provider.create(
        ctx.nodeClaim({ requirements: [inReq(LabelInstanceType, names)] }),
      );
      await ctx.advance?.(600);
      await ctx.provider.delete(created);
      const getErr = await expectRejects(ctx.provider.get(created.status!.providerID!));
      expect(isNodeClaimNotFoundError(getErr), String(getErr)).toBe(true);
      const delErr = await expectRejects(ctx.provider.delete(created));
      expect(isNodeClaimNotFoundError(delErr), String(delErr)).toBe(true);
      expect((delErr as Error).message).toMatch(/^nodeclaim not found, /);
      expect((await ctx.provider.list()).map((n) => n.status?.providerID)).not.toContain(
        created.status!.providerID,
      );
    });

    it('a NodeClaim that was never launched cannot be deleted (NodeClaimNotFoundError)', async () => {
      const ctx = await factory();
      const nc = ctx.nodeClaim();
      nc.status = { providerID: `${ctx.provider.name}://nowhere/zone/i-neverlaunched` };
      const err = await expectRejects(ctx.provider.delete(nc));
      expect(isNodeClaimNotFoundError(err), String(err)).toBe(true);
    });
  });
}

/**
 * Conformance of `isDrifted` (undefined for a fresh launch) and `repairPolicies` (each a condition type, a status
 * `True|False|Unknown` and a positive toleration in seconds; no type and status twice; the same list every call).
 */
function describeDriftConformance(factory: ConformanceFactory): void {
  describe('isDrifted and repairPolicies', () => {
    it('isDrifted is undefined for a freshly launched NodeClaim', async () => {
      const ctx = await factory();
      const types = await ctx.provider.instanceTypes(derivedNodePool(ctx));
      const names = pickTypes(types, 2).map((t) => t.name);
      const created = await ctx.provider.create(
        ctx.nodeClaim({ requirements: [inReq(LabelInstanceType, names)] }),
      );
      expect(await ctx.provider.isDrifted(created)).toBeUndefined();
    });

    it('repairPolicies: node condition type, a status and a positive toleration each; the same list every call', async () => {
      const ctx = await factory();
      const policies = ctx.provider.repairPolicies();
      expect(Array.isArray(policies)).toBe(true);
      for (const p of policies) {
        expect(p.conditionType, JSON.stringify(p)).toMatch(/^[A-Za-z][A-Za-z0-9]*$/);
        expect(['True', 'False', 'Unknown'], JSON.stringify(p)).toContain(p.conditionStatus);
        expect(Number.isFinite(p.tolerationDurationSeconds) && p.tolerationDurationSeconds > 0).toBe(true);
      }
      const keys = policies.map((p) => `${p.conditionType}=${p.conditionStatus}`);
      expect(new Set(keys).size, 'one policy per condition type and status').toBe(keys.length);
      // synchronous and side-effect free: the node.health controller asks on every reconcile
      expect(ctx.provider.repairPolicies()).toEqual(policies);
    });
  });
}

/**
 * Registers the conformance tests for one provider under `describe('<name> CloudProvider conformance')`, one
 * nested `describe` per method group. Every test calls `factory()` for a fresh provider.
 */
export function describeCloudProviderConformance(name: string, factory: ConformanceFactory): void {
  describe(`${name} CloudProvider conformance`, () => {
    describeInstanceTypesConformance(factory);
    describeCreateConformance(factory);
    describeCreateUnavailableConformance(factory);
    describeGetListConformance(factory);
    describeDeleteConformance(factory);
    describeDriftConformance(factory);
  });
}
