/**
 * Seeded soak scenarios: a KWOKNodeClass, NodePools (limits, budgets, weights, expireAfter, consolidation
 * policies, terminationGracePeriod), Deployments (zone spreads, hostname anti-affinity, do-not-disrupt pods,
 * PDBs) and a DaemonSet. Every pod fits the catch-all NodePool `soak-any` (no limits), so "every pending pod
 * eventually runs once faults stop" is a fair invariant.
 */
import type { KubeObject } from '../../src/apis/core.ts';
import { int, pick, prng } from './faults.ts';

/** A generated scenario. */
export interface Scenario {
  /** Objects to apply at the start (dependency order). */
  objects: KubeObject[];
  /** Deployment names (namespace `default`). */
  deployments: string[];
  /** NodePool names. */
  nodePools: string[];
  /** Per step: the action drawn for it (`scale` a Deployment, `drift` a NodePool, or nothing). */
  actions: ScenarioAction[];
}

/** A step's scenario action. */
export type ScenarioAction =
  | { kind: 'none' }
  | { kind: 'scale'; deployment: string; replicas: number }
  | { kind: 'drift'; nodePool: string; generation: number };

const CPU = ['100m', '250m', '500m', '750m', '1', '1500m', '2'];
const MEM = ['128Mi', '256Mi', '512Mi', '1Gi', '2Gi', '3Gi'];

function nodePool(name: string, r: () => number, catchAll: boolean): KubeObject {
  const budgets = pick(r, [
    [{ nodes: '1' }],
    [{ nodes: '2' }],
    [{ nodes: '20%' }],
    [{ nodes: '10%' }, { nodes: '3' }],
  ]);
  return {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodePool',
    metadata: { name },
    spec: {
      weight: catchAll ? 1 : int(r, 10, 50),
      ...(catchAll ? {} : { limits: { cpu: String(int(r, 8, 48)) } }),
      disruption: {
        consolidationPolicy: pick(r, ['WhenEmpty', 'WhenEmptyOrUnderutilized']),
        consolidateAfter: pick(r, ['0s', '30s', '2m']),
        budgets,
      },
      template: {
        metadata: { labels: { 'soak/pool': name } },
        spec: {
          nodeClassRef: { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: 'default' },
          expireAfter: pick(r, ['720h', '720h', '1h', '30m']),
          terminationGracePeriod: pick(r, ['5m', '10m']),
          requirements: [
            { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] },
            { key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] },
            { key: 'kubernetes.io/os', operator: 'In', values: ['linux'] },
            {
              key: 'karpenter.k8s.aws/instance-category',
              operator: 'In',
              values: catchAll ? ['c', 'm', 'r'] : [pick(r, ['c', 'm', 'r'])],
            },
            {
              key: 'karpenter.k8s.aws/instance-size',
              operator: 'In',
              values: ['large', 'xlarge', '2xlarge'],
            },
          ],
        },
      },
    },
  };
}

function deployment(name: string, r: () => number): KubeObject[] {
  const spread = r() < 0.4;
  const antiAffinity = !spread && r() < 0.25;
  const doNotDisrupt = r() < 0.2;
  const pdb = r() < 0.4;
  const labels = { app: name };
  const out: KubeObject[] = [
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name, namespace: 'default' },
      spec: {
        replicas: int(r, 1, 5),
        selector: { matchLabels: labels },
        template: {
          metadata: {
            labels,
            ...(doNotDisrupt ? { annotations: { 'karpenter.sh/do-not-disrupt': 'true' } } : {}),
          },
          spec: {
            terminationGracePeriodSeconds: pick(r, [0, 30, 60]),
            containers: [
              {
                name: 'app',
                image: 'registry.k8s.io/pause:3.10',
                resources: { requests: { cpu: pick(r, CPU), memory: pick(r, MEM) } },
              },
            ],
            ...(spread
              ? {
                  topologySpreadConstraints: [
                    {
                      maxSkew: 1,
                      topologyKey: 'topology.kubernetes.io/zone',
                      whenUnsatisfiable: 'DoNotSchedule',
                      labelSelector: { matchLabels: labels },
                    },
                  ],
                }
              : {}),
            ...(antiAffinity
              ? {
                  affinity: {
                    podAntiAffinity: {
                      requiredDuringSchedulingIgnoredDuringExecution: [
                        { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: labels } },
                      ],
                    },
                  },
                }
              : {}),
          },
        },
      },
    },
  ];
  if (pdb)
    out.push({
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { name, namespace: 'default' },
      spec: {
        ...(r() < 0.5 ? { maxUnavailable: 1 } : { minAvailable: 1 }),
        selector: { matchLabels: labels },
      },
    });
  return out;
}

/** Builds the scenario of `seed` for `steps` steps (same seed, same scenario). */
export function buildScenario(seed: number, steps: number): Scenario {
  const r = prng(seed);
  const objects: KubeObject[] = [
    {
      apiVersion: 'karpenter.kwok.sh/v1alpha1',
      kind: 'KWOKNodeClass',
      metadata: { name: 'default' },
      spec: {},
    },
  ];
  const nodePools = ['soak-any'];
  objects.push(nodePool('soak-any', r, true));
  for (let i = 0, n = int(r, 0, 2); i < n; i++) {
    nodePools.push(`soak-p${i}`);
    objects.push(nodePool(`soak-p${i}`, r, false));
  }
  const deployments: string[] = [];
  for (let i = 0, n = int(r, 2, 4); i < n; i++) {
    deployments.push(`soak-d${i}`);
    objects.push(...deployment(`soak-d${i}`, r));
  }
  if (r() < 0.6)
    objects.push({
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name: 'soak-ds', namespace: 'default' },
      spec: {
        selector: { matchLabels: { app: 'soak-ds' } },
        template: {
          metadata: { labels: { app: 'soak-ds' } },
          spec: {
            containers: [
              {
                name: 'ds',
                image: 'registry.k8s.io/pause:3.10',
                resources: { requests: { cpu: '100m', memory: '64Mi' } },
              },
            ],
          },
        },
      },
    });
  const actions: ScenarioAction[] = [];
  let gen = 0;
  for (let s = 0; s < steps; s++) {
    const x = r();
    if (x < 0.2) actions.push({ kind: 'scale', deployment: pick(r, deployments), replicas: int(r, 0, 7) });
    else if (x < 0.23) actions.push({ kind: 'drift', nodePool: pick(r, nodePools), generation: ++gen });
    else actions.push({ kind: 'none' });
  }
  return { objects, deployments, nodePools, actions };
}
