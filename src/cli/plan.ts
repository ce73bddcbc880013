/**
 * `capenter plan [--kubeconfig K] [--context C] -f FILE... [--delete KIND/NAME...] [-o table|json]`: reads the
 * live cluster (LIST only, see `plan/read.ts`), applies the proposed NodePools / NodeClasses and deletions in
 * memory, and prints what would happen (`plan/plan.ts`; docs/plan.md). Never writes to the cluster. Reads AWS
 * (read-only, the SDK's default credentials) only to resolve EC2NodeClasses' selector terms as the controller would
 * now (changed ones, and those whose NodeClaims run on EC2), unless `--offline`; without AWS the plan says that
 * AMI/subnet/security-group/capacity-reservation drift was not evaluated.
 * Exit codes: 0 plan printed; 2 usage error or an invalid proposed object (the API server's error text, with the
 * file); 1 the cluster could not be read, a deletion names nothing, or an unexpected failure.
 */
import type { Command } from 'commander';
import type { AwsClientOptions } from '../cloudprovider/aws/clients.ts';
import type { KubeClient } from '../kube/client.ts';
import type { Deletion } from '../plan/merge.ts';

/** Parsed flags of `capenter plan`. */
export interface PlanCommandOptions {
  kubeconfig?: string;
  context?: string;
  filename?: string[];
  delete?: string[];
  output?: string;
  region?: string;
  /** RFC 3339 plan time (budget schedules are evaluated from it); default now. */
  now?: string;
  /** Seconds one wave lasts (launch + drain); default 180. */
  waveSeconds?: string;
  /** Do not call AWS: AMI/subnet/security-group/capacity-reservation drift is reported as not evaluated. */
  offline?: boolean;
}

/** Where the command writes; `env` for `$KUBECONFIG`; `client` overrides the kubeconfig (tests record requests). */
export interface PlanIO {
  stdout: (t: string) => void;
  stderr: (t: string) => void;
  env: Readonly<Record<string, string | undefined>>;
  client?: KubeClient;
  /** AWS client options (tests: an emulator's endpoint and credentials); default the SDK's chain. */
  aws?: AwsClientOptions;
}

const KINDS: Record<string, string> = {
  nodepool: 'NodePool',
  nodepools: 'NodePool',
  'nodepools.karpenter.sh': 'NodePool',
  ec2nodeclass: 'EC2NodeClass',
  ec2nodeclasses: 'EC2NodeClass',
  'ec2nodeclasses.karpenter.k8s.aws': 'EC2NodeClass',
  kwoknodeclass: 'KWOKNodeClass',
  kwoknodeclasses: 'KWOKNodeClass',
  'kwoknodeclasses.karpenter.kwok.sh': 'KWOKNodeClass',
};

/** Parses `--delete KIND/NAME` values; returns the deletions or the usage error. */
export function parseDeletions(values: readonly string[]): Deletion[] | string {
  const out: Deletion[] = [];
  for (const v of values) {
    const [k, name, ...rest] = v.split('/');
    const kind = KINDS[(k ?? '').toLowerCase()];
    if (!kind || !name || rest.length > 0)
      return `--delete "${v}": expected KIND/NAME with KIND nodepool, ec2nodeclass or kwoknodeclass (e.g. --delete nodepool/spot)`;
    out.push({ kind, name });
  }
  return out;
}

/** Validated flags, or the usage error. */
function checkFlags(
  f: PlanCommandOptions,
): { output: string; now?: number; waveSeconds?: number; deletions: Deletion[] } | string {
  const output = f.output ?? 'table';
  if (output !== 'table' && output !== 'json')
    return `-o/--output: "${output}" is not supported (use table or json)`;
  if ((f.filename ?? []).length === 0 && (f.delete ?? []).length === 0)
    return 'nothing to plan: pass the changed objects with -f FILE and/or deletions with --delete KIND/NAME';
  const deletions = parseDeletions(f.delete ?? []);
  if (typeof deletions === 'string') return deletions;
  const out: { output: string; now?: number; waveSeconds?: number; deletions: Deletion[] } = {
    output,
    deletions,
  };
  if (f.now !== undefined) {
    const now = Date.parse(f.now);
    if (Number.isNaN(now))
      return `--now must be an RFC 3339 time such as 2026-12-03T05:00:00Z, got "${f.now}"`;
    out.now = now;
  }
  if (f.waveSeconds !== undefined) {
    const s = Number(f.waveSeconds);
    if (!Number.isFinite(s) || s <= 0)
      return `--wave-seconds must be a positive number of seconds, got "${f.waveSeconds}"`;
    out.waveSeconds = s;
  }
  return out;
}

const PROPOSABLE = new Set(['NodePool', 'EC2NodeClass', 'KWOKNodeClass']);

/** Loads the proposed files; returns the objects or the printed errors. */
async function loadProposed(
  paths: readonly string[],
): Promise<{ objects: import('../simulate/input.ts').SourcedObject[] } | { errors: string[] }> {
  const { loadManifestPaths } = await import('../apis/load.ts');
  const { formatInvalid } = await import('../plan/output.ts');
  const res = await loadManifestPaths([...paths]);
  const errors = formatInvalid(res.errors);
  for (const [kind, n] of Object.entries(res.unknownKinds))
    errors.push(`${kind} (${n}): capenter plan takes NodePool, EC2NodeClass and KWOKNodeClass objects only`);
  for (const o of res.objects)
    if (!PROPOSABLE.has(o.object.kind ?? ''))
      errors.push(
        `${o.file}${o.line !== undefined ? `:${o.line}` : ''}: ${o.object.kind} "${o.object.metadata?.name ?? ''}": capenter plan takes NodePool, EC2NodeClass and KWOKNodeClass objects only`,
      );
  return errors.length > 0 ? { errors } : { objects: res.objects };
}

/** Runs `capenter plan` and returns its exit code (see the module doc); never throws. */
export async function runPlan(flags: PlanCommandOptions, io: PlanIO): Promise<number> {
  const f = checkFlags(flags);
  if (typeof f === 'string') {
    io.stderr(`error: ${f}\n`);
    return 2;
  }
  const proposed = await loadProposed(flags.filename ?? []);
  if ('errors' in proposed) {
    for (const e of proposed.errors) io.stderr(`error: ${e}\n`);
    return 2;
  }
  let client = io.client;
  if (!client) {
    try {
      const { KubeClient } = await import('../kube/client.ts');
      const kubeconfig = flags.kubeconfig ?? io.env.KUBECONFIG;
      const ctx = flags.context ? { context: flags.context } : {};
      client = kubeconfig
        ? KubeClient.fromKubeconfig(kubeconfig, { userAgent: 'capenter-plan', ...ctx })
        : KubeClient.fromCluster({ userAgent: 'capenter-plan' });
    } catch (err) {
      io.stderr(`error: kubeconfig: ${(err as Error).message}\n`);
      return 2;
    }
  }
  const { readCluster } = await import('../plan/read.ts');
  let live: Awaited<ReturnType<typeof readCluster>>;
  try {
    live = await readCluster(client);
  } catch (err) {
    io.stderr(`error: cannot read the cluster at ${client.server}: ${(err as Error).message}\n`);
    return 1;
  } finally {
    if (!io.client) client.close();
  }
  let aws: import('../cloudprovider/aws/clients.ts').AwsClients | undefined;
  try {
    const { computePlan, regionOf } = await import('../plan/plan.ts');
    const { formatPlan, planJSON } = await import('../plan/output.ts');
    if (!flags.offline) {
      const { createAwsClients } = await import('../cloudprovider/aws/clients.ts');
      const region = flags.region ?? regionOf(live);
      aws = createAwsClients({ maxAttempts: 2, ...(region ? { region } : {}), ...io.aws });
    }
    const report = await computePlan(
      { live, proposed: proposed.objects, deletions: f.deletions },
      {
        ...(flags.region ? { region: flags.region } : {}),
        ...(f.now !== undefined ? { now: f.now } : {}),
        ...(f.waveSeconds !== undefined ? { waveSeconds: f.waveSeconds } : {}),
        aws: aws ? { clients: aws } : { unavailable: '--offline was given' },
      },
    );
    for (const e of report.errors) io.stderr(`error: ${e}\n`);
    if (report.errors.length > 0) return 1;
    io.stdout(f.output === 'json' ? `${JSON.stringify(planJSON(report), null, 2)}\n` : formatPlan(report));
    return 0;
  } catch (err) {
    io.stderr(`error: plan failed unexpectedly: ${(err as Error).stack ?? String(err)}\n`);
    return 1;
  } finally {
    aws?.destroy();
  }
}

const collect = (value: string, previous: string[] | undefined) => [...(previous ?? []), value];

/** Registers `capenter plan`. */
export function registerPlanCommand(program: Command): void {
  program
    .command('plan')
    .description(
      'show what changed NodePools/NodeClasses would do to a live cluster (drift, waves, replacements, cost); read-only',
    )
    .option('--kubeconfig <path>', 'kubeconfig file (default: $KUBECONFIG, else in-cluster config)')
    .option('--context <name>', 'kubeconfig context')
    .option(
      '-f, --filename <path>',
      'proposed NodePool/EC2NodeClass/KWOKNodeClass manifests (repeatable)',
      collect,
    )
    .option(
      '--delete <kind/name>',
      'plan the deletion of a nodepool, ec2nodeclass or kwoknodeclass (repeatable)',
      collect,
    )
    .option('-o, --output <format>', 'table|json', 'table')
    .option('--region <region>', "catalog region (default: the Nodes' topology.kubernetes.io/region)")
    .option('--now <time>', 'plan time (RFC 3339) for budget schedules; default now')
    .option('--wave-seconds <n>', 'seconds one wave takes (launch the replacement, drain the node)', '180')
    .option(
      '--offline',
      'do not call AWS (AMI, subnet, security-group and capacity-reservation drift of EC2NodeClasses is then reported as not evaluated)',
    )
    .action(async (flags: PlanCommandOptions) => {
      process.exitCode = await runPlan(flags, {
        stdout: (t) => process.stdout.write(t),
        stderr: (t) => process.stderr.write(t),
        env: process.env,
      });
    });
}
