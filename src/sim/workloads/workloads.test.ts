import { describe, expect, it } from 'vitest';
import type {
  DaemonSet,
  Node,
  Pod,
  PodCondition,
  PodStatus,
  PodTemplateSpec,
  Taint,
} from '../../apis/core.ts';
import { schedulingRules } from '../../embedded/rules.ts';
import { FakeClock } from '../../kube/clock.ts';
import { deletionOrder, Expectations, safeEncode, withCondition } from './controller.ts';
import { daemonNodeFit, daemonPodNode } from './daemonset.ts';
import { podTemplateHash, templatesEqualIgnoringHash } from './deployment.ts';
import { ordinalOf } from './statefulset.ts';

const template: PodTemplateSpec = {
  metadata: { labels: { app: 'web' } },
  spec: { containers: [{ name: 'c', image: 'nginx:1.27' }] },
};

function pod(
  name: string,
  o: { node?: string; phase?: PodStatus['phase']; ready?: boolean; created: string },
): Pod {
  return {
    metadata: { name, creationTimestamp: o.created },
    spec: { containers: [], ...(o.node ? { nodeName: o.node } : {}) },
    status: {
      ...(o.phase ? { phase: o.phase } : {}),
      conditions: o.ready ? [{ type: 'Ready', status: 'True' }] : [],
    },
  };
}

describe('workload helpers', () => {
  it('pod-template-hash is stable, safe-encoded, ignores its own label and changes with the template', () => {
    const h = podTemplateHash(template);
    expect(h).toMatch(/^[bcdfghjklmnpqrstvwxz2456789]{6,10}$/);
    const reordered: PodTemplateSpec = { spec: template.spec, metadata: { labels: { app: 'web' } } };
    expect(podTemplateHash(reordered)).toBe(h);
    const labelled = { ...template, metadata: { labels: { app: 'web', 'pod-template-hash': h } } };
    expect(podTemplateHash(labelled)).toBe(h);
    expect(templatesEqualIgnoringHash(labelled, template)).toBe(true);
    const changed = { ...template, spec: { containers: [{ name: 'c', image: 'nginx:1.28' }] } };
    expect(podTemplateHash(changed)).not.toBe(h);
    expect(templatesEqualIgnoringHash(changed, template)).toBe(false);
    expect(safeEncode('0123')).toBe('4567');
  });

  it('ReplicaSet deletion order: unbound, pending, not ready, newest first', () => {
    const pods = [
      pod('old-ready', { node: 'n', phase: 'Running', ready: true, created: '2024-01-01T00:00:00Z' }),
      pod('new-ready', { node: 'n', phase: 'Running', ready: true, created: '2024-01-02T00:00:00Z' }),
      pod('running-unready', { node: 'n', phase: 'Running', created: '2024-01-01T00:00:00Z' }),
      pod('bound-pending', { node: 'n', phase: 'Pending', created: '2024-01-01T00:00:00Z' }),
      pod('unbound', { phase: 'Pending', created: '2023-01-01T00:00:00Z' }),
    ];
    expect(pods.sort(deletionOrder).map((p) => p.metadata.name)).toEqual([
      'unbound',
      'bound-pending',
      'running-unready',
      'new-ready',
      'old-ready',
    ]);
  });

  it('StatefulSet ordinals', () => {
    expect(ordinalOf('web', 'web-0')).toBe(0);
    expect(ordinalOf('web', 'web-12')).toBe(12);
    expect(ordinalOf('web', 'web-01')).toBeUndefined();
    expect(ordinalOf('web', 'web-x')).toBeUndefined();
    expect(ordinalOf('web', 'webapp-1')).toBeUndefined();
  });

  it('DaemonSet eligibility: selector, taints with automatic tolerations, NoSchedule does not evict', () => {
    const ds: DaemonSet = {
      metadata: { name: 'agent' },
      spec: {
        selector: { matchLabels: { app: 'agent' } },
        template: {
          metadata: { labels: { app: 'agent' } },
          spec: { containers: [], nodeSelector: { os: 'linux' } },
        },
      },
    };
    const node = (taints: Taint[] | undefined, os = 'linux'): Node => ({
      metadata: { name: 'n', labels: { os } },
      spec: { ...(taints ? { taints } : {}) },
    });
    expect(daemonNodeFit(schedulingRules, ds, node(undefined))).toEqual({
      shouldRun: true,
      shouldContinue: true,
    });
    expect(daemonNodeFit(schedulingRules, ds, node(undefined, 'windows'))).toEqual({
      shouldRun: false,
      shouldContinue: false,
    });
    expect(
      daemonNodeFit(
        schedulingRules,
        ds,
        node([{ key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' }]),
      ),
    ).toEqual({
      shouldRun: true,
      shouldContinue: true,
    });
    expect(daemonNodeFit(schedulingRules, ds, node([{ key: 'dedicated', effect: 'NoSchedule' }]))).toEqual({
      shouldRun: false,
      shouldContinue: true,
    });
    expect(
      daemonNodeFit(schedulingRules, ds, node([{ key: 'karpenter.sh/unregistered', effect: 'NoExecute' }])),
    ).toEqual({
      shouldRun: false,
      shouldContinue: false,
    });
    const dsPod: Pod = {
      metadata: {},
      spec: {
        containers: [],
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [
                { matchFields: [{ key: 'metadata.name', operator: 'In', values: ['n7'] }] },
              ],
            },
          },
        },
      },
    };
    expect(daemonPodNode(dsPod)).toBe('n7');
  });

  it('conditions keep lastTransitionTime unless the status flips; no-op changes give undefined', () => {
    const c1 = withCondition<PodCondition>(
      undefined,
      { type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: 'a' },
      'T1',
    );
    expect(c1).toEqual([
      {
        type: 'PodScheduled',
        status: 'False',
        reason: 'Unschedulable',
        message: 'a',
        lastTransitionTime: 'T1',
      },
    ]);
    expect(
      withCondition(
        c1,
        { type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: 'a' },
        'T2',
      ),
    ).toBeUndefined();
    const c2 = withCondition(
      c1,
      { type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: 'b' },
      'T2',
    );
    expect(c2?.[0]?.lastTransitionTime).toBe('T1');
    const c3 = withCondition(c2, { type: 'PodScheduled', status: 'True' }, 'T3');
    expect(c3?.[0]?.lastTransitionTime).toBe('T3');
  });

  it('expectations count created objects until the cache shows them, and expire', () => {
    const clock = new FakeClock();
    const e = new Expectations(clock, 10_000);
    const p: Pod = { metadata: { name: 'a-1', namespace: 'ns' }, spec: { containers: [] } };
    e.expectCreate('ns/a', 'ns/a-1', p);
    expect(e.pendingCreates('ns/a', () => false)).toEqual([p]);
    expect(e.pendingCreates('ns/a', (k) => k === 'ns/a-1')).toEqual([]);
    e.expectCreate('ns/a', 'ns/a-2', p);
    clock.advance(10_001);
    expect(e.pendingCreates('ns/a', () => false)).toEqual([]);
    e.expectDelete('ns/a', 'ns/a-3');
    expect([...e.pendingDeletes('ns/a', () => true)]).toEqual(['ns/a-3']);
    expect([...e.pendingDeletes('ns/a', () => false)]).toEqual([]);
  });
});
