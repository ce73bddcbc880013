/**
 * `capenter start [-f PATH]... [--port N] [--kubeconfig-out PATH] [--exit-when-settled] [--timeout S]
 * [-o table|json] [--region R] [--log-level L] [--cloud-provider kwok|aws|clusterapi] [--cluster-name N]`: a whole simulated
 * cluster in one process. With `--cloud-provider aws` (and `AWS_ENDPOINT_URL` naming an AWS API emulator such as
 * moto) NodeClaims become EC2 instances in the emulator, through the fault-filling proxy (`sim/aws/proxy.ts`); the
 * emulator's default network is tagged for discovery, and a joining-kubelet stand-in registers a Node for each
 * running instance (see `operator/aws.ts`). Starts the embedded API
 * server with capenter's CRDs and the kube-scheduler / kubelet / workload-controller stand-ins, applies the
 * manifests (default: the bundled `examples/microservices-demo`), and runs the real capenter operator against it
 * with the kwok cloud provider (NodePools may reference a KWOKNodeClass or an EC2NodeClass: EC2NodeClass NodePools
 * get the AWS catalog computed for that EC2NodeClass, as `capenter simulate`; see `operator/embedded.ts`).
 *
 * Prints the kubeconfig path (use `kubectl --kubeconfig PATH get nodeclaims -w` while it runs), progress lines on
 * stderr, and once every pod is Running a summary of the NodeClaims on stdout. With `--exit-when-settled` it then
 * exits 0 (1 with a summary of what is still pending, and why, after `--timeout`, default 120 s); without, it keeps
 * running until Ctrl-C. Exit 2 at once, before anything starts: invalid flags, unreadable paths or invalid
 * manifests (errors name file, document, kind/name, field and rule, as `simulate`). The temporary folder of the
 * kubeconfig is removed on exit (not the file of `--kubeconfig-out`).
 *
 * The embedded cluster, the operator, the manifest loader and the aws wiring are imported when the command runs
 * (every command loads this module for its flags; see scripts/build.ts).
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import type { Command } from 'commander';
import type { KubeObject, Node, Pod } from '../apis/core.ts';
import type { NodeClaim } from '../apis/karpenter.ts';
import {
  getInstanceTypes,
  isSupportedRegion,
  SUPPORTED_REGIONS,
} from '../cloudprovider/aws/catalog/index.ts';
import { resolveAwsSettings } from '../cloudprovider/aws/settings.ts';
import { diagnose, doctorSummary, readSnapshot } from '../doctor/index.ts';
import type { SimulatedCluster } from '../embedded/cluster.ts';
import type { KubeClient } from '../kube/client.ts';
import { RealClock } from '../kube/clock.ts';
import type { SharedInformers } from '../kube/informer.ts';
import type { KubeEvent } from '../kube/types.ts';
import { applyObjects } from '../operator/apply.ts';
import type { EmbeddedAws } from '../operator/aws.ts';
import { limitYoungGeneration } from '../operator/heap.ts';
import type { Operator, OperatorConfig } from '../operator/operator.ts';
import { checkLogLevel, embeddedOptions } from '../operator/options.ts';

/** Parsed flags of `capenter start`. */
export interface StartCommandOptions {
  filename?: string[];
  port?: string;
  kubeconfigOut?: string;
  exitWhenSettled?: boolean;
  /** Seconds (default 120). */
  timeout?: string;
  output?: string;
  region?: string;
  logLevel?: string;
  metricsPort?: string;
  /** Two clusters as CAPI runs them (management + workload); see start-capi.ts. */
  capi?: boolean;
  /** With --capi: seconds before capenter removes a lingering node.cluster.x-k8s.io/uninitialized taint. */
  uninitializedTaintTimeout?: string;
  /** `kwok` (default) or `aws` (an AWS API emulator at `AWS_ENDPOINT_URL`, e.g. moto). */
  cloudProvider?: string;
  /** `--cluster-name` (aws; default `CLUSTER_NAME`, else `cluster-1`). */
  clusterName?: string;
}

/** One NodeClaim row of the summary. */
export interface NodeClaimSummary {
  name: string;
  nodePool: string;
  instanceType: string;
  zone: string;
  capacityType: string;
  /** USD per hour (on-demand list price or spot estimate of the catalog), 0 when unknown (as `simulate`'s). */
  priceUSDPerHour: number;
  /** Pods bound to its Node (DaemonSet pods included). */
  pods: number;
  /** Lifecycle: Launching, Registered, Initialized, Deleting. */
  state: string;
}

/** A pod that is not Running, and why (the controller's `FailedScheduling` Event, else the PodScheduled condition). */
export interface PendingPod {
  /** `namespace/name`. */
  pod: string;
  /** Pod phase (`Pending`, ...). */
  phase: string;
  /** Why it is not running; `""` when nothing says (e.g. bound, container starting). */
  reason: string;
}

/** The summary printed when the cluster settles (or times out). */
export interface StartSummary {
  /** Every pod Running and no NodeClaim launching, registering or being deleted. */
  settled: boolean;
  /** `--timeout` passed before the cluster settled. */
  timedOut: boolean;
  elapsedSeconds: number;
  kubeconfig: string;
  region: string;
  /** Live pods (not finished, not deleting): all, Running, not Running. */
  pods: { total: number; running: number; pending: number };
  nodeClaims: NodeClaimSummary[];
  /** `pods`: pods on the NodeClaims' nodes (the sum of the rows); `deleting`: NodeClaims being deleted. */
  totals: { nodeClaims: number; deleting: number; nodes: number; pods: number; priceUSDPerHour: number };
  /** Pods not Running, with the reason. */
  pendingPods: PendingPod[];
}

/** A point-in-time view of the cluster for progress lines and the summary. */
export interface ClusterView {
  pods: Pod[];
  nodeClaims: NodeClaim[];
  nodes: Node[];
  /** Events (only read for the final summary: the reasons of pending pods). */
  events?: KubeEvent[];
}

/** Reads pods, NodeClaims and Nodes (and Events when `withEvents`) through the client. */
export async function readClusterView(client: KubeClient, withEvents = false): Promise<ClusterView> {
  const [pods, nodeClaims, nodes, events] = await Promise.all([
    client.list('Pod'),
    client.list('NodeClaim'),
    client.list('Node'),
    withEvents ? client.list('Event') : undefined,
  ]);
  return {
    pods: pods.items as Pod[],
    nodeClaims: nodeClaims.items as NodeClaim[],
    nodes: nodes.items as Node[],
    ...(events ? { events: events.items as KubeEvent[] } : {}),
  };
}

/**
 * The same view from the embedded cluster's shared informer caches (Pods, Nodes, NodeClaims): no list of every
 * pod over HTTP each progress tick (at 10,000 pods that was a 30 MB response parsed every second). Waits for
 * the NodeClaim informer (created on first call) to sync. The caches may trail the server by a watch event.
 */
export async function informerClusterView(informers: SharedInformers): Promise<ClusterView> {
  const nodeClaims = informers.informerFor('NodeClaim');
  await nodeClaims.waitForSync(30_000);
  return {
    pods: informers.informerFor('Pod').cache.list(),
    nodeClaims: nodeClaims.cache.list(),
    nodes: informers.informerFor('Node').cache.list(),
  };
}

/** The newest `FailedScheduling` Events per pod (`namespace/name`): capenter's own (component `karpenter`) and any. */
export type FailedSchedulingIndex = Map<string, { own?: KubeEvent; any?: KubeEvent }>;

/**
 * Indexes `events` for {@link pendingReason}: one pass, newest by `lastTimestamp` (of equal ones the later in the
 * list), so a summary of n pending pods reads m Events once instead of n × m times.
 */
export function failedSchedulingIndex(events: readonly KubeEvent[]): FailedSchedulingIndex {
  const out: FailedSchedulingIndex = new Map();
  const newer = (e: KubeEvent, cur: KubeEvent | undefined) =>
    !cur || (e.lastTimestamp ?? '').localeCompare(cur.lastTimestamp ?? '') >= 0;
  for (const e of events) {
    if (e.reason !== 'FailedScheduling' || e.involvedObject?.kind !== 'Pod') continue;
    const key = `${e.involvedObject.namespace ?? ''}/${e.involvedObject.name ?? ''}`;
    const cur = out.get(key) ?? {};
    if (newer(e, cur.any)) cur.any = e;
    if (e.source?.component === 'karpenter' && newer(e, cur.own)) cur.own = e;
    out.set(key, cur);
  }
  return out;
}

/**
 * Why `pod` is not running: the newest `FailedScheduling` Event of capenter (component `karpenter`, as upstream),
 * else the newest of any component, else the `PodScheduled=False` condition's message, else `""`. `events` is
 * the Events' {@link failedSchedulingIndex}.
 */
export function pendingReason(pod: Pod, events: FailedSchedulingIndex): string {
  const mine = events.get(`${pod.metadata.namespace ?? ''}/${pod.metadata.name ?? ''}`);
  const ev = mine?.own ?? mine?.any;
  if (ev?.message) return ev.message;
  const cond = pod.status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False');
  return cond?.message ?? '';
}

const isTrue = (nc: NodeClaim, t: string): boolean =>
  nc.status?.conditions?.some((c) => c.type === t && c.status === 'True') ?? false;

function ncState(nc: NodeClaim): string {
  if (nc.metadata.deletionTimestamp) return 'Deleting';
  if (isTrue(nc, 'Initialized')) return 'Initialized';
  if (isTrue(nc, 'Registered')) return 'Registered';
  if (isTrue(nc, 'Launched')) return 'Launched';
  return 'Launching';
}

/** Pods that count for settling: not finished (Succeeded/Failed) and not being deleted. */
function livePods(pods: readonly Pod[]): Pod[] {
  return pods.filter(
    (p) => p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed' && !p.metadata.deletionTimestamp,
  );
}

/** USD/hour of an instance type × zone × capacity type in `region`'s catalog (0 when unknown). */
export function priceOf(region: string, instanceType: string, zone: string, capacityType: string): number {
  if (!isSupportedRegion(region)) return 0;
  const it = getInstanceTypes({ region }).instanceTypes.find((t) => t.name === instanceType);
  const o = it?.offerings.find((x) => x.zone === zone && x.capacityType === capacityType);
  return o?.priceUSDPerHour ?? 0;
}

/**
 * Builds the summary of `view` (`timedOut`: `--timeout` passed). `listPending: false` leaves `pendingPods`
 * empty: the progress loop, which runs every second and prints only counts, skips sorting up to every pod by
 * name (at 10,000 pending pods about 25 ms a tick).
 */
export function summarize(
  view: ClusterView,
  region: string,
  kubeconfig: string,
  elapsedSeconds: number,
  timedOut = false,
  listPending = true,
): StartSummary {
  const pods = livePods(view.pods);
  const running = pods.filter((p) => p.status?.phase === 'Running');
  const reasons = failedSchedulingIndex(
    listPending && running.length < pods.length ? (view.events ?? []) : [],
  );
  const podsByNode = new Map<string, number>();
  for (const p of pods)
    if (p.spec?.nodeName) podsByNode.set(p.spec.nodeName, (podsByNode.get(p.spec.nodeName) ?? 0) + 1);
  const rows: NodeClaimSummary[] = view.nodeClaims
    .map((nc) => {
      const l = nc.metadata.labels ?? {};
      const instanceType = l['node.kubernetes.io/instance-type'] ?? '';
      const zone = l['topology.kubernetes.io/zone'] ?? '';
      const capacityType = l['karpenter.sh/capacity-type'] ?? '';
      return {
        name: nc.metadata.name ?? '',
        nodePool: l['karpenter.sh/nodepool'] ?? '',
        instanceType,
        zone,
        capacityType,
        priceUSDPerHour: instanceType ? priceOf(region, instanceType, zone, capacityType) : 0,
        pods: podsByNode.get(nc.status?.nodeName ?? nc.metadata.name ?? '') ?? 0,
        state: ncState(nc),
      };
    })
    .sort((a, b) => a.nodePool.localeCompare(b.nodePool) || a.name.localeCompare(b.name));
  const inFlight = rows.some((r) => r.state !== 'Initialized');
  const settled = pods.length === running.length && pods.length > 0 && !inFlight;
  return {
    settled,
    timedOut,
    elapsedSeconds: Math.round(elapsedSeconds * 10) / 10,
    kubeconfig,
    region,
    pods: { total: pods.length, running: running.length, pending: pods.length - running.length },
    nodeClaims: rows,
    totals: {
      nodeClaims: rows.length,
      deleting: rows.filter((r) => r.state === 'Deleting').length,
      nodes: view.nodes.length,
      pods: rows.reduce((n, r) => n + r.pods, 0),
      priceUSDPerHour: Math.round(rows.reduce((n, r) => n + r.priceUSDPerHour, 0) * 10000) / 10000,
    },
    pendingPods: (listPending ? pods : [])
      .filter((p) => p.status?.phase !== 'Running')
      .map((p) => ({
        pod: `${p.metadata.namespace ?? ''}/${p.metadata.name ?? ''}`,
        phase: p.status?.phase ?? 'Pending',
        reason: pendingReason(p, reasons),
      }))
      .sort((a, b) => a.pod.localeCompare(b.pod)),
  };
}

/** One progress line: pods, NodeClaims by lifecycle state (deleting included), nodes, $/h. */
export function progressLine(s: StartSummary): string {
  const by = (st: string) => s.nodeClaims.filter((r) => r.state === st).length;
  return (
    `[${s.elapsedSeconds.toFixed(1)}s] pods ${s.pods.running}/${s.pods.total} running (${s.pods.pending} pending) · ` +
    `nodeclaims ${s.totals.nodeClaims} (launching ${by('Launching') + by('Launched')}, registered ${by('Registered')}, ` +
    `initialized ${by('Initialized')}, deleting ${by('Deleting')}) · nodes ${s.totals.nodes} · ` +
    `$${s.totals.priceUSDPerHour.toFixed(4)}/h`
  );
}

/** The summary as a text table (NodeClaims, then totals). */
export function formatSummaryTable(s: StartSummary): string {
  const head = ['NODECLAIM', 'NODEPOOL', 'INSTANCE TYPE', 'ZONE', 'CAPACITY', '$/H', 'PODS'];
  const rows = s.nodeClaims.map((r) => [
    r.name,
    r.nodePool,
    r.instanceType,
    r.zone,
    r.capacityType,
    r.priceUSDPerHour.toFixed(4),
    String(r.pods),
  ]);
  // TOTAL sums the rows (pods not on a NodeClaim's node are counted in the line below)
  rows.push(['TOTAL', '', '', '', '', s.totals.priceUSDPerHour.toFixed(4), String(s.totals.pods)]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) =>
    r
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  const out = [line(head), ...rows.map(line)];
  const status = s.settled ? 'Settled' : s.timedOut ? 'NOT settled (timed out)' : 'NOT settled';
  out.push(
    '',
    `${status} after ${s.elapsedSeconds}s: ${s.pods.running}/${s.pods.total} pods running, ${s.totals.pods} of them on ` +
      `${s.totals.nodeClaims} NodeClaim(s)${s.totals.deleting > 0 ? ` (${s.totals.deleting} deleting)` : ''}, ` +
      `$${s.totals.priceUSDPerHour.toFixed(4)}/h (${s.region}).`,
  );
  if (!s.settled && s.pendingPods.length > 0) {
    out.push('Not running:');
    for (const p of s.pendingPods.slice(0, 10))
      out.push(`  ${p.pod} (${p.phase}): ${p.reason || 'no reason reported yet'}`);
    if (s.pendingPods.length > 10) out.push(`  and ${s.pendingPods.length - 10} more`);
  }
  return `${out.join('\n')}\n`;
}

/**
 * The bundled example (`examples/microservices-demo` of the package): the nearest `examples/microservices-demo`
 * above this module, so it is found from `src/cli/` (tsx) and from `dist/` (the compiled program) alike.
 */
export function defaultExamplePath(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  for (let dir = here; ; dir = dirname(dir)) {
    const candidate = join(dir, 'examples', 'microservices-demo');
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) return resolve(here, '..', '..', 'examples', 'microservices-demo');
  }
}

/** IO of {@link runStart}. */
export interface StartIO {
  stdout: (t: string) => void;
  stderr: (t: string) => void;
  /** Aborting stops the run (like Ctrl-C). */
  signal?: AbortSignal;
  /** Progress interval in ms (default 1000). */
  progressIntervalMs?: number;
  /** Environment (`--cloud-provider aws` reads `AWS_ENDPOINT_URL`, `AWS_REGION`, `CLUSTER_NAME`, ...). */
  env?: Readonly<Record<string, string | undefined>>;
}

/** Runs `capenter start`; returns the exit code. Never throws. */
export async function runStart(flags: StartCommandOptions, io: StartIO): Promise<number> {
  const output = flags.output ?? 'table';
  if (output !== 'table' && output !== 'json') {
    io.stderr(`error: --output must be "table" or "json", got "${output}"\n`);
    return 2;
  }
  const env = io.env ?? {};
  const cloudProvider = flags.cloudProvider ?? 'kwok';
  if (cloudProvider !== 'kwok' && cloudProvider !== 'aws' && cloudProvider !== 'clusterapi') {
    io.stderr(`error: --cloud-provider must be "kwok", "aws" or "clusterapi", got "${cloudProvider}"\n`);
    return 2;
  }
  const emulatorEndpoint = env.AWS_ENDPOINT_URL_EC2 || env.AWS_ENDPOINT_URL;
  if (cloudProvider === 'aws' && !emulatorEndpoint) {
    io.stderr(
      'error: start --cloud-provider aws runs against an AWS API emulator only: set AWS_ENDPOINT_URL (e.g. moto_server at http://127.0.0.1:5000); use `capenter controller --cloud-provider aws` for a real account\n',
    );
    return 2;
  }
  const region = flags.region ?? (cloudProvider === 'aws' ? env.AWS_REGION : undefined) ?? 'us-east-1';
  if (!isSupportedRegion(region)) {
    io.stderr(
      `error: --region "${region}" has no embedded catalog; use one of ${SUPPORTED_REGIONS.join(', ')}\n`,
    );
    return 2;
  }
  const timeout = flags.timeout === undefined ? 120 : Number(flags.timeout);
  if (!Number.isFinite(timeout) || timeout <= 0) {
    io.stderr(`error: --timeout must be a positive number of seconds, got "${flags.timeout}"\n`);
    return 2;
  }
  const port = flags.port === undefined ? 0 : Number(flags.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    io.stderr(`error: --port must be a port number (0 = any free port), got "${flags.port}"\n`);
    return 2;
  }
  let logLevel: string;
  try {
    logLevel = checkLogLevel(flags.logLevel ?? 'warn');
  } catch (err) {
    io.stderr(`error: ${(err as Error).message}\n`);
    return 2;
  }
  if (cloudProvider === 'clusterapi') {
    if (flags.capi) {
      io.stderr('error: --capi and --cloud-provider clusterapi are two different CAPI setups; choose one\n');
      return 2;
    }
    const { runStartClusterAPI } = await import('./start-clusterapi.ts');
    return runStartClusterAPI(
      {
        ...(flags.filename ? { filename: flags.filename } : {}),
        ...(flags.kubeconfigOut ? { kubeconfigOut: flags.kubeconfigOut } : {}),
        ...(flags.exitWhenSettled ? { exitWhenSettled: true } : {}),
        timeout,
        output,
        region,
        logLevel,
      },
      io,
    );
  }
  if (flags.capi) {
    const taintTimeout =
      flags.uninitializedTaintTimeout === undefined ? undefined : Number(flags.uninitializedTaintTimeout);
    if (taintTimeout !== undefined && !(Number.isFinite(taintTimeout) && taintTimeout >= 0)) {
      io.stderr(
        `error: --uninitialized-taint-timeout must be seconds >= 0, got "${flags.uninitializedTaintTimeout}"\n`,
      );
      return 2;
    }
    const { runStartCAPI } = await import('./start-capi.ts');
    return runStartCAPI(
      {
        ...(flags.filename ? { filename: flags.filename } : {}),
        ...(flags.kubeconfigOut ? { kubeconfigOut: flags.kubeconfigOut } : {}),
        ...(flags.exitWhenSettled ? { exitWhenSettled: true } : {}),
        ...(taintTimeout !== undefined ? { uninitializedTaintTimeout: taintTimeout } : {}),
        ...(cloudProvider === 'aws' && emulatorEndpoint ? { awsEmulatorEndpoint: emulatorEndpoint } : {}),
        timeout,
        output,
        region,
        logLevel,
      },
      io,
    );
  }
  const paths = flags.filename && flags.filename.length > 0 ? flags.filename : [defaultExamplePath()];
  const { loadManifestPaths } = await import('../apis/load.ts');
  const loaded = await loadManifestPaths(paths);
  for (const e of loaded.errors) io.stderr(`error: ${e.message}\n`);
  if (loaded.errors.length > 0) {
    io.stderr(`capenter: ${loaded.errors.length} invalid input(s); nothing started\n`);
    return 2;
  }
  let exitCode = 0;
  const tmpDir = flags.kubeconfigOut ? undefined : mkdtempSync(join(tmpdir(), 'capenter-'));
  const kubeconfigPath = resolve(flags.kubeconfigOut ?? join(tmpDir as string, 'kubeconfig'));
  const started = performance.now();
  const elapsed = (): number => (performance.now() - started) / 1000;
  const [{ createLogger }, { createOperator }, { startSimulatedCluster }] = await Promise.all([
    import('../kube/logger.ts'),
    import('../operator/operator.ts'),
    import('../embedded/cluster.ts'),
  ]);
  const logger = createLogger({ level: logLevel });
  const ac = new AbortController();
  io.signal?.addEventListener('abort', () => ac.abort(), { once: true });
  const onSignal = (): void => ac.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  let sim: SimulatedCluster | undefined;
  let op: Operator | undefined;
  let aws: EmbeddedAws | undefined;
  try {
    sim = await startSimulatedCluster({
      port,
      // the stand-ins and the operator below share this process: in-process requests between them
      loopback: true,
      kubeconfigPath,
      onError: (err, where) =>
        logger.debug({ where, err: String(err) }, 'simulated cluster error (retrying)'),
    });
    io.stderr(`capenter: embedded cluster at ${sim.apiServer.url}\n`);
    io.stderr(
      `capenter: kubeconfig ${kubeconfigPath}  (try: kubectl --kubeconfig ${kubeconfigPath} get nodeclaims -w)\n`,
    );
    const options = { ...embeddedOptions(), region, logLevel };
    if (flags.metricsPort !== undefined) options.metricsPort = Number(flags.metricsPort);
    let provider: Partial<OperatorConfig> = {};
    if (cloudProvider === 'aws' && emulatorEndpoint) {
      const { awsOperatorConfig, startEmbeddedAws } = await import('../operator/aws.ts');
      const settings = resolveAwsSettings({ flags: { clusterName: flags.clusterName }, env });
      settings.clusterName ||= options.clusterName;
      settings.region = region;
      // The joining nodes' user data points at the embedded API server.
      settings.clusterEndpoint ||= sim.apiServer.url;
      settings.clusterCABundle ||= /certificate-authority-data:\s*(\S+)/.exec(sim.kubeconfig)?.[1] ?? '';
      options.clusterName = settings.clusterName;
      aws = await startEmbeddedAws({
        client: sim.client,
        clock: sim.clock,
        region,
        clusterName: settings.clusterName,
        emulatorEndpoint,
        onError: (err, where) => logger.debug({ where, err: String(err) }, 'aws emulator error (retrying)'),
      });
      io.stderr(
        `capenter: aws provider against the emulator at ${emulatorEndpoint} (through ${aws.proxy.endpoint}), cluster ${settings.clusterName}, ${aws.seed.subnets.length} subnet(s) tagged karpenter.sh/discovery=${settings.clusterName}\n`,
      );
      // The embedded API server has no EKS service CIDR to discover: Kubernetes' default.
      provider = awsOperatorConfig({ clients: aws.clients, settings, region, clusterCIDR: '10.96.0.0/12' });
    }
    op = createOperator({
      kubeconfig: sim.kubeconfig,
      ...(sim.transport ? { transport: sim.transport } : {}),
      logger,
      options,
      ...provider,
    });
    await op.start(ac.signal);
    io.stderr(`capenter: controller metrics http://127.0.0.1:${op.metricsPort}/metrics\n`);
    const applied = await applyObjects(
      sim.client,
      loaded.objects.map((o) => o.object as KubeObject),
    );
    const failed = applied.filter((a) => a.result === 'failed');
    for (const f of failed) io.stderr(`error: ${f.error}\n`);
    if (failed.length > 0) {
      io.stderr(`capenter: the API server refused ${failed.length} object(s); stopping\n`);
      return 2;
    }
    io.stderr(
      `capenter: applied ${applied.length - failed.length} object(s) from ${paths.join(', ')}` +
        (Object.keys(loaded.unknownKinds).length > 0
          ? ` (ignored kinds: ${Object.entries(loaded.unknownKinds)
              .map(([k, n]) => `${k}×${n}`)
              .join(', ')})`
          : '') +
        '\n',
    );
    // One line from `capenter doctor` (src/doctor) with each summary, on stderr (stdout stays the summary/JSON).
    const doctorClient = sim.client;
    const doctorLine = async (): Promise<void> => {
      try {
        io.stderr(
          `capenter: ${doctorSummary(diagnose(await readSnapshot(doctorClient, new RealClock())))}\n`,
        );
      } catch (err) {
        io.stderr(`capenter: doctor could not read the cluster: ${(err as Error).message}\n`);
      }
    };
    const deadline = performance.now() + timeout * 1000;
    let lastLine = '';
    let printed = false;
    let summary: StartSummary | undefined;
    while (!ac.signal.aborted) {
      await new Promise((r) => setTimeout(r, io.progressIntervalMs ?? 1000));
      if (ac.signal.aborted) break;
      // not kept across the wait: it would hold the superseded version of every object changed meanwhile (at
      // 10,000 pods, up to a copy of each)
      const view = await informerClusterView(sim.informers);
      // pending pods are listed only in a summary printed unsettled (below), never in a progress line
      summary = summarize(view, region, kubeconfigPath, elapsed(), false, false);
      const line = progressLine(summary);
      const sans = line.replace(/^\[[^\]]*\] /, '');
      if (sans !== lastLine) {
        io.stderr(`${line}\n`);
        lastLine = sans;
      }
      // Settled: every pod Running and no NodeClaim still in flight (see summarize).
      if (summary.settled) {
        if (!printed) {
          io.stdout(
            output === 'json' ? `${JSON.stringify(summary, null, 2)}\n` : formatSummaryTable(summary),
          );
          await doctorLine();
          printed = true;
          if (flags.exitWhenSettled) break;
        }
      } else {
        if (printed && !summary.settled) printed = false;
      }
      if (flags.exitWhenSettled && performance.now() > deadline) {
        summary = summarize(await readClusterView(sim.client, true), region, kubeconfigPath, elapsed(), true);
        io.stderr(`capenter: timed out after ${timeout}s with ${summary.pods.pending} pod(s) not running\n`);
        io.stdout(output === 'json' ? `${JSON.stringify(summary, null, 2)}\n` : formatSummaryTable(summary));
        await doctorLine();
        exitCode = 1;
        break;
      }
    }
    if (!printed && summary && exitCode !== 1 && !flags.exitWhenSettled) {
      summary = summarize(
        await informerClusterView(sim.informers),
        region,
        kubeconfigPath,
        summary.elapsedSeconds,
      );
      io.stdout(output === 'json' ? `${JSON.stringify(summary, null, 2)}\n` : formatSummaryTable(summary));
    }
    return exitCode;
  } catch (err) {
    io.stderr(`error: ${(err as Error).message}\n`);
    return 1;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await op?.stop();
    await aws?.stop();
    await sim?.stop();
    if (tmpDir) rmSync(tmpDir, { recursive: true, force: true });
  }
}

/**
 * Lets V8 grow its heap by 50% of the live heap after each full collection (`--heap-growing-percent=50`) instead
 * of its default, which grows up to 4× for a program that allocates as fast as this one. `capenter start` holds
 * a whole cluster in one process (the API server's objects, the stand-ins' and the operator's caches): at
 * 10,000 pods its peak RSS was 814–1,024 MB without the flag and 513–547 MB with it (three runs each, alternating,
 * 2026-12-02; 34–51 CPU-s without, 48–57 with; 25% cost 30% more CPU for no less memory on 2026-12-01). V8 reads
 * this flag at each collection, so setting it at run time takes effect. Not applied when `nodeOptions`
 * (`NODE_OPTIONS`) already sets a heap flag: the user's choice wins. Returns whether it set the flag.
 */
export function limitHeapGrowth(nodeOptions: string | undefined): boolean {
  if (/--(max-old-space-size|heap-growing-percent|optimize-for-size)/.test(nodeOptions ?? '')) return false;
  setFlagsFromString('--heap-growing-percent=50');
  return true;
}

/** Registers `capenter start`. */
export function registerStartCommand(program: Command): void {
  program
    .command('start')
    .description(
      'start a simulated cluster with the capenter controller, apply manifests and watch it provision',
    )
    .option(
      '-f, --filename <path>',
      'manifest file or folder (repeatable; default: examples/microservices-demo)',
      (v: string, prev: string[] = []) => [...prev, v],
    )
    .option('--port <n>', 'API server port (default: any free port)')
    .option('--kubeconfig-out <path>', 'where to write the kubeconfig (default: a temporary file)')
    .option('--exit-when-settled', 'exit 0 once every pod is Running (1 on --timeout)')
    .option('--timeout <seconds>', 'with --exit-when-settled: give up after this many seconds', '120')
    .option('-o, --output <format>', 'table|json', 'table')
    .option(
      '--region <region>',
      'AWS region whose catalog and prices are simulated (default us-east-1; aws: AWS_REGION)',
    )
    .option(
      '--cloud-provider <name>',
      'kwok (default); aws: EC2 instances in an emulator at AWS_ENDPOINT_URL; clusterapi: Machines of CAPI MachineDeployments (two embedded clusters)',
      'kwok',
    )
    .option(
      '--cluster-name <name>',
      'with --cloud-provider aws: the cluster name (env CLUSTER_NAME; default cluster-1)',
    )
    .option('--log-level <level>', 'controller log level on stderr: debug|info|warn|error|silent', 'warn')
    .option('--metrics-port <n>', 'controller /metrics port (default: any free port)')
    .option(
      '--capi',
      'two clusters as Cluster API runs them: management (CAPI/CAPA CRDs, KarpenterMachinePool) + workload',
    )
    .option(
      '--uninitialized-taint-timeout <seconds>',
      'with --capi: remove node.cluster.x-k8s.io/uninitialized from initialized nodes after this long (default 120)',
    )
    .action(async (flags: StartCommandOptions) => {
      limitHeapGrowth(process.env.NODE_OPTIONS);
      // and the young generation stops growing at 8 MB (operator/heap.ts; the controller's stops at 16 MB): at
      // 10,000 pods V8 let it grow to 128 MB on Node 24, peak RSS 636-688 MB; capped at 16 MB 506-545 MB, at 8 MB
      // 464-499 MB for about 10 % more CPU time (three runs each, 2026-12-02, 2-core machine, load 2-8)
      limitYoungGeneration({ nodeOptions: process.env.NODE_OPTIONS, execArgv: process.execArgv, limitMB: 8 });
      process.exitCode = await runStart(flags, {
        stdout: (t) => process.stdout.write(t),
        stderr: (t) => process.stderr.write(t),
        env: process.env,
      });
    });
}
