import { describe, expect, it } from 'vitest';
import type { Pod } from '../apis/core.ts';
import type { NodeClaim } from '../apis/karpenter.ts';
import { Cache, indexByLabel, indexByProviderID, indexPodsByNodeName } from './cache.ts';

function pod(name: string, node?: string, labels: Record<string, string> = {}, rv = '1'): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', labels, resourceVersion: rv },
    spec: { containers: [{ name: 'c' }], ...(node ? { nodeName: node } : {}) },
  };
}

describe('Cache', () => {
  it('indexes pods by node name and keeps the index current on update and delete', () => {
    const c = new Cache<Pod>().addIndexer('node', indexPodsByNodeName);
    c.upsert(pod('a', 'n1'));
    c.upsert(pod('b', 'n1'));
    c.upsert(pod('c'));
    expect(
      c
        .byIndex('node', 'n1')
        .map((p) => p.metadata.name)
        .sort(),
    ).toEqual(['a', 'b']);
    c.upsert(pod('b', 'n2', {}, '2'));
    expect(c.byIndex('node', 'n1').map((p) => p.metadata.name)).toEqual(['a']);
    expect(c.byIndex('node', 'n2').map((p) => p.metadata.name)).toEqual(['b']);
    c.remove('default/a');
    expect(c.byIndex('node', 'n1')).toEqual([]);
    expect(c.indexValues('node')).toEqual(['n2']);
    expect(() => c.byIndex('nope', 'x')).toThrow(/no index "nope"/);
  });

  it('indexes NodeClaims by providerID and existing objects when an index is added late', () => {
    const c = new Cache<NodeClaim>();
    const nc = (name: string, providerID?: string): NodeClaim => ({
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodeClaim',
      metadata: { name },
      spec: {
        nodeClassRef: { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: 'default' },
        requirements: [],
      },
      ...(providerID ? { status: { providerID } } : {}),
    });
    c.upsert(nc('x', 'kwok://x'));
    c.upsert(nc('y'));
    c.addIndexer('pid', indexByProviderID);
    expect(c.byIndex('pid', 'kwok://x').map((o) => o.metadata.name)).toEqual(['x']);
    expect(c.getByName('x')?.status?.providerID).toBe('kwok://x');
  });

  it('lists with namespace and label selectors, and indexes by label', () => {
    const c = new Cache<Pod>().addIndexer('app', indexByLabel('app'));
    c.upsert(pod('a', undefined, { app: 'web' }));
    c.upsert(pod('b', undefined, { app: 'db' }));
    c.upsert({
      ...pod('c', undefined, { app: 'web' }),
      metadata: { name: 'c', namespace: 'other', labels: { app: 'web' } },
    });
    expect(c.list({ labelSelector: 'app=web' }).length).toBe(2);
    expect(
      c.list({ labelSelector: { app: 'web' }, namespace: 'default' }).map((p) => p.metadata.name),
    ).toEqual(['a']);
    expect(c.list({ fieldSelector: 'metadata.name=b' }).map((p) => p.metadata.name)).toEqual(['b']);
    expect(c.byIndex('app', 'web').length).toBe(2);
  });

  it('replace reports added, updated (resourceVersion changed) and deleted objects', () => {
    const c = new Cache<Pod>();
    c.upsert(pod('keep'));
    c.upsert(pod('change'));
    c.upsert(pod('drop'));
    const d = c.replace([pod('keep'), pod('change', undefined, {}, '9'), pod('new')], '42');
    expect(d.added.map((p) => p.metadata.name)).toEqual(['new']);
    expect(d.updated.map(([o, n]) => [o.metadata.resourceVersion, n.metadata.resourceVersion])).toEqual([
      ['1', '9'],
    ]);
    expect(d.deleted.map((p) => p.metadata.name)).toEqual(['drop']);
    expect(c.size()).toBe(3);
    expect(c.resourceVersion).toBe('42');
  });
});
