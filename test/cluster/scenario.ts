/**
 * The controller end-to-end scenario, run the same way on the real control plane and on the embedded one:
 * a KWOKNodeClass + NodePool (one instance type, consolidation on, budget 100%), a Deployment of 1-CPU pause
 * pods behind a PDB (minAvailable 4), and `capenter controller` (a real process) already running against the
 * cluster. Scale 0 → 50: every pod Running (timed); scale 50 → 5: NodeClaims consolidated to the one node the
 * five pods need, while a watch on the pods checks the PDB was never broken (never fewer than 4 healthy).
 */
import { expect } from 'vitest';
import type { Pod } from '../../src/apis/core.ts';
import type { NodeClaim } from '../../src/apis/karpenter.ts';
import { KubeClient } from '../../src/kube/client.ts';
import { RealClock } from '../../src/kube/clock.ts';
import { Informer } from '../../src/kube/informer.ts';
import { until } from './helpers.ts';

/** Figures of one run. */
export interface ScenarioFigures {
  /** Seconds from the scale to 50 replicas until all 50 pods were Running and Ready. */
  secondsTo50Running: number;
  /** NodeClaims once the 50 pods ran. */
  nodeClaimsAt50: number;
  /** Seconds from the scale to 5 replicas until one NodeClaim was left. */
  secondsToConsolidated: number;
  /** Fewest healthy (Ready, not deleting) pods seen while consolidating (the PDB asks for ≥ 4). */
  minHealthyDuringConsolidation: number;
}

/** The instance type of the NodePool: 16 vCPU, so 15 pods of 1 CPU fit after kube-reserved (50 pods → 4 nodes). */
export const InstanceType = 'm5.4xlarge';

function healthy(p: Pod): boolean {
  return (
    p.metadata.deletionTimestamp === undefined &&
    p.status?.phase === 'Running' &&
    (p.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True')
  );
}

/**
 * Runs the scenario in namespace `ns` of the cluster behind `kubeconfig` (NodePool/NodeClass named `e2e`).
 * Assumes capenter's CRDs are served and a controller runs. Leaves the namespace, NodePool and NodeClass in
 * place (the caller's cluster is disposable).
 */
export async function scaleScenario(kubeconfig: string, ns: string): Promise<ScenarioFigures> {
  const client = KubeClient.fromKubeconfig(kubeconfig);
  try {
    await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    await client.create({
      apiVersion: 'karpenter.kwok.sh/v1alpha1',
      kind: 'KWOKNodeClass',
      metadata: { name: 'e2e' },
      spec: {},
    });
    await client.create({
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodePool',
      metadata: { name: 'e2e' },
      spec: {
        template: {
          spec: {
            nodeClassRef: { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: 'e2e' },
            expireAfter: 'Never',
            requirements: [
              { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] },
              { key: 'node.kubernetes.io/instance-type', operator: 'In', values: [InstanceType] },
            ],
          },
        },
        disruption: {
          consolidationPolicy: 'WhenEmptyOrUnderutilized',
          consolidateAfter: '0s',
          budgets: [{ nodes: '100%' }],
        },
      },
    });
    await client.create({
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { name: 'web', namespace: ns },
      spec: { minAvailable: 4, selector: { matchLabels: { app: 'web' } } },
    });
    await client.create({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: ns },
      spec: {
        replicas: 0,
        selector: { matchLabels: { app: 'web' } },
        template: {
          metadata: { labels: { app: 'web' } },
          spec: {
            terminationGracePeriodSeconds: 0,
            containers: [
              {
                name: 'pause',
                image: 'registry.k8s.io/pause:3.10',
                resources: { requests: { cpu: '1', memory: '256Mi' } },
              },
            ],
          },
        },
      },
    });

    const pods = new Informer(client, 'Pod', {
      clock: new RealClock(),
      namespace: ns,
      labelSelector: 'app=web',
    });
    let watching = false;
    let minHealthy = Number.POSITIVE_INFINITY;
    const observe = (): void => {
      if (!watching) return;
      minHealthy = Math.min(minHealthy, pods.cache.list().filter(healthy).length);
    };
    pods.on({ add: observe, update: observe, delete: observe });
    pods.start();
    await pods.waitForSync(60_000);
    const running = (): number => pods.cache.list().filter(healthy).length;
    const nodeClaims = async (): Promise<NodeClaim[]> =>
      (await client.list('NodeClaim')).items.filter(
        (n) => n.metadata.labels?.['karpenter.sh/nodepool'] === 'e2e',
      );

    // 0 → 50
    const t0 = Date.now();
    await client.patch('Deployment', 'web', ns, { spec: { replicas: 50 } });
    await until(() => running() === 50 && pods.cache.size() === 50, '50 pods Running', 300_000, 50);
    const secondsTo50Running = (Date.now() - t0) / 1000;
    const at50 = await nodeClaims();
    // each pod on a launched, kwok-run node of the NodePool
    const nodes = (await client.list('Node')).items.filter(
      (n) => n.metadata.labels?.['karpenter.sh/nodepool'] === 'e2e',
    );
    expect(nodes.length).toBe(at50.length);
    for (const n of nodes) {
      expect(n.metadata.annotations?.['kwok.x-k8s.io/node']).toBe('fake');
      expect(n.metadata.labels?.['node.kubernetes.io/instance-type']).toBe(InstanceType);
    }
    const onNodes = new Set(nodes.map((n) => n.metadata.name));
    expect(pods.cache.list().every((p) => onNodes.has(p.spec.nodeName as string))).toBe(true);

    // 50 → 5, then consolidation down to the single node five 1-CPU pods need
    const t1 = Date.now();
    await client.patch('Deployment', 'web', ns, { spec: { replicas: 5 } });
    await until(() => running() === 5 && pods.cache.size() === 5, '5 pods after the scale-down', 300_000, 50);
    watching = true;
    observe();
    await until(
      async () => {
        const ncs = await nodeClaims();
        return ncs.length === 1 && running() === 5 && pods.cache.size() === 5;
      },
      'consolidation to one NodeClaim with 5 pods Running',
      600_000,
      500,
    );
    const secondsToConsolidated = (Date.now() - t1) / 1000;
    await pods.stop();
    const last = (await nodeClaims())[0] as NodeClaim;
    expect(new Set(pods.cache.list().map((p) => p.spec.nodeName))).toEqual(new Set([last.status?.nodeName]));
    return {
      secondsTo50Running,
      nodeClaimsAt50: at50.length,
      secondsToConsolidated,
      minHealthyDuringConsolidation: minHealthy,
    };
  } finally {
    client.close();
  }
}
