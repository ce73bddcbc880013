import { describe, expect, it } from 'vitest';
import { daemonOverhead } from './daemonoverhead.ts';
import { makeDaemonSet, makeNodePool } from './testing.ts';

const Mi = 2 ** 20;

describe('daemonOverhead', () => {
  it('counts daemons that would run on a new node, including karpenter.sh/registered affinity', () => {
    const pool = makeNodePool('general', {
      requirements: [{ key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] }],
      taints: [{ key: 'dedicated', value: 'batch', effect: 'NoSchedule' }],
      startupTaints: [{ key: 'cni-not-ready', effect: 'NoSchedule' }],
    });
    const tolerateAll = { tolerations: [{ operator: 'Exists' as const }] };
    const registered = makeDaemonSet('node-agent', '2', '128Mi', {
      ...tolerateAll,
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [
              { matchExpressions: [{ key: 'karpenter.sh/registered', operator: 'In', values: ['true'] }] },
            ],
          },
        },
      },
    });
    const arm = makeDaemonSet('arm-only', '1', undefined, {
      ...tolerateAll,
      nodeSelector: { 'kubernetes.io/arch': 'arm64' },
    });
    const untolerated = makeDaemonSet('no-toleration', '500m');
    const tolerates = makeDaemonSet('tolerates', '100m', '100Mi', {
      tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'batch', effect: 'NoSchedule' }],
    });
    const orTerms = makeDaemonSet('or-terms', '25m', undefined, {
      ...tolerateAll,
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [
              { matchExpressions: [{ key: 'kubernetes.io/arch', operator: 'In', values: ['arm64'] }] },
              { matchExpressions: [{ key: 'kubernetes.io/os', operator: 'In', values: ['linux'] }] },
            ],
          },
        },
      },
    });
    const d = daemonOverhead(pool, [registered, arm, untolerated, tolerates, orTerms]);
    expect(d.daemonSets).toEqual(['kube-system/node-agent', 'kube-system/or-terms', 'kube-system/tolerates']);
    expect(d.requests).toEqual({ cpu: 2125, memory: 228 * Mi, pods: 3 });
  });
});
