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
  it('pod-level resources (PodLevelResources) replace the containers aggregate for cpu and memory only', () => {
    const p = makePod('a', { cpu: '500m', memory: '1Gi' });
    p.spec.containers.push({ name: 'b', resources: { requests: { cpu: '250m', 'nvidia.com/gpu': '1' } } });
    p.spec.overhead = { cpu: '10m' };
    p.spec.resources = { requests: { cpu: '2', memory: '3Gi' } };
    // pod-level cpu/memory win (2000m + overhead 10m, 3Gi); the extended resource stays the containers' sum
    expect(podRequests(p)).toEqual({ cpu: 2010, memory: 3072 * Mi, 'nvidia.com/gpu': 1, pods: 1 });
    // a pod-level limit without a request is the request (API defaulting); unset resources keep the aggregate
    p.spec.resources = { limits: { memory: '2Gi' } };
    expect(podRequests(p)).toEqual({ cpu: 760, memory: 2048 * Mi, 'nvidia.com/gpu': 1, pods: 1 });
    // a pod-level request lower than the containers' sum is still what is requested (kube-scheduler does the same)
    p.spec.resources = { requests: { cpu: '100m' } };
    expect(podRequests(p).cpu).toBe(110);
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
