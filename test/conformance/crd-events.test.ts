/**
 * API conformance: CustomResourceDefinition registration serving a new resource (discovery, CRUD,
 * status subresource), capenter's own CRDs (upstream NodeClaim CRD, informer index by providerID) and
 * the Event recorder (create, dedupe by count, window expiry) — through src/kube only.
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { NodeClaim } from '../../src/apis/karpenter.ts';
import {
  EventRecorder,
  FakeClock,
  IndexNames,
  Informer,
  indexByProviderID,
  isNotFound,
  RealClock,
  Resources,
} from '../../src/kube/index.ts';
import type { CustomResourceDefinition, KubeEvent } from '../../src/kube/types.ts';
import { eventually, startCluster, type TestCluster, testPod } from './harness.ts';

const here = dirname(fileURLToPath(import.meta.url));
const crdDir = resolve(here, '../fixtures/crds');

let c: TestCluster;
beforeAll(async () => {
  c = await startCluster('crd');
});
afterAll(async () => {
  await c?.stop();
});

describe('CustomResourceDefinition', () => {
  it('registering a CRD serves the new resource: discovery, CRUD, status subresource, cluster scope', async () => {
    const group = `${c.name('w')}.capenter.test`;
    const crd: CustomResourceDefinition = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: `widgets.${group}` },
      spec: {
        group,
        names: { kind: 'Widget', plural: 'widgets', singular: 'widget', listKind: 'WidgetList' },
        scope: 'Namespaced',
        versions: [
          {
            name: 'v1',
            served: true,
            storage: true,
            subresources: { status: {} },
            schema: {
              openAPIV3Schema: {
                type: 'object',
                properties: {
                  spec: { type: 'object', properties: { size: { type: 'integer' } } },
                  status: { type: 'object', properties: { ready: { type: 'boolean' } } },
                },
              },
            },
          },
        ],
      },
    };
    await c.client.create(crd);
    try {
      const rt = await eventually(
        async () => {
          try {
            return await c.client.discover(`${group}/v1`, 'Widget');
          } catch {
            return undefined;
          }
        },
        'the new resource in discovery',
        30_000,
      );
      expect(rt).toEqual({ group, version: 'v1', plural: 'widgets', kind: 'Widget', namespaced: true });
      const w = await eventually(
        async () =>
          c.client.create({
            apiVersion: `${group}/v1`,
            kind: 'Widget',
            metadata: { name: 'w1', namespace: c.namespace },
            spec: { size: 3 },
          }),
        'a Widget created',
        30_000,
      );
      expect(w.metadata?.uid).toBeTruthy();
      expect(w.metadata?.generation).toBe(1);
      const listed = await c.client.list(rt, { namespace: c.namespace });
      expect(listed.items.map((o) => [o.kind, o.metadata?.name, (o.spec as { size: number }).size])).toEqual([
        ['Widget', 'w1', 3],
      ]);
      const st = await c.client.patchStatus(rt, 'w1', c.namespace, {
        status: { ready: true },
        spec: { size: 9 },
      });
      expect(st.status).toEqual({ ready: true });
      expect((st.spec as { size: number }).size).toBe(3);
      expect(st.metadata?.generation).toBe(1);
      const bumped = await c.client.patch(rt, 'w1', c.namespace, { spec: { size: 4 } });
      expect(bumped.metadata?.generation).toBe(2);
      // the kind name now resolves through the registry
      expect(c.client.resource('Widget').plural).toBe('widgets');
      await c.client.delete(rt, 'w1', c.namespace);
      expect(await c.client.tryGet(rt, 'w1', c.namespace)).toBeUndefined();
    } finally {
      await c.client.delete('CustomResourceDefinition', `widgets.${group}`).catch((e) => {
        if (!isNotFound(e)) throw e;
      });
    }
  });

  it('upstream Karpenter NodeClaim CRD: create, status with providerID, informer index', async (ctx) => {
    // installs (and then deletes) a karpenter.sh CRD: only on a cluster that exists for this test run
    ctx.skip(!c.disposable, 'installs and deletes a karpenter.sh CRD: only on a cluster made for this run');
    const crd = parse(readFileSync(resolve(crdDir, 'karpenter/karpenter.sh_nodeclaims.yaml'), 'utf8'));
    try {
      await c.client.create(crd as CustomResourceDefinition);
      await eventually(
        async () => {
          try {
            return (await c.client.list(Resources.NodeClaim)).items !== undefined;
          } catch {
            return false;
          }
        },
        'nodeclaims served',
        30_000,
      );
      const inf = new Informer(c.client, Resources.NodeClaim, { clock: new RealClock() });
      inf.cache.addIndexer(IndexNames.providerID, indexByProviderID);
      inf.start();
      await inf.waitForSync(10_000);
      const nc: NodeClaim = {
        apiVersion: 'karpenter.sh/v1',
        kind: 'NodeClaim',
        metadata: { name: 'default-abcde', labels: { 'karpenter.sh/nodepool': 'default' } },
        spec: {
          nodeClassRef: { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: 'default' },
          requirements: [{ key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] }],
        },
      };
      const created = await c.client.create(nc);
      expect(created.metadata.uid).toBeTruthy();
      await c.client.patchStatus(Resources.NodeClaim, 'default-abcde', undefined, {
        status: { providerID: 'kwok://default-abcde', nodeName: 'default-abcde' },
      });
      const found = await eventually(
        () => inf.cache.byIndex(IndexNames.providerID, 'kwok://default-abcde')[0],
        'NodeClaim indexed by providerID',
      );
      expect(found.metadata.name).toBe('default-abcde');
      expect(found.spec.requirements[0]?.values).toEqual(['amd64']);
      await inf.stop();
    } finally {
      await c.client.delete('CustomResourceDefinition', 'nodeclaims.karpenter.sh').catch((e) => {
        if (!isNotFound(e)) throw e;
      });
    }
  });
});

describe('events', () => {
  it('records an Event with involvedObject, source and count; duplicates bump count', async () => {
    const pod = await c.client.create(testPod(c.namespace, 'ev-pod'));
    const clock = new FakeClock(Date.parse('2025-06-01T10:00:00Z'));
    const errors: unknown[] = [];
    const rec = new EventRecorder(c.client, { clock, host: 'capenter-0', onError: (e) => errors.push(e) });
    const first = await rec.warning(pod, 'FailedDraining', 'pod has do-not-disrupt');
    expect(errors).toEqual([]);
    expect(first).toMatchObject({
      type: 'Warning',
      reason: 'FailedDraining',
      message: 'pod has do-not-disrupt',
      count: 1,
      firstTimestamp: '2025-06-01T10:00:00Z',
      lastTimestamp: '2025-06-01T10:00:00Z',
      source: { component: 'karpenter', host: 'capenter-0' },
      involvedObject: {
        kind: 'Pod',
        apiVersion: 'v1',
        name: 'ev-pod',
        namespace: c.namespace,
        uid: pod.metadata.uid,
      },
    });
    clock.advance(30_000);
    const dups = await Promise.all([
      rec.warning(pod, 'FailedDraining', 'pod has do-not-disrupt'),
      rec.warning(pod, 'FailedDraining', 'pod has do-not-disrupt'),
    ]);
    expect(dups.map((e) => e?.count)).toEqual([2, 3]);
    expect(dups[1]?.lastTimestamp).toBe('2025-06-01T10:00:30Z');
    expect(dups[1]?.metadata.name).toBe(first?.metadata.name);
    await rec.normal(pod, 'Nominated', 'pod should schedule on nodeclaim default-x');
    const listed = await c.client.list(Resources.Event, {
      namespace: c.namespace,
      fieldSelector: `involvedObject.name=ev-pod`,
    });
    const byReason = Object.fromEntries(listed.items.map((e: KubeEvent) => [e.reason, e.count]));
    expect(byReason).toEqual({ FailedDraining: 3, Nominated: 1 });
    // after the dedupe window a new Event object is created
    clock.advance(601_000);
    const fresh = await rec.warning(pod, 'FailedDraining', 'pod has do-not-disrupt');
    expect(fresh?.count).toBe(1);
    expect(fresh?.metadata.name).not.toBe(first?.metadata.name);
    await rec.flush();
  });

  it('events about cluster-scoped objects go to the default namespace', async () => {
    const nodeName = c.name('ev-node');
    const node = await c.client.create({ apiVersion: 'v1', kind: 'Node', metadata: { name: nodeName } });
    const rec = new EventRecorder(c.client, { clock: new RealClock() });
    const ev = await rec.normal(node, 'DisruptionBlocked', 'node is not managed');
    expect(ev?.metadata.namespace).toBe('default');
    expect(ev?.involvedObject).toMatchObject({ kind: 'Node', name: nodeName });
    await c.client.delete('Node', nodeName);
    await c.client.delete('Event', ev?.metadata.name as string, 'default');
  });
});
