/**
 * Expiration (upstream kubernetes-sigs/karpenter `pkg/controllers/nodeclaim/expiration`): a NodeClaim older than
 * its `spec.expireAfter` (else its NodePool template's; `Never` = no expiry) is deleted forcefully — no budgets,
 * no do-not-disrupt, no PDBs at decision time (the drain is bounded by `terminationGracePeriod`). Reported as
 * `delete` commands with reason `Expired`, one per node, oldest first.
 */
import { tryParseDuration } from '../apis/duration.ts';
import { savings } from './consolidation.ts';
import { parseTime } from './cost.ts';
import type { Candidate, Command } from './types.ts';

/** When `c` expires (ms since the epoch), or undefined when it never does or its age is unknown. */
export function expiresAt(c: Candidate): number | undefined {
  const after = c.nodeClaim.spec.expireAfter ?? c.nodePool.spec.template.spec.expireAfter;
  if (after === undefined) return undefined;
  const d = tryParseDuration(after);
  if (!d.ok || !Number.isFinite(d.seconds)) return undefined;
  const created =
    parseTime(c.nodeClaim.metadata.creationTimestamp) ?? parseTime(c.node.metadata.creationTimestamp);
  if (created === undefined) return undefined;
  return created + d.seconds * 1000;
}

/** Delete commands for every candidate (not already being deleted) whose expiry is at or before `nowMs`. */
export function expirationCommands(candidates: Iterable<Candidate>, nowMs: number): Command[] {
  const expired: { c: Candidate; at: number }[] = [];
  for (const c of candidates) {
    if (c.markedForDeletion) continue;
    const at = expiresAt(c);
    if (at !== undefined && at <= nowMs) expired.push({ c, at });
  }
  expired.sort((a, b) => a.at - b.at || (a.c.name < b.c.name ? -1 : 1));
  return expired.map(({ c }) => ({
    decision: 'delete',
    reason: 'Expired',
    method: 'Expiration',
    candidates: [c],
    replacements: [],
    savingsUSDPerHour: savings([c], []),
  }));
}
