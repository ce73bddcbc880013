/**
 * docs/capa-guide.md (issue 29) is true of the program: every Kubernetes object of its YAML blocks is created on an
 * embedded API server serving capenter's CRDs and the vendored Cluster API v1.14 / CAPA v2.11 CRDs (`crds/capi/`),
 * Karpenter kinds and the KarpenterMachinePool also pass capenter's own validation (`validateObject`,
 * `validateKMP`), the condition reasons of its troubleshooting table are ones the code sets, and the gaps it states still hold.
 * (Its `capenter …` commands are checked against the CLI by test/cli/docs-claims.test.ts; its Helm values blocks are
 * rendered by test/cluster/capa-guide-helm.test.ts, since Helm is built once into the cache for `npm run test:cluster`.)
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { ROOT } from '../../scripts/build.ts';
import { validateKMP } from '../../src/apis/capi.ts';
import type { KubeObject } from '../../src/apis/core.ts';
import { validateObject } from '../../src/apis/validation.ts';
import { capenterCRDs } from '../../src/embedded/cluster.ts';
import { capiCRDs } from '../../src/sim/capi/environment.ts';
import { startServer, type TestServer } from '../apiserver/helpers.ts';

const GUIDE = readFileSync(join(ROOT, 'docs', 'capa-guide.md'), 'utf8');
const BLOCKS = [...GUIDE.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1] ?? '');
const VALUES = BLOCKS.filter((b) => /^# values-[a-z]+\.yaml\n/.test(b));
const OBJECTS: KubeObject[] = BLOCKS.filter((b) => !VALUES.includes(b)).flatMap((b) =>
  parseAllDocuments(b).map((d) => {
    expect(d.errors, b).toEqual([]);
    return d.toJS() as KubeObject;
  }),
);

/** Source text of every `.ts` file under `dir` (recursive), tests excluded. */
function sources(dir: string): string {
  return readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
    .map((f) => readFileSync(join(ROOT, dir, f), 'utf8'))
    .join('\n');
}

let s: TestServer;
const dir = mkdtempSync(join(tmpdir(), 'capenter-capa-guide-'));
beforeAll(async () => {
  s = await startServer();
  for (const crd of [...capenterCRDs(), ...capiCRDs()]) s.cluster.installCRD(crd);
});
afterAll(async () => {
  await s?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** REST path of the collection of `obj` on the embedded server: core kinds by table, CRD kinds by their CRD. */
function collectionPath(obj: KubeObject): string {
  const core: Record<string, string> = {
    ConfigMap: 'configmaps',
    Secret: 'secrets',
    Namespace: 'namespaces',
  };
  const ns = obj.metadata?.namespace;
  const scope = ns ? `/namespaces/${ns}` : '';
  const apiVersion = obj.apiVersion ?? '';
  if (apiVersion === 'v1') return `/api/v1${scope}/${core[obj.kind ?? '']}`;
  if (apiVersion === 'rbac.authorization.k8s.io/v1') return `/apis/${apiVersion}/${obj.kind?.toLowerCase()}s`;
  const group = apiVersion.split('/')[0];
  const crd = [...capenterCRDs(), ...capiCRDs()].find((c) => {
    const spec = (c as { spec: { group: string; names: { kind: string } } }).spec;
    return spec.group === group && spec.names.kind === obj.kind;
  }) as { spec: { names: { plural: string } } } | undefined;
  if (!crd) throw new Error(`docs/capa-guide.md: no CRD serves ${obj.apiVersion} ${obj.kind}`);
  return `/apis/${apiVersion}${scope}/${crd.spec.names.plural}`;
}

describe('docs/capa-guide.md', () => {
  it('every object of its YAML blocks is accepted by the CRDs and by capenter validation', async () => {
    expect(OBJECTS.map((o) => `${o.kind}/${o.metadata?.name}`)).toEqual([
      'AWSClusterRoleIdentity/team-a-role',
      'KubeadmConfig/workers',
      'MachinePool/workers',
      'KarpenterMachinePool/workers',
      'KubeadmConfigTemplate/demo-workers',
      'AWSMachineTemplate/demo-m5-xlarge',
      'MachineDeployment/demo-m5-xlarge-a',
      'ClusterAPINodeClass/general',
      'NodePool/general',
    ]);
    const ns = await s.req('POST', '/api/v1/namespaces', {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'team-a' },
    });
    expect(ns.status).toBe(201);
    for (const obj of OBJECTS) {
      const v = validateObject(obj);
      expect(v.ok ? [] : v.issues, `${obj.kind}/${obj.metadata?.name}`).toEqual([]);
      if (obj.kind === 'KarpenterMachinePool') expect(validateKMP(obj)).toEqual({ ok: true });
      const r = await s.req('POST', collectionPath(obj), obj);
      expect(`${r.status} ${r.status === 201 ? '' : r.text}`, `${obj.kind}/${obj.metadata?.name}`).toBe(
        '201 ',
      );
    }
    // the server validates: a MachinePool without its infrastructureRef is refused (a check that checks nothing passes all)
    const mp = structuredClone(OBJECTS.find((o) => o.kind === 'MachinePool') as KubeObject) as KubeObject & {
      spec: { template: { spec: Record<string, unknown> } };
    };
    mp.metadata = { ...mp.metadata, name: 'broken' };
    delete mp.spec.template.spec.infrastructureRef;
    expect((await s.req('POST', collectionPath(mp), mp)).status).toBe(422);
  });

  it('the KubeadmConfig registers nodes with karpenter.sh/unregistered:NoExecute (no RegistrationTaintMissing)', () => {
    for (const kind of ['KubeadmConfig', 'KubeadmConfigTemplate']) {
      const o = OBJECTS.find((x) => x.kind === kind) as { spec: Record<string, unknown> };
      const spec = (kind === 'KubeadmConfig' ? o.spec : (o.spec.template as { spec: unknown }).spec) as {
        joinConfiguration: { nodeRegistration: { taints: Array<{ key: string; effect: string }> } };
      };
      expect(spec.joinConfiguration.nodeRegistration.taints).toContainEqual({
        key: 'karpenter.sh/unregistered',
        effect: 'NoExecute',
      });
    }
  });

  it('the troubleshooting reasons are ones the code sets, and the stated gaps still hold', () => {
    const table = GUIDE.slice(GUIDE.indexOf('## Troubleshooting'), GUIDE.indexOf('## Known gaps'));
    const reasons = [...table.matchAll(/\| `[A-Za-z]+`(?: \/ `[A-Za-z]+`)? `([A-Za-z0-9]+)` \|/g)].map(
      (m) => m[1],
    );
    expect(reasons).toContain('RegistrationTaintMissing');
    expect(reasons).toHaveLength(19);
    const code =
      sources('src/controllers') +
      sources('src/cloudprovider/clusterapi') +
      readFileSync(join(ROOT, 'src/cloudprovider/aws/identity.ts'), 'utf8');
    for (const r of reasons) expect(code, r).toContain(`'${r}'`);
    for (const r of ['UnregisteredTaintMissing', 'SomeMachineDeploymentsUnusable', 'MachineNotReady'])
      expect(code, r).toContain(r);
    // gaps: without CAPI_WATCH_NAMESPACE, Secrets watched in every namespace (label-selected); the bootstrap policies grant no S3 action
    expect(readFileSync(join(ROOT, 'src/controllers/capi/controller.ts'), 'utf8')).toContain(
      "watch('Secret', { informer: { labelSelector: LabelClusterName }",
    );
    expect(readFileSync(join(ROOT, 'src/cloudprovider/aws/bootstrap/policies.ts'), 'utf8')).not.toMatch(
      /['"]s3:/,
    );
  });
});
