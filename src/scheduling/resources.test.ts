import { describe, expect, it } from 'vitest';
import { fits, formatRequests, podRequests } from './resources.ts';
import { makePod } from './testing.ts';

const Mi = 2 ** 20;

describe('podRequests', () => {
  it('sums containers, adds overhead and one pod', () => {
    const p = makePod('a', { cpu: '500m', memory: '1Gi' });
    p.spec.containers.push({ name: 'b', resources: { requests: { cpu: '250m' } } });
    p.spec.overhead = { cpu: '10m', memory: '20Mi' };
    expect(podRequests(p)).toEqual({ cpu: 760, memory: 1024 * Mi + 20 * Mi, pods: 1 });
  });
  it('init containers: max of init vs app; sidecars add to both', () => {
    const p = makePod('a', { cpu: '500m', memory: '100Mi' });
    p.spec.initContainers = [
      { name: 'init', resources: { requests: { cpu: '2', memory: '50Mi' } } },
      { name: 'sidecar', restartPolicy: 'Always', resources: { requests: { cpu: '100m', memory: '64Mi' } } },
      { name: 'init2', resources: { requests: { cpu: '1', memory: '200Mi' } } },
    ];
    // init: 2000m; init2 with sidecar before it: 1100m/264Mi; app 500m + sidecar 100m = 600m/164Mi
    expect(podRequests(p)).toEqual({ cpu: 2000, memory: 264 * Mi, pods: 1 });
  });
  it('a missing request defaults to the limit; extended resources count', () => {
    const p = makePod('a');
    p.spec.containers[0]!.resources = { limits: { cpu: '1', 'nvidia.com/gpu': '2' } };
    expect(podRequests(p)).toEqual({ cpu: 1000, 'nvidia.com/gpu': 2, pods: 1 });
  });
});

describe('fits', () => {
  it('names each short resource with need, have and shortfall', () => {
    expect(fits({ cpu: 2200, memory: 100 * Mi }, { cpu: 1930, memory: 1000 * Mi })).toBe(
      'cpu: need 2200m, have 1930m (short 270m)',
    );
    expect(fits({ cpu: 100, 'nvidia.com/gpu': 1 }, { cpu: 1000 })).toBe(
      'nvidia.com/gpu: need 1, have 0 (short 1)',
    );
    expect(fits({ cpu: 100 }, { cpu: 100 })).toBeUndefined();
    expect(formatRequests({ pods: 1, memory: 3000 * Mi, cpu: 1600 })).toBe(
      'cpu 1600m, memory 3000Mi, pods 1',
    );
  });
});
