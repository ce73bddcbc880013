/**
 * Consolidation through the whole stack (simulated cluster + operator + disruption controller on a pumped
 * FakeClock): a Deployment scaled 200 → 20 replicas is consolidated to a cost within 15% of what `simulate` plans
 * for 20 replicas from scratch; a watcher checks continuously that no more nodes are disrupting than the budget
 * allows, and that no pod stays pending longer than one replacement launch.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Node, Pod } from '../../../src/apis/core.ts';
import type { NodeClaim, NodePool } from '../../../src/apis/karpenter.ts';
import { getInstanceTypes } from '../../../src/cloudprovider/aws/catalog/index.ts';
import type { InstanceType } from '../../../src/cloudprovider/types.ts';
import type { WatchHandle } from '../../../src/kube/client.ts';
import { DEFAULT_EC2NODECLASS } from '../../../src/simulate/input.ts';
import { simulate } from '../../../src/simulate/run.ts';
import {
  deploymentYaml,
  type Env,
  liveNodeClaims,
  livePods,
  parseYaml,
  poolYaml,
  priceOf,
  startEnv,
} from './harness.ts';

const catalog = getInstanceTypes({ region: 'us-east-1' }).instanceTypes as InstanceType[];
const price = (type: string): number => {
  const it = catalog.find((t) => t.name === type);
  const prices = (it?.offerings ?? [])
    .filter((o) => o.capacityType === 'on-demand')
    .map((o) => o.priceUSDPerHour);
  if (prices.length === 0) throw new Error(`no on-demand price for ${type}`);
  return Math.min(...prices);
};

const BUDGET = 2;
/**
 * Largest node size (vCPU) the NodePool allows: 200 pods × 500m need at least 4 such nodes however the batcher
 * happens to split the Deployment's pods (one batch of 200 would otherwise fit one c6a.32xlarge).
 */
const MAX_CPU = 32;
let env: Env;
const watches: WatchHandle[] = [];
/** Max simultaneously disrupting (tainted karpenter.sh/disrupted or deleting) nodes ever seen. */
let maxDisrupting = 0;
const nodeState = new Map<string, boolean>();
/** Pod uid → first time (fake ms) seen pending, and the longest pending time seen (ms). */
const pendingSince = new Map<string, number>();
let maxPendingMs = 0;
let trackPending = false;
/** NodeClaim name → creation (fake ms); the longest creation → Initialized time seen (one launch). */
const claimCreated = new Map<string, number>();
let maxLaunchMs = 0;

beforeAll(async () => {
  env = await startEnv();
  const disrupting = (n: Node): boolean =>
    !!n.metadata.deletionTimestamp || (n.spec?.taints ?? []).some((t) => t.key === 'karpenter.sh/disrupted');
  watches.push(
    await env.client.watch(
      'Node',
      {},
      (ev) => {
        if (ev.type === 'BOOKMARK' || ev.type === 'ERROR') return;
        const n = ev.object as Node;
        if (ev.type === 'DELETED') nodeState.delete(n.metadata.name as string);
        else nodeState.set(n.metadata.name as string, disrupting(n));
        maxDisrupting = Math.max(maxDisrupting, [...nodeState.values()].filter(Boolean).length);
      },
      () => {},
    ),
  );
  watches.push(
    await env.client.watch(
      'Pod',
      { namespace: 'default' },
      (ev) => {
        if (ev.type === 'BOOKMARK' || ev.type === 'ERROR') return;
        const p = ev.object as Pod;
        const uid = p.metadata.uid as string;
        const pending = ev.type !== 'DELETED' && !p.spec.nodeName && !p.metadata.deletionTimestamp;
        if (pending && !pendingSince.has(uid)) pendingSince.set(uid, env.clock.now());
        if (!pending && pendingSince.has(uid)) {
          if (trackPending)
            maxPendingMs = Math.max(maxPendingMs, env.clock.now() - (pendingSince.get(uid) ?? 0));
          pendingSince.delete(uid);
        }
      },
      () => {},
    ),
  );
  watches.push(
    await env.client.watch(
      'NodeClaim',
      {},
      (ev) => {
        if (ev.type === 'BOOKMARK' || ev.type === 'ERROR' || ev.type === 'DELETED') return;
        const nc = ev.object as NodeClaim;
        const name = nc.metadata.name as string;
        if (!claimCreated.has(name)) claimCreated.set(name, env.clock.now());
        const init = (nc.status?.conditions ?? []).find(
          (c) => c.type === 'Initialized' && c.status === 'True',
        );
        if (init && claimCreated.get(name) !== -1) {
          maxLaunchMs = Math.max(maxLaunchMs, env.clock.now() - (claimCreated.get(name) ?? 0));
          claimCreated.set(name, -1);
        }
      },
      () => {},
    ),
  );
}, 60_000);
afterAll(async () => {
  for (const w of watches) w.stop();
  await env?.stop();
}, 60_000);

describe('consolidation through the disruption controller', () => {
  it('consolidates a Deployment scaled 200 → 20 to within 15% of a from-scratch plan, within budget', async () => {
    await env.apply(poolYaml({ budgets: `[{nodes: "${BUDGET}"}]`, maxCpu: MAX_CPU }));
    await env.apply(deploymentYaml('web', 200, '500m', '512Mi'));
    await env.until(
      async () => (await livePods(env.client)).filter((p) => p.status?.phase === 'Running').length === 200,
      '200 pods running',
      90_000,
    );
    const before = await liveNodeClaims(env.client);
    expect(before.length).toBeGreaterThan(1);
    const costBefore = priceOf(before, price);
    trackPending = true;
    await env.client.patch('Deployment', 'web', 'default', { spec: { replicas: 20 } }, { type: 'merge' });

    // the same NodePool and 20 replicas from scratch, on the EC2NodeClass the simulator knows (same catalog)
    const scratch = parseYaml(
      `${poolYaml({ maxCpu: MAX_CPU })}---\n${deploymentYaml('web', 20, '500m', '512Mi')}`,
    )
      .filter((o) => o.kind !== 'KWOKNodeClass')
      .map((o) => {
        if (o.kind !== 'NodePool') return o;
        const np = o as NodePool;
        np.spec.template.spec.nodeClassRef = {
          group: 'karpenter.k8s.aws',
          kind: 'EC2NodeClass',
          name: 'default',
        };
        return np;
      });
    const plan = await simulate([DEFAULT_EC2NODECLASS, ...scratch]);
    expect(plan.errors).toEqual([]);
    const target = plan.totals.priceUSDPerHour;
    expect(target).toBeLessThan(costBefore / 2);
    await env.until(
      async () => {
        const ncs = await liveNodeClaims(env.client);
        const ready = (await livePods(env.client)).filter((p) => p.status?.phase === 'Running').length;
        const cost = priceOf(ncs, price);
        return (
          ready === 20 && (await env.client.list('Node')).items.length === ncs.length && cost <= target * 1.15
        );
      },
      'consolidated to within 15% of the plan',
      150_000,
    );
    const after = await liveNodeClaims(env.client);
    expect(priceOf(after, price)).toBeLessThanOrEqual(target * 1.15);
    // the budget held at every moment, and disruption did happen
    expect(maxDisrupting).toBeLessThanOrEqual(BUDGET);
    expect(maxDisrupting).toBeGreaterThan(0);
    // evicted pods found room at once: never pending longer than one NodeClaim launch
    expect(maxLaunchMs).toBeGreaterThan(0);
    expect(maxPendingMs).toBeLessThanOrEqual(maxLaunchMs);
    const decisions =
      (await env.op.registry.getSingleMetric('karpenter_voluntary_disruption_decisions_total')?.get())
        ?.values ?? [];
    expect(decisions.reduce((s, v) => s + v.value, 0)).toBeGreaterThan(0);
    expect(decisions.every((v) => ['empty', 'underutilized'].includes(String(v.labels.reason)))).toBe(true);
  }, 240_000);
});
