import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EmbeddedCluster, startEmbeddedCluster } from '../sim/apiserver/index.ts';
import { KubeClient } from './client.ts';
import { connectionOptions, inClusterKubeconfig, resolveKubeconfig } from './kubeconfig.ts';

const b64 = (s: string) => Buffer.from(s).toString('base64');

const twoContexts = `apiVersion: v1
kind: Config
current-context: a
clusters:
  - name: ca
    cluster: {server: "https://a.example:6443/", certificate-authority-data: ${b64('CA-A')}, tls-server-name: api.a}
  - name: cb
    cluster: {server: "https://b.example", insecure-skip-tls-verify: true, proxy-url: "http://proxy:3128"}
users:
  - name: ua
    user: {client-certificate-data: ${b64('CERT')}, client-key-data: ${b64('KEY')}}
  - name: ub
    user: {token: tok-b, username: u, password: p}
contexts:
  - name: a
    context: {cluster: ca, user: ua, namespace: team-a}
  - name: b
    context: {cluster: cb, user: ub}
`;

describe('resolveKubeconfig', () => {
  it('resolves the current context: server, CA, SNI, client certificate, namespace', () => {
    const c = resolveKubeconfig(twoContexts);
    expect(c.server).toBe('https://a.example:6443');
    expect(c.namespace).toBe('team-a');
    expect(c.needsClientNode).toBe(false);
    const o = connectionOptions(c);
    expect(o.tls).toEqual({ ca: 'CA-A', cert: 'CERT', key: 'KEY', servername: 'api.a' });
    expect(o.headers).toEqual({});
  });

  it('resolves a named context; a proxy-url needs client-node; the token wins over basic auth', () => {
    const c = resolveKubeconfig(twoContexts, 'b');
    expect(c.server).toBe('https://b.example');
    expect(c.namespace).toBe('default');
    expect(c.needsClientNode).toBe(true);
    const o = connectionOptions(c);
    expect(o.tls).toEqual({ rejectUnauthorized: false });
    expect(o.headers.Authorization).toBe('Bearer tok-b');
    expect(o.auth).toBeUndefined();
  });

  it('reads CA, certificate, key and token files on use', () => {
    const dir = mkdtempSync(join(tmpdir(), 'capenter-kc-'));
    for (const [f, v] of [
      ['ca.crt', 'CA-F'],
      ['c.crt', 'CERT-F'],
      ['c.key', 'KEY-F'],
      ['token', 'tok-1\n'],
    ])
      writeFileSync(join(dir, f as string), v as string);
    const c = resolveKubeconfig(`current-context: x
clusters: [{name: c, cluster: {server: "https://f", certificate-authority: ${dir}/ca.crt}}]
users: [{name: u, user: {client-certificate: ${dir}/c.crt, client-key: ${dir}/c.key, tokenFile: ${dir}/token}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
`);
    expect(connectionOptions(c)).toEqual({
      tls: { ca: 'CA-F', cert: 'CERT-F', key: 'KEY-F' },
      headers: { Authorization: 'Bearer tok-1' },
    });
    writeFileSync(join(dir, 'token'), 'tok-2');
    expect(connectionOptions(c).headers.Authorization).toBe('Bearer tok-2');
  });

  it('basic auth without a token; exec users need client-node', () => {
    const c = resolveKubeconfig(`current-context: x
clusters: [{name: c, cluster: {server: "http://h"}}]
users: [{name: u, user: {username: admin, password: secret, exec: {command: aws}}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
`);
    expect(connectionOptions(c).auth).toBe('admin:secret');
    expect(c.needsClientNode).toBe(true);
  });

  it('names the problem: unknown context, no cluster, not YAML, unreadable file', () => {
    expect(() => resolveKubeconfig(twoContexts, 'nope')).toThrow('kubeconfig: context "nope" not found');
    expect(() => resolveKubeconfig('current-context: x\nclusters: []\n')).toThrow(
      'kubeconfig: no current cluster (set current-context or pass a context)',
    );
    expect(() => resolveKubeconfig('a: [')).toThrow('kubeconfig: not valid YAML');
    const c = resolveKubeconfig(`current-context: x
clusters: [{name: c, cluster: {server: "https://f", certificate-authority: /nonexistent/ca.crt}}]
contexts: [{name: x, context: {cluster: c}}]
`);
    expect(() => connectionOptions(c)).toThrow(
      'kubeconfig: cannot read certificate-authority "/nonexistent/ca.crt"',
    );
  });
});

describe('inClusterKubeconfig', () => {
  it('builds the server from the service env (IPv6 bracketed) and uses the mounted token and CA', () => {
    const dir = mkdtempSync(join(tmpdir(), 'capenter-sa-'));
    writeFileSync(join(dir, 'token'), 'sa-token');
    writeFileSync(join(dir, 'ca.crt'), 'SA-CA');
    writeFileSync(join(dir, 'namespace'), 'karpenter\n');
    const c = inClusterKubeconfig(
      { KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443' },
      dir,
    );
    expect(c.server).toBe('https://[fd00::1]:443');
    expect(c.namespace).toBe('karpenter');
    expect(connectionOptions(c)).toEqual({
      tls: { ca: 'SA-CA' },
      headers: { Authorization: 'Bearer sa-token' },
    });
    expect(() => inClusterKubeconfig({}, dir)).toThrow('KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT');
  });
});

describe('KubeClient with an exec credential plugin (client-node fallback)', () => {
  let cluster: EmbeddedCluster;
  beforeAll(async () => {
    // the server accepts exactly the token the exec plugin prints
    cluster = await startEmbeddedCluster({ token: 'from-exec' });
  });
  afterAll(async () => {
    await cluster.stop();
  });

  it('lists and watches through client-node request options', async () => {
    const base = resolveKubeconfig(cluster.kubeconfig);
    const cred = JSON.stringify({
      apiVersion: 'client.authentication.k8s.io/v1beta1',
      kind: 'ExecCredential',
      status: { token: 'from-exec' },
    });
    const kc = `current-context: x
clusters: [{name: c, cluster: {server: "${base.server}", certificate-authority-data: ${b64(base.ca ?? '')}}}]
users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: ${process.execPath}, args: ["-e", ${JSON.stringify(`process.stdout.write(${JSON.stringify(cred)})`)}], interactiveMode: Never}}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
`;
    const client = KubeClient.fromKubeconfig(kc);
    expect(client.config.needsClientNode).toBe(true);
    const list = await client.list('Namespace');
    expect(list.items.map((n) => n.metadata.name)).toContain('default');
    const seen: string[] = [];
    const gotDefault = new Promise<void>((resolve) => {
      void client.watch(
        'Namespace',
        {},
        (ev) => {
          seen.push(`${ev.type} ${ev.object.metadata?.name}`);
          if (ev.object.metadata?.name === 'default') resolve();
        },
        () => {},
      );
    });
    await gotDefault;
    expect(seen).toContain('ADDED default');
    client.close();
  });
});
