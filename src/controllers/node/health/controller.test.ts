import { describe, expect, it } from 'vitest';
import type { Node, NodeCondition } from '../../../apis/core.ts';
import type { RepairPolicy } from '../../../cloudprovider/types.ts';
import { allowedUnhealthy, findUnhealthyCondition, matchesRepairPolicy, toSnakeCase } from './controller.ts';

const node = (...conditions: NodeCondition[]): Node => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name: 'n' },
  status: { conditions },
});
const T0 = Date.parse('2026-01-01T00:00:00Z');
const at = (ms: number) => new Date(ms).toISOString();

describe('node health core', () => {
  it('allowedUnhealthy is 20% rounded up, as upstream', () => {
    expect([0, 1, 3, 5, 6, 10, 11, 100].map(allowedUnhealthy)).toEqual([0, 1, 1, 1, 2, 2, 3, 20]);
  });

  it('the matching policy whose toleration ends first wins (upstream: requeue for the closest condition)', () => {
    const policies: RepairPolicy[] = [
      { conditionType: 'BadNode', conditionStatus: 'False', tolerationDurationSeconds: 3600 },
      { conditionType: 'ValidUnhealthyCondition', conditionStatus: 'False', tolerationDurationSeconds: 1800 },
    ];
    const n = node(
      { type: 'ValidUnhealthyCondition', status: 'False', lastTransitionTime: at(T0) },
      { type: 'BadNode', status: 'False', lastTransitionTime: at(T0) },
    );
    const m = findUnhealthyCondition(n, policies);
    expect(m?.condition.type).toBe('ValidUnhealthyCondition');
    expect(m?.terminationAt).toBe(T0 + 1800_000);
    // wrong status or type: no match
    expect(
      findUnhealthyCondition(node({ type: 'BadNode', status: 'True', lastTransitionTime: at(T0) }), policies),
    ).toBeUndefined();
    expect(
      findUnhealthyCondition(node({ type: 'FakeHealthyNode', status: 'False' }), policies),
    ).toBeUndefined();
    expect(matchesRepairPolicy(node({ type: 'BadNode', status: 'False' }), policies)).toBe(true);
    expect(matchesRepairPolicy(node({ type: 'BadNode', status: 'Unknown' }), policies)).toBe(false);
    // no lastTransitionTime: upstream's zero time, the toleration is long over
    expect(findUnhealthyCondition(node({ type: 'BadNode', status: 'False' }), policies)?.terminationAt).toBe(
      3600_000,
    );
  });

  it('toSnakeCase matches upstream pretty.ToSnakeCase', () => {
    expect(
      ['Ready', 'AcceleratedHardwareReady', 'ContainerRuntimeReady', 'KernelReady'].map(toSnakeCase),
    ).toEqual(['ready', 'accelerated_hardware_ready', 'container_runtime_ready', 'kernel_ready']);
  });
});
