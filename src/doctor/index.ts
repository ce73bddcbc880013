/**
 * `capenter doctor`: reads a cluster once and reports the traps that leave nodes hanging — budgets that
 * block every eviction, cluster-autoscaler racing capenter, nodes registering without the registration taint,
 * undeclared startup taints, NodePools without limits or without any pending pod they could serve,
 * EC2NodeClasses not Ready, do-not-disrupt pods outliving expiry, and Cluster API's uninitialized taint
 * left on nodes. {@link diagnose} is pure; {@link readSnapshot} does the reading.
 */
import { clusterAutoscalerCheck } from './checks/clusterautoscaler.ts';
import {
  doNotDisruptCheck,
  nodeClassReadyCheck,
  nodePoolLimitsCheck,
  nodePoolUnusableCheck,
} from './checks/nodepools.ts';
import { pdbCheck } from './checks/pdb.ts';
import { registrationTaintCheck, startupTaintCheck, uninitializedTaintCheck } from './checks/taints.ts';
import type { Check, DoctorSnapshot, Finding } from './types.ts';

export { readSnapshot } from './read.ts';
export type { DoctorSnapshot, Finding, FindingCheck, Severity } from './types.ts';

/** Every check, in the order findings are reported. */
export const CHECKS: readonly Check[] = [
  pdbCheck,
  clusterAutoscalerCheck,
  registrationTaintCheck,
  startupTaintCheck,
  uninitializedTaintCheck,
  nodeClassReadyCheck,
  nodePoolLimitsCheck,
  nodePoolUnusableCheck,
  doNotDisruptCheck,
];

/** Runs every check on the snapshot: errors first, then warnings, each in check order. Never throws. */
export function diagnose(s: DoctorSnapshot): Finding[] {
  const all = CHECKS.flatMap((c) => c(s));
  return [...all.filter((f) => f.severity === 'error'), ...all.filter((f) => f.severity === 'warning')];
}

/** Counts of a diagnosis. */
export function countFindings(findings: readonly Finding[]): { errors: number; warnings: number } {
  const errors = findings.filter((f) => f.severity === 'error').length;
  return { errors, warnings: findings.length - errors };
}

/** One line for `capenter start`: `doctor: no findings` or `doctor: 1 error (PDBBlocksEviction), 2 warnings (…)`. */
export function doctorSummary(findings: readonly Finding[]): string {
  if (findings.length === 0) return 'doctor: no findings';
  const part = (sev: 'error' | 'warning') => {
    const fs = findings.filter((f) => f.severity === sev);
    if (fs.length === 0) return undefined;
    const kinds = [...new Set(fs.map((f) => f.check))].join(', ');
    return `${fs.length} ${sev}${fs.length === 1 ? '' : 's'} (${kinds})`;
  };
  return `doctor: ${[part('error'), part('warning')].filter(Boolean).join(', ')} — run \`capenter doctor\` for details`;
}

/** Human-readable report: one block per finding with the objects, why it matters and the fix. */
export function formatFindings(findings: readonly Finding[]): string {
  if (findings.length === 0) return 'No findings: none of the checks found a problem.\n';
  const lines: string[] = [];
  for (const f of findings) {
    lines.push(`${f.severity.toUpperCase()}  ${f.check}: ${f.message}`);
    lines.push(`  objects: ${f.objects.join(', ')}`);
    lines.push(`  why:     ${f.why}`);
    lines.push(`  fix:     ${f.fix}`);
    lines.push('');
  }
  const { errors, warnings } = countFindings(findings);
  lines.push(`${errors} error${errors === 1 ? '' : 's'}, ${warnings} warning${warnings === 1 ? '' : 's'}`);
  return `${lines.join('\n')}\n`;
}
