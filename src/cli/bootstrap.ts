/**
 * `capenter bootstrap aws --cluster-name NAME [--region R] [--controller-role ROLE]
 * [--capi-kubeconfig PATH --capi-cluster NAMESPACE/NAME] [--dry-run] [--delete] [-o table|json|cloudformation]`:
 * creates Karpenter's AWS prerequisites (node role + instance profile, the five controller policies, the
 * interruption queue and its EventBridge rules) idempotently, on the SDK's default credential chain and
 * endpoints (`AWS_ENDPOINT_URL`). Exit codes: 0 done (or nothing to change), 1 an AWS call failed or a name
 * collision was refused (the report says what exists), 2 invalid flags or inputs. The AWS SDK and the bootstrap
 * logic are imported when the command runs, not with the program (see scripts/build.ts).
 */
import type { STSClient } from '@aws-sdk/client-sts';
import type { Command } from 'commander';
import type { BootstrapClients } from '../cloudprovider/aws/bootstrap/apply.ts';
import { CapaReadError } from '../cloudprovider/aws/bootstrap/capa.ts';
import type { BootstrapOutcome } from '../cloudprovider/aws/bootstrap/index.ts';
import { resourceLabel } from '../cloudprovider/aws/bootstrap/plan.ts';
import { KubeClient } from '../kube/client.ts';

/** Parsed flags of `capenter bootstrap aws`. */
export interface BootstrapAwsFlags {
  clusterName?: string;
  region?: string;
  controllerRole?: string;
  capiKubeconfig?: string;
  capiCluster?: string;
  dryRun?: boolean;
  delete?: boolean;
  output?: string;
}

/**
 * Loads the SDK clients' modules and returns the factory of SDK clients for a region from the default chain
 * (endpoint overrides through `AWS_ENDPOINT_URL*`).
 */
export async function defaultClients(): Promise<(region: string) => BootstrapClients & { sts: STSClient }> {
  const [{ IAMClient }, { SQSClient }, { EventBridgeClient }, { STSClient }] = await Promise.all([
    import('@aws-sdk/client-iam'),
    import('@aws-sdk/client-sqs'),
    import('@aws-sdk/client-eventbridge'),
    import('@aws-sdk/client-sts'),
  ]);
  return (region) => ({
    iam: new IAMClient({ region }),
    sqs: new SQSClient({ region }),
    events: new EventBridgeClient({ region }),
    sts: new STSClient({ region }),
  });
}

/** Text rendering of an outcome. */
export function formatOutcome(o: BootstrapOutcome): string {
  const lines = o.notices.map((n) => `note: ${n}`);
  if (o.kind === 'plan') {
    lines.push(`would create or update for cluster ${o.plan.input.clusterName} in ${o.plan.input.region}:`);
    for (const r of o.plan.resources) lines.push(`  ${resourceLabel(r)}`);
  } else {
    const w = Math.max(...o.report.resources.map((r) => r.resource.length), 8);
    for (const r of o.report.resources)
      lines.push(`${r.result.padEnd(13)} ${r.resource.padEnd(w)}${r.detail ? `  ${r.detail}` : ''}`);
    lines.push(o.report.summary);
  }
  return `${lines.join('\n')}\n`;
}

/** Runs the command; returns the exit code. Never throws. */
export async function runBootstrapAwsCommand(
  flags: BootstrapAwsFlags,
  io: {
    stdout: (t: string) => void;
    stderr: (t: string) => void;
    env: Readonly<Record<string, string | undefined>>;
    clientsFor?: (region: string) => BootstrapClients & { sts: STSClient };
  },
): Promise<number> {
  const output = flags.output ?? 'table';
  if (!['table', 'json', 'cloudformation'].includes(output)) {
    io.stderr(`error: -o/--output: "${output}" is not supported (use table, json or cloudformation)\n`);
    return 2;
  }
  if (output === 'cloudformation' && !flags.dryRun) {
    io.stderr('error: -o cloudformation prints a template and needs --dry-run\n');
    return 2;
  }
  if (flags.delete && flags.dryRun) {
    io.stderr('error: --delete and --dry-run cannot be combined\n');
    return 2;
  }
  const { BootstrapInputError, runBootstrapAws } = await import('../cloudprovider/aws/bootstrap/index.ts');
  let capi: { client: KubeClient; namespace: string; name: string } | undefined;
  if (flags.capiCluster || flags.capiKubeconfig) {
    const m = /^([^/]+)\/([^/]+)$/.exec(flags.capiCluster ?? '');
    if (!m || !flags.capiKubeconfig) {
      io.stderr('error: --capi-kubeconfig PATH and --capi-cluster NAMESPACE/NAME go together\n');
      return 2;
    }
    capi = {
      client: KubeClient.fromKubeconfig(flags.capiKubeconfig, { userAgent: 'capenter-bootstrap' }),
      namespace: m[1]!,
      name: m[2]!,
    };
  }
  try {
    const outcome = await runBootstrapAws(
      {
        ...(flags.clusterName ? { clusterName: flags.clusterName } : {}),
        ...((flags.region ?? io.env.AWS_REGION) ? { region: (flags.region ?? io.env.AWS_REGION)! } : {}),
        ...(flags.controllerRole ? { controllerRole: flags.controllerRole } : {}),
        ...(capi ? { capi } : {}),
        dryRun: !!flags.dryRun,
        delete: !!flags.delete,
      },
      io.clientsFor ?? (await defaultClients()),
    );
    if (output === 'cloudformation' && outcome.kind === 'plan') io.stdout(outcome.cloudformation);
    else if (output === 'json')
      io.stdout(
        `${JSON.stringify(
          outcome.kind === 'plan'
            ? {
                dryRun: true,
                notices: outcome.notices,
                tags: outcome.plan.tags,
                resources: outcome.plan.resources,
              }
            : { ...outcome.report, notices: outcome.notices },
          null,
          2,
        )}\n`,
      );
    else io.stdout(formatOutcome(outcome));
    return outcome.kind === 'report' && !outcome.report.ok ? 1 : 0;
  } catch (err) {
    io.stderr(`error: ${(err as Error).message}\n`);
    return err instanceof BootstrapInputError ? 2 : err instanceof CapaReadError ? 2 : 1;
  } finally {
    capi?.client.close();
  }
}

/** Registers `capenter bootstrap aws`. */
export function registerBootstrapCommand(program: Command): void {
  const bootstrap = program.command('bootstrap').description('create the cloud prerequisites capenter needs');
  bootstrap
    .command('aws')
    .description(
      'create the node role, controller policies, interruption queue and EventBridge rules (idempotent)',
    )
    .option('--cluster-name <name>', 'cluster name (names the queue and the IAM resources)')
    .option('--region <region>', 'AWS region (default $AWS_REGION, or the AWSCluster’s with --capi-cluster)')
    .option('--controller-role <role>', 'attach the controller policies to this IAM role')
    .option('--capi-kubeconfig <path>', 'kubeconfig of the Cluster API management cluster (CAPA)')
    .option(
      '--capi-cluster <ns/name>',
      'the CAPI Cluster to read region, tags and worker instance profile from',
    )
    .option('--dry-run', 'print what would be created, call nothing that changes state')
    .option('--delete', 'remove what an earlier run created (only resources it tagged)')
    .option('-o, --output <format>', 'table|json|cloudformation (cloudformation needs --dry-run)', 'table')
    .action(async (flags: BootstrapAwsFlags) => {
      process.exitCode = await runBootstrapAwsCommand(flags, {
        stdout: (t) => process.stdout.write(t),
        stderr: (t) => process.stderr.write(t),
        env: process.env,
      });
    });
}
