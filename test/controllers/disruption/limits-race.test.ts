/**
 * NodePool limits between a disruption replacement and a provisioner create (issue 16; found by the soak, replay
 * `npm run soak -- --runs 1 --seed 100 --steps 30 --faults '6:gone410:3,7:notReady:2,9:conflict409:3,10:ice:2,
 * 14:error500:2,16:watchClose:2,19:conflict409:3'`: NodePool soak-p1 at 12 cpu against a limit of 10). Made
 * deterministic here: the disruption command is computed, then the provisioner launches into the same limited
 * NodePool, then the command executes. Upstream launches replacements through the provisioner and checks
 * limits against cluster state with in-flight NodeClaims; so must we.
 *
 * Setup: NodePool `limited` (weight 50, m5 xlarge/2xlarge, `limits.cpu: 10`) and `any` (weight 1, no limits). An
 * m5.4xlarge of `any` runs one 3-cpu pod: consolidation replaces it with a 4–8 cpu node in `limited`. Pending pods
 * pinned to `limited` need 7 cpu: the provisioner launches an 8-cpu NodeClaim there.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Pod } from '../../../src/apis/core.ts';
import { NodePoolHashVersion, nodePoolHash } from '../../../src/apis/hash.ts';
import type { NodeClaim, NodePool } from '../../../src/apis/karpenter.ts';
import { DisruptionController } from '../../../src/controllers/disruption/controller.ts';
import { AnnotationReplacementFor } from '../../../src/controllers/disruption/orchestration.ts';
import { pendingPod, testNodePool } from '../../../src/controllers/provisioning/testing.ts';
import { computeDisruption } from '../../../src/disruption/index.ts';
import type { Command } from '../../../src/disruption/types.ts';
import { silentLogger } from '../../../src/kube/logger.ts';
import {
  type ControllerProcess,
  catalog,
  createNodePool,
  createPendingPod,
  type Env,
  eventually,
  listNodeClaims,
  readyNode,
  startEnv,
} from '../provisioning/harness.ts';

let env: Env | undefined;
afterEach(async () => {
  await env?.stop();
  env = undefined;
});

const LIMITED_REQS = [
  { key: 'karpenter.sh/capacity-type', operator: 'In' as const, values: ['on-demand'] },
  { key: 'kubernetes.io/arch', operator: 'In' as const, values: ['amd64'] },
  { key: 'karpenter.k8s.aws/instance-family', operator: 'In' as const, values: ['m5'] },
  { key: 'karpenter.k8s.aws/instance-size', operator: 'In' as const, values: ['xlarge', '2xlarge'] },
];

/** A registered, initialized m5.4xlarge of NodePool `any` (NodeClaim + Node) running one 3-cpu ReplicaSet pod. */
async function candidate(e: Env, any: NodePool): Promise<void> {
  const { client } = e;
  const node = readyNode('big-1', 'm5.4xlarge', 'any');
  const it = catalog.find((t) => t.name === 'm5.4xlarge');
  if (!it) throw new Error('m5.4xlarge not in the catalog');
  const nc: NodeClaim = {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodeClaim',
    metadata: {
      name: 'big-1',
      labels: { ...node.metadata.labels },
      annotations: {
        'karpenter.sh/nodepool-hash': nodePoolHash(any),
        'karpenter.sh/nodepool-hash-version': NodePoolHashVersion,
      },
    },
    spec: {
      nodeClassRef: any.spec.template.spec.nodeClassRef,
      requirements: [{ key: 'node.kubernetes.io/instance-type', operator: 'In', values: ['m5.4xlarge'] }],
    },
  };
  const created = (await client.create(nc)) as NodeClaim;
  const at = '2025-01-01T00:00:00Z';
  await client.updateStatus({
    ...created,
    status: {
      providerID: node.spec?.providerID,
      nodeName: 'big-1',
      capacity: node.status?.capacity,
      allocatable: node.status?.allocatable,
      conditions: ['Launched', 'Registered', 'Initialized', 'Ready'].map((type) => ({
        type,
        status: 'True',
        reason: type,
        message: '',
        lastTransitionTime: at,
      })),
    },
  } as NodeClaim);
  const n = await client.create(node);
  await client.updateStatus({ ...n, status: node.status });
  const pod = pendingPod('moving-0', { cpu: '3', memory: '4Gi', ownerKind: 'ReplicaSet' });
  const { status: _s, ...rest } = pod;
  const meta = { ...rest.metadata };
  delete meta.uid;
  delete meta.creationTimestamp;
  const stored = (await client.create({
    ...rest,
    metadata: meta,
    spec: { ...rest.spec, nodeName: 'big-1' },
  } as Pod)) as Pod;
  await client.updateStatus({
    ...stored,
    status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
  } as Pod);
}

/** The environment: both NodePools, the candidate, a controller process with a DisruptionController sharing its launcher. */
async function setup(limitCpu = '10'): Promise<{ e: Env; p: ControllerProcess; dc: DisruptionController }> {
  const e = await startEnv();
  env = e;
  // API timestamps on the fake clock (replacement ages are compared with it)
  Object.defineProperty(e.sim.apiServer.store, 'now', { value: () => e.clock.now() });
  await createNodePool(
    e.client,
    testNodePool('limited', { weight: 50, limits: { cpu: limitCpu }, requirements: LIMITED_REQS }),
  );
  const any = await createNodePool(e.client, testNodePool('any', { weight: 1 }));
  await candidate(e, any);
  const p = await e.startProcess();
  await eventually(
    () => p.cluster.stateNodes().some((sn) => sn.node && sn.nodeClaim && sn.pods.length === 1),
    'the candidate with its pod in state',
  );
  const dc = new DisruptionController({
    client: e.client,
    cluster: p.cluster,
    cloudProvider: p.provider,
    clock: e.clock,
    logger: silentLogger(),
    recorder: p.recorder,
    registry: p.registry,
    launcher: p.provisioner.launcher,
    syncConditions: false,
  });
  return { e, p, dc };
}

/** Pending pods pinned to NodePool `limited` asking 7 cpu in all. */
async function pendingForLimited(e: Env, p: ControllerProcess): Promise<void> {
  for (const [i, cpu] of ['4', '3'].entries())
    await createPendingPod(
      e.client,
      pendingPod(`pinned-${i}`, { cpu, memory: '1Gi', nodeSelector: { 'karpenter.sh/nodepool': 'limited' } }),
    );
  await eventually(() => p.cluster.pendingPods().length === 2, '2 pending pods in state');
}

/** cpu (millicores) of `limited`'s live NodeClaims, each sized by the largest instance type it may become. */
async function limitedCpu(e: Env): Promise<number> {
  let sum = 0;
  for (const nc of await listNodeClaims(e.client)) {
    if (nc.metadata.labels?.['karpenter.sh/nodepool'] !== 'limited' || nc.metadata.deletionTimestamp)
      continue;
    const types =
      nc.spec.requirements.find((r) => r.key === 'node.kubernetes.io/instance-type')?.values ?? [];
    sum += Math.max(...types.map((t) => catalog.find((x) => x.name === t)?.capacity.cpu ?? 0));
  }
  return sum;
}

function replacementCommand(cmds: Command[]): Command {
  const cmd = cmds.find((c) => c.decision === 'replace');
  if (!cmd) throw new Error(`no replace command: ${JSON.stringify(cmds.map((c) => c.method))}`);
  return cmd;
}

describe('NodePool limits: disruption replacement vs. provisioner create', () => {
  it('a replacement computed before the provisioner filled the NodePool is not launched past spec.limits (rolled back)', async () => {
    const { e, p, dc } = await setup();
    // 1. consolidation decides on a snapshot where `limited` is empty: replace big-1 by a node in `limited`
    const cmd = replacementCommand(computeDisruption(await dc.input()).commands);
    expect(cmd.candidates.map((c) => c.name)).toEqual(['big-1']);
    expect(cmd.replacements.map((r) => r.nodePool)).toEqual(['limited']);
    // 2. the provisioner launches 8 cpu into `limited` for the pinned pods
    await pendingForLimited(e, p);
    const provisioned = await p.provisioner.provision();
    expect(provisioned.created.map((c) => c.nodeClaim.metadata.labels?.['karpenter.sh/nodepool'])).toEqual([
      'limited',
    ]);
    expect(await limitedCpu(e)).toBe(8000);
    // 3. the command executes: its replacement would take `limited` past 10 cpu, so it is rolled back
    const phases: string[] = [];
    dc.orchestrator.listeners.add((c) => phases.push(c.phase));
    const ok = await dc.orchestrator.execute(cmd, new AbortController().signal);
    expect(ok).toBe(false);
    expect(phases).toEqual(['started', 'rolledBack']);
    expect(dc.orchestrator.commands()).toEqual([]);
    expect(await limitedCpu(e)).toBe(8000);
    // the candidate is untainted again and no replacement NodeClaim is left
    const node = await e.client.get('Node', 'big-1');
    expect((node.spec as { taints?: { key: string }[] }).taints ?? []).toEqual([]);
    expect(
      (await listNodeClaims(e.client)).map((n) => n.metadata.labels?.['karpenter.sh/nodepool']).sort(),
    ).toEqual(['any', 'limited']);
  });

  it('a command computed with the NodeClaim in flight sizes its replacement against the remaining limit', async () => {
    const { e, p, dc } = await setup();
    await pendingForLimited(e, p);
    expect((await p.provisioner.provision()).created).toHaveLength(1);
    // the provisioner's NodeClaim has no Node yet: in flight, 8 of `limited`'s 10 cpu
    const input = await dc.input();
    const cmds = computeDisruption(input).commands;
    const replacements = cmds.flatMap((c) => c.replacements);
    // no replacement in `limited` bigger than the 2 cpu left (none of its types is that small)
    expect(replacements.filter((r) => r.nodePool === 'limited').map((r) => r.nodePool)).toEqual([]);
    expect(input.inFlightUsage?.limited?.cpu).toBe(8000);
  });

  it('a replacement and a provisioner create racing for the last of the limit: together within spec.limits', async () => {
    const { e, p, dc } = await setup();
    const cmd = replacementCommand(computeDisruption(await dc.input()).commands);
    await pendingForLimited(e, p);
    const [provisioned, executed] = await Promise.all([
      p.provisioner.provision(),
      dc.orchestrator.execute(cmd, new AbortController().signal),
    ]);
    const total = await limitedCpu(e);
    expect(total).toBeLessThanOrEqual(10_000);
    // exactly one of the two got the capacity; the other names the limit
    expect(Number(executed) + provisioned.created.length).toBe(1);
    if (!executed) expect(total).toBe(8000);
    else expect(provisioned.skipped[0]?.reason).toMatch(/^NodePool "limited" limits exceeded: cpu: /);
  });
});

describe('restart between a replacement launch and the candidate deletion (soak seed 2)', () => {
  it('a new process finishes the lost command instead of untainting the candidate next to its replacement', async () => {
    const { e, p, dc } = await setup();
    const cmd = replacementCommand(computeDisruption(await dc.input()).commands);
    const dying = new AbortController();
    expect(await dc.orchestrator.execute(cmd, dying.signal)).toBe(true);
    const [replacement] = (await listNodeClaims(e.client)).filter(
      (n) => n.metadata.labels?.['karpenter.sh/nodepool'] === 'limited',
    );
    expect(replacement?.metadata.annotations?.['capenter.dev/replacement-for']).toBe('big-1');
    // the process dies mid-command: the candidate stays tainted, the replacement launching
    dying.abort();
    await dc.orchestrator.idle();
    await p.stop();
    const p2 = await e.startProcess();
    const dc2 = new DisruptionController({
      client: e.client,
      cluster: p2.cluster,
      cloudProvider: p2.provider,
      clock: e.clock,
      logger: silentLogger(),
      recorder: p2.recorder,
      registry: p2.registry,
      launcher: p2.provisioner.launcher,
      syncConditions: false,
    });
    const tainted = async () =>
      ((await e.client.get('Node', 'big-1')).spec as { taints?: { key: string }[] }).taints?.some(
        (t) => t.key === 'karpenter.sh/disrupted',
      ) ?? false;
    await eventually(
      () => p2.cluster.stateNodes().some((sn) => sn.name === 'big-1' && sn.markedForDeletion),
      'the tainted candidate in the new state',
    );
    // replacement still launching: the candidate keeps its taint (untainting it would count both against limits)
    await dc2.cleanupStaleTaints();
    expect(await tainted()).toBe(true);
    expect((await e.client.get('NodeClaim', 'big-1')).metadata.deletionTimestamp).toBeUndefined();
    // the replacement initializes: the new process deletes the candidate, as the lost command would have
    const name = replacement?.metadata.name as string;
    const fresh = (await e.client.get('NodeClaim', name)) as NodeClaim;
    await e.client.updateStatus({
      ...fresh,
      status: {
        ...(fresh.status ?? {}),
        conditions: [
          {
            type: 'Initialized',
            status: 'True',
            reason: 'Initialized',
            message: '',
            lastTransitionTime: '2025-01-01T00:00:00Z',
          },
        ],
      },
    } as NodeClaim);
    await eventually(
      () => p2.cluster.getNodeClaim(name)?.status?.conditions?.some((c) => c.type === 'Initialized'),
      'the initialized replacement in state',
    );
    await dc2.cleanupStaleTaints();
    const candidate = await e.client.tryGet('NodeClaim', 'big-1');
    expect(candidate === undefined || candidate.metadata.deletionTimestamp !== undefined).toBe(true);
  });

  it('a lost command whose replacement never initialized is rolled back after the replacement timeout', async () => {
    const { e, p, dc } = await setup();
    const cmd = replacementCommand(computeDisruption(await dc.input()).commands);
    const dying = new AbortController();
    expect(await dc.orchestrator.execute(cmd, dying.signal)).toBe(true);
    dying.abort();
    await dc.orchestrator.idle();
    await p.stop();
    const p2 = await e.startProcess();
    const dc2 = new DisruptionController({
      client: e.client,
      cluster: p2.cluster,
      cloudProvider: p2.provider,
      clock: e.clock,
      logger: silentLogger(),
      recorder: p2.recorder,
      registry: p2.registry,
      launcher: p2.provisioner.launcher,
      syncConditions: false,
      replacementTimeoutSeconds: 600,
    });
    await eventually(
      () => p2.cluster.stateNodes().some((sn) => sn.name === 'big-1' && sn.markedForDeletion),
      'the tainted candidate in the new state',
    );
    e.clock.advance(601_000);
    await dc2.cleanupStaleTaints();
    const node = await e.client.get('Node', 'big-1');
    expect((node.spec as { taints?: { key: string }[] }).taints ?? []).toEqual([]);
    const limited = (await listNodeClaims(e.client)).filter(
      (n) => n.metadata.labels?.['karpenter.sh/nodepool'] === 'limited' && !n.metadata.deletionTimestamp,
    );
    expect(limited).toEqual([]);
  });
});

describe('duplicate launches: a replacement sized for a pending pod the provisioner launched for (soak seed 16)', () => {
  it('the command computed before the provisioner nominated the pod is abandoned at launch, and the next one leaves the pod out', async () => {
    // limits high enough that they play no part here
    const { e, p, dc } = await setup('1000');
    await createPendingPod(
      e.client,
      pendingPod('pinned-0', {
        cpu: '500m',
        memory: '1Gi',
        nodeSelector: { 'karpenter.sh/nodepool': 'limited' },
      }),
    );
    await eventually(() => p.cluster.pendingPods().length === 1, 'the pending pod in state');
    // 1. the command packs the pending pod onto the moving pod's replacement
    const cmd = replacementCommand(computeDisruption(await dc.input()).commands);
    expect(cmd.replacements.flatMap((r) => r.pods.map((x) => x.metadata.name)).sort()).toEqual([
      'moving-0',
      'pinned-0',
    ]);
    // 2. the provisioner launches for the pending pod
    const provisioned = await p.provisioner.provision();
    expect(provisioned.created.flatMap((c) => c.plan.pods.map((x) => x.metadata.name))).toEqual(['pinned-0']);
    // 3. launching the command now would buy the pod's capacity twice: abandoned, nothing launched, untainted
    const before = (await listNodeClaims(e.client)).length;
    expect(await dc.orchestrator.execute(cmd, new AbortController().signal)).toBe(false);
    expect((await listNodeClaims(e.client)).length).toBe(before);
    const node = await e.client.get('Node', 'big-1');
    expect((node.spec as { taints?: { key: string }[] }).taints ?? []).toEqual([]);
    // 4. a fresh pass sees the pod nominated to the in-flight NodeClaim and sizes replacements without it
    const next = computeDisruption(await dc.input()).commands;
    expect(
      next.flatMap((c) => c.replacements.flatMap((r) => r.pods.map((x) => x.metadata.name))),
    ).not.toContain('pinned-0');
  });

  it('a replacement and a provisioner create racing for the same pending pod: only one launches for it (soak seed 31)', async () => {
    const { e, p, dc } = await setup('1000');
    await createPendingPod(
      e.client,
      pendingPod('pinned-0', {
        cpu: '500m',
        memory: '1Gi',
        nodeSelector: { 'karpenter.sh/nodepool': 'limited' },
      }),
    );
    await eventually(() => p.cluster.pendingPods().length === 1, 'the pending pod in state');
    const cmd = replacementCommand(computeDisruption(await dc.input()).commands);
    expect(cmd.replacements.flatMap((r) => r.pods.map((x) => x.metadata.name))).toContain('pinned-0');
    await Promise.all([
      p.provisioner.provision(),
      dc.orchestrator.execute(cmd, new AbortController().signal),
    ]);
    const uid = p.cluster.getPod('default/pinned-0')?.metadata.uid as string;
    const launchedFor = (await listNodeClaims(e.client)).filter((nc) =>
      (nc.metadata.annotations?.['capenter.dev/nominated-pods'] ?? '').split(',').includes(uid),
    );
    expect(launchedFor).toHaveLength(1);
  });
});

describe('duplicate launches: a provisioning pass while a replacement is being created (drift scenario, 1 run in 30)', () => {
  it("the provisioner launches nothing for a candidate's pods, during the replacement's create or after it", async () => {
    const { e, p, dc } = await setup('1000');
    const cmd = replacementCommand(computeDisruption(await dc.input()).commands);
    expect(cmd.replacements.flatMap((r) => r.pods.map((x) => x.metadata.name))).toEqual(['moving-0']);
    // a provisioning pass runs while the orchestrator creates the replacement (the interleaving that launched a
    // second NodeClaim for the moving pod when the candidate was tainted and marked before the create)
    const launcher = p.provisioner.launcher;
    const launch = launcher.launch.bind(launcher);
    const during: string[][] = [];
    launcher.launch = async (plan, o) => {
      if (o?.annotations?.[AnnotationReplacementFor]) {
        const pass = await p.provisioner.provision();
        during.push(pass.created.flatMap((c) => c.plan.pods.map((x) => x.metadata.name as string)));
      }
      return launch(plan, o);
    };
    expect(await dc.orchestrator.execute(cmd, new AbortController().signal)).toBe(true);
    expect(during).toEqual([[]]);
    // the candidate is tainted and marked now, and its pod is placed on the in-flight replacement
    const node = await e.client.get('Node', 'big-1');
    expect(((node.spec as { taints?: { key: string }[] }).taints ?? []).map((t) => t.key)).toEqual([
      'karpenter.sh/disrupted',
    ]);
    expect(p.cluster.stateNodes().find((sn) => sn.name === 'big-1')?.markedForDeletion).toBe(true);
    const after = await p.provisioner.provision();
    expect(after.created).toEqual([]);
    const claims = await listNodeClaims(e.client);
    expect(claims.map((nc) => nc.metadata.annotations?.[AnnotationReplacementFor] ?? '-').sort()).toEqual([
      '-',
      'big-1',
    ]);
  });
});
