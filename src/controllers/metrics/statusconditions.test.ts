/**
 * operatorpkg's status-condition and termination metrics (issue 26 item 5): counts and ages per object and
 * condition, a transition counted when a condition's status changes (also when first seen), the time spent in the
 * previous status, the deprecated generic metrics with `group`/`kind`, and termination times.
 */
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../apis/core.ts';
import { prometheusLabel, StatusConditionMetrics, type StatusKind } from './statusconditions.ts';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const iso = (s: number): string => new Date(T0 + s * 1000).toISOString();

/** A NodeClaim-like object with `conditions` ([type, status, reason, lastTransition seconds after T0]). */
function obj(name: string, conditions: [string, string, string, number][], deletedAt?: number): KubeObject {
  return {
    metadata: {
      name,
      labels: { 'karpenter.sh/nodepool': 'default' },
      ...(deletedAt !== undefined ? { deletionTimestamp: iso(deletedAt) } : {}),
    },
    status: {
      conditions: conditions.map(([type, status, reason, at]) => ({
        type,
        status,
        reason,
        lastTransitionTime: iso(at),
      })),
    },
  };
}

/** Samples of metric `name` in `registry` as `labels JSON → value`. */
async function values(registry: Registry, name: string): Promise<Record<string, number>> {
  const m = await registry.getSingleMetric(name)!.get();
  return Object.fromEntries(
    m.values.map((v) => [
      `${(v as { metricName?: string }).metricName ?? name}${JSON.stringify(v.labels)}`,
      v.value,
    ]),
  );
}

describe('StatusConditionMetrics', () => {
  it('exports counts, ages, transitions, transition times and termination times under upstream names', async () => {
    const registry = new Registry();
    let objects: KubeObject[] = [obj('nc-1', [['Launched', 'False', 'Launching', 0]])];
    const kinds: StatusKind[] = [
      {
        metricName: 'nodeclaim',
        group: 'karpenter.sh',
        kind: 'NodeClaim',
        deprecated: true,
        labelKeys: [],
        list: () => objects,
      },
      {
        metricName: 'node',
        group: '',
        kind: 'Node',
        deprecated: false,
        labelKeys: ['karpenter.sh/nodepool'],
        list: () => objects,
      },
    ];
    const m = new StatusConditionMetrics(registry, kinds);
    m.update(T0 + 10_000);
    expect(await values(registry, 'operator_nodeclaim_status_condition_count')).toEqual({
      'operator_nodeclaim_status_condition_count{"namespace":"","name":"nc-1","type":"Launched","status":"False","reason":"Launching"}': 1,
    });
    expect(await values(registry, 'operator_nodeclaim_status_condition_current_status_seconds')).toEqual({
      'operator_nodeclaim_status_condition_current_status_seconds{"namespace":"","name":"nc-1","type":"Launched","status":"False","reason":"Launching"}': 10,
    });
    // first seen counts as a transition, as upstream (observed status "" → False)
    expect(await values(registry, 'operator_nodeclaim_status_condition_transitions_total')).toEqual({
      'operator_nodeclaim_status_condition_transitions_total{"type":"Launched","status":"False","reason":"Launching"}': 1,
    });
    // the Node kind carries its label keys as Prometheus labels
    expect(Object.keys(await values(registry, 'operator_node_status_condition_count'))).toEqual([
      'operator_node_status_condition_count{"namespace":"","name":"nc-1","type":"Launched","status":"False","reason":"Launching","karpenter_sh_nodepool":"default"}',
    ]);

    // Launched False → True 30 s after T0: one transition, 30 s in False; the same status again counts nothing
    objects = [obj('nc-1', [['Launched', 'True', 'Launched', 30]])];
    m.update(T0 + 40_000);
    m.update(T0 + 41_000);
    const transitions = await values(registry, 'operator_nodeclaim_status_condition_transitions_total');
    expect(
      transitions[
        'operator_nodeclaim_status_condition_transitions_total{"type":"Launched","status":"True","reason":"Launched"}'
      ],
    ).toBe(1);
    const durations = await values(registry, 'operator_nodeclaim_status_condition_transition_seconds');
    expect(
      durations[
        'operator_nodeclaim_status_condition_transition_seconds_sum{"type":"Launched","status":"False"}'
      ],
    ).toBe(30);
    expect(
      durations[
        'operator_nodeclaim_status_condition_transition_seconds_count{"type":"Launched","status":"False"}'
      ],
    ).toBe(1);
    // the deprecated generic metrics: group and kind, only for kinds registered with them
    const generic = await values(registry, 'operator_status_condition_count');
    expect(Object.keys(generic)).toEqual([
      'operator_status_condition_count{"namespace":"","name":"nc-1","type":"Launched","status":"True","reason":"Launched","group":"karpenter.sh","kind":"NodeClaim"}',
    ]);

    // deleted at 50 s, gone at 65 s: 15 s terminating, then one termination observation of 15 s
    objects = [obj('nc-1', [['Launched', 'True', 'Launched', 30]], 50)];
    m.update(T0 + 60_000);
    expect(await values(registry, 'operator_nodeclaim_termination_current_time_seconds')).toEqual({
      'operator_nodeclaim_termination_current_time_seconds{"namespace":"","name":"nc-1"}': 10,
    });
    objects = [];
    m.update(T0 + 65_000);
    expect(await values(registry, 'operator_nodeclaim_termination_current_time_seconds')).toEqual({});
    expect(await values(registry, 'operator_nodeclaim_status_condition_count')).toEqual({});
    const termination = await values(registry, 'operator_nodeclaim_termination_duration_seconds');
    expect(termination['operator_nodeclaim_termination_duration_seconds_sum{}']).toBe(15);
    const genericTermination = await values(registry, 'operator_termination_duration_seconds');
    expect(
      genericTermination[
        'operator_termination_duration_seconds_count{"group":"karpenter.sh","kind":"NodeClaim"}'
      ],
    ).toBe(1);
  });

  it('spells label keys as upstream toPrometheusLabel', () => {
    expect(prometheusLabel('karpenter.k8s.aws/ec2nodeclass')).toBe('karpenter_k8s_aws_ec2nodeclass');
    expect(prometheusLabel('karpenter.sh/initialized')).toBe('karpenter_sh_initialized');
  });
});
