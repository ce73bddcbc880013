/**
 * `capenter plan` on the real control plane (kube-apiserver v1.34.4): the live objects are created as an admin,
 * then the plan runs with the kubeconfig of a ServiceAccount bound to get/list/watch only (a ClusterRole with no
 * write verb), which proves the command never needs to write. The drift, waves, replacement and cost are the same
 * as on the embedded cluster (test/plan/plan.test.ts): prices from the embedded us-east-1 catalog.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import type { KubeObject } from '../../src/apis/core.ts';
import { formatResources } from '../../src/apis/quantity.ts';
import { runPlan } from '../../src/cli/plan.ts';
import { getInstanceTypes } from '../../src/cloudprovider/aws/catalog/index.ts';
import { KubeClient } from '../../src/kube/client.ts';
import { checkCRDs, installCRDs, requiredCRDs } from '../../src/operator/crds.ts';
import { clusterKubeconfig, kubectl, until } from './helpers.ts';

const NS = 'capenter-plan-test';
const SA = `system:serviceaccount:${NS}:plan-reader`;
const catalog = getInstanceTypes({ region: 'us-east-1' }).instanceTypes;
const NODES = ['plan-m-1', 'plan-m-2'];

let client: KubeClient;
let installedCRDs: string[] = [];

function nodePool(families: string[]): KubeObject {
  return {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodePool',
    metadata: { name: 'plan-test' },
    spec: {
      disruption: { consolidateAfter: '0s', budgets: [{ nodes: '1' }] },
      template: {
        spec: {
          nodeClassRef: { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: 'plan-test' },
          requirements: [
            { key: 'karpenter.k8s.aws/instance-family', operator: 'In', values: families },
            { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] },
          ],
        },
      },
    },
  };
}

const readerRole = {
  apiVersion: 'rbac.authorization.k8s.io/v1',
  kind: 'ClusterRole',
  metadata: { name: 'capenter-plan-reader' },
  rules: [
    {
      apiGroups: ['', 'apps', 'policy', 'storage.k8s.io'],
      resources: ['*'],
      verbs: ['get', 'list', 'watch'],
    },
    {
      apiGroups: ['karpenter.sh', 'karpenter.k8s.aws', 'karpenter.kwok.sh'],
      resources: ['*'],
      verbs: ['get', 'list', 'watch'],
    },
  ],
};

async function applyAll(objs: object[]): Promise<void> {
  const r = await kubectl(
    clusterKubeconfig(),
    ['apply', '-f', '-'],
    objs.map((o) => stringify(o)).join('---\n'),
  );
  expect(r.code, r.stderr).toBe(0);
}

beforeAll(async () => {
  client = KubeClient.fromKubeconfig(clusterKubeconfig());
  const required = requiredCRDs([{ group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass' }]);
  const missing = (await checkCRDs(client, required)).missing;
  if (missing.length > 0) {
    installedCRDs = (await installCRDs(client)).filter((n) => missing.includes(n));
    await until(async () => (await checkCRDs(client, required)).missing.length === 0, 'capenter CRDs served');
  }
  await applyAll([
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } },
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'plan-reader', namespace: NS } },
    readerRole,
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'capenter-plan-reader' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'capenter-plan-reader' },
      subjects: [{ kind: 'ServiceAccount', name: 'plan-reader', namespace: NS }],
    },
    { apiVersion: 'karpenter.kwok.sh/v1alpha1', kind: 'KWOKNodeClass', metadata: { name: 'plan-test' } },
    nodePool(['m5', 'c5']),
  ]);
  // the ServiceAccount admission plugin refuses pods until the namespace's `default` ServiceAccount exists
  await until(
    async () =>
      (await kubectl(clusterKubeconfig(), ['get', 'serviceaccount', 'default', '-n', NS])).code === 0,
    `ServiceAccount ${NS}/default`,
    60_000,
    500,
  );
  const it = catalog.find((t) => t.name === 'm5.large');
  const alloc = formatResources(it?.allocatable ?? {});
  for (const name of NODES) {
    await client.create({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name,
        labels: {
          ...it?.labels,
          'topology.kubernetes.io/region': 'us-east-1',
          'topology.kubernetes.io/zone': 'us-east-1a',
          'karpenter.sh/capacity-type': 'on-demand',
          'karpenter.sh/nodepool': 'plan-test',
          'karpenter.sh/initialized': 'true',
          'kubernetes.io/hostname': name,
        },
      },
      spec: { providerID: `kwok://${name}` },
    } as KubeObject);
    await client.patchStatus(
      'Node',
      name,
      undefined,
      { status: { capacity: alloc, allocatable: alloc } },
      { type: 'merge' },
    );
    await client.create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: `${name}-web`, namespace: NS },
      spec: {
        nodeName: name,
        // the cluster is shared with earlier files, whose nodes may have room: only this NodePool's nodes qualify
        nodeSelector: { 'karpenter.sh/nodepool': 'plan-test' },
        containers: [{ name: 'c', image: 'nginx', resources: { requests: { cpu: '500m', memory: '1Gi' } } }],
      },
    } as KubeObject);
  }
});

afterAll(async () => {
  const kc = clusterKubeconfig();
  await kubectl(kc, ['delete', 'namespace', NS, '--wait=false']);
  for (const n of NODES) await client.tryDelete('Node', n);
  await client.tryDelete('NodePool', 'plan-test');
  await client.tryDelete('KWOKNodeClass', 'plan-test');
  await kubectl(kc, [
    'delete',
    'clusterrolebinding,clusterrole',
    'capenter-plan-reader',
    '--ignore-not-found',
  ]);
  for (const name of installedCRDs) await client.tryDelete('CustomResourceDefinition', name);
  client?.close();
});

describe('capenter plan on the real control plane', () => {
  it('plans a requirements change with a read-only ServiceAccount (get/list/watch only)', async () => {
    const kc = clusterKubeconfig();
    for (const verb of ['create', 'update', 'patch', 'delete']) {
      const can = await kubectl(kc, ['auth', 'can-i', verb, 'nodepools.karpenter.sh', `--as=${SA}`]);
      expect(can.stdout.trim(), `${verb} must be refused`).toBe('no');
    }
    expect((await kubectl(kc, ['auth', 'can-i', 'list', 'pods', '-A', `--as=${SA}`])).stdout.trim()).toBe(
      'yes',
    );
    const token = await kubectl(kc, ['create', 'token', 'plan-reader', '-n', NS, '--duration=1h']);
    expect(token.code, token.stderr).toBe(0);
    const admin = parse(readFileSync(kc, 'utf8')) as {
      clusters: Array<{ cluster: { server: string; 'certificate-authority-data': string } }>;
    };
    const cluster = admin.clusters[0]!.cluster;
    const dir = mkdtempSync(join(tmpdir(), 'capenter-plan-real-'));
    const saKubeconfig = join(dir, 'kubeconfig');
    writeFileSync(
      saKubeconfig,
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [
          {
            name: 'real',
            cluster: {
              server: cluster.server,
              'certificate-authority-data': cluster['certificate-authority-data'],
            },
          },
        ],
        users: [{ name: 'reader', user: { token: token.stdout.trim() } }],
        contexts: [{ name: 'real', context: { cluster: 'real', user: 'reader' } }],
        'current-context': 'real',
      }),
      { mode: 0o600 },
    );
    const proposed = join(dir, 'np.yaml');
    writeFileSync(proposed, stringify(nodePool(['c5'])));
    let stdout = '';
    let stderr = '';
    const code = await runPlan(
      { kubeconfig: saKubeconfig, filename: [proposed], output: 'json', now: '2026-12-03T10:00:00Z' },
      {
        stdout: (t) => {
          stdout += t;
        },
        stderr: (t) => {
          stderr += t;
        },
        env: {},
      },
    );
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const j = JSON.parse(stdout);
    expect(j.changes).toEqual([
      { action: 'apply', kind: 'NodePool', name: 'plan-test', file: proposed, result: 'configured' },
    ]);
    expect(
      j.nodes.map((n: { node: string; reason: string; wave: number }) => [n.node, n.reason, n.wave]),
    ).toEqual([
      ['plan-m-1', 'RequirementsDrifted', 1],
      ['plan-m-2', 'RequirementsDrifted', 2],
    ]);
    expect(j.waves.map((w: { offsetSeconds: number }) => w.offsetSeconds)).toEqual([0, 180]);
    // wave 1 launches a c5.large ($0.085/h) for plan-m-1's 500m/1Gi pod; in wave 2 plan-m-2's pod fits on it
    expect(
      j.replacements.map((r: { instanceType: string; priceUSDPerHour: number; pods: string[] }) => [
        r.instanceType,
        r.priceUSDPerHour,
        r.pods,
      ]),
    ).toEqual([['c5.large', 0.085, [`${NS}/plan-m-1-web`]]]);
    // the cost covers the whole cluster, which earlier files share (their nodes stay): the change itself saves
    // $0.107/h (2 × m5.large $0.096 → 1 × c5.large $0.085)
    expect(j.cost.deltaUSDPerHour).toBe(-0.107);
    expect(Math.round((j.cost.beforeUSDPerHour - j.cost.afterUSDPerHour) * 1000) / 1000).toBe(0.107);
    expect(j.cost.beforeUSDPerHour).toBeGreaterThanOrEqual(0.192);
  });
});
