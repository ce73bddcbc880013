/**
 * One soak run: the simulated cluster (FakeClock, plain HTTP) with the capenter operator in-process, its API
 * traffic going through the fault proxy, its cloud provider wrapped by {@link FaultyProvider}; a seeded
 * scenario and fault schedule; invariants checked after every step (and at every eviction/pod deletion the
 * operator sends). The invariants and fault kinds are listed in docs/soak.md.
 *
 * Determinism: the scenario, the fault schedule and fake time are fully determined by the seed; the
 * interleaving of real HTTP round trips is not, so a replay reproduces the same inputs, not necessarily the
 * same byte-for-byte history.
 */
import { pino } from 'pino';
import type { KubeObject, Node, Pod } from '../../src/apis/core.ts';
import { parseDuration } from '../../src/apis/duration.ts';
import type { NodeClaim, NodePool } from '../../src/apis/karpenter.ts';
import { parseQuantity } from '../../src/apis/quantity.ts';
import { createAwsClients } from '../../src/cloudprovider/aws/clients.ts';
import { awsSettings } from '../../src/cloudprovider/aws/settings.ts';
import {
  type AwsControllersConfig,
  awsSetup as awsProviderSetup,
  createAwsProvider,
} from '../../src/cloudprovider/aws/setup.ts';
import { EmbeddedCloudProvider } from '../../src/cloudprovider/kwok/embedded.ts';
import { KubeNodeWriter } from '../../src/cloudprovider/kwok/kubenodes.ts';
import { sequentialInstanceIds } from '../../src/cloudprovider/kwok/provider.ts';
import { type CloudProvider, InsufficientCapacityError } from '../../src/cloudprovider/types.ts';
import { applyObjects } from '../../src/embedded/apply.ts';
import { catalogNodeShape } from '../../src/embedded/aws.ts';
import { type SimulatedCluster, startSimulatedCluster } from '../../src/embedded/cluster.ts';
import { FakeClock } from '../../src/kube/clock.ts';
import { createOperator, type Operator } from '../../src/operator/operator.ts';
import { embeddedOptions } from '../../src/operator/options.ts';
import { prepareEmulator } from '../../src/sim/aws/emulator.ts';
import { Ec2NodeJoiner } from '../../src/sim/aws/joiner.ts';
import type { AwsEmulatorProxy } from '../../src/sim/aws/proxy.ts';
import { FAULT_KINDS, type FaultEvent, type FaultKind, faultSchedule } from './faults.ts';
import { budgetCount, describeDisrupting, duplicateLaunches } from './invariants.ts';
import { API_FAULT_KINDS, type ApiFaultKind, startFaultProxy } from './proxy.ts';
import { buildScenario } from './scenario.ts';

/** Options of {@link runSoak}. */
export interface RunOptions {
  /** Run seed: scenario and (unless `faults`) fault schedule. */
  seed: number;
  /** Scenario steps (each `stepSeconds` of fake time). */
  steps: number;
  /** Explicit fault schedule (replay / shrinking); default `faultSchedule(seed, steps)`. */
  faults?: FaultEvent[];
  /** Fake seconds per step (default 10). */
  stepSeconds?: number;
  /** Fault-free steps after the scenario to let every pod run (default 150: 25 fake minutes). */
  settleSteps?: number;
  /** Write the operator's logs (pino JSON, level info) to this file, for investigating a failure. */
  logFile?: string;
  /**
   * `aws`: the aws provider against this emulator (moto behind the capenter proxy), an EC2NodeClass, and the
   * joining-kubelet stand-in registering Nodes for running instances; default: the kwok provider. The run uses
   * its own cluster name (`soak-<seed>-<n>`, tagged on the emulator's default network): runs sharing an emulator
   * must not overlap.
   */
  aws?: SoakAwsEmulator;
  /**
   * Filled in by the run with its live {@link RunStatus} (`holder.current`), so that a caller whose run hangs
   * can say where (the soak script's hang report).
   */
  status?: { current?: RunStatus };
}

/** Where a run is now: the step, what it awaits, the emulator requests open and its recent log lines. */
export interface RunStatus {
  /** Scenario step (0-based), then settle steps numbered on from the last scenario step. */
  readonly step: number;
  /** What the run awaits now: `start operator`, `stop operator`, `advance clock`, `check invariants`, … */
  readonly phase: string;
  /** Fake seconds since the run began. */
  readonly fakeSeconds: number;
  /** aws: the emulator requests not answered yet, each `service:Action for <real seconds> s`. */
  inFlight(): string[];
  /** The last `n` lines of the operator's in-memory log (fake time); empty with `logFile`. */
  tail(n: number): string[];
}

/** The AWS emulator a soak run talks to (test/aws/moto.ts `AwsEmulator` satisfies it). */
export interface SoakAwsEmulator {
  proxy: AwsEmulatorProxy;
  readonly endpoint: string;
  readonly region: string;
  readonly clientConfig: { credentials: { accessKeyId: string; secretAccessKey: string } };
  /** Drops every resource of the emulator (and the proxy's faults, counters and caches). */
  reset(): Promise<void>;
}

let awsRuns = 0;

/** An invariant violation. */
export interface Violation {
  step: number;
  /**
   * The operator's log lines (info and up, fake time) and the soak's own fault/restart lines that mention the
   * objects this violation names, the last {@link VIOLATION_LOG_LINES}; on the first violation of each invariant
   * of a run only (without `logFile`).
   */
  log?: string[];
  invariant:
    | 'pdb'
    | 'do-not-disrupt'
    | 'disruption-budget'
    | 'nodepool-limit'
    | 'registration-ttl'
    | 'duplicate-nodeclaim'
    | 'instance-leak'
    | 'nodeclaim-leak'
    | 'eventually-runs'
    | 'crash'
    /** the run took longer than the soak's `--run-timeout` (real seconds): a hang, reported by the soak script */
    | 'timeout';
  detail: string;
}

/** Result of {@link runSoak}. */
export interface RunResult {
  seed: number;
  steps: number;
  faults: FaultEvent[];
  /** Faults actually injected, by kind. */
  injected: Record<FaultKind, number>;
  violations: Violation[];
  /** Fake seconds the settle phase took until every pod ran (undefined when it never did). */
  settleSeconds: number | undefined;
  /** Highest NodeClaim count seen, and evictions/pod deletions the operator sent. */
  maxNodeClaims: number;
  evictions: number;
  /**
   * Checks (NodePool × step) where the disrupting NodeClaims were within the budget only because some of them had
   * no Node left (finalizer pending): the old, stricter count would have reported `disruption-budget`.
   */
  budgetNodeGoneSteps: number;
}

/** Lines of operator log kept in memory per run (without `logFile`), and the most attached to one violation. */
const LOG_RING_LINES = 2000;
const VIOLATION_LOG_LINES = 40;

/**
 * One pino JSON line as `t=<fake seconds> <msg> key=value ...` (without pino's own fields), for a violation report.
 */
export function compactLogLine(line: string, start: number): string {
  try {
    const o = JSON.parse(line) as Record<string, unknown>;
    const { time, msg, level, pid, hostname, ...rest } = o;
    void pid;
    void hostname;
    const lvl =
      typeof level === 'number' && level >= 50
        ? 'ERROR '
        : typeof level === 'number' && level >= 40
          ? 'WARN '
          : '';
    const kv = Object.entries(rest)
      .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
      .join(' ');
    return `t=${Math.round((Number(time) - start) / 1000)} ${lvl}${String(msg)}${kv ? ` ${kv}` : ''}`;
  } catch {
    return line.trim();
  }
}

const REGISTRATION_TTL_S = 15 * 60;
/** GC: period 120 s + instance grace 30 s (controller defaults) + one period of slack. */
const GC_DEADLINE_S = 120 + 30 + 120;
const NEVER = 1e7; // seconds: "never" on the soak's time scale

function zeroCounts(): Record<FaultKind, number> {
  return Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as Record<FaultKind, number>;
}

/** A CloudProvider wrapper that answers armed `create` calls with an insufficient-capacity error. */
export class FaultyProvider implements CloudProvider {
  readonly name: string;
  ice = 0;
  iceInjected = 0;
  /** Provider IDs of the instances {@link vanish} terminated. */
  readonly vanished = new Set<string>();
  constructor(readonly inner: CloudProvider) {
    this.name = inner.name;
  }
  supportedNodeClasses() {
    return this.inner.supportedNodeClasses();
  }
  /** Launches still to lose (see {@link create}). */
  lostLaunch = 0;
  lostLaunchInjected = 0;
  /** Called when a launch reply was lost: the soak restarts the operator at once. */
  onLostLaunch: (() => void) | undefined;
  async create(nc: NodeClaim) {
    if (this.ice > 0) {
      this.ice--;
      this.iceInjected++;
      throw new InsufficientCapacityError(`soak: no capacity for NodeClaim ${nc.metadata.name}`);
    }
    const created = await this.inner.create(nc);
    if (this.lostLaunch > 0) {
      // the instance exists, the caller never hears of it, and the process dies before the status write
      this.lostLaunch--;
      this.lostLaunchInjected++;
      this.onLostLaunch?.();
      throw new Error(
        `soak: the reply of the launch of NodeClaim ${nc.metadata.name} was lost (${created.status?.providerID} exists)`,
      );
    }
    return created;
  }
  delete(nc: NodeClaim) {
    return this.inner.delete(nc);
  }
  /**
   * Terminates up to `n` running instances behind the controller's back (oldest first; their Nodes go with them,
   * as when EC2 reclaims an instance); returns how many vanished.
   */
  async vanish(n: number): Promise<number> {
    let done = 0;
    for (const inst of await this.inner.list()) {
      if (done >= n) break;
      try {
        await this.inner.delete(inst);
        this.vanished.add(inst.status?.providerID ?? '');
        done++;
      } catch {
        // already gone
      }
    }
    return done;
  }
  get(id: string) {
    return this.inner.get(id);
  }
  list() {
    return this.inner.list();
  }
  instanceTypes(np: NodePool) {
    return this.inner.instanceTypes(np);
  }
  isDrifted(nc: NodeClaim) {
    return this.inner.isDrifted(nc);
  }
  repairPolicies() {
    return this.inner.repairPolicies();
  }
}

function cond(obj: { status?: { conditions?: { type: string; status: string }[] } }, type: string): boolean {
  return obj.status?.conditions?.some((c) => c.type === type && c.status === 'True') ?? false;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** The aws side of a run: the cluster's name and region, the operator's aws config, the joiner. */
interface AwsSetup {
  clusterName: string;
  region: string;
  config: AwsControllersConfig;
  /** The soak's own aws provider (list/terminate instances; never launches). */
  provider: CloudProvider;
  /** The EC2NodeClass the NodePools use. */
  nodeClass: KubeObject;
  stop(): Promise<void>;
}

/**
 * Prepares the emulator for a new cluster (discovery tags on its default network, node role), builds the aws config
 * of the operator and starts the joining-kubelet stand-in (`joinDelaySeconds` asked once per instance).
 */
async function setUpAws(
  emu: SoakAwsEmulator,
  sim: SimulatedCluster,
  clock: FakeClock,
  joinDelaySeconds: () => number,
): Promise<AwsSetup> {
  const clusterName = `soak-${process.pid}-${++awsRuns}`;
  // a fresh emulator per run: moto keeps every earlier run's instances (and their tags) and scans them all on each
  // DescribeInstances, so a worker's runs got slower one after the other (moto CPU about 2.4 times a fresh run's
  // by a worker's fifth run)
  await emu.reset();
  const clients = createAwsClients({
    region: emu.region,
    endpoint: emu.endpoint,
    credentials: emu.clientConfig.credentials,
    maxAttempts: 3,
  });
  await prepareEmulator(clients.ec2, clients.iam, clusterName);
  const settings = awsSettings({
    clusterName,
    region: emu.region,
    clusterEndpoint: sim.apiServer.url,
    clusterCABundle: '',
    interruptionQueue: '',
  });
  const config: AwsControllersConfig = {
    clients,
    settings,
    region: emu.region,
    clusterCIDR: '10.96.0.0/12',
    kubernetesVersion: async () => '1.32',
    // re-resolution (DescribeImages over moto's whole catalogue) every 10 fake minutes instead of every minute
    nodeClassPeriodSeconds: 600,
  };
  const joiner = new Ec2NodeJoiner({
    client: sim.client,
    ec2: clients.ec2,
    clock,
    clusterName,
    region: emu.region,
    shape: catalogNodeShape(emu.region),
    // one EC2 poll per step: moto's DescribeInstances is the costliest call of an aws run
    pollSeconds: 10,
    joinDelaySeconds,
  });
  joiner.start();
  const nodeClass: KubeObject = {
    apiVersion: 'karpenter.k8s.aws/v1',
    kind: 'EC2NodeClass',
    metadata: { name: 'default' },
    spec: {
      role: `KarpenterNodeRole-${clusterName}`,
      amiSelectorTerms: [{ alias: 'al2023@latest' }],
      subnetSelectorTerms: [{ tags: { 'karpenter.sh/discovery': clusterName } }],
      securityGroupSelectorTerms: [{ tags: { 'karpenter.sh/discovery': clusterName } }],
    },
  };
  return {
    clusterName,
    region: emu.region,
    config,
    provider: createAwsProvider(config, clock, () => undefined),
    nodeClass,
    async stop() {
      await joiner.stop();
      clients.destroy();
    },
  };
}

/** The scenario's objects with the KWOKNodeClass replaced by `nodeClass` and the NodePools pointing at it. */
function withNodeClass(objects: readonly KubeObject[], nodeClass: KubeObject): KubeObject[] {
  const [group] = (nodeClass.apiVersion ?? '').split('/');
  return objects.map((o) => {
    if (o.kind === 'KWOKNodeClass') return nodeClass;
    if (o.kind !== 'NodePool') return o;
    const np = structuredClone(o) as NodePool;
    np.spec.template.spec.nodeClassRef = {
      group: group ?? '',
      kind: nodeClass.kind ?? '',
      name: nodeClass.metadata?.name ?? '',
    };
    return np as KubeObject;
  });
}

/** Runs one soak run; never throws for an invariant violation (they are in the result). */
export async function runSoak(opts: RunOptions): Promise<RunResult> {
  const stepMs = (opts.stepSeconds ?? 10) * 1000;
  const faults = opts.faults ?? faultSchedule(opts.seed, opts.steps);
  const scenario = buildScenario(opts.seed, opts.steps);
  const clock = new FakeClock(Date.now());
  const violations: Violation[] = [];
  const injected = zeroCounts();
  let step = 0;
  let phase = 'set up';
  /** Awaits `p` with `phase` named in the run's status (for a hang report), then goes back to the outer phase. */
  const at = async <T>(name: string, p: () => Promise<T>): Promise<T> => {
    const outer = phase;
    phase = name;
    try {
      return await p();
    } finally {
      phase = outer;
    }
  };
  let faultsActive = true;
  // without a log file: the operator's info lines in a ring, attached to the first violation of each invariant
  const ring: string[] = [];
  const runStart = clock.now();
  const note = (line: string) => {
    ring.push(line);
    if (ring.length > LOG_RING_LINES) ring.splice(0, ring.length - LOG_RING_LINES);
  };
  if (opts.status)
    opts.status.current = {
      get step() {
        return step;
      },
      get phase() {
        return phase;
      },
      get fakeSeconds() {
        return Math.round((clock.now() - runStart) / 1000);
      },
      inFlight: () => opts.aws?.proxy.inFlightRequests() ?? [],
      tail: (n) => ring.slice(-n),
    };
  let evictions = 0;
  let maxNodeClaims = 0;
  let budgetNodeGoneSteps = 0;

  const onCrash = (err: unknown) =>
    violations.push({
      step,
      invariant: 'crash',
      detail: err instanceof Error ? (err.stack ?? err.message) : String(err),
    });
  process.on('unhandledRejection', onCrash);
  process.on('uncaughtException', onCrash);

  // node faults: never-registering launches and never-Ready nodes (Ready once faults stop)
  let noRegisterArmed = 0;
  let notReadyArmed = 0;
  const notReady = new Set<string>();
  const readyDecided = new Set<string>();
  const sim = await startSimulatedCluster({
    clock,
    tls: false,
    podStartDelaySeconds: 1,
    schedulerRetrySeconds: 5,
    kubeletReadyDelaySeconds: (node: Node) => {
      const name = node.metadata.name ?? '';
      if (!readyDecided.has(name)) {
        readyDecided.add(name);
        if (notReadyArmed > 0) {
          notReadyArmed--;
          injected.notReady++;
          notReady.add(name);
        }
      }
      return faultsActive && notReady.has(name) ? NEVER : 1;
    },
  });

  // The embedded store stamps creation/deletion timestamps with its own `now` (wall clock by default, and
  // startEmbeddedCluster has no option for it yet): point it at the fake clock so ages (expiration,
  // registration TTL, terminationGracePeriod) are measured on one time line.
  Object.defineProperty(sim.apiServer.store, 'now', { value: () => clock.now() });
  const proxy = await startFaultProxy({
    upstream: sim.apiServer.url,
    inspect: async ({ method, path }) => {
      evictions++;
      try {
        const m = /\/namespaces\/([^/]+)\/pods\/([^/]+)/.exec(path);
        if (!m) return;
        const ns = m[1] ?? '';
        const name = m[2] ?? '';
        const pod = (await sim.client.tryGet('Pod', name, ns)) as Pod | undefined;
        if (!pod?.spec?.nodeName || pod.status?.phase !== 'Running' || pod.metadata.deletionTimestamp) return;
        const ncs = (await sim.client.list('NodeClaim')).items as NodeClaim[];
        const nc = ncs.find((n) => n.status?.nodeName === pod.spec?.nodeName);
        const tgp = nc?.spec.terminationGracePeriod;
        const dt = nc?.metadata.deletionTimestamp;
        const podGraceMs = (pod.spec.terminationGracePeriodSeconds ?? 30) * 1000;
        const deadline = dt && tgp ? Date.parse(dt) + parseDuration(tgp) * 1000 : undefined;
        const pastDeadline = deadline !== undefined && clock.now() >= deadline - podGraceMs;
        const what = `${method === 'POST' ? 'eviction' : 'deletion'} of ${ns}/${name} on node ${pod.spec.nodeName} at ${new Date(clock.now()).toISOString()} (NodeClaim ${nc?.metadata.name ?? 'none'}, deletion ${dt ?? 'none'}, TGP ${tgp ?? 'none'})`;
        if (pod.metadata.annotations?.['karpenter.sh/do-not-disrupt'] === 'true' && !pastDeadline)
          violations.push({ step, invariant: 'do-not-disrupt', detail: what });
        if (method === 'DELETE' && !pastDeadline) {
          const pdbs = (await sim.client.list('PodDisruptionBudget', { namespace: ns })).items as {
            metadata: { name: string };
            spec?: { selector?: { matchLabels?: Record<string, string> } };
            status?: { disruptionsAllowed?: number };
          }[];
          for (const pdb of pdbs) {
            const sel = pdb.spec?.selector?.matchLabels ?? {};
            const matches = Object.entries(sel).every(([k, v]) => pod.metadata.labels?.[k] === v);
            if (matches && (pdb.status?.disruptionsAllowed ?? 0) <= 0)
              violations.push({ step, invariant: 'pdb', detail: `${what} past PDB ${pdb.metadata.name}` });
          }
        }
      } catch {
        // the checker's own read failed: not a finding
      }
    },
  });
  const kubeconfig = sim.kubeconfig.replace(sim.apiServer.url, proxy.url);

  // the provider: kwok (in-process Nodes), or aws against the emulator with the joining-kubelet stand-in
  const aws = opts.aws;
  let awsSetup: AwsSetup | undefined;
  let provider: FaultyProvider;
  if (aws) {
    awsSetup = await setUpAws(aws, sim, clock, () => {
      if (noRegisterArmed > 0) {
        noRegisterArmed--;
        injected.noRegister++;
        return NEVER;
      }
      return 0;
    });
    // the soak's own handle on the instances (vanish, leak checks); the operator builds its own from `aws`
    provider = new FaultyProvider(awsSetup.provider);
  } else {
    const nodeClass = {
      apiVersion: 'karpenter.kwok.sh/v1alpha1',
      kind: 'KWOKNodeClass',
      metadata: { name: 'default' },
      spec: {},
    };
    provider = new FaultyProvider(
      new EmbeddedCloudProvider({
        region: 'us-east-1',
        nodes: new KubeNodeWriter(sim.client),
        clock,
        nodeClass: () => nodeClass,
        kwok: {
          instanceId: sequentialInstanceIds(),
          registrationDelaySeconds: () => {
            if (noRegisterArmed > 0) {
              noRegisterArmed--;
              injected.noRegister++;
              return NEVER;
            }
            return 0;
          },
        },
      }),
    );
  }
  const capacityErrorsBefore = aws?.proxy.capacityErrorsInjected ?? 0;

  let operator: Operator | undefined;
  let operatorSince = clock.now();
  /** When the last clock jump landed: deadlines restart there (the controllers have not had a chance yet). */
  let lastJumpAt = 0;
  let restartAt: number | undefined;
  /** A launch reply was lost (`lostLaunch`): the operator restarts before the next tick. */
  let pendingRestart = false;
  provider.onLostLaunch = () => {
    pendingRestart = true;
  };
  if (aws)
    aws.proxy.onFleetReplyLost = () => {
      pendingRestart = true;
    };
  const lostRepliesBefore = aws?.proxy.lostFleetReplies ?? 0;
  const ringLogger = () =>
    pino(
      { level: 'info', timestamp: () => `,"time":${clock.now()}` },
      { write: (line: string) => note(compactLogLine(line, runStart)) },
    );
  const startOperator = async () => {
    note(`t=${Math.round((clock.now() - runStart) / 1000)} soak: operator started`);
    operator = createOperator({
      kubeconfig,
      logger: opts.logFile
        ? pino({ level: 'debug' }, pino.destination({ dest: opts.logFile, append: true, sync: true }))
        : ringLogger(),
      options: {
        ...embeddedOptions(),
        batchIdleSeconds: 1,
        batchMaxSeconds: 10,
        metricsPeriodSeconds: 5,
        leaderElect: false,
        ...(awsSetup ? { clusterName: awsSetup.clusterName, region: awsSetup.region } : {}),
      },
      defaultMetrics: false,
      clock,
      // aws: the operator builds its own aws provider (capacity faults come from the emulator proxy)
      ...(awsSetup ? { provider: awsProviderSetup(awsSetup.config) } : { cloudProvider: provider }),
    });
    operatorSince = clock.now();
    const started = operator;
    await at('start operator', () => started.start());
  };

  /** Notes `why` in the run's log, stops `running` (the operator) and forgets it. */
  const stopOperator = async (running: Operator, why: string) => {
    note(`t=${Math.round((clock.now() - runStart) / 1000)} soak: ${why}`);
    await at('stop operator', () => running.stop());
    operator = undefined;
  };

  // aws: fake time stands still while the emulator answers (up to 2 s of real time per tick), so real-time AWS
  // latency does not turn into minutes of fake time
  const awsSettled = async () => {
    for (let waited = 0; aws && aws.proxy.inFlight > 0 && waited < 2000; waited += 2) await sleep(2);
  };
  const advance = async (ms: number) => {
    for (let t = 0; t < ms; t += 2000) {
      if (pendingRestart) {
        // the process died right after the launch: the new one finds the NodeClaim without its instance
        pendingRestart = false;
        if (operator) {
          await stopOperator(operator, 'launch reply lost, operator stopped');
          await startOperator();
        }
      }
      await awsSettled();
      await at('clock tick (fake timers firing)', () => clock.tick(Math.min(2000, ms - t)));
      await sleep(8);
    }
  };

  /** The first violation of each invariant gets the ring's lines naming its objects (NodeClaims, pods). */
  const logged = new Set<string>();
  const attachLog = (from: number) => {
    if (opts.logFile) return;
    for (const v of violations.slice(from)) {
      if (logged.has(v.invariant)) continue;
      logged.add(v.invariant);
      const names = new Set(
        v.detail.match(/\b[a-z0-9][a-z0-9.-]*-[a-z0-9]{5}\b|\b[a-z0-9-]+\/[a-z0-9.-]+\b/g) ?? [],
      );
      // the last lines naming its objects, and the soak's fault/restart lines from the first of those on
      const named = ring.flatMap((l, i) => ([...names].some((n) => l.includes(n)) ? [i] : []));
      const picked = new Set(named.slice(-VIOLATION_LOG_LINES));
      const from0 = picked.size > 0 ? Math.min(...picked) : 0;
      v.log = ring
        .filter((l, i) => picked.has(i) || (i >= from0 && l.includes(' soak: ')))
        .slice(-VIOLATION_LOG_LINES);
    }
  };
  const check = async () => {
    const from = violations.length;
    await at('check invariants', checkState);
    attachLog(from);
  };
  const checkState = async () => {
    const [ncList, npList, nodeList] = await Promise.all([
      sim.client.list('NodeClaim'),
      sim.client.list('NodePool'),
      sim.client.list('Node'),
    ]);
    const ncs = ncList.items as NodeClaim[];
    maxNodeClaims = Math.max(maxNodeClaims, ncs.length);
    const nodes = new Map((nodeList.items as Node[]).map((n) => [n.metadata.name, n]));
    const now = clock.now();
    for (const np of npList.items as NodePool[]) {
      const pool = np.metadata.name;
      const mine = ncs.filter((n) => n.metadata.labels?.['karpenter.sh/nodepool'] === pool);
      const disruptedNode = (nc: NodeClaim) => {
        const node = nc.status?.nodeName ? nodes.get(nc.status.nodeName) : undefined;
        return node?.spec?.taints?.some((t) => t.key === 'karpenter.sh/disrupted') ?? false;
      };
      // disruption budgets: graceful disruptions in progress within the budget (rules in invariants.ts)
      const { disrupting, allowed, nodeGone } = budgetCount(np, mine, nodes, now, provider.vanished);
      if (disrupting.length <= allowed && disrupting.length + nodeGone > allowed) budgetNodeGoneSteps++;
      if (disrupting.length > allowed)
        violations.push({
          step,
          invariant: 'disruption-budget',
          detail: `NodePool ${pool}: ${disrupting.length} NodeClaims disrupted at once (${disrupting.map((n) => n.metadata.name).join(', ')}) > budget ${allowed} of ${mine.length}: ${disrupting.map((n) => describeDisrupting(n, nodes, now)).join('; ')}`,
        });
      // limits
      const limit = np.spec.limits?.cpu;
      if (limit !== undefined) {
        // Disruption candidates (tainted karpenter.sh/disrupted) do not count: like upstream's SimulateScheduling,
        // a replacement is sized against the pool without its candidates, so usage may pass the limit only
        // while candidates drain.
        const counted = mine.filter((n) => !n.metadata.deletionTimestamp && !disruptedNode(n));
        const used = counted.reduce(
          (s, n) => s + (n.status?.capacity?.cpu ? parseQuantity(n.status.capacity.cpu) : 0),
          0,
        );
        if (used > parseQuantity(limit))
          violations.push({
            step,
            invariant: 'nodepool-limit',
            detail: `NodePool ${pool}: ${used} cpu launched > limit ${limit}: ${counted
              .map(
                (n) =>
                  `${n.metadata.name} ${n.metadata.labels?.['node.kubernetes.io/instance-type']} ${n.status?.capacity?.cpu} created ${n.metadata.creationTimestamp} registered ${cond(n, 'Registered')}`,
              )
              .join('; ')}`,
          });
      }
    }
    // registration TTL: a NodeClaim without a Node is removed once the TTL passed (5 min slack for the controller)
    if (operator)
      for (const nc of ncs) {
        if (nc.metadata.deletionTimestamp || cond(nc, 'Registered')) continue;
        const since = Math.max(Date.parse(nc.metadata.creationTimestamp ?? ''), operatorSince, lastJumpAt);
        if (now - since > (REGISTRATION_TTL_S + 300) * 1000)
          violations.push({
            step,
            invariant: 'registration-ttl',
            detail: `NodeClaim ${nc.metadata.name} unregistered ${Math.round((now - since) / 1000)} s after creation`,
          });
      }
    await checkLeaks(ncs, now);
    await checkDuplicates(ncs, nodes);
  };

  // no leak: instance ↔ NodeClaim, measured from when the mismatch was first seen (and the operator running)
  const orphanSince = new Map<string, number>();
  const missingSince = new Map<string, number>();
  const checkLeaks = async (ncs: NodeClaim[], now: number) => {
    // aws: every third step (30 fake s, well inside the 270-s deadlines): each look is a DescribeInstances
    if (aws && step % 3 !== 0) return;
    const instances = await provider.inner.list();
    const byId = new Set(ncs.map((n) => n.status?.providerID).filter(Boolean));
    // an instance is accounted for by the NodeClaim with its provider ID, or by its NodeClaim (by name) while that
    // NodeClaim has no provider ID yet; an instance whose NodeClaim points at another one (a launch whose reply was
    // lost, then launched again) is a leak for GC to clean up
    const byName = new Set(ncs.filter((n) => !n.status?.providerID).map((n) => n.metadata.name));
    const live = new Set<string>();
    for (const inst of instances) {
      const id = inst.status?.providerID ?? '';
      live.add(id);
      if (byId.has(id) || byName.has(inst.metadata.name)) {
        orphanSince.delete(id);
        continue;
      }
      const since = Math.max(orphanSince.get(id) ?? now, operatorSince, lastJumpAt);
      if (!orphanSince.has(id)) orphanSince.set(id, now);
      if (operator && now - since > GC_DEADLINE_S * 1000)
        violations.push({
          step,
          invariant: 'instance-leak',
          detail: `instance ${id} (launched for NodeClaim ${inst.metadata.name}) has had no NodeClaim for ${Math.round((now - since) / 1000)} s`,
        });
    }
    for (const id of orphanSince.keys()) if (!live.has(id)) orphanSince.delete(id);
    const seen = new Set<string>();
    for (const nc of ncs) {
      const id = nc.status?.providerID;
      if (!id) continue;
      seen.add(id);
      if (live.has(id)) {
        missingSince.delete(id);
        continue;
      }
      if (!missingSince.has(id)) missingSince.set(id, now);
      const since = Math.max(missingSince.get(id) ?? now, operatorSince, lastJumpAt);
      // registered: GC deletes it; launched but never registered: the registration TTL (liveness) does
      // deleting: its Node drains first, for up to terminationGracePeriod
      const tgp = nc.spec.terminationGracePeriod ? parseDuration(nc.spec.terminationGracePeriod) : 0;
      const deadline =
        (cond(nc, 'Registered') ? GC_DEADLINE_S : REGISTRATION_TTL_S + GC_DEADLINE_S) +
        (nc.metadata.deletionTimestamp ? tgp : 0);
      if (operator && now - since > deadline * 1000)
        violations.push({
          step,
          invariant: 'nodeclaim-leak',
          detail: `NodeClaim ${nc.metadata.name} (${id}${nc.metadata.deletionTimestamp ? ', deleting' : ''}) has had no instance for ${Math.round((now - since) / 1000)} s (finalizers: ${(nc.metadata.finalizers ?? []).join(', ') || 'none'})`,
        });
    }
    for (const id of missingSince.keys()) if (!seen.has(id)) missingSince.delete(id);
  };
  // no duplicate launches: a pending pod is in the nominated-pods list of at most one live, uninitialized NodeClaim
  const checkDuplicates = async (ncs: NodeClaim[], nodes: Map<string | undefined, Node>) => {
    const pendingPods = ((await sim.client.list('Pod')).items as Pod[]).filter(
      (p) => !p.spec?.nodeName && !p.metadata.deletionTimestamp,
    );
    const pending = new Set(pendingPods.map((p) => p.metadata.uid ?? ''));
    const keyOf = new Map(
      pendingPods.map((p) => [p.metadata.uid ?? '', `${p.metadata.namespace}/${p.metadata.name}`]),
    );
    const dup = [...duplicateLaunches(ncs, nodes, pending)];
    // enough state to tell a real double launch from a lagging status write when it shows up again
    const describe = (name: string): string => {
      const nc = ncs.find((n) => n.metadata.name === name);
      if (!nc) return name;
      const node = nc.status?.nodeName ? nodes.get(nc.status.nodeName) : undefined;
      const conds = (nc.status?.conditions ?? [])
        .filter((c) => ['Launched', 'Registered', 'Initialized'].includes(c.type))
        .map((c) => `${c.type}=${c.status}`)
        .join(',');
      return `${name} (created ${nc.metadata.creationTimestamp}, ${conds || 'no conditions'}, node ${node ? `${node.metadata.name} initialized-label=${node.metadata.labels?.['karpenter.sh/initialized'] ?? 'none'}` : 'none'}, replacement-for ${nc.metadata.annotations?.['capenter.dev/replacement-for'] ?? 'none'})`;
    };
    if (dup.length > 0)
      violations.push({
        step,
        invariant: 'duplicate-nodeclaim',
        detail: `${dup.length} pending pods each launched for by several NodeClaims: ${dup
          .slice(0, 3)
          .map(
            ([uid, names]) => `pod ${keyOf.get(uid) ?? '?'} (${uid}) → ${names.map(describe).join(' and ')}`,
          )
          .join('; ')}`,
      });
  };

  let settleSeconds: number | undefined;
  try {
    await startOperator();
    phase = 'scenario step (API writes)';
    const applied = await applyObjects(
      sim.client,
      awsSetup ? withNodeClass(scenario.objects, awsSetup.nodeClass) : scenario.objects,
    );
    const failed = applied.filter((a) => a.result === 'failed');
    if (failed.length > 0)
      throw new Error(`soak scenario rejected: ${failed.map((f) => f.error).join('; ')}`);
    const byStep = new Map<number, FaultEvent[]>();
    for (const f of faults) byStep.set(f.step, [...(byStep.get(f.step) ?? []), f]);

    for (step = 0; step < opts.steps; step++) {
      const action = scenario.actions[step];
      if (action?.kind === 'scale')
        await sim.client.patch('Deployment', action.deployment, 'default', {
          spec: { replicas: action.replicas },
        });
      else if (action?.kind === 'drift')
        await sim.client.patch('NodePool', action.nodePool, undefined, {
          spec: { template: { metadata: { labels: { 'soak/generation': String(action.generation) } } } },
        });
      if (restartAt !== undefined && step >= restartAt) {
        restartAt = undefined;
        await startOperator();
      }
      for (const f of byStep.get(step) ?? []) {
        note(`t=${Math.round((clock.now() - runStart) / 1000)} soak: step ${step} fault ${f.kind} n=${f.n}`);
        if ((API_FAULT_KINDS as readonly string[]).includes(f.kind)) proxy.arm(f.kind as ApiFaultKind, f.n);
        else if (f.kind === 'restart') {
          if (operator) {
            await stopOperator(operator, 'operator stopped');
            injected.restart++;
            if (f.n === 0) await startOperator();
            else restartAt = step + f.n;
          }
        } else if (f.kind === 'lostLaunch') {
          if (aws) aws.proxy.loseFleetReplies(f.n);
          else provider.lostLaunch += f.n;
        } else if (f.kind === 'ice') {
          if (aws) aws.proxy.injectCapacityError({ times: f.n });
          else provider.ice += f.n;
        } else if (f.kind === 'noRegister') noRegisterArmed += f.n;
        else if (f.kind === 'notReady') notReadyArmed += f.n;
        else if (f.kind === 'vanish')
          injected.vanish += await at('vanish instances', () => provider.vanish(f.n));
        else if (f.kind === 'clockJump') {
          // the clock leaps: every timer due in between fires once, late, without the loops re-arming in between
          injected.clockJump++;
          clock.advance(f.n * 60_000);
          lastJumpAt = clock.now();
          await sleep(20);
        }
      }
      await at('advance clock', () => advance(stepMs));
      await check();
    }

    // faults stop: every pending pod that fits a NodePool must eventually run
    phase = 'settle step (API writes)';
    faultsActive = false;
    proxy.disarm();
    provider.ice = 0;
    provider.lostLaunch = 0;
    aws?.proxy.clearFaults();
    noRegisterArmed = 0;
    notReadyArmed = 0;
    restartAt = undefined;
    if (!operator) await startOperator();
    for (const name of notReady)
      await sim.client
        .patch('Node', name, undefined, { metadata: { annotations: { 'soak/faults': 'stopped' } } })
        .catch(() => {});
    const settleStart = clock.now();
    const settleSteps = opts.settleSteps ?? 150;
    for (let s = 0; s < settleSteps; s++, step++) {
      await at('advance clock', () => advance(stepMs));
      await check();
      // DaemonSet pods are not provisionable (upstream `IsProvisionable`): each is pinned to its node, and
      // whether it fits there depends on the scheduler's order (soak seed 31: a DS pod starved on a node the
      // scheduler had filled with other pods first — as in a real cluster without DS priority). Not counted.
      const pods = ((await sim.client.list('Pod')).items as Pod[]).filter(
        (p) =>
          !p.metadata.deletionTimestamp &&
          p.status?.phase !== 'Succeeded' &&
          p.status?.phase !== 'Failed' &&
          !p.metadata.ownerReferences?.some((o) => o.kind === 'DaemonSet'),
      );
      if (pods.every((p) => p.status?.phase === 'Running')) {
        settleSeconds = (clock.now() - settleStart) / 1000;
        break;
      }
      if (s === settleSteps - 1) {
        // where the stuck pods want to go (a DaemonSet pod names its node), and that node's state
        const nodesNow = new Map(
          ((await sim.client.list('Node')).items as Node[]).map((n) => [n.metadata.name ?? '', n]),
        );
        const where = (p: Pod): string => {
          const terms = (
            p.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution as
              | { nodeSelectorTerms?: { matchFields?: { values?: string[] }[] }[] }
              | undefined
          )?.nodeSelectorTerms;
          const target = terms?.[0]?.matchFields?.[0]?.values?.[0];
          if (!target) return '';
          const n = nodesNow.get(target);
          if (!n) return ` for node ${target}: gone`;
          const taints = (n.spec?.taints ?? []).map((x) => `${x.key}:${x.effect}`).join(' ');
          const ready = n.status?.conditions?.find((c) => c.type === 'Ready')?.status;
          return ` for node ${target}: Ready=${ready}, unschedulable=${n.spec?.unschedulable ?? false}, taints [${taints}], deleting ${!!n.metadata.deletionTimestamp}`;
        };
        violations.push({
          step,
          invariant: 'eventually-runs',
          detail: `${pods.filter((p) => p.status?.phase !== 'Running').length} pods not Running ${settleSteps * (stepMs / 1000)} s after faults stopped: ${pods
            .filter((p) => p.status?.phase !== 'Running')
            .slice(0, 5)
            .map((p) => `${p.metadata.name} (${p.spec?.nodeName ?? 'unbound'}${where(p)})`)
            .join(', ')}`,
        });
      }
    }
  } finally {
    for (const k of API_FAULT_KINDS) injected[k] = proxy.injected[k];
    injected.ice = provider.iceInjected + (aws ? aws.proxy.capacityErrorsInjected - capacityErrorsBefore : 0);
    injected.lostLaunch =
      provider.lostLaunchInjected + (aws ? aws.proxy.lostFleetReplies - lostRepliesBefore : 0);
    if (aws) aws.proxy.onFleetReplyLost = undefined;
    aws?.proxy.clearFaults();
    phase = 'tear down';
    await awsSetup?.stop().catch(() => {});
    await operator?.stop().catch(() => {});
    await proxy.stop().catch(() => {});
    await sim.stop().catch(() => {});
    process.off('unhandledRejection', onCrash);
    process.off('uncaughtException', onCrash);
  }
  return {
    seed: opts.seed,
    steps: opts.steps,
    faults,
    injected,
    violations,
    settleSeconds,
    maxNodeClaims,
    evictions,
    budgetNodeGoneSteps,
  };
}
