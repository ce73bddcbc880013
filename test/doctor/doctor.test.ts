/**
 * `capenter doctor` on the embedded cluster: each finding kind from objects created through the real client,
 * read back by `readSnapshot`, and the CLI's exit codes and JSON.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import type { KubeObject } from '../../src/apis/core.ts';
import { runDoctor } from '../../src/cli/doctor.ts';
import { diagnose, doctorSummary, type Finding, readSnapshot } from '../../src/doctor/index.ts';
import { applyObjects } from '../../src/embedded/apply.ts';
import { type SimulatedCluster, startSimulatedCluster } from '../../src/embedded/cluster.ts';
import { FakeClock, RealClock } from '../../src/kube/clock.ts';

const here = dirname(fileURLToPath(import.meta.url));
const capiCRDDir = join(here, '..', 'fixtures', 'crds', 'cluster-api');

function capiCRDs(): KubeObject[] {
  return readdirSync(capiCRDDir)
    .filter((f) => /machinepools|kubeadmconfigs|kubeadmconfigtemplates|clusters/.test(f))
    .flatMap((f) =>
      parseAllDocuments(readFileSync(join(capiCRDDir, f), 'utf8')).map((d) => d.toJS() as KubeObject),
    );
}

let sim: SimulatedCluster | undefined;
afterEach(async () => {
  await sim?.stop();
  sim = undefined;
});

/** A cluster with only the API server (no stand-ins: objects stay exactly as created). */
async function cluster(capi = false): Promise<SimulatedCluster> {
  sim = await startSimulatedCluster({
    components: { scheduler: false, kubelet: false, podGC: false, workloads: false },
    ...(capi ? { extraCRDs: capiCRDs() } : {}),
  });
  return sim;
}

async function apply(c: SimulatedCluster, objs: KubeObject[]): Promise<void> {
  const res = await applyObjects(c.client, objs);
  const failed = res.filter((r) => r.result === 'failed');
  expect(failed.map((f) => f.error)).toEqual([]);
}

/** Diagnoses the cluster as seen `aheadSeconds` from now. */
async function findings(c: SimulatedCluster, aheadSeconds = 0): Promise<Finding[]> {
  const clock = aheadSeconds ? new FakeClock(Date.now() + aheadSeconds * 1000) : new RealClock();
  return diagnose(await readSnapshot(c.client, clock));
}

const kwokClass = {
  apiVersion: 'karpenter.kwok.sh/v1alpha1',
  kind: 'KWOKNodeClass',
  metadata: { name: 'default' },
};

function nodePool(
  name: string,
  template: Record<string, unknown> = {},
  spec: Record<string, unknown> = {},
): KubeObject {
  return {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodePool',
    metadata: { name },
    spec: {
      limits: { cpu: '100' },
      ...spec,
      template: {
        spec: {
          nodeClassRef: { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: 'default' },
          requirements: [{ key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] }],
          ...template,
        },
      },
    },
  } as KubeObject;
}

function node(name: string, pool: string, taints: unknown[] = []): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels: { 'karpenter.sh/nodepool': pool, 'kubernetes.io/hostname': name } },
    spec: { taints },
  } as KubeObject;
}

function pod(
  name: string,
  extra: {
    nodeName?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    owner?: { kind: string; name: string; uid: string };
    tolerations?: unknown[];
  } = {},
): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: 'default',
      labels: extra.labels ?? {},
      ...(extra.annotations ? { annotations: extra.annotations } : {}),
      ...(extra.owner
        ? { ownerReferences: [{ apiVersion: 'apps/v1', controller: true, ...extra.owner }] }
        : {}),
    },
    spec: {
      containers: [{ name: 'c', image: 'nginx', resources: { requests: { cpu: '100m' } } }],
      ...(extra.nodeName ? { nodeName: extra.nodeName } : {}),
      ...(extra.tolerations ? { tolerations: extra.tolerations } : {}),
    },
  } as KubeObject;
}

function deployment(
  name: string,
  replicas: number,
  containers: unknown[] = [{ name: 'c', image: 'nginx' }],
): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: 'default' },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers } },
    },
  } as KubeObject;
}

const byCheck = (fs: Finding[], check: Finding['check']) => fs.filter((f) => f.check === check);

describe('capenter doctor', () => {
  it('PDBBlocksEviction: minAvailable = replicas of a single-replica Deployment keeps its node forever', async () => {
    const c = await cluster();
    const d = await c.client.create(deployment('web', 1));
    const rs = await c.client.create({
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      metadata: {
        name: 'web-5d8f',
        namespace: 'default',
        ownerReferences: [
          { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid: d.metadata.uid!, controller: true },
        ],
      },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: 'web' } },
        template: {
          metadata: { labels: { app: 'web' } },
          spec: { containers: [{ name: 'c', image: 'nginx' }] },
        },
      },
    } as KubeObject);
    await apply(c, [
      kwokClass as KubeObject,
      nodePool('default'),
      node('n1', 'default'),
      pod('web-5d8f-abcde', {
        nodeName: 'n1',
        labels: { app: 'web' },
        owner: { kind: 'ReplicaSet', name: 'web-5d8f', uid: rs.metadata.uid! },
      }),
      {
        apiVersion: 'policy/v1',
        kind: 'PodDisruptionBudget',
        metadata: { name: 'web', namespace: 'default' },
        spec: { minAvailable: 1, selector: { matchLabels: { app: 'web' } } },
      } as KubeObject,
      // A budget that allows a disruption: no finding.
      {
        apiVersion: 'policy/v1',
        kind: 'PodDisruptionBudget',
        metadata: { name: 'ok', namespace: 'default' },
        spec: { maxUnavailable: '10%', selector: { matchLabels: { app: 'web' } } },
      } as KubeObject,
    ]);
    const fs = byCheck(await findings(c), 'PDBBlocksEviction');
    expect(fs).toHaveLength(1);
    expect(fs[0]!.severity).toBe('error');
    expect(fs[0]!.objects).toEqual(['PodDisruptionBudget default/web', 'Deployment default/web', 'Node n1']);
    expect(fs[0]!.message).toBe(
      'minAvailable 1 requires 1 of 1 expected pod available at all times (Deployment default/web (1 replica)): it can never allow an eviction. It keeps 1 node alive forever (no terminationGracePeriod): Node n1.',
    );
    expect(fs[0]!.fix).toContain('terminationGracePeriod');

    // With a terminationGracePeriod on the NodePool the drain ends: a warning.
    await c.client.patch(
      'NodePool',
      'default',
      undefined,
      { spec: { template: { spec: { terminationGracePeriod: '24h' } } } },
      { type: 'merge' },
    );
    const after = byCheck(await findings(c), 'PDBBlocksEviction');
    expect(after.map((f) => f.severity)).toEqual(['warning']);
    expect(after[0]!.message).toContain("Draining Node n1 waits for the NodePool's terminationGracePeriod.");
  });

  it('PDBBlocksEviction: maxUnavailable 0 over bare pods', async () => {
    const c = await cluster();
    await apply(c, [
      pod('a', { labels: { app: 'db' } }),
      pod('b', { labels: { app: 'db' } }),
      {
        apiVersion: 'policy/v1',
        kind: 'PodDisruptionBudget',
        metadata: { name: 'db', namespace: 'default' },
        spec: { maxUnavailable: 0, selector: { matchLabels: { app: 'db' } } },
      } as KubeObject,
    ]);
    const fs = byCheck(await findings(c), 'PDBBlocksEviction');
    expect(fs.map((f) => [f.severity, f.message])).toEqual([
      ['warning', 'maxUnavailable 0 allows 0 of 2 pods to be unavailable: it can never allow an eviction.'],
    ]);
  });

  it('ClusterAutoscalerConflict: no scale-up delay (warning) and a node group naming a NodePool (error)', async () => {
    const c = await cluster();
    await apply(c, [
      kwokClass as KubeObject,
      nodePool('default'),
      deployment('cluster-autoscaler', 1, [
        {
          name: 'cluster-autoscaler',
          image: 'registry.k8s.io/autoscaling/cluster-autoscaler:v1.32.0',
          command: ['./cluster-autoscaler', '--cloud-provider=aws', '--nodes=1:10:default'],
        },
      ]),
    ]);
    const fs = byCheck(await findings(c), 'ClusterAutoscalerConflict');
    expect(fs.map((f) => [f.severity, f.message])).toEqual([
      ['error', "cluster-autoscaler's node groups overlap capenter's: NodePool default"],
      [
        'warning',
        'cluster-autoscaler runs without --new-pod-scale-up-delay: it scales up for a pending pod at once',
      ],
    ]);
    expect(fs[1]!.fix).toContain('--new-pod-scale-up-delay=5m');

    // With a 5-minute delay and its own node group, nothing to report.
    await c.client.patch(
      'Deployment',
      'cluster-autoscaler',
      'default',
      {
        spec: {
          template: {
            spec: {
              containers: [
                {
                  name: 'cluster-autoscaler',
                  command: ['./cluster-autoscaler', '--nodes=1:10:legacy-asg', '--new-pod-scale-up-delay=5m'],
                },
              ],
            },
          },
        },
      },
      { type: 'strategic' },
    );
    expect(byCheck(await findings(c), 'ClusterAutoscalerConflict')).toEqual([]);
  });

  it('MissingRegistrationTaint: Custom user data and a KarpenterMachinePool bootstrap config without karpenter.sh/unregistered', async () => {
    const c = await cluster(true);
    await apply(c, [
      {
        apiVersion: 'karpenter.k8s.aws/v1',
        kind: 'EC2NodeClass',
        metadata: { name: 'custom' },
        spec: {
          amiFamily: 'Custom',
          amiSelectorTerms: [{ id: 'ami-0123456789abcdef0' }],
          role: 'KarpenterNodeRole-c1',
          subnetSelectorTerms: [{ tags: { 'karpenter.sh/discovery': 'c1' } }],
          securityGroupSelectorTerms: [{ tags: { 'karpenter.sh/discovery': 'c1' } }],
          userData: '#!/bin/bash\n/etc/eks/bootstrap.sh c1\n',
        },
      } as KubeObject,
      {
        apiVersion: 'karpenter.k8s.aws/v1',
        kind: 'EC2NodeClass',
        metadata: { name: 'al2023' },
        spec: {
          amiSelectorTerms: [{ alias: 'al2023@latest' }],
          role: 'KarpenterNodeRole-c1',
          subnetSelectorTerms: [{ tags: { 'karpenter.sh/discovery': 'c1' } }],
          securityGroupSelectorTerms: [{ tags: { 'karpenter.sh/discovery': 'c1' } }],
        },
      } as KubeObject,
      {
        apiVersion: 'bootstrap.cluster.x-k8s.io/v1beta2',
        kind: 'KubeadmConfig',
        metadata: { name: 'pool-a', namespace: 'org-a' },
        spec: {
          joinConfiguration: {
            nodeRegistration: {
              taints: [{ key: 'node.cluster.x-k8s.io/uninitialized', effect: 'NoSchedule' }],
            },
          },
        },
      } as KubeObject,
      {
        apiVersion: 'cluster.x-k8s.io/v1beta2',
        kind: 'MachinePool',
        metadata: { name: 'pool-a', namespace: 'org-a' },
        spec: {
          clusterName: 'c1',
          replicas: 0,
          template: {
            spec: {
              clusterName: 'c1',
              bootstrap: {
                configRef: { apiGroup: 'bootstrap.cluster.x-k8s.io', kind: 'KubeadmConfig', name: 'pool-a' },
              },
              infrastructureRef: {
                apiGroup: 'infrastructure.cluster.x-k8s.io',
                kind: 'KarpenterMachinePool',
                name: 'pool-a',
              },
            },
          },
        },
      } as KubeObject,
    ]);
    const fs = byCheck(await findings(c), 'MissingRegistrationTaint');
    expect(fs.map((f) => [f.severity, f.objects])).toEqual([
      ['error', ['KubeadmConfig org-a/pool-a', 'MachinePool org-a/pool-a']],
      ['warning', ['EC2NodeClass custom']],
    ]);
  });

  it('UndeclaredStartupTaint: Cilium without a startup taint, and an unknown taint seen on a capenter node', async () => {
    const c = await cluster();
    await apply(c, [
      kwokClass as KubeObject,
      nodePool('default'),
      nodePool('declared', {
        startupTaints: [{ key: 'node.cilium.io/agent-not-ready', effect: 'NoSchedule' }],
      }),
      {
        apiVersion: 'apps/v1',
        kind: 'DaemonSet',
        metadata: { name: 'cilium', namespace: 'kube-system' },
        spec: {
          selector: { matchLabels: { k8s: 'cilium' } },
          template: {
            metadata: { labels: { k8s: 'cilium' } },
            spec: { containers: [{ name: 'agent', image: 'quay.io/cilium/cilium:v1.16.5' }] },
          },
        },
      } as KubeObject,
      node('n1', 'declared', [{ key: 'example.com/gpu-driver-not-ready', effect: 'NoSchedule' }]),
    ]);
    const fs = byCheck(await findings(c), 'UndeclaredStartupTaint');
    expect(fs.map((f) => f.objects)).toEqual([
      ['DaemonSet kube-system/cilium', 'NodePool default'],
      ['NodePool declared', 'Node n1'],
    ]);
    expect(fs[0]!.fix).toBe(
      'Add {key: node.cilium.io/agent-not-ready, effect: NoSchedule} to spec.template.spec.startupTaints of each NodePool.',
    );
    expect(fs[1]!.message).toContain('example.com/gpu-driver-not-ready:NoSchedule');
  });

  it('UninitializedTaintStuck: only after 5 minutes', async () => {
    const c = await cluster();
    await apply(c, [
      node('n1', 'default', [{ key: 'node.cluster.x-k8s.io/uninitialized', effect: 'NoSchedule' }]),
    ]);
    expect(byCheck(await findings(c), 'UninitializedTaintStuck')).toEqual([]);
    const later = byCheck(await findings(c, 6 * 60), 'UninitializedTaintStuck');
    expect(later.map((f) => [f.severity, f.objects])).toEqual([['error', ['Node n1']]]);
    expect(later[0]!.message).toBe(
      'node.cluster.x-k8s.io/uninitialized is still on the node 6 minutes after it was created (limit 5)',
    );
  });

  it('NodeClassNotReady: the failing condition is named', async () => {
    const c = await cluster();
    await apply(c, [
      {
        apiVersion: 'karpenter.k8s.aws/v1',
        kind: 'EC2NodeClass',
        metadata: { name: 'default' },
        spec: {
          amiSelectorTerms: [{ alias: 'al2023@latest' }],
          role: 'KarpenterNodeRole-c1',
          subnetSelectorTerms: [{ tags: { 'karpenter.sh/discovery': 'nope' } }],
          securityGroupSelectorTerms: [{ tags: { 'karpenter.sh/discovery': 'c1' } }],
        },
      } as KubeObject,
      nodePool('aws', {
        nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
      }),
    ]);
    await c.client.patchStatus(
      'EC2NodeClass',
      'default',
      undefined,
      {
        status: {
          conditions: [
            {
              type: 'SubnetsReady',
              status: 'False',
              reason: 'SubnetsNotFound',
              message: 'SubnetSelector did not match any Subnets',
              lastTransitionTime: new Date().toISOString(),
            },
            {
              type: 'Ready',
              status: 'False',
              reason: 'UnhealthyDependents',
              message: 'SubnetsReady=False',
              lastTransitionTime: new Date().toISOString(),
            },
          ],
        },
      },
      { type: 'merge' },
    );
    const fs = byCheck(await findings(c), 'NodeClassNotReady');
    expect(fs.map((f) => [f.severity, f.objects, f.message])).toEqual([
      [
        'error',
        ['EC2NodeClass default', 'NodePool aws'],
        'Ready is False: SubnetsReady=False (SubnetsReady: SubnetSelector did not match any Subnets)',
      ],
    ]);
  });

  it('NodePoolWithoutLimits and NodePoolUnusable', async () => {
    const c = await cluster();
    await apply(c, [
      kwokClass as KubeObject,
      nodePool('gpu', { taints: [{ key: 'nvidia.com/gpu', value: 'true', effect: 'NoSchedule' }] }),
      nodePool('general', {}, { limits: undefined }),
      pod('pending-web'),
    ]);
    const fs = await findings(c);
    expect(byCheck(fs, 'NodePoolWithoutLimits').map((f) => f.objects)).toEqual([['NodePool general']]);
    const unusable = byCheck(fs, 'NodePoolUnusable');
    expect(unusable.map((f) => f.objects)).toEqual([['NodePool gpu', 'Pod default/pending-web']]);
    expect(unusable[0]!.message).toBe(
      'none of the 1 pending pod can use this NodePool (default/pending-web: did not tolerate taint nvidia.com/gpu=true:NoSchedule)',
    );
  });

  it('readSnapshot takes the Pods, Nodes and NodeClaims the caller holds instead of listing them', async () => {
    const c = await cluster();
    await apply(c, [
      kwokClass as KubeObject,
      nodePool('gpu', { taints: [{ key: 'nvidia.com/gpu', value: 'true', effect: 'NoSchedule' }] }),
    ]);
    // the server has no pod; the caller's cache (capenter start's informers) has one the gpu pool cannot take
    const held: KubeObject = await c.client.create(pod('cached-web'));
    await c.client.delete('Pod', 'cached-web', 'default');
    expect((await c.client.list('Pod')).items).toEqual([]);
    const snap = await readSnapshot(c.client, new RealClock(), { pods: [held], nodes: [], nodeClaims: [] });
    expect(snap.pods.map((p) => p.metadata.name)).toEqual(['cached-web']);
    expect(byCheck(diagnose(snap), 'NodePoolUnusable').map((f) => f.objects)).toEqual([
      ['NodePool gpu', 'Pod default/cached-web'],
    ]);
    const listed = await readSnapshot(c.client, new RealClock());
    expect(listed.pods).toEqual([]);
  });

  it('DoNotDisruptOutlivesExpiry: an annotated pod older than expireAfter', async () => {
    const c = await cluster();
    await apply(c, [
      kwokClass as KubeObject,
      nodePool('short', { expireAfter: '1h' }),
      node('n1', 'short'),
      pod('batch', { nodeName: 'n1', annotations: { 'karpenter.sh/do-not-disrupt': 'true' } }),
    ]);
    expect(byCheck(await findings(c), 'DoNotDisruptOutlivesExpiry')).toEqual([]);
    const fs = byCheck(await findings(c, 2 * 3600 + 60), 'DoNotDisruptOutlivesExpiry');
    expect(fs.map((f) => [f.severity, f.objects])).toEqual([
      ['error', ['Pod default/batch', 'Node n1', 'NodePool short']],
    ]);
    expect(fs[0]!.message).toContain("longer than NodePool short's expireAfter 1h");
  });

  it('capenter doctor: exit 1 with an error finding, JSON output, and a one-line summary', async () => {
    const c = await cluster();
    await apply(c, [
      pod('a', { labels: { app: 'solo' }, nodeName: 'n1' }),
      node('n1', 'default'),
      kwokClass as KubeObject,
      nodePool('default'),
      {
        apiVersion: 'policy/v1',
        kind: 'PodDisruptionBudget',
        metadata: { name: 'solo', namespace: 'default' },
        spec: { minAvailable: '100%', selector: { matchLabels: { app: 'solo' } } },
      } as KubeObject,
    ]);
    let out = '';
    let err = '';
    const io = { stdout: (t: string) => (out += t), stderr: (t: string) => (err += t), env: {} };
    expect(await runDoctor({ kubeconfig: c.kubeconfig, output: 'json' }, io)).toBe(1);
    expect(err).toBe('');
    const report = JSON.parse(out) as { findings: Finding[]; summary: { errors: number; warnings: number } };
    expect(report.summary).toEqual({ errors: 1, warnings: 0 });
    expect(report.findings[0]!.check).toBe('PDBBlocksEviction');
    expect(doctorSummary(report.findings)).toBe(
      'doctor: 1 error (PDBBlocksEviction) — run `capenter doctor` for details',
    );

    out = '';
    await c.client.delete('PodDisruptionBudget', 'solo', 'default');
    expect(await runDoctor({ kubeconfig: c.kubeconfig }, io)).toBe(0);
    expect(out).toBe('No findings: none of the checks found a problem.\n');
    expect(await runDoctor({ kubeconfig: c.kubeconfig, output: 'yaml' }, io)).toBe(2);
    expect(err).toContain('-o/--output: "yaml" is not supported (use table or json)');
  });
});
