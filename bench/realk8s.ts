/**
 * Upstream Karpenter's "basic" provisioning case (1,000 pods: 500 × 900m/3100Mi, 500 × 3500m/28Gi, the same
 * Deployments and NodePool as `bench/provisioning.ts`) on a real control plane: etcd, kube-apiserver,
 * kube-controller-manager and kube-scheduler v1.34.4 and kwok v0.8.0 (`scripts/realk8s/`, started for the run and
 * stopped after), with `capenter controller` as shipped (the esbuild bundle, its own process, upstream's batch
 * windows of 1 s / 10 s). The real kube-controller-manager creates the pods, the real kube-scheduler binds them
 * with its default configuration (LeastAllocated, its client at 50 QPS) and kwok runs the Nodes capenter's kwok
 * provider creates. The independent check of the embedded cluster's figures.
 *
 * Measured from the first Deployment's creation: pods created (first/all), marked `PodScheduled=False`, bound and
 * Running (first/half/90 %/all), each NodeClaim created; the controller's CPU time and peak RSS. Target (reported,
 * never asserted): all Running in < 30 s.
 *
 * Needs the binaries in `~/.cache/realk8s/…/bin` (`scripts/realk8s/ensure.sh` builds them with Go when absent,
 * about 11 minutes on 2 cores). Run directly: `npx tsx bench/realk8s.ts [--json] [--timeline] [--pods N] [--qps N]
 * [--keep]` (`--qps` lifts kube-controller-manager's and kube-scheduler's client rate limits, which pace the pods'
 * creation (20 QPS) and binding (50 QPS) by default; `--keep` leaves the control plane running and prints its
 * directory); `npm run bench -- --only realk8s` (the default configuration).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Node, Pod } from '../src/apis/core.ts';
import { KubeClient } from '../src/kube/client.ts';
import { RealClock } from '../src/kube/clock.ts';
import { Informer } from '../src/kube/informer.ts';
import {
  type ControllerProcess,
  cpuSecondsOf,
  deploymentYaml,
  kwokNodePoolYaml,
  peakRssMB,
  startControllerProcess,
} from './provisioning.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const scripts = join(root, 'scripts', 'realk8s');

/** What {@link runRealK8sBench} measures. */
export interface RealK8sBenchResult {
  pods: number;
  /** Seconds from the first Deployment's creation until every pod was Running; undefined when it timed out. */
  allRunningSeconds: number | undefined;
  /** Seconds until every pod was bound (`spec.nodeName`). */
  allBoundSeconds: number | undefined;
  /** NodeClaims when the pods all ran (or at the timeout). */
  nodeClaims: number;
  /** Milestones in seconds since the first Deployment's creation (see the module comment). */
  timeline: Record<string, number>;
  /** CPU seconds (user + system) of the controller process from the workload's creation to the end. */
  controllerCpuSeconds: number | undefined;
  /** Peak RSS of the controller process in MB (Linux `VmHWM`). */
  controllerPeakRssMB: number | undefined;
  /** Seconds `scripts/realk8s/up.sh` took to bring the control plane up. */
  controlPlaneUpSeconds: number;
  /** Versions of the control plane (`VERSIONS` of the binaries' directory). */
  versions: string;
  /** kube-controller-manager's and kube-scheduler's client QPS when not their defaults. */
  controlPlaneQps?: number;
  complete: boolean;
  targets: { runningSeconds: number };
}

/** Runs a script of `scripts/realk8s/` and returns its stdout. @throws Error with its output when it fails. */
function script(name: string, env: Record<string, string> = {}): string {
  const r = spawnSync('bash', [join(scripts, name)], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    maxBuffer: 64 * 1024 * 1024,
  });
  if (r.status === 2 && name === 'ensure.sh')
    throw new Error('the real control plane needs Go to build its binaries (https://go.dev/dl); none found');
  if (r.status !== 0)
    throw new Error(`scripts/realk8s/${name} failed (exit ${r.status}):\n${r.stdout}${r.stderr}`);
  return r.stdout;
}

/** Applies capenter's CRDs (`crds/`) with the control plane's kubectl and waits until they are Established. */
function installCRDs(kubectl: string, kubeconfig: string): void {
  const files = readdirSync(join(root, 'crds')).filter((f) => f.endsWith('.yaml'));
  for (const args of [
    ['apply', '--server-side', ...files.flatMap((f) => ['-f', join(root, 'crds', f)])],
    ['wait', '--for', 'condition=established', '--timeout=60s', 'crd', '--all'],
  ]) {
    const r = spawnSync(kubectl, ['--kubeconfig', kubeconfig, ...args], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`kubectl ${args[0]} failed: ${r.stdout}${r.stderr}`);
  }
}

/**
 * Records milestones of the pods (created, PodScheduled=False, bound, Running: first/half/90 %/all) and the
 * NodeClaims (each created) into `out` in seconds since `t0()`; resolves `allRunning` when `total` pods run.
 */
async function watchMilestones(
  client: KubeClient,
  total: number,
  out: Record<string, number>,
  t0: () => number,
): Promise<{ allRunning: Promise<void>; stop(): Promise<void> }> {
  const t = () => Math.round((performance.now() - t0()) / 10) / 100;
  const mark = (k: string) => {
    if (out[k] === undefined) out[k] = t();
  };
  const counter = (name: string, n: number) => {
    if (n === 1) mark(`${name} first`);
    if (n === Math.ceil(total / 2)) mark(`${name} half`);
    if (n === Math.ceil(total * 0.9)) mark(`${name} 90%`);
    if (n === total) mark(`${name} all`);
  };
  const sets = { created: new Set<string>(), marked: new Set<string>(), bound: new Set<string>() };
  const running = new Set<string>();
  let done: () => void = () => {};
  const allRunning = new Promise<void>((r) => {
    done = r;
  });
  const onPod = (p: Pod) => {
    const k = p.metadata.uid ?? '';
    if (!sets.created.has(k)) counter('pods created', sets.created.add(k).size);
    const c = p.status?.conditions?.find((x) => x.type === 'PodScheduled');
    if (c?.status === 'False' && !sets.marked.has(k)) counter('pods unschedulable', sets.marked.add(k).size);
    if (p.spec.nodeName && !sets.bound.has(k)) counter('pods bound', sets.bound.add(k).size);
    if (p.status?.phase === 'Running' && !running.has(k)) {
      counter('pods running', running.add(k).size);
      if (running.size >= total) done();
    }
  };
  const clock = new RealClock();
  const pods = new Informer(client, 'Pod', { clock, namespace: 'default' });
  const nodeClaims = new Informer(client, 'NodeClaim', { clock });
  const nodes = new Informer(client, 'Node', { clock });
  pods.on({ add: onPod, update: (_o, p) => onPod(p) });
  let ncs = 0;
  nodeClaims.on({
    add: () => {
      ncs++;
      out[`nodeclaim ${ncs} created`] = t();
    },
  });
  const ready = new Set<string>();
  const onNode = (n: Node) => {
    const name = n.metadata.name ?? '';
    if (!ready.has(name) && n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) {
      ready.add(name);
      out[`node ${ready.size} ready`] = t();
    }
  };
  nodes.on({ add: onNode, update: (_o, n) => onNode(n) });
  for (const i of [pods, nodeClaims, nodes]) i.start();
  await Promise.all([pods, nodeClaims, nodes].map((i) => i.waitForSync()));
  return {
    allRunning,
    async stop() {
      await Promise.all([pods, nodeClaims, nodes].map((i) => i.stop()));
    },
  };
}

/**
 * Runs the benchmark once: brings a control plane up, installs the CRDs, starts the controller, creates the
 * NodePool and the Deployments of `pods` pods (default 1000, half of each shape), waits until all run (at most
 * `timeoutSeconds`, default 300), then stops everything (unless `keep`). Never throws for a slow run
 * (`complete: false`).
 * @throws Error when the binaries are missing and cannot be built, or the control plane or controller cannot start.
 */
export async function runRealK8sBench(
  opts: {
    pods?: number;
    timeoutSeconds?: number;
    keep?: boolean;
    /**
     * Client rate limit (QPS; burst twice that) of kube-controller-manager and kube-scheduler instead of their
     * defaults (20 and 50 QPS), which pace the pods' creation and binding at this size.
     */
    controlPlaneQps?: number;
  } = {},
): Promise<RealK8sBenchResult> {
  const total = opts.pods ?? 1000;
  const perGroup = Math.floor(total / 2);
  const bin = script('ensure.sh').trim().split('\n').pop() ?? '';
  const versionsFile = join(bin, 'VERSIONS');
  const versions = existsSync(versionsFile) ? readFileSync(versionsFile, 'utf8').trim() : '';
  const upAt = performance.now();
  const qps = opts.controlPlaneQps;
  const limits = qps ? `--kube-api-qps=${qps} --kube-api-burst=${2 * qps}` : '';
  const up = script('up.sh', limits ? { KCM_ARGS: limits, SCHEDULER_ARGS: limits } : {});
  const controlPlaneUpSeconds = Math.round((performance.now() - upAt) / 100) / 10;
  const runDir = /^RUN=(.+)$/m.exec(up)?.[1];
  if (!runDir) throw new Error(`scripts/realk8s/up.sh printed no RUN=<dir>:\n${up}`);
  const kubeconfig = join(runDir, 'kubeconfig');
  let ctl: ControllerProcess | undefined;
  let watch: Awaited<ReturnType<typeof watchMilestones>> | undefined;
  const client = KubeClient.fromKubeconfig(kubeconfig);
  try {
    installCRDs(join(bin, 'kubectl'), kubeconfig);
    ctl = await startControllerProcess(kubeconfig);
    const pid = ctl.child.pid;
    const cpuBefore = cpuSecondsOf(pid) ?? 0;
    const { parseAllDocuments } = await import('yaml');
    const objects = parseAllDocuments(
      kwokNodePoolYaml() +
        deploymentYaml('small', perGroup, '900m', '3100Mi') +
        deploymentYaml('large', total - perGroup, '3500m', '28Gi'),
    )
      .map((d) => d.toJS())
      .filter(Boolean);
    const timeline: Record<string, number> = {};
    let start = performance.now();
    watch = await watchMilestones(client, total, timeline, () => start);
    const nodePool = objects.filter((o) => o.kind !== 'Deployment');
    for (const o of nodePool) await client.create(o);
    start = performance.now();
    for (const o of objects.filter((x) => x.kind === 'Deployment')) await client.create(o);
    const timeout = new Promise<'timeout'>((r) =>
      setTimeout(() => r('timeout'), (opts.timeoutSeconds ?? 300) * 1000).unref(),
    );
    const complete = (await Promise.race([watch.allRunning.then(() => 'done' as const), timeout])) === 'done';
    const nodeClaims = (await client.list('NodeClaim')).items.length;
    return {
      pods: total,
      allRunningSeconds: complete ? timeline['pods running all'] : undefined,
      allBoundSeconds: timeline['pods bound all'],
      nodeClaims,
      timeline,
      controllerCpuSeconds:
        cpuSecondsOf(pid) === undefined
          ? undefined
          : Math.round(((cpuSecondsOf(pid) ?? 0) - cpuBefore) * 100) / 100,
      controllerPeakRssMB: peakRssMB(pid),
      controlPlaneUpSeconds,
      versions,
      ...(qps ? { controlPlaneQps: qps } : {}),
      complete,
      targets: { runningSeconds: 30 },
    };
  } finally {
    await watch?.stop();
    await ctl?.stop();
    client.close();
    if (opts.keep)
      process.stderr.write(
        `control plane left running: RUN=${runDir} (stop: RUN=${runDir} bash scripts/realk8s/down.sh)\n`,
      );
    else script('down.sh', { RUN: runDir, KEEP_RUN: '0' });
  }
}

/** Human-readable report of one {@link runRealK8sBench} result. */
export function formatRealK8sBench(r: RealK8sBenchResult): string {
  const ok = (b: boolean) => (b ? 'ok' : 'MISSED');
  const tl = r.timeline;
  const at = (k: string) => (tl[k] === undefined ? '?' : `${tl[k]}s`);
  return [
    `upstream "basic" case, ${r.pods} pods, real control plane (${r.versions}; ${r.controlPlaneQps ? `kube-controller-manager and kube-scheduler at ${r.controlPlaneQps} QPS` : 'default client QPS: kube-controller-manager 20, kube-scheduler 50'}; up in ${r.controlPlaneUpSeconds}s):`,
    `  all Running      ${r.allRunningSeconds ?? 'not within the timeout'}${r.allRunningSeconds !== undefined ? 's' : ''} [target < ${r.targets.runningSeconds}s: ${ok(r.allRunningSeconds !== undefined && r.allRunningSeconds < r.targets.runningSeconds)}]; all bound ${at('pods bound all')}`,
    `  pods             created ${at('pods created first')} → ${at('pods created all')}, unschedulable first ${at('pods unschedulable first')}, bound first ${at('pods bound first')}, running half ${at('pods running half')}, 90% ${at('pods running 90%')}`,
    `  NodeClaims       ${r.nodeClaims} (created at ${Object.entries(tl)
      .filter(([k]) => k.startsWith('nodeclaim'))
      .map(([, v]) => `${v}s`)
      .join(', ')})`,
    `  controller       ${r.controllerCpuSeconds ?? '?'} CPU-s from the workload's creation, ${r.controllerPeakRssMB ?? '?'} MB peak RSS`,
  ].join('\n');
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const argv = process.argv.slice(2);
  const podsArg = argv.indexOf('--pods');
  const qpsArg = argv.indexOf('--qps');
  const r = await runRealK8sBench({
    ...(podsArg >= 0 ? { pods: Number(argv[podsArg + 1]) } : {}),
    ...(qpsArg >= 0 ? { controlPlaneQps: Number(argv[qpsArg + 1]) } : {}),
    keep: argv.includes('--keep'),
  });
  if (argv.includes('--json')) console.log(JSON.stringify(r, null, 2));
  else console.log(formatRealK8sBench(r));
  if (argv.includes('--timeline'))
    for (const [k, v] of Object.entries(r.timeline).sort((a, b) => a[1] - b[1]))
      console.log(`  ${v.toFixed(2).padStart(7)}s  ${k}`);
}
