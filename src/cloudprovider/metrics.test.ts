import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { kwokNodeClaim, kwokTestbed } from './kwok/testing.ts';
import { errorTypeLabel, METRIC_DURATION, METRIC_ERRORS, withMetrics } from './metrics.ts';
import {
  CreateError,
  InsufficientCapacityError,
  NodeClaimNotFoundError,
  NodeClassNotReadyError,
} from './types.ts';

const c5 = [{ key: 'node.kubernetes.io/instance-type', operator: 'In' as const, values: ['c5.large'] }];

async function values(registry: Registry, name: string) {
  const m = await registry.getSingleMetric(name)!.get();
  // Histogram values carry `metricName` (`_bucket`, `_sum`, `_count`) at runtime; prom-client's types omit it.
  return m.values as Array<(typeof m.values)[number] & { metricName?: string }>;
}

describe('withMetrics', () => {
  it('records karpenter_cloudprovider_duration_seconds per method with a fake time source', async () => {
    const registry = new Registry();
    const { provider } = kwokTestbed();
    let t = 0;
    const p = withMetrics(provider, registry, { controller: 'nodeclaim.lifecycle', now: () => (t += 250) });
    expect(p.name).toBe('kwok');
    expect(p.supportedNodeClasses()).toEqual([{ group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass' }]);
    const nc = await p.create(kwokNodeClaim('m-1', c5));
    await p.get(nc.status!.providerID!);
    await p.list();
    const v = await values(registry, METRIC_DURATION);
    const count = (method: string) =>
      v.find((x) => x.metricName === `${METRIC_DURATION}_count` && x.labels.method === method)?.value;
    const sum = (method: string) =>
      v.find((x) => x.metricName === `${METRIC_DURATION}_sum` && x.labels.method === method)?.value;
    expect(count('Create')).toBe(1);
    expect(count('Get')).toBe(1);
    expect(count('List')).toBe(1);
    expect(count('Delete')).toBeUndefined();
    expect(sum('Create')).toBe(0.25);
    expect(v.find((x) => x.labels.method === 'Create')?.labels).toMatchObject({
      controller: 'nodeclaim.lifecycle',
      provider: 'kwok',
    });
  });

  it('counts errors by upstream error label and rethrows them unchanged', async () => {
    const registry = new Registry();
    const { provider } = kwokTestbed();
    const p = withMetrics(provider, registry);
    const nc = await p.create(kwokNodeClaim('m-2', c5));
    await p.delete(nc);
    const err = await p.delete(nc).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NodeClaimNotFoundError);
    const ice = await p
      .create(
        kwokNodeClaim('m-3', [
          { key: 'node.kubernetes.io/instance-type', operator: 'In', values: ['z9.huge'] },
        ]),
      )
      .catch((e: unknown) => e);
    expect(ice).toBeInstanceOf(InsufficientCapacityError);
    const errs = await values(registry, METRIC_ERRORS);
    expect(errs.map((x) => ({ ...x.labels, value: x.value }))).toEqual([
      { controller: '', method: 'Delete', provider: 'kwok', error: 'NodeClaimNotFoundError', value: 1 },
      { controller: '', method: 'Create', provider: 'kwok', error: 'InsufficientCapacityError', value: 1 },
    ]);
    const dur = await values(registry, METRIC_DURATION);
    expect(
      dur.find((x) => x.metricName === `${METRIC_DURATION}_count` && x.labels.method === 'Delete')?.value,
    ).toBe(2);
  });

  it('reuses the metrics already registered (one decorated provider per controller)', async () => {
    const registry = new Registry();
    const { provider } = kwokTestbed();
    const a = withMetrics(provider, registry, { controller: 'a' });
    const b = withMetrics(provider, registry, { controller: 'b' });
    await a.list();
    await b.list();
    const v = await values(registry, METRIC_DURATION);
    const counts = v
      .filter((x) => x.metricName === `${METRIC_DURATION}_count`)
      .map((x) => `${x.labels.controller}:${x.value}`);
    expect(counts).toEqual(['a:1', 'b:1']);
  });

  it('errorTypeLabel maps the well-known errors and "" for others', () => {
    expect(errorTypeLabel(new NodeClassNotReadyError('x'))).toBe('NodeClassNotReadyError');
    expect(errorTypeLabel(new InsufficientCapacityError('x'))).toBe('InsufficientCapacityError');
    expect(errorTypeLabel(new NodeClaimNotFoundError('x'))).toBe('NodeClaimNotFoundError');
    expect(errorTypeLabel(new CreateError('x', 'Reason'))).toBe('');
    expect(errorTypeLabel(new Error('boom'))).toBe('');
  });
});
