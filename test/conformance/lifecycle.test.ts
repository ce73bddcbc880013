/**
 * API conformance: finalizers and deletionTimestamp, owner-reference garbage collection (background,
 * foreground, orphan), namespaces — through src/kube only.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OwnerReference } from '../../src/apis/core.ts';
import { isConflict, updateWithRetry } from '../../src/kube/index.ts';
import type { ConfigMap } from '../../src/kube/types.ts';
import { eventually, startCluster, type TestCluster } from './harness.ts';

let c: TestCluster;
beforeAll(async () => {
  c = await startCluster('life');
});
afterAll(async () => {
  await c?.stop();
});

function cm(name: string, extra: Partial<ConfigMap['metadata']> = {}): ConfigMap {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace: c.namespace, ...extra },
    data: {},
  };
}

function ownedBy(owner: ConfigMap, block = false): OwnerReference[] {
  return [
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      name: owner.metadata.name as string,
      uid: owner.metadata.uid as string,
      ...(block ? { blockOwnerDeletion: true } : {}),
    },
  ];
}

const removeFinalizers = (name: string) =>
  updateWithRetry(c.client, { kind: 'ConfigMap', name, namespace: c.namespace }, (o) => {
    o.metadata.finalizers = [];
  });

describe('finalizers', () => {
  it('delete sets deletionTimestamp and keeps the object until the last finalizer is removed', async () => {
    await c.client.create(cm('fin', { finalizers: ['capenter.test/hold', 'capenter.test/other'] }));
    const res = await c.client.delete('ConfigMap', 'fin', c.namespace);
    expect((res as ConfigMap).metadata?.deletionTimestamp).toBeTruthy();
    const held = await c.client.get('ConfigMap', 'fin', c.namespace);
    expect(held.metadata.deletionTimestamp).toBeTruthy();
    expect(held.metadata.finalizers).toEqual(['capenter.test/hold', 'capenter.test/other']);
    // a second delete is accepted and changes nothing
    await c.client.delete('ConfigMap', 'fin', c.namespace);
    // adding a new finalizer to a deleting object is forbidden; removing one is fine
    const err = await c.client
      .patch(
        'ConfigMap',
        'fin',
        c.namespace,
        [{ op: 'add', path: '/metadata/finalizers/-', value: 'capenter.test/new' }],
        {
          type: 'json',
        },
      )
      .catch((e: unknown) => e);
    expect((err as { code?: number }).code).toBe(422);
    const one = await c.client.patch(
      'ConfigMap',
      'fin',
      c.namespace,
      { metadata: { finalizers: ['capenter.test/other'] } },
      { type: 'merge' },
    );
    expect(one.metadata.finalizers).toEqual(['capenter.test/other']);
    expect(await c.client.tryGet('ConfigMap', 'fin', c.namespace)).toBeDefined();
    await removeFinalizers('fin');
    await eventually(
      async () => (await c.client.tryGet('ConfigMap', 'fin', c.namespace)) === undefined,
      'object gone',
    );
  });

  it('a stale update of a deleting object still conflicts', async () => {
    const obj = await c.client.create(cm('fin-stale', { finalizers: ['capenter.test/hold'] }));
    await c.client.delete('ConfigMap', 'fin-stale', c.namespace);
    const err = await c.client
      .update({ ...obj, metadata: { ...obj.metadata, finalizers: [] } })
      .catch((e: unknown) => e);
    expect(isConflict(err)).toBe(true);
    await removeFinalizers('fin-stale');
  });
});

describe('garbage collection', () => {
  it('background: deleting the owner removes dependents afterwards', async () => {
    const owner = await c.client.create(cm('bg-owner'));
    await c.client.create(cm('bg-dep-1', { ownerReferences: ownedBy(owner) }));
    await c.client.create(cm('bg-dep-2', { ownerReferences: ownedBy(owner) }));
    await c.client.delete('ConfigMap', 'bg-owner', c.namespace, { propagationPolicy: 'Background' });
    expect(await c.client.tryGet('ConfigMap', 'bg-owner', c.namespace)).toBeUndefined();
    await eventually(
      async () =>
        (await c.client.tryGet('ConfigMap', 'bg-dep-1', c.namespace)) === undefined &&
        (await c.client.tryGet('ConfigMap', 'bg-dep-2', c.namespace)) === undefined,
      'dependents collected',
      30_000,
    );
  });

  it('foreground: the owner waits (foregroundDeletion) until blocking dependents are gone', async () => {
    const owner = await c.client.create(cm('fg-owner'));
    await c.client.create(
      cm('fg-dep', { ownerReferences: ownedBy(owner, true), finalizers: ['capenter.test/hold'] }),
    );
    await c.client.delete('ConfigMap', 'fg-owner', c.namespace, { propagationPolicy: 'Foreground' });
    const waiting = await c.client.get('ConfigMap', 'fg-owner', c.namespace);
    expect(waiting.metadata.deletionTimestamp).toBeTruthy();
    expect(waiting.metadata.finalizers).toContain('foregroundDeletion');
    const dep = await eventually(
      async () => {
        const d = await c.client.get('ConfigMap', 'fg-dep', c.namespace);
        return d.metadata.deletionTimestamp ? d : undefined;
      },
      'dependent marked for deletion',
      30_000,
    );
    expect(dep.metadata.finalizers).toEqual(['capenter.test/hold']);
    expect(await c.client.tryGet('ConfigMap', 'fg-owner', c.namespace)).toBeDefined();
    await removeFinalizers('fg-dep');
    await eventually(
      async () => (await c.client.tryGet('ConfigMap', 'fg-owner', c.namespace)) === undefined,
      'owner removed after its dependents',
      30_000,
    );
  });

  it('orphan: dependents stay and lose the owner reference', async () => {
    const owner = await c.client.create(cm('or-owner'));
    await c.client.create(cm('or-dep', { ownerReferences: ownedBy(owner) }));
    await c.client.delete('ConfigMap', 'or-owner', c.namespace, { propagationPolicy: 'Orphan' });
    await eventually(
      async () => (await c.client.tryGet('ConfigMap', 'or-owner', c.namespace)) === undefined,
      'owner gone',
      30_000,
    );
    const dep = await eventually(
      async () => {
        const d = await c.client.get('ConfigMap', 'or-dep', c.namespace);
        return (d.metadata.ownerReferences ?? []).length === 0 ? d : undefined;
      },
      'owner reference removed',
      30_000,
    );
    expect(dep.metadata.deletionTimestamp).toBeUndefined();
  });

  it('cluster-scoped owner (Node) collects namespaced dependents', async () => {
    const nodeName = c.name('gc-node');
    const node = await c.client.create({ apiVersion: 'v1', kind: 'Node', metadata: { name: nodeName } });
    await c.client.create(
      cm('node-dep', {
        ownerReferences: [
          { apiVersion: 'v1', kind: 'Node', name: nodeName, uid: node.metadata?.uid as string },
        ],
      }),
    );
    await c.client.delete('Node', nodeName);
    await eventually(
      async () => (await c.client.tryGet('ConfigMap', 'node-dep', c.namespace)) === undefined,
      'dependent of the node collected',
      30_000,
    );
  });
});
