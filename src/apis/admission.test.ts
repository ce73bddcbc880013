import { describe, expect, it } from 'vitest';
import { admitPod, type PriorityClass, type RuntimeClass } from './admission.ts';
import type { Pod } from './core.ts';

const pod = (spec: Partial<Pod['spec']> = {}, namespace = 'team-a'): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'p', namespace },
  spec: { containers: [{ name: 'app', image: 'registry.example/app:1' }], ...spec },
});
const kata: RuntimeClass = {
  apiVersion: 'node.k8s.io/v1',
  kind: 'RuntimeClass',
  metadata: { name: 'kata' },
  handler: 'kata',
  overhead: { podFixed: { cpu: '250m', memory: '160Mi' } },
  scheduling: {
    nodeSelector: { 'runtime/kata': 'true' },
    tolerations: [{ key: 'runtime', operator: 'Equal', value: 'kata', effect: 'NoSchedule' }],
  },
};
const high: PriorityClass = {
  apiVersion: 'scheduling.k8s.io/v1',
  kind: 'PriorityClass',
  metadata: { name: 'high' },
  value: 1000,
  preemptionPolicy: 'Never',
};

describe('admission (what the API server does to a pod before anyone sees it)', () => {
  it('RuntimeClass: overhead, nodeSelector and tolerations; a missing class or a conflicting selector is rejected', () => {
    const r = admitPod(pod({ runtimeClassName: 'kata', nodeSelector: { team: 'a' } }), {
      runtimeClasses: [kata],
    });
    if (!('pod' in r)) throw new Error(r.rejected);
    expect(r.pod.spec.overhead).toEqual({ cpu: '250m', memory: '160Mi' });
    expect(r.pod.spec.nodeSelector).toEqual({ team: 'a', 'runtime/kata': 'true' });
    expect(r.pod.spec.tolerations).toContainEqual({
      key: 'runtime',
      operator: 'Equal',
      value: 'kata',
      effect: 'NoSchedule',
    });
    expect(admitPod(pod({ runtimeClassName: 'gvisor' }), { runtimeClasses: [kata] })).toEqual({
      rejected: 'pod rejected: RuntimeClass "gvisor" not found',
    });
    expect(
      admitPod(pod({ runtimeClassName: 'kata', nodeSelector: { 'runtime/kata': 'false' } }), {
        runtimeClasses: [kata],
      }),
    ).toMatchObject({ rejected: expect.stringContaining('conflict in nodeSelector') });
  });

  it('LimitRange: container defaults of the pod namespace only', () => {
    const lr = {
      apiVersion: 'v1',
      kind: 'LimitRange',
      metadata: { name: 'defaults', namespace: 'team-a' },
      spec: {
        limits: [
          { type: 'Container', defaultRequest: { cpu: '300m' }, default: { cpu: '1', memory: '512Mi' } },
        ],
      },
    };
    const r = admitPod(pod(), { limitRanges: [lr] });
    if (!('pod' in r)) throw new Error(r.rejected);
    expect(r.pod.spec.containers[0]!.resources).toEqual({
      requests: { cpu: '300m', memory: '512Mi' },
      limits: { cpu: '1', memory: '512Mi' },
    });
    const other = admitPod(pod({}, 'team-b'), { limitRanges: [lr] });
    if (!('pod' in other)) throw new Error(other.rejected);
    expect(other.pod.spec.containers[0]!.resources).toBeUndefined();
  });

  it('PriorityClass: priority and preemptionPolicy from the class, the global default, or the built-ins', () => {
    const r = admitPod(pod({ priorityClassName: 'high' }), { priorityClasses: [high] });
    expect('pod' in r && [r.pod.spec.priority, r.pod.spec.preemptionPolicy]).toEqual([1000, 'Never']);
    const def = admitPod(pod(), {
      priorityClasses: [{ ...high, metadata: { name: 'default' }, value: 10, globalDefault: true }],
    });
    expect('pod' in def && [def.pod.spec.priorityClassName, def.pod.spec.priority]).toEqual(['default', 10]);
    const sys = admitPod(pod({ priorityClassName: 'system-node-critical' }), {});
    expect('pod' in sys && sys.pod.spec.priority).toBe(2000001000);
    expect(admitPod(pod(), {})).toMatchObject({
      pod: { spec: { priority: 0, preemptionPolicy: 'PreemptLowerPriority' } },
    });
    expect(admitPod(pod({ priorityClassName: 'nope' }), {})).toEqual({
      rejected: 'no PriorityClass with name nope was found',
    });
  });

  it('DefaultTolerationSeconds: not-ready and unreachable for 300 s unless already tolerated', () => {
    const r = admitPod(
      pod({
        tolerations: [
          {
            key: 'node.kubernetes.io/unreachable',
            operator: 'Exists',
            effect: 'NoExecute',
            tolerationSeconds: 60,
          },
        ],
      }),
      {},
    );
    if (!('pod' in r)) throw new Error(r.rejected);
    expect(r.pod.spec.tolerations).toEqual([
      {
        key: 'node.kubernetes.io/unreachable',
        operator: 'Exists',
        effect: 'NoExecute',
        tolerationSeconds: 60,
      },
      {
        key: 'node.kubernetes.io/not-ready',
        operator: 'Exists',
        effect: 'NoExecute',
        tolerationSeconds: 300,
      },
    ]);
  });
});
