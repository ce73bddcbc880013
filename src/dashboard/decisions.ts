/**
 * The dashboard's decision log: each provisioning decision (pods, the chosen instance type and why not a cheaper
 * one) and each disruption command (method, candidates, replacements, savings) or block (budget, PDB,
 * do-not-disrupt), kept newest first in a bounded ring buffer. The converters are pure: they read the
 * provisioner's `ProvisioningResult` and the disruption controller's `DisruptionPass` (the objects those controllers
 * already hand their pass listeners) and keep only names, prices and reasons, never object specs.
 */

import type { InstanceType } from '../apis/instancetype.ts';
import { LabelInstanceType } from '../apis/labels.ts';
import type { Resources } from '../apis/quantity.ts';
import type { DisruptionPass } from '../controllers/disruption/controller.ts';
import type { ProvisioningResult } from '../controllers/provisioning/provisioner.ts';
import type { Command } from '../disruption/types.ts';
import { Requirements } from '../scheduling/requirements.ts';
import type { NodeClaimPlan } from '../scheduling/types.ts';

/** One log entry. */
export interface DecisionEntry {
  /** Increasing id (the page keys rows by it). */
  id: number;
  /** ms since epoch (cluster clock). */
  at: number;
  kind: 'provisioning' | 'disruption' | 'blocked' | 'unschedulable';
  /** One line: what was decided. */
  summary: string;
  /** Further lines: pods, why not cheaper, candidates, replacements. */
  details: string[];
}

/** Default capacity of {@link DecisionLog}. */
export const DECISION_LOG_SIZE = 500;

/** A bounded ring buffer of {@link DecisionEntry}s; {@link entries} returns newest first. */
export class DecisionLog {
  private readonly buf: DecisionEntry[] = [];
  private next = 1;
  private readonly listeners = new Set<(e: DecisionEntry) => void>();

  /** @param size at most this many entries are kept (older ones are dropped); at least 1. */
  constructor(private readonly size = DECISION_LOG_SIZE) {}

  /** Appends an entry (id assigned here) and tells the listeners. */
  add(e: Omit<DecisionEntry, 'id'>): DecisionEntry {
    const entry = { ...e, id: this.next++ };
    this.buf.push(entry);
    if (this.buf.length > Math.max(1, this.size)) this.buf.shift();
    for (const l of this.listeners) l(entry);
    return entry;
  }

  /** The entries, newest first. */
  entries(): DecisionEntry[] {
    return [...this.buf].reverse();
  }

  /** Calls `l` for each new entry; returns the unsubscribe function. */
  onEntry(l: (e: DecisionEntry) => void): () => void {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  }
}

const usd = (n: number): string => `$${n.toFixed(4)}/h`;

/** The cheapest available offering of `it`, or undefined. */
function cheapestOffering(it: InstanceType): InstanceType['offerings'][number] | undefined {
  let best: InstanceType['offerings'][number] | undefined;
  for (const o of it.offerings)
    if (o.available && (!best || o.priceUSDPerHour < best.priceUSDPerHour)) best = o;
  return best;
}

/** Why `it` did not fit `requests` (the first resource short), or undefined when it fits. */
function tooSmall(it: InstanceType, requests: Resources): string | undefined {
  for (const k of ['cpu', 'memory', 'pods'] as const) {
    const need = requests[k] ?? 0;
    const have = it.allocatable[k] ?? 0;
    if (need > have) {
      const unit = k === 'cpu' ? 'm' : k === 'memory' ? ' bytes' : '';
      return `too small: ${k} ${need}${unit} requested > ${have}${unit} allocatable`;
    }
  }
  for (const [k, need] of Object.entries(requests))
    if ((it.allocatable[k] ?? 0) < need)
      return `too small: ${k} ${need} requested > ${it.allocatable[k] ?? 0}`;
  return undefined;
}

/**
 * Which of the plan's requirements (NodePool ∩ pods, without the instance-type list the plan itself narrowed to)
 * the instance type's labels fail, as `excluded by requirement KEY OP [values] (its KEY is VALUE)`; the generic
 * text when none does (the type was dropped for its daemon overhead or its offerings).
 */
export function excludedBy(plan: NodeClaimPlan, t: InstanceType): string {
  for (const r of Requirements.fromNodeSelector(plan.requirements).values()) {
    if (r.key === LabelInstanceType) continue;
    const v = t.labels[r.key];
    if (v === undefined ? !r.allowsAbsent() : !r.has(v))
      return `excluded by requirement ${r.key} ${r.toString()} (${v === undefined ? `it has no ${r.key} label` : `its ${r.key} is ${v}`})`;
  }
  return 'excluded by the NodePool or pod requirements';
}

/**
 * Up to `max` instance types of `types` with an available offering cheaper than the chosen one, each with why it
 * was not chosen: too small for the plan's requests (listed first, nearest price first), its cheaper offering's
 * zone or capacity type not allowed, or excluded by the NodePool's or pods' requirements.
 */
export function whyNotCheaper(plan: NodeClaimPlan, types: readonly InstanceType[], max = 3): string[] {
  const chosen = plan.cheapest.offering.priceUSDPerHour;
  const allowed = new Set(plan.instanceTypeOptions.map((t) => t.name));
  const rows: Array<{ text: string; price: number; rank: number }> = [];
  for (const t of types) {
    const o = cheapestOffering(t);
    if (!o || o.priceUSDPerHour >= chosen) continue;
    const small = tooSmall(t, plan.requests);
    const [rank, why] = small
      ? [0, small]
      : allowed.has(t.name)
        ? [1, `its ${o.capacityType} offering in ${o.zone} is not allowed by the requirements`]
        : [2, excludedBy(plan, t)];
    rows.push({
      text: `not ${t.name} (${usd(o.priceUSDPerHour)} ${o.capacityType}): ${why}`,
      price: o.priceUSDPerHour,
      rank,
    });
  }
  return rows
    .sort((a, b) => a.rank - b.rank || b.price - a.price)
    .slice(0, max)
    .map((r) => r.text);
}

function podNames(pods: ReadonlyArray<{ metadata: { namespace?: string; name?: string } }>): string {
  const names = pods.slice(0, 5).map((p) => `${p.metadata.namespace ?? 'default'}/${p.metadata.name ?? ''}`);
  return pods.length > 5 ? `${names.join(', ')} and ${pods.length - 5} other(s)` : names.join(', ');
}

/** Log entries for one provisioning pass: one per NodeClaim created, one for the pods left unschedulable. */
export function provisioningEntries(r: ProvisioningResult, at: number): Array<Omit<DecisionEntry, 'id'>> {
  const out: Array<Omit<DecisionEntry, 'id'>> = [];
  for (const { plan, nodeClaim } of r.created) {
    const ch = plan.cheapest;
    const types = r.input?.instanceTypes[plan.nodePool] ?? [];
    out.push({
      at,
      kind: 'provisioning',
      summary:
        `NodeClaim ${nodeClaim.metadata.name ?? '?'} (NodePool ${plan.nodePool}): ${ch.instanceType.name} ` +
        `${ch.offering.capacityType} in ${ch.offering.zone} at ${usd(ch.offering.priceUSDPerHour)} for ${plan.pods.length} pod(s)`,
      details: [
        `pods: ${podNames(plan.pods)}`,
        `requests: cpu ${plan.requests.cpu ?? 0}m, memory ${plan.requests.memory ?? 0} bytes`,
        ...whyNotCheaper(plan, types),
      ],
    });
  }
  const failed = r.result?.unschedulable ?? [];
  if (failed.length > 0)
    out.push({
      at,
      kind: 'unschedulable',
      summary: `${failed.length} pod(s) could not be scheduled`,
      details: failed.slice(0, 10).map((u) => `${podNames([u.pod])}: ${u.code}: ${u.message}`),
    });
  return out;
}

function commandEntry(c: Command, at: number, executed: boolean): Omit<DecisionEntry, 'id'> {
  const names = c.candidates.map((x) => x.name);
  const reps = c.replacements.map(
    (p) =>
      `${p.cheapest.instanceType.name} ${p.cheapest.offering.capacityType} ${usd(p.cheapest.offering.priceUSDPerHour)}`,
  );
  return {
    at,
    kind: 'disruption',
    summary:
      `${c.method}: ${c.decision} ${names.join(', ')}` +
      (c.savingsUSDPerHour > 0 ? `, saves ${usd(c.savingsUSDPerHour)}` : '') +
      (executed ? '' : ' (not executed)'),
    details: [
      `candidates: ${c.candidates.map((x) => `${x.name} (${x.instanceType?.name ?? '?'}${x.priceUSDPerHour !== undefined ? `, ${usd(x.priceUSDPerHour)}` : ''})`).join(', ')}`,
      `replacements: ${reps.length > 0 ? reps.join(', ') : 'none'}`,
    ],
  };
}

/** True for blocked reasons worth logging: budgets, PDBs, do-not-disrupt (as the `DisruptionBlocked` event). */
export function isLoggedBlock(reason: string): boolean {
  return /PodDisruptionBudget|do-not-disrupt|budget/i.test(reason);
}

/**
 * Log entries for one disruption pass: the executed command (or the chosen one, abandoned, with why), and one
 * entry listing the nodes blocked by a budget, a PDB or do-not-disrupt. `previousBlocks` (node → reason of the
 * last logged block) suppresses repeats pass after pass; it is updated in place.
 */
export function disruptionEntries(
  p: DisruptionPass,
  previousBlocks: Map<string, string>,
): Array<Omit<DecisionEntry, 'id'>> {
  const out: Array<Omit<DecisionEntry, 'id'>> = [];
  for (const c of p.result.commands.filter((x) => x.method === 'Expiration'))
    out.push(commandEntry(c, p.at, true));
  if (p.executed) out.push(commandEntry(p.executed, p.at, true));
  else if (p.chosen && p.chosen.method !== 'Expiration') {
    const e = commandEntry(p.chosen, p.at, false);
    if (p.abandoned) e.details.push(`abandoned: ${p.abandoned}`);
    out.push(e);
  }
  const fresh = p.result.blocked.filter(
    (b) => isLoggedBlock(b.reason) && previousBlocks.get(b.node) !== b.reason,
  );
  for (const b of p.result.blocked) if (isLoggedBlock(b.reason)) previousBlocks.set(b.node, b.reason);
  if (fresh.length > 0)
    out.push({
      at: p.at,
      kind: 'blocked',
      summary: `disruption blocked on ${fresh.length} node(s)`,
      details: fresh.slice(0, 20).map((b) => `${b.node}: ${b.reason}`),
    });
  return out;
}
