/**
 * Command validation, after kubernetes-sigs/karpenter `pkg/controllers/disruption/validation.go`: a command chosen
 * by emptiness or consolidation is re-checked after a 15 s wait (`consolidationTTL`) on a fresh snapshot; it goes
 * ahead only when the recomputed pass still chooses the same candidates the same way (nodes may have received
 * pods, PDBs or budgets may have changed meanwhile). Drift and static drift are not re-validated (upstream executes
 * eventual commands at once); expiration is not a command of this controller.
 */
import type { Command, DisruptionResult } from '../../disruption/index.ts';

/** Seconds between choosing a command and re-validating it (upstream `consolidationTTL`). */
export const ValidationSeconds = 15;

/** True when `cmd` must be re-validated after {@link ValidationSeconds} before it runs. */
export function needsValidation(cmd: Command): boolean {
  return cmd.method !== 'Drift' && cmd.method !== 'StaticDrift' && cmd.reason !== 'Expired';
}

/** The budgeted (non-`Expired`) command of a pass, if any. */
export function chosenCommand(result: DisruptionResult): Command | undefined {
  return result.commands.find((c) => c.reason !== 'Expired');
}

/** Sorted candidate node names of a command. */
export function candidateNames(cmd: Command): string[] {
  return cmd.candidates.map((c) => c.name).sort();
}

/**
 * The re-validated command: `fresh`'s chosen command when it has the same method, decision and candidate set as
 * `original`, else `undefined` with why in `reason`.
 */
export function validateCommand(
  original: Command,
  fresh: DisruptionResult,
): { command: Command; reason?: undefined } | { command?: undefined; reason: string } {
  const again = chosenCommand(fresh);
  if (!again) return { reason: 'no command is chosen any more' };
  if (again.method !== original.method || again.decision !== original.decision)
    return { reason: `now ${again.method} chooses to ${again.decision}` };
  const a = candidateNames(original).join(',');
  const b = candidateNames(again).join(',');
  if (a !== b) return { reason: `candidates changed from [${a}] to [${b}]` };
  if (again.replacements.length > original.replacements.length)
    return { reason: 'the command now needs more replacements' };
  return { command: again };
}
