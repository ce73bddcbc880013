/** Integration: the NodePool and NodeClass status controllers against the embedded API server. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { crdObjects } from '../../../src/apis/crds.ts';
import type { NodePool } from '../../../src/apis/karpenter.ts';
import { startTestEnv, type TestEnv } from '../../../src/controllers/nodeclaim/testing.ts';
import { NodePoolController } from '../../../src/controllers/nodepool/controller.ts';
import { NodePoolHashVersion, nodePoolHash } from '../../../src/controllers/nodepool/hash.ts';
import { NodeClassStatusController } from '../../../src/controllers/nodepool/nodeclass.ts';
import { staticDrift } from '../../../src/disruption/drift-reason.ts';
import { SharedInformers } from '../../../src/kube/informer.ts';
import { silentLogger } from '../../../src/kube/logger.ts';
import { eventually } from '../../../src/testing/eventually.ts';

let env: TestEnv;
const ac = new AbortController();
let running: Promise<unknown>;
let ticker: NodeJS.Timeout;

function nodePool(name: string, nodeClass: string, key = 'karpenter.sh/capacity-type'): NodePool {
  return {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodePool',
    metadata: { name },
    spec: {
      template: {
        spec: {
          nodeClassRef: { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: nodeClass },
          requirements: [{ key, operator: 'In', values: ['on-demand'] }],
        },
      },
      disruption: {
        consolidationPolicy: 'WhenEmptyOrUnderutilized',
        consolidateAfter: '0s',
        budgets: [{ nodes: '10%' }],
      },
    },
  } as NodePool;
}

const cond = (np: NodePool | undefined, t: string) => np?.status?.conditions?.find((c) => c.type === t);

beforeAll(async () => {
  env = await startTestEnv();
  const deps = {
    client: env.client,
    cloudProvider: env.provider,
    clock: env.clock,
    logger: silentLogger(),
    recorder: env.recorder,
    registry: env.registry,
    informers: new SharedInformers(env.client, { clock: env.clock }),
  };
  await env.client.create({
    apiVersion: 'karpenter.kwok.sh/v1alpha1',
    kind: 'KWOKNodeClass',
    metadata: { name: 'default' },
    spec: {},
  });
  running = Promise.all([
    new NodePoolController(deps).start(ac.signal),
    new NodeClassStatusController(deps).start(ac.signal),
  ]);
  ticker = setInterval(() => env.clock.advance(100), 10);
});

afterAll(async () => {
  clearInterval(ticker);
  ac.abort();
  await running;
  await env.stop();
});

describe('NodePool controller (integration)', () => {
  it('marks a valid NodePool Ready, stamps the hash and counts its nodes', async () => {
    await env.client.create(nodePool('good', 'default'));
    await env.client.create({
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodeClaim',
      metadata: { name: 'good-1', labels: { 'karpenter.sh/nodepool': 'good' } },
      spec: {
        nodeClassRef: { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: 'default' },
        requirements: [],
      },
    });
    await env.client.patchStatus(
      'NodeClaim',
      'good-1',
      undefined,
      { status: { providerID: 'kwok://x/y/z', capacity: { cpu: '4', memory: '16Gi', pods: '110' } } },
      { type: 'merge' },
    );
    const np = await eventually(async () => {
      const x = await env.client.get('NodePool', 'good');
      return cond(x, 'Ready')?.status === 'True' && x.status?.nodes === 1 && x;
    }, 'good Ready with 1 node');
    expect(cond(np, 'ValidationSucceeded')?.status).toBe('True');
    expect(cond(np, 'NodeClassReady')?.status).toBe('True');
    expect(np.status?.resources).toMatchObject({ cpu: '4', memory: '16384Mi', pods: '110', nodes: '1' });
    expect(np.metadata.annotations?.['karpenter.sh/nodepool-hash']).toBe(nodePoolHash(np));
    expect(np.metadata.annotations?.['karpenter.sh/nodepool-hash-version']).toBe(NodePoolHashVersion);
    const nc = await env.client.get('NodeClaim', 'good-1');
    expect(nc.metadata.annotations?.['karpenter.sh/nodepool-hash']).toBe(nodePoolHash(np));
  });

  it("after a switch from upstream Karpenter: v3 NodeClaims keep upstream's stamps and are not drifted; older versions are re-stamped", async () => {
    // exactly as upstream v1.14 stamps them: hashstructure's number for this template (Go-computed:
    // test/fixtures/upstream-hash/cases.json "kwok") under hash version "v3"
    const upstream = {
      'karpenter.sh/nodepool-hash': '12745407319442031341',
      'karpenter.sh/nodepool-hash-version': 'v3',
    };
    const np = nodePool('migrated', 'default');
    np.spec.template.spec.expireAfter = '720h';
    np.metadata.annotations = { ...upstream };
    const claim = (name: string, annotations: Record<string, string>, drifted = false) => ({
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodeClaim',
      metadata: { name, labels: { 'karpenter.sh/nodepool': 'migrated' }, annotations },
      spec: {
        nodeClassRef: { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: 'default' },
        requirements: [],
      },
      ...(drifted
        ? {
            status: {
              conditions: [
                {
                  type: 'Drifted',
                  status: 'True',
                  reason: 'NodePoolDrifted',
                  message: 'NodePoolDrifted',
                  lastTransitionTime: '2026-01-01T00:00:00Z',
                },
              ],
            },
          }
        : {}),
    });
    expect(NodePoolHashVersion).toBe('v3');
    expect(nodePoolHash(np)).toBe('12745407319442031341');
    const current = claim('migrated-abcde', { ...upstream });
    // a NodePool stamped by an older Karpenter (version v2) with NodeClaims of that version: upstream re-stamps them
    const old = nodePool('older', 'default');
    old.metadata.annotations = {
      'karpenter.sh/nodepool-hash': '111',
      'karpenter.sh/nodepool-hash-version': 'v2',
    };
    const oldClaim = claim('older-fghij', {
      'karpenter.sh/nodepool-hash': '111',
      'karpenter.sh/nodepool-hash-version': 'v2',
    });
    oldClaim.metadata.labels['karpenter.sh/nodepool'] = 'older';
    const oldDrifted = claim(
      'older-klmno',
      { 'karpenter.sh/nodepool-hash': '222', 'karpenter.sh/nodepool-hash-version': 'v2' },
      true,
    );
    oldDrifted.metadata.labels['karpenter.sh/nodepool'] = 'older';
    expect(staticDrift({ nodeClaim: current } as never, np)).toBeUndefined();
    for (const x of [current, oldClaim, oldDrifted]) await env.client.create(x);
    await env.client.patchStatus('NodeClaim', 'older-klmno', undefined, oldDrifted, { type: 'merge' });
    await env.client.create(np);
    await env.client.create(old);
    const pool = await eventually(async () => {
      const x = await env.client.get('NodePool', 'older');
      return x.metadata.annotations?.['karpenter.sh/nodepool-hash-version'] === 'v3' && x;
    }, 'older NodePool stamped v3');
    const restamped = await eventually(async () => {
      const x = await env.client.get('NodeClaim', 'older-fghij');
      return x.metadata.annotations?.['karpenter.sh/nodepool-hash-version'] === 'v3' && x;
    }, 'v2 NodeClaim re-stamped v3');
    expect(restamped.metadata.annotations?.['karpenter.sh/nodepool-hash']).toBe(nodePoolHash(pool));
    const drifted = await env.client.get('NodeClaim', 'older-klmno');
    expect(drifted.metadata.annotations).toEqual({
      'karpenter.sh/nodepool-hash': '222',
      'karpenter.sh/nodepool-hash-version': 'v3',
    });
    // the v3 pair: untouched, equal, not drifted
    const migrated = await env.client.get('NodePool', 'migrated');
    expect(migrated.metadata.annotations?.['karpenter.sh/nodepool-hash']).toBe('12745407319442031341');
    const c = await env.client.get('NodeClaim', 'migrated-abcde');
    expect(c.metadata.annotations).toEqual(upstream);
    expect(staticDrift({ nodeClaim: c } as never, migrated)).toBeUndefined();
    // a real template change after the switch drifts exactly that NodePool's NodeClaims
    await env.client.patch(
      'NodePool',
      'migrated',
      undefined,
      { spec: { template: { metadata: { labels: { team: 'a' } } } } },
      { type: 'merge' },
    );
    const changed = await eventually(async () => {
      const x = await env.client.get('NodePool', 'migrated');
      return x.metadata.annotations?.['karpenter.sh/nodepool-hash'] !== '12745407319442031341' && x;
    }, 'changed NodePool re-hashed');
    expect(changed.metadata.annotations?.['karpenter.sh/nodepool-hash']).toBe(nodePoolHash(changed));
    expect(staticDrift({ nodeClaim: c } as never, changed)).toBe('NodePoolDrifted');
    const olderPool = await env.client.get('NodePool', 'older');
    const olderClaim = await env.client.get('NodeClaim', 'older-fghij');
    expect(staticDrift({ nodeClaim: olderClaim } as never, olderPool)).toBeUndefined();
  });

  it('capacity-type In [spott] is accepted by the API server and reported as ValidationSucceeded=False (upstream v1.14.1 runtime validation)', async () => {
    const np = nodePool('spott', 'default');
    np.spec.template.spec.requirements = [
      { key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] },
      { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['spott'] },
    ];
    await env.client.create(np);
    const got = await eventually(async () => {
      const x = await env.client.get('NodePool', 'spott');
      return cond(x, 'ValidationSucceeded')?.status === 'False' && x;
    }, 'spott ValidationSucceeded=False');
    expect(cond(got, 'ValidationSucceeded')).toMatchObject({
      status: 'False',
      reason: 'NodePoolValidationFailed',
      message:
        'NodePool "spott": spec.template.spec.requirements[1].values: Invalid value ["spott"]: no valid values found in [spott] for karpenter.sh/capacity-type, expected one of: [on-demand reserved spot]; use on-demand or reserved or spot',
    });
    expect(cond(got, 'Ready')?.status).toBe('False');
    await env.client.delete('NodePool', 'spott');
  });

  it('an invalid NodePool gets Ready=False with the message and a Warning Event; the controller keeps running', async () => {
    // an API server that does not enforce the CRD's CEL rules (older clusters; what runtime validation is
    // for): the NodePool CRD is served without its x-kubernetes-validations
    const crd = crdObjects()['karpenter.sh_nodepools.yaml']!;
    env.cluster.installCRD(
      JSON.parse(JSON.stringify(crd), (k, v) => (k === 'x-kubernetes-validations' ? undefined : v)),
    );
    await env.client.create(nodePool('bad', 'default', 'karpenter.sh/custom'));
    const np = await eventually(async () => {
      const x = await env.client.get('NodePool', 'bad');
      return cond(x, 'Ready')?.status === 'False' && x;
    }, 'bad Ready=False');
    expect(cond(np, 'ValidationSucceeded')).toMatchObject({
      status: 'False',
      reason: 'NodePoolValidationFailed',
    });
    expect(cond(np, 'ValidationSucceeded')?.message).toContain('spec.template.spec.requirements[0]');
    const ev = await eventually(
      async () => (await env.events('bad')).find((e) => e.reason === 'NodePoolValidationFailed'),
      'event',
    );
    expect(ev.type).toBe('Warning');

    // still alive: a NodePool pointing at a missing NodeClass is reported too
    await env.client.create(nodePool('orphan', 'missing'));
    const o = await eventually(async () => {
      const x = await env.client.get('NodePool', 'orphan');
      return cond(x, 'NodeClassReady')?.status === 'False' && x;
    }, 'orphan NodeClassReady=False');
    expect(cond(o, 'NodeClassReady')?.reason).toBe('NodeClassNotFound');
    expect(cond(o, 'Ready')?.status).toBe('False');

    // creating the NodeClass makes it Ready (NodeClass events requeue the NodePool)
    await env.client.create({
      apiVersion: 'karpenter.kwok.sh/v1alpha1',
      kind: 'KWOKNodeClass',
      metadata: { name: 'missing' },
      spec: {},
    });
    await eventually(
      async () => cond(await env.client.get('NodePool', 'orphan'), 'Ready')?.status === 'True',
      'orphan Ready',
    );
    const kc = await env.client.get('KWOKNodeClass', 'missing');
    expect(
      (kc.status as { conditions?: Array<{ type: string; status: string }> }).conditions?.map(
        (c) => `${c.type}=${c.status}`,
      ),
    ).toEqual(['Ready=True', 'ValidationSucceeded=True']);
  });
});
