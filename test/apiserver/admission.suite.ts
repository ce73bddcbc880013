/** The embedded API server runs the same admission as `simulate` (apis/admission.ts) on every Pod create. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pod, startServer, type TestServer } from './helpers.ts';

let s: TestServer;
beforeAll(async () => {
  s = await startServer();
});
afterAll(async () => {
  await s.stop();
});

describe('pod admission in the embedded API server', () => {
  it('priority 0 / PreemptLowerPriority and the DefaultTolerationSeconds tolerations', async () => {
    const r = await s.req('POST', '/api/v1/namespaces/default/pods', pod('plain'));
    expect(r.status).toBe(201);
    expect([r.body.spec.priority, r.body.spec.preemptionPolicy]).toEqual([0, 'PreemptLowerPriority']);
    expect(r.body.spec.tolerations).toContainEqual({
      key: 'node.kubernetes.io/not-ready',
      operator: 'Exists',
      effect: 'NoExecute',
      tolerationSeconds: 300,
    });
  });

  it('a pod naming a missing RuntimeClass or PriorityClass is rejected (403) with the API server message', async () => {
    const rc = await s.req(
      'POST',
      '/api/v1/namespaces/default/pods',
      pod('rc', { runtimeClassName: 'kata' }),
    );
    expect(rc.status).toBe(403);
    expect(rc.body.message).toBe('pods "rc" is forbidden: pod rejected: RuntimeClass "kata" not found');
    const pc = await s.req(
      'POST',
      '/api/v1/namespaces/default/pods',
      pod('pc', { priorityClassName: 'urgent' }),
    );
    expect(pc.status).toBe(403);
    expect(pc.body.message).toBe('pods "pc" is forbidden: no PriorityClass with name urgent was found');
    const sys = await s.req(
      'POST',
      '/api/v1/namespaces/kube-system/pods',
      pod('sys', { priorityClassName: 'system-node-critical' }),
    );
    expect([sys.status, sys.body.spec?.priority, sys.body.message]).toEqual([201, 2000001000, undefined]);
  });

  it('RuntimeClass overhead reaches the stored pod', async () => {
    const created = await s.req('POST', '/apis/node.k8s.io/v1/runtimeclasses', {
      apiVersion: 'node.k8s.io/v1',
      kind: 'RuntimeClass',
      metadata: { name: 'kata' },
      handler: 'kata',
      overhead: { podFixed: { cpu: '250m', memory: '160Mi' } },
    });
    expect(created.status).toBe(201);
    const r = await s.req(
      'POST',
      '/api/v1/namespaces/default/pods',
      pod('kata-pod', { runtimeClassName: 'kata' }),
    );
    expect(r.body.spec.overhead).toEqual({ cpu: '250m', memory: '160Mi' });
  });

  it('ServiceAccount admission: a pod naming a missing ServiceAccount is refused (403); each namespace gets a default one', async () => {
    const missing = await s.req(
      'POST',
      '/api/v1/namespaces/default/pods',
      pod('x', { serviceAccountName: 'sa' }),
    );
    expect([missing.status, missing.body.reason, missing.body.message]).toEqual([
      403,
      'Forbidden',
      'pods "x" is forbidden: error looking up service account default/sa: serviceaccount "sa" not found',
    ]);
    const ns = await s.req('POST', '/api/v1/namespaces', {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'team-a' },
    });
    expect(ns.status).toBe(201);
    // kube-controller-manager's serviceaccounts controller creates "default" in every namespace
    const def = await s.req('GET', '/api/v1/namespaces/team-a/serviceaccounts/default');
    expect([def.status, def.body.metadata?.name]).toEqual([200, 'default']);
    const plain = await s.req('POST', '/api/v1/namespaces/team-a/pods', pod('plain'));
    expect(plain.status).toBe(201);
    const sa = await s.req('POST', '/api/v1/namespaces/team-a/serviceaccounts', {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: 'sa' },
    });
    expect(sa.status).toBe(201);
    const named = await s.req(
      'POST',
      '/api/v1/namespaces/team-a/pods',
      pod('x', { serviceAccountName: 'sa' }),
    );
    expect([named.status, named.body.spec?.serviceAccountName]).toEqual([201, 'sa']);
    // a deleted "default" comes back, as the controller recreates it
    const del = await s.req('DELETE', '/api/v1/namespaces/team-a/serviceaccounts/default');
    expect(del.status).toBe(200);
    await s.cluster.store.settle();
    const again = await s.req('GET', '/api/v1/namespaces/team-a/serviceaccounts/default');
    expect(again.status).toBe(200);
    expect(again.body.metadata.uid).not.toBe(def.body.metadata.uid);
  });

  it('ServiceAccount admission sets serviceAccountName default and mounts the projected kube-api-access token in every container', async () => {
    const r = await s.req(
      'POST',
      '/api/v1/namespaces/default/pods',
      pod('token', {
        initContainers: [{ name: 'init', image: 'busybox:1.36' }],
        containers: [
          { name: 'a', image: 'nginx:1.27', volumeMounts: [{ name: 'data', mountPath: '/data' }] },
          { name: 'b', image: 'nginx:1.27' },
        ],
        volumes: [{ name: 'data', emptyDir: {} }],
      }),
    );
    expect(r.status).toBe(201);
    const spec = r.body.spec;
    expect([spec.serviceAccountName, spec.serviceAccount]).toEqual(['default', 'default']);
    const volumeName: string = spec.volumes[1].name;
    expect(volumeName).toMatch(/^kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
    expect(spec.volumes).toEqual([
      { name: 'data', emptyDir: {} },
      {
        name: volumeName,
        projected: {
          defaultMode: 420,
          sources: [
            { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
            { configMap: { items: [{ key: 'ca.crt', path: 'ca.crt' }], name: 'kube-root-ca.crt' } },
            {
              downwardAPI: {
                items: [
                  { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' }, path: 'namespace' },
                ],
              },
            },
          ],
        },
      },
    ]);
    const token = {
      mountPath: '/var/run/secrets/kubernetes.io/serviceaccount',
      name: volumeName,
      readOnly: true,
    };
    expect(spec.initContainers[0].volumeMounts).toEqual([token]);
    expect(spec.containers[0].volumeMounts).toEqual([{ name: 'data', mountPath: '/data' }, token]);
    expect(spec.containers[1].volumeMounts).toEqual([token]);
    // what was stored is what was returned
    const got = await s.req('GET', '/api/v1/namespaces/default/pods/token');
    expect(got.body.spec.volumes[1].name).toBe(volumeName);
  });

  it('no token volume when automountServiceAccountToken is false on the pod or (pod unset) on the ServiceAccount', async () => {
    const optOut = await s.req(
      'POST',
      '/api/v1/namespaces/default/pods',
      pod('opt-out', { automountServiceAccountToken: false }),
    );
    expect(optOut.status).toBe(201);
    expect([
      optOut.body.spec.serviceAccountName,
      optOut.body.spec.volumes,
      optOut.body.spec.containers[0].volumeMounts,
    ]).toEqual(['default', undefined, undefined]);
    const sa = await s.req('POST', '/api/v1/namespaces/default/serviceaccounts', {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: 'quiet' },
      automountServiceAccountToken: false,
      imagePullSecrets: [{ name: 'regcred' }],
    });
    expect(sa.status).toBe(201);
    const quiet = await s.req(
      'POST',
      '/api/v1/namespaces/default/pods',
      pod('quiet', { serviceAccount: 'quiet' }),
    );
    expect(quiet.status).toBe(201);
    expect([
      quiet.body.spec.serviceAccountName,
      quiet.body.spec.serviceAccount,
      quiet.body.spec.volumes,
      quiet.body.spec.imagePullSecrets,
    ]).toEqual(['quiet', 'quiet', undefined, [{ name: 'regcred' }]]);
    // the pod's own true wins over the account's false
    const optIn = await s.req(
      'POST',
      '/api/v1/namespaces/default/pods',
      pod('opt-in', { serviceAccountName: 'quiet', automountServiceAccountToken: true }),
    );
    expect(optIn.body.spec.volumes.map((v: { name: string }) => v.name.slice(0, 16))).toEqual([
      'kube-api-access-',
    ]);
  });
});
