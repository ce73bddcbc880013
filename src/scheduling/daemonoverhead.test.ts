import { describe, expect, it } from 'vitest';
import { daemonOverhead, daemonOverheadGroups } from './daemonoverhead.ts';
import { providerKeys } from './instancetypes.ts';
import { makeDaemonSet, makeNodePool, smallCatalog } from './testing.ts';

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

  it('daemonOverheadGroups: counts for each instance type only the DaemonSets whose pods run on that type', () => {
    const pool = makeNodePool('general', {
      requirements: [{ key: 'karpenter.k8s.aws/instance-family', operator: 'In', values: ['m5'] }],
    });
    const types = smallCatalog().filter((t) => t.name.startsWith('m5.'));
    const size = (values: string[]) => ({
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [
              {
                matchExpressions: [
                  { key: 'karpenter.k8s.aws/instance-size', operator: 'In' as const, values },
                ],
              },
            ],
          },
        },
      },
    });
    const every = makeDaemonSet('every', '100m');
    const small = makeDaemonSet('small', '200m', '256Mi', size(['large', 'xlarge']));
    const big = makeDaemonSet('big', '2', '2Gi', size(['2xlarge']));
    const zoneA = makeDaemonSet('zone-a', '50m', undefined, {
      nodeSelector: { 'topology.kubernetes.io/zone': 'test-zone-a' },
    });
    const arm = makeDaemonSet('arm', '1', undefined, { nodeSelector: { 'kubernetes.io/arch': 'arm64' } });
    const g = daemonOverheadGroups(pool, types, providerKeys(types), [every, small, big, zoneA, arm]);
    const of = (name: string) => g.byType.get(types.find((t) => t.name === name)!)!;
    expect(of('m5.large').daemonSets).toEqual([
      'kube-system/every',
      'kube-system/small',
      'kube-system/zone-a',
    ]);
    expect(of('m5.large').requests).toEqual({ cpu: 350, memory: 256 * Mi, pods: 3 });
    expect(of('m5.xlarge')).toBe(of('m5.large'));
    expect(of('m5.2xlarge').requests).toEqual({ cpu: 2150, memory: 2048 * Mi, pods: 3 });
    expect(of('m5.4xlarge').daemonSets).toEqual(['kube-system/every', 'kube-system/zone-a']);
    expect(of('m5.4xlarge').requests).toEqual({ cpu: 150, pods: 2 });
    expect(g.groups).toHaveLength(3);
    // the NodePool-level overhead (in-flight NodeClaims) counts every DaemonSet the template allows, arm too
    // (the template does not constrain the arch; no m5 type is arm64, so no type's overhead has it)
    expect(daemonOverhead(pool, [every, small, big, zoneA, arm]).requests).toEqual({
      cpu: 3350,
      memory: 2304 * Mi,
      pods: 5,
    });
  });
});
