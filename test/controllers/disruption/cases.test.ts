/**
 * Scenario cases (test/cases, format in test/cases/README.md) through the disruption controller:
 * - every `consolidation` and `drift` case: the first command the controller chooses on the case's cluster loaded
 *   into the simulated API server equals the first command of the pure core (`computeDisruption`) on an input built
 *   straight from the manifests, and both match the case's `expect.disruption`;
 * - `expire-with-blocking-pdb-terminates-after-grace-period`: the expired node is gone within the expected simulated
 *   seconds, through the expiration, NodeClaim and Node termination controllers.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import type { DaemonSet, KubeObject, Node, Pod, PodDisruptionBudget } from '../../../src/apis/core.ts';
import { applyDefaults } from '../../../src/apis/defaults.ts';
import type { EC2NodeClass, NodeClaim, NodePool } from '../../../src/apis/karpenter.ts';
import { getInstanceTypes } from '../../../src/cloudprovider/aws/catalog/index.ts';
import type { InstanceType } from '../../../src/cloudprovider/types.ts';
import type { DisruptionPass } from '../../../src/controllers/disruption/controller.ts';
import { NodePoolHashVersion, nodePoolHash } from '../../../src/controllers/nodepool/hash.ts';
import { worstLaunchPrice } from '../../../src/disruption/consolidation.ts';
import { type Command, computeDisruption, type DisruptionInput } from '../../../src/disruption/index.ts';
import { Requirements } from '../../../src/scheduling/requirements.ts';
import { AnnotationKubeletStopped } from '../../../src/sim/kubelet/kubelet.ts';
import { parseYaml as parseDocs, startEnv } from './harness.ts';

const here = dirname(fileURLToPath(import.meta.url));
const casesDir = join(here, '..', '..', 'cases');

interface Case {
  id: string;
  kind: string;
  input: string;
  expect: {
    disruption?: {
      decision: 'delete' | 'replace' | 'none';
      candidates?: string[];
      replacementTypesAllIn?: string[];
      replacementCheaperThanUSDPerHour?: number;
    };
    terminated?: { nodes: string[]; withinSeconds: number };
  };
}

const cases: Case[] = readdirSync(casesDir)
  .filter((f) => f.endsWith('.yaml'))
  .sort()
  .map((f) => parseYaml(readFileSync(join(casesDir, f), 'utf8')) as Case);

const START = Date.UTC(2025, 0, 1);
const TS = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** The case's objects plus a registered, initialized NodeClaim (same name) for each managed Node. */
function caseObjects(c: Case): { objects: KubeObject[]; nodeClaims: NodeClaim[]; pools: NodePool[] } {
  const objects = parseDocs(c.input);
  const pools = objects.filter((o): o is NodePool => o.kind === 'NodePool');
  const nodeClaims: NodeClaim[] = [];
  for (const n of objects.filter((o): o is Node => o.kind === 'Node')) {
    const poolName = n.metadata.labels?.['karpenter.sh/nodepool'];
    const pool = pools.find((p) => p.metadata.name === poolName);
    if (!pool) continue;
    const created = n.metadata.creationTimestamp ?? TS(START);
    // registration put Karpenter's finalizer on the Node
    n.metadata.finalizers = [...(n.metadata.finalizers ?? []), 'karpenter.sh/termination'];
    nodeClaims.push({
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodeClaim',
      metadata: {
        name: n.metadata.name as string,
        creationTimestamp: created,
        labels: { ...(n.metadata.labels ?? {}) },
        annotations: {
          'karpenter.sh/nodepool-hash': nodePoolHash(applyDefaults(pool)),
          'karpenter.sh/nodepool-hash-version': NodePoolHashVersion,
        },
        finalizers: ['karpenter.sh/termination'],
      },
      spec: {
        nodeClassRef: pool.spec.template.spec.nodeClassRef,
        requirements: pool.spec.template.spec.requirements ?? [],
        ...(pool.spec.template.spec.expireAfter ? { expireAfter: pool.spec.template.spec.expireAfter } : {}),
        ...(pool.spec.template.spec.terminationGracePeriod
          ? { terminationGracePeriod: pool.spec.template.spec.terminationGracePeriod }
          : {}),
      },
      status: {
        providerID: n.spec?.providerID ?? '',
        nodeName: n.metadata.name as string,
        ...(n.status?.capacity ? { capacity: n.status.capacity } : {}),
        ...(n.status?.allocatable ? { allocatable: n.status.allocatable } : {}),
        conditions: ['Launched', 'Registered', 'Initialized', 'Ready'].map((type) => ({
          type,
          status: 'True' as const,
          reason: type,
          message: '',
          lastTransitionTime: created,
        })),
      },
    });
  }
  return { objects, nodeClaims, pools };
}

/** The pure core's input built straight from the manifests (no API server). */
function pureInput(c: Case): DisruptionInput {
  const { objects, nodeClaims, pools } = caseObjects(c);
  const ncByName = new Map(nodeClaims.map((nc) => [nc.metadata.name, nc]));
  const pods = objects.filter((o): o is Pod => o.kind === 'Pod');
  const nodeClass = objects.find((o): o is EC2NodeClass => o.kind === 'EC2NodeClass');
  const types = getInstanceTypes({ region: 'us-east-1', ...(nodeClass ? { nodeClass } : {}) })
    .instanceTypes as InstanceType[];
  return {
    nodes: objects
      .filter((o): o is Node => o.kind === 'Node')
      .map((node) => {
        const nc = ncByName.get(node.metadata.name as string);
        return {
          node: {
            ...node,
            metadata: { ...node.metadata, creationTimestamp: node.metadata.creationTimestamp ?? TS(START) },
          },
          pods: pods
            .filter((p) => p.spec.nodeName === node.metadata.name)
            .map((p) => ({ ...p, metadata: { namespace: 'default', ...p.metadata } })),
          ...(nc ? { nodeClaim: nc } : {}),
        };
      }),
    pendingPods: [],
    nodePools: pools.map((p) => applyDefaults(p)),
    instanceTypes: Object.fromEntries(pools.map((p) => [p.metadata.name, types])),
    daemonSets: objects.filter((o): o is DaemonSet => o.kind === 'DaemonSet'),
    pdbs: objects.filter((o): o is PodDisruptionBudget => o.kind === 'PodDisruptionBudget'),
    now: START,
  };
}

/** A comparable summary of a command. */
function summary(cmd: Command | undefined) {
  if (!cmd) return { decision: 'none' };
  return {
    decision: cmd.decision,
    method: cmd.method,
    candidates: cmd.candidates.map((x) => x.name).sort(),
    replacementTypes: cmd.replacements.map((r) => r.instanceTypeOptions.map((t) => t.name).sort()),
  };
}

/** Loads the case into a fresh environment (statuses included); objects stamped at their creation time. */
async function loadCase(c: Case, opts: { msPerStep?: number } = {}) {
  const { objects, nodeClaims } = caseObjects(c);
  // A Node the case gives Ready other than True has a kubelet that is down: the kubelet stand-in leaves it alone
  // (else it would report it Ready within a second)
  for (const n of objects.filter((o): o is Node => o.kind === 'Node')) {
    const ready = n.status?.conditions?.find((x) => x.type === 'Ready')?.status;
    if (ready !== undefined && ready !== 'True')
      n.metadata.annotations = { ...(n.metadata.annotations ?? {}), [AnnotationKubeletStopped]: 'true' };
  }
  const old = objects.filter((o) => o.metadata?.creationTimestamp);
  const oldNames = new Set(old.map((o) => o.metadata?.name));
  const oldClaims = nodeClaims.filter((nc) => nodeClaims.length > 0 && oldNames.has(nc.metadata.name));
  const withStatus = [...objects, ...nodeClaims].filter(
    (o) => (o as { status?: unknown }).status !== undefined && o.kind !== 'NodePool',
  );
  const earliest = old.map((o) => Date.parse(o.metadata?.creationTimestamp ?? '')).sort((a, b) => a - b)[0];
  const first = new Set(['Namespace', 'EC2NodeClass', 'KWOKNodeClass', 'NodePool']);
  const env = await startEnv({
    start: START,
    msPerStep: opts.msPerStep ?? 250,
    preload: [
      { objects: objects.filter((o) => first.has(o.kind ?? '')) },
      { objects: [...old, ...oldClaims], createdAt: earliest },
      {
        objects: [
          ...objects.filter((o) => !first.has(o.kind ?? '') && !oldNames.has(o.metadata?.name)),
          ...nodeClaims.filter((nc) => !oldNames.has(nc.metadata.name)),
        ],
      },
    ],
    afterPreload: async (client) => {
      for (const o of withStatus) {
        const rt = client.registry.forApiVersionKind(o.apiVersion ?? '', o.kind ?? '');
        await client.patchStatus(
          rt ?? (o.kind as string),
          o.metadata?.name as string,
          rt?.namespaced ? (o.metadata?.namespace ?? 'default') : undefined,
          { status: (o as { status: unknown }).status },
          { type: 'merge' },
        );
      }
    },
  });
  return env;
}

const disruptionCases = cases.filter(
  (c) => (c.kind === 'consolidation' || c.kind === 'drift') && c.expect.disruption,
);

/**
 * Cases that fail until the named issue is done: run as expected failures (`it.fails`), so they turn red
 * the moment they start passing and the entry must be removed. Never skipped, never deleted.
 */
const EXPECTED_FAILURES: Readonly<Record<string, string>> = {};

/** Whether the case holds a pod or Node annotated `karpenter.sh/do-not-disrupt` (any value). */
function hasDoNotDisrupt(c: Case): boolean {
  return parseDocs(c.input).some(
    (o) =>
      (o.kind === 'Pod' || o.kind === 'Node') &&
      o.metadata?.annotations?.['karpenter.sh/do-not-disrupt'] !== undefined,
  );
}

describe('disruption cases: controller and pure core choose the same first command', () => {
  for (const c of disruptionCases) {
    const xfail = EXPECTED_FAILURES[c.id];
    (xfail ? it.fails : it)(
      `${c.id}${xfail ? ` [expected failure until ${xfail}]` : ''}`,
      async () => {
        const pure = computeDisruption(pureInput(c));
        const pureCmd = pure.commands.find((x) => x.reason !== 'Expired');
        const env = await loadCase(c);
        try {
          const want0 = c.expect.disruption!;
          // the first pass that sees every node of the case (state may still be filling on the very first one)
          const nodeCount = pureInput(c).nodes.length;
          const pass = await env.until<DisruptionPass | undefined>(
            () =>
              env.passes.find((p) => {
                const seen = p.result.blocked.length + (p.chosen?.candidates.length ?? 0);
                return want0.decision === 'none'
                  ? seen >= nodeCount
                  : p.chosen !== undefined || seen >= nodeCount;
              }),
            'a disruption pass over every node',
            30_000,
          );
          const ctlCmd = pass.chosen;
          expect(pass.result.blocked).toEqual(pure.blocked);
          expect(summary(ctlCmd)).toEqual(summary(pureCmd));
          const want = c.expect.disruption!;
          expect(summary(ctlCmd).decision).toBe(want.decision);
          if (want.candidates) expect(summary(ctlCmd).candidates).toEqual([...want.candidates].sort());
          if (want.decision === 'replace' && ctlCmd) {
            expect(ctlCmd.replacements).toHaveLength(1);
            const types = ctlCmd.replacements[0]!.instanceTypeOptions.map((t) => t.name);
            if (want.replacementTypesAllIn)
              for (const t of types) expect(want.replacementTypesAllIn).toContain(t);
            if (want.replacementCheaperThanUSDPerHour !== undefined) {
              const reqs = Requirements.fromNodeSelector(ctlCmd.replacements[0]!.requirements);
              for (const t of ctlCmd.replacements[0]!.instanceTypeOptions)
                expect(worstLaunchPrice(t, reqs), t.name).toBeLessThan(want.replacementCheaperThanUSDPerHour);
            }
            // upstream's flexible on-demand replacement (the default): a pricier fallback that still saves
            if (c.id === 'underutilized-node-replaced-by-cheaper')
              expect(types).toEqual(['m5.large', 'm5.xlarge']);
          }
          if (want.decision === 'none') {
            // the controller says why each node stays
            expect(pass.result.blocked.length).toBeGreaterThan(0);
            for (const b of pass.result.blocked) expect(b.reason, b.node).not.toBe('');
          }
          if (want.decision === 'none' && hasDoNotDisrupt(c)) {
            const blocked = pass.result.blocked.map((b) => b.reason).join('; ');
            expect(blocked).toMatch(/do-not-disrupt/);
            // and says so on the Node and its NodeClaim
            for (const kind of ['Node', 'NodeClaim'])
              await env.until(
                async () =>
                  (
                    (await env.client.list('Event')).items as Array<{
                      reason?: string;
                      message?: string;
                      involvedObject: { kind?: string };
                    }>
                  ).some(
                    (e) =>
                      e.reason === 'DisruptionBlocked' &&
                      e.involvedObject.kind === kind &&
                      /do-not-disrupt/.test(e.message ?? ''),
                  ),
                `DisruptionBlocked event on the ${kind}`,
                10_000,
              );
          }
          if (c.id === 'do-not-disrupt-duration-still-running-blocks') {
            // upstream IsDoNotDisruptActive's Event on the pod: 87600h after its 2026-11-01 start
            const ev = await env.until(
              async () =>
                (
                  (await env.client.list('Event')).items as Array<{
                    reason?: string;
                    type?: string;
                    message?: string;
                    involvedObject: { kind?: string; name?: string };
                  }>
                ).find((e) => e.reason === 'DoNotDisruptUntil' && e.involvedObject.name === 'batch-1-eeeee'),
              'DoNotDisruptUntil event on the pod',
              10_000,
            );
            expect(ev.involvedObject.kind).toBe('Pod');
            expect(ev.type).toBe('Normal');
            expect(ev.message).toBe(
              'The karpenter.sh/do-not-disrupt grace period will elapse at 2036-10-29T00:00:00Z',
            );
          }
        } finally {
          await env.stop();
        }
      },
      60_000,
    );
  }
});

describe('termination case through the controllers', () => {
  const c = cases.find((x) => x.id === 'expire-with-blocking-pdb-terminates-after-grace-period');
  it.runIf(c)(
    'expire-with-blocking-pdb-terminates-after-grace-period',
    async () => {
      const want = c!.expect.terminated!;
      const env = await loadCase(c!, { msPerStep: 2000 });
      try {
        for (const name of want.nodes)
          await env.until(async () => !(await env.client.tryGet('Node', name)), `node ${name} gone`, 60_000);
        const elapsed = (env.clock.now() - START) / 1000;
        expect(elapsed).toBeLessThanOrEqual(want.withinSeconds);
        // the PDB held until the grace period: the pod was deleted (not evicted) at deadline − its 60 s grace
        expect(elapsed).toBeGreaterThanOrEqual(1800 - 60);
        const evs = (await env.client.list('Event')).items as Array<{
          reason?: string;
          message?: string;
          involvedObject: { name?: string };
        }>;
        expect(evs.some((e) => e.reason === 'FailedDraining' && /violates a PDB/.test(e.message ?? ''))).toBe(
          true,
        );
        expect(
          evs.some((e) => e.reason === 'Disrupted' && e.involvedObject.name === 'app-1-7b8c9d-00001'),
        ).toBe(true);
      } finally {
        await env.stop();
      }
    },
    90_000,
  );
});
