/**
 * `capenter doctor [--kubeconfig PATH] [--context C] [-o table|json]`: reads a cluster (read-only) and reports
 * the traps that leave nodes hanging (see `src/doctor`). Exit codes: 0 no error finding (warnings allowed),
 * 1 at least one error finding, 2 invalid flags or the cluster could not be read.
 */
import type { Command } from 'commander';
import { countFindings, diagnose, formatFindings, readSnapshot } from '../doctor/index.ts';
import { KubeClient } from '../kube/client.ts';
import { RealClock } from '../kube/clock.ts';

/** Parsed flags of `capenter doctor`. */
export interface DoctorCommandOptions {
  kubeconfig?: string;
  context?: string;
  output?: string;
}

/**
 * Runs the doctor against the cluster of `flags.kubeconfig` (else `$KUBECONFIG`, else in-cluster) and writes
 * the report to `io.stdout`. Returns the exit code; never throws.
 */
export async function runDoctor(
  flags: DoctorCommandOptions,
  io: {
    stdout: (t: string) => void;
    stderr: (t: string) => void;
    env: Readonly<Record<string, string | undefined>>;
  },
): Promise<number> {
  const output = flags.output ?? 'table';
  if (output !== 'table' && output !== 'json') {
    io.stderr(`error: -o/--output: "${output}" is not supported (use table or json)\n`);
    return 2;
  }
  let client: KubeClient;
  try {
    const kubeconfig = flags.kubeconfig ?? io.env.KUBECONFIG;
    client = kubeconfig
      ? KubeClient.fromKubeconfig(kubeconfig, {
          userAgent: 'capenter-doctor',
          ...(flags.context ? { context: flags.context } : {}),
        })
      : KubeClient.fromCluster({ userAgent: 'capenter-doctor' });
  } catch (err) {
    io.stderr(`error: kubeconfig: ${(err as Error).message}\n`);
    return 2;
  }
  try {
    const snapshot = await readSnapshot(client, new RealClock());
    const findings = diagnose(snapshot);
    const counts = countFindings(findings);
    if (output === 'json') io.stdout(`${JSON.stringify({ findings, summary: counts }, null, 2)}\n`);
    else io.stdout(formatFindings(findings));
    return counts.errors > 0 ? 1 : 0;
  } catch (err) {
    io.stderr(`error: reading the cluster at ${client.server}: ${(err as Error).message}\n`);
    return 2;
  } finally {
    client.close();
  }
}

/** Registers `capenter doctor`. */
export function registerDoctorCommand(program: Command): void {
  program
    .command('doctor')
    .description(
      'check a cluster for the traps that leave nodes hanging (PDBs, cluster-autoscaler, taints, NodePools)',
    )
    .option('--kubeconfig <path>', 'kubeconfig file (default: $KUBECONFIG, else in-cluster config)')
    .option('--context <name>', 'kubeconfig context')
    .option('-o, --output <format>', 'table|json', 'table')
    .action(async (flags: DoctorCommandOptions) => {
      process.exitCode = await runDoctor(flags, {
        stdout: (t) => process.stdout.write(t),
        stderr: (t) => process.stderr.write(t),
        env: process.env,
      });
    });
}
