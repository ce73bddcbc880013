/**
 * kubectl 1.32 scenarios against the embedded API server (skipped with a message when kubectl is absent).
 */
import { execFile, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeClient } from '../../src/kube/client.ts';
import { RealClock } from '../../src/kube/clock.ts';
import { SharedInformers } from '../../src/kube/informer.ts';
import { KubeletStandIn } from '../../src/sim/kubelet/index.ts';
import { startServer, type TestServer } from './helpers.ts';

const hasKubectl = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' }).status === 0;
if (!hasKubectl)
  console.warn('kubectl not found on PATH: skipping kubectl scenario tests (CI installs kubectl 1.32)');

let s: TestServer;
let dir: string;
let kubeconfig: string;

function kubectl(args: string[], input?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      'kubectl',
      ['--kubeconfig', kubeconfig, '--cache-dir', join(dir, 'cache'), ...args],
      { timeout: 30_000, env: { ...process.env, HOME: dir } },
      (err, stdout, stderr) => {
        const code = err
          ? typeof (err as { code?: unknown }).code === 'number'
            ? (err as { code: number }).code
            : 1
          : 0;
        resolve({ code, stdout, stderr });
      },
    );
    if (input !== undefined) child.stdin?.end(input);
  });
}

function file(name: string, text: string): string {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
}

const NODE_AND_WORKLOADS = `apiVersion: v1
kind: Node
metadata:
  name: node-a
  labels: {kubernetes.io/hostname: node-a, node-role.kubernetes.io/worker: ""}
status:
  conditions: [{type: Ready, status: "True"}]
  nodeInfo: {kubeletVersion: v1.32.0}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: nginx:1.27}]
`;

describe.skipIf(!hasKubectl)('kubectl', () => {
  beforeAll(async () => {
    s = await startServer();
    dir = mkdtempSync(join(tmpdir(), 'capenter-kubectl-'));
    kubeconfig = join(dir, 'kubeconfig');
    await s.cluster.writeKubeconfig(kubeconfig);
  });
  afterAll(async () => {
    await s?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('create -f, get with short names, apply --server-side', async () => {
    const f = file('objs.yaml', NODE_AND_WORKLOADS);
    const c = await kubectl(['create', '-f', f]);
    expect(c.stderr).toBe('');
    expect(c.stdout).toBe('node/node-a created\ndeployment.apps/web created\n');
    const no = await kubectl(['get', 'no']);
    expect(no.stdout).toMatch(
      /^NAME\s+STATUS\s+ROLES\s+AGE\s+VERSION\nnode-a\s+Ready\s+worker\s+\S+\s+v1\.32\.0\n$/,
    );
    const deploy = await kubectl(['get', 'deploy', '-o', 'name']);
    expect(deploy.stdout).toBe('deployment.apps/web\n');
    const po = await kubectl(['get', 'po', '-A']);
    expect(po.code).toBe(0);
    expect(po.stdout + po.stderr).toContain('No resources found');
    const again = await kubectl(['create', '-f', f]);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain('already exists');
    const applied = await kubectl(['apply', '--server-side', '-f', f.replace('objs', 'objs')]);
    expect(applied.stdout).toBe('node/node-a serverside-applied\ndeployment.apps/web serverside-applied\n');
    const cm = file(
      'cm.yaml',
      'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fresh, namespace: default}\ndata: {a: "1"}\n',
    );
    const ssaCreate = await kubectl(['apply', '--server-side', '-f', cm]);
    expect(ssaCreate.stdout).toBe('configmap/fresh serverside-applied\n');
    const got = await kubectl(['get', 'cm', 'fresh', '-o', 'jsonpath={.data.a}']);
    expect(got.stdout).toBe('1');
    const csa = await kubectl([
      'apply',
      '-f',
      file(
        'cm2.yaml',
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: csa, namespace: default}\ndata: {b: "2"}\n',
      ),
    ]);
    expect(csa.stdout).toBe('configmap/csa created\n');
  });

  it('get -w prints the initial list and then changes', async () => {
    const child = spawn(
      'kubectl',
      ['--kubeconfig', kubeconfig, '--cache-dir', join(dir, 'cache'), 'get', 'cm', '-w', '-n', 'default'],
      {
        env: { ...process.env, HOME: dir },
      },
    );
    let out = '';
    let err = '';
    // resolves as kubectl prints a whole line matching `line` (on its 'data' event); rejects if it exits first
    const printed = (line: RegExp): Promise<void> =>
      new Promise((resolve, reject) => {
        const check = (): void => {
          if (!line.test(out)) return;
          child.stdout.off('data', check);
          resolve();
        };
        child.stdout.on('data', check);
        child.once('exit', (code) =>
          reject(new Error(`kubectl exited (${code}) before printing ${line}: ${err}`)),
        );
        check();
      });
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
    });
    try {
      await printed(/^fresh\s.*\n/m);
      await s.req('POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'watched' } });
      await printed(/^watched\s.*\n/m);
      const lines = out.trim().split('\n');
      expect(lines[0]).toMatch(/^NAME\s+DATA\s+AGE$|^NAME\s+AGE$/);
      expect(lines.some((l) => l.startsWith('fresh'))).toBe(true);
      expect(lines[lines.length - 1]).toMatch(/^watched\s/);
    } finally {
      child.kill('SIGTERM');
    }
  });

  it('scale deployment and CRD objects', async () => {
    const r = await kubectl(['scale', 'deployment', 'web', '--replicas=5']);
    expect(r.stdout).toBe('deployment.apps/web scaled\n');
    const d = await s.req('GET', '/apis/apps/v1/namespaces/default/deployments/web');
    expect(d.body.spec.replicas).toBe(5);
    const crd = await kubectl([
      'create',
      '-f',
      join(import.meta.dirname, '../fixtures/crds/karpenter/karpenter.sh_nodepools.yaml'),
    ]);
    expect(crd.stdout).toBe('customresourcedefinition.apiextensions.k8s.io/nodepools.karpenter.sh created\n');
    const np = file(
      'np.yaml',
      'apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: default}\nspec:\n  template:\n    spec:\n      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}\n      requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]\n',
    );
    expect((await kubectl(['apply', '--server-side', '-f', np])).stdout).toBe(
      'nodepool.karpenter.sh/default serverside-applied\n',
    );
    const got = await kubectl(['get', 'nodepools']);
    expect(got.stdout).toMatch(/^NAME\s+NODECLASS\s+NODES\s+READY\s+AGE\ndefault\s+default\s/);
    const bad = await kubectl([
      'create',
      '-f',
      file(
        'npbad.yaml',
        'apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: bad}\nspec: {weight: 1000, template: {spec: {nodeClassRef: {group: g.io, kind: K, name: nc}, requirements: []}}}\n',
      ),
    ]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('spec.weight in body should be less than or equal to 100');
    const unknown = await kubectl([
      'create',
      '-f',
      file(
        'npu.yaml',
        'apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: u}\nspec: {bogus: 1, template: {spec: {nodeClassRef: {group: g.io, kind: K, name: nc}, requirements: []}}}\n',
      ),
    ]);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toContain('unknown field "spec.bogus"');
    const noValidate = await kubectl(['create', '--validate=false', '-f', join(dir, 'npu.yaml')]);
    expect(noValidate.stderr).toBe('');
    expect(noValidate.stdout).toBe('nodepool.karpenter.sh/u created\n');
  });

  it('cordon, then drain blocked by a PDB, then allowed', async () => {
    for (const n of ['db-1', 'db-2']) {
      await s.req('POST', '/api/v1/namespaces/default/pods', {
        metadata: { name: n, labels: { app: 'db' } },
        spec: { nodeName: 'node-a', containers: [{ name: 'c', image: 'postgres:16' }] },
      });
      const st = await kubectl([
        'patch',
        'pod',
        n,
        '--subresource=status',
        '--type=merge',
        '-p',
        '{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}',
      ]);
      expect(st.code).toBe(0);
    }
    const pdb = file(
      'pdb.yaml',
      'apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: db, namespace: default}\nspec:\n  minAvailable: 2\n  selector: {matchLabels: {app: db}}\n',
    );
    expect((await kubectl(['create', '-f', pdb])).code).toBe(0);
    const cordon = await kubectl(['cordon', 'node-a']);
    expect(cordon.stdout).toBe('node/node-a cordoned\n');
    expect((await kubectl(['get', 'no', 'node-a'])).stdout).toContain('Ready,SchedulingDisabled');
    const blocked = await kubectl([
      'drain',
      'node-a',
      '--ignore-daemonsets',
      '--delete-emptydir-data',
      '--force',
      '--timeout=2s',
    ]);
    expect(blocked.code).not.toBe(0);
    expect(blocked.stderr).toContain("Cannot evict pod as it would violate the pod's disruption budget.");
    expect((await s.req('GET', '/api/v1/namespaces/default/pods/db-1')).status).toBe(200);
    expect(
      (await kubectl(['patch', 'pdb', 'db', '--type=merge', '-p', '{"spec":{"minAvailable":0}}'])).code,
    ).toBe(0);
    // evicted bound pods terminate gracefully: a kubelet stand-in finishes them (grace capped at 0 s)
    const client = KubeClient.fromKubeconfig(s.cluster.kubeconfig);
    const informers = new SharedInformers(client, { clock: new RealClock() });
    const kubelet = new KubeletStandIn({
      client,
      informers,
      clock: new RealClock(),
      maxTerminationSeconds: 0,
    });
    kubelet.start();
    informers.start();
    const drained = await kubectl([
      'drain',
      'node-a',
      '--ignore-daemonsets',
      '--delete-emptydir-data',
      '--force',
      '--timeout=60s',
    ]).finally(async () => {
      await kubelet.stop();
      await informers.stop();
      client.close();
    });
    expect(drained.code).toBe(0);
    expect(drained.stdout).toContain('pod/db-1 evicted');
    expect(drained.stdout).toContain('pod/db-2 evicted');
    expect(drained.stdout).toContain('node/node-a drained');
    expect(
      (await s.req('GET', '/api/v1/namespaces/default/pods?fieldSelector=spec.nodeName%3Dnode-a')).body.items,
    ).toEqual([]);
  });

  it('generator commands that send protobuf get a clean 415', async () => {
    const r = await kubectl(['create', 'configmap', 'gen', '--from-literal=a=b']);
    if (r.code !== 0) expect(r.stderr).toMatch(/UnsupportedMediaType|unknown format|415|not supported/i);
    else expect(r.stdout).toBe('configmap/gen created\n');
    expect((await s.req('GET', '/api/v1/namespaces/default')).status).toBe(200);
  });
});
