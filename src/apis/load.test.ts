import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { loadManifestPaths, parseManifests } from './load.ts';

const POOL = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: general
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - key: kubernetes.io/arch
          operator: In
          values: [amd64]
`;

describe('parseManifests', () => {
  it('loads valid objects, defaults Karpenter kinds and counts unknown kinds', () => {
    const text = `${POOL}---
# only a comment
---
apiVersion: v1
kind: Service
metadata: {name: web}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec: {replicas: 2, selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}}, spec: {containers: [{name: c}]}}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: a}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: b}
`;
    const r = parseManifests(text, 'in.yaml');
    expect(r.errors).toEqual([]);
    expect(r.unknownKinds).toEqual({ Service: 1, ConfigMap: 2 });
    expect(r.objects.map((o) => [o.file, o.index, o.line, o.object.kind, o.object.metadata?.name])).toEqual([
      ['in.yaml', 0, 1, 'NodePool', 'general'],
      ['in.yaml', 3, 20, 'Deployment', 'web'],
    ]);
    const pool = r.objects[0]!.object as {
      spec: { disruption: unknown; template: { spec: { expireAfter: string } } };
    };
    expect(pool.spec.disruption).toEqual({
      budgets: [{ nodes: '10%' }],
      consolidateAfter: '0s',
      consolidationPolicy: 'WhenEmptyOrUnderutilized',
    });
    expect(pool.spec.template.spec.expireAfter).toBe('720h');
  });

  it('reports an invalid object with file, line, document, object, field and rule, and keeps the rest', () => {
    const bad = POOL.replace('operator: In', 'operator: Foo').replace('name: general', 'name: bad');
    const r = parseManifests(`${POOL}---\n${bad}`, 'pools.yaml');
    expect(r.objects.map((o) => o.object.metadata?.name)).toEqual(['general']);
    expect(r.errors).toEqual([
      {
        file: 'pools.yaml',
        index: 1,
        line: 24,
        kind: 'NodePool',
        name: 'bad',
        fieldPath: 'spec.template.spec.requirements[0].operator',
        rule: 'enum',
        code: 'FieldValueNotSupported',
        message:
          'pools.yaml:24 (document 1): NodePool "bad": spec.template.spec.requirements[0].operator: Unsupported value "Foo": must be one of In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte (rule: enum)',
      },
    ]);
  });

  it('sorts several issues of one object by line', () => {
    const bad = POOL.replace('spec:\n  template:', 'spec:\n  weight: 0\n  template:').replace(
      'key: kubernetes.io/arch',
      'key: kubernetes.io/hostname',
    );
    const r = parseManifests(bad, 'p.yaml');
    expect(r.errors.map((e) => e.message)).toEqual([
      'p.yaml:6 (document 0): NodePool "general": spec.weight: Invalid value 0: must be greater than or equal to 1 (rule: minimum: 1)',
      'p.yaml:11 (document 0): NodePool "general": spec.template.spec.requirements[0].key: Invalid value "kubernetes.io/hostname": label "kubernetes.io/hostname" is restricted (rule: self != "kubernetes.io/hostname")',
    ]);
  });

  it('reports YAML syntax errors per document with their line', () => {
    const r = parseManifests(
      `${POOL}---\nmetadata:\n  name: x\n   bad: indent\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: ns}\n`,
      's.yaml',
    );
    expect(r.objects.map((o) => o.object.kind)).toEqual(['NodePool', 'Namespace']);
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0]).toMatchObject({ file: 's.yaml', index: 1, line: 15, rule: 'yaml' });
    expect(r.errors[0]!.message).toMatch(
      /^s\.yaml:15 \(document 1\): YAML syntax error: .+ at line 15, column \d+$/,
    );
  });

  it('rejects duplicate keys and non-objects', () => {
    const r = parseManifests(
      'a: 1\na: 2\n---\njust a string\n---\nkind: Pod\nmetadata: {name: p}\n',
      'd.yaml',
    );
    expect(r.objects).toEqual([]);
    expect(r.errors.map((e) => e.message)).toEqual([
      'd.yaml:2 (document 0): YAML syntax error: Map keys must be unique at line 2, column 1',
      'd.yaml:4 (document 1): not a Kubernetes object: expected a mapping with apiVersion and kind, got a string',
      'd.yaml:6 (document 2): Pod "p": apiVersion: Required value: every object needs apiVersion (rule: required)',
    ]);
  });

  it('flattens List kinds and requires names on built-in kinds', () => {
    const r = parseManifests(
      `apiVersion: v1
kind: List
items:
  - {apiVersion: v1, kind: Pod, metadata: {name: a}, spec: {containers: [{name: c}]}}
  - {apiVersion: v1, kind: Pod, metadata: {labels: {x: y}}, spec: {containers: [{name: c}]}}
  - {apiVersion: v1, kind: Secret, metadata: {name: s}}
  - {apiVersion: example.com/v1, kind: Pod, metadata: {name: other}}
`,
      'list.yaml',
    );
    expect(r.objects.map((o) => [o.index, o.item, o.line, o.object.kind, o.object.metadata?.name])).toEqual([
      [0, 0, 4, 'Pod', 'a'],
      [0, 2, 6, 'Secret', 's'],
    ]);
    expect(r.unknownKinds).toEqual({ Pod: 1 });
    expect(r.errors.map((e) => e.message)).toEqual([
      'list.yaml:5 (document 0, item 1): Pod "<unnamed>": metadata.name: Required value: name or generateName is required (rule: required)',
    ]);
  });

  it('keeps unknown kinds when asked', () => {
    const r = parseManifests('apiVersion: v1\nkind: Service\nmetadata: {name: web}\n', 'k.yaml', {
      keepUnknownKinds: true,
    });
    expect(r.objects.map((o) => o.object.kind)).toEqual(['Service']);
    expect(r.unknownKinds).toEqual({ Service: 1 });
  });

  it('parses JSON', () => {
    const r = parseManifests(
      JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' } }),
      'n.json',
    );
    expect(r.objects.map((o) => o.object.metadata?.name)).toEqual(['n1']);
  });
});

describe('loadManifestPaths', () => {
  const dir = mkdtempSync(join(tmpdir(), 'capenter-load-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, 'b', 'nested'), { recursive: true });
  mkdirSync(join(dir, '.hidden'));
  writeFileSync(join(dir, 'b', 'nested', 'z.yml'), 'apiVersion: v1\nkind: Namespace\nmetadata: {name: z}\n');
  writeFileSync(
    join(dir, 'b', 'a.json'),
    JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'a' } }),
  );
  writeFileSync(join(dir, 'a.yaml'), POOL);
  writeFileSync(join(dir, 'notes.txt'), 'not yaml: [');
  writeFileSync(join(dir, '.hidden', 'h.yaml'), 'apiVersion: v1\nkind: Namespace\nmetadata: {name: h}\n');
  mkdirSync(join(dir, 'empty'));

  it('walks folders recursively in sorted order, skipping other extensions and hidden entries', async () => {
    const r = await loadManifestPaths([dir]);
    expect(r.errors).toEqual([]);
    expect(r.objects.map((o) => [o.file.slice(dir.length + 1), o.object.metadata?.name])).toEqual([
      ['a.yaml', 'general'],
      ['b/a.json', 'a'],
      ['b/nested/z.yml', 'z'],
    ]);
  });

  it('reads - from the given stdin once, and reports missing paths and empty folders', async () => {
    const stdin = Readable.from([
      Buffer.from('apiVersion: v1\nkind: Namespace\nmetadata: {name: from-stdin}\n'),
    ]);
    const missing = join(dir, 'missing.yaml');
    const r = await loadManifestPaths(['-', missing, join(dir, 'empty'), '-', join(dir, 'a.yaml')], {
      stdin,
    });
    expect(
      r.objects.map((o) => [o.file === '<stdin>' ? '<stdin>' : 'a.yaml', o.object.metadata?.name]),
    ).toEqual([
      ['<stdin>', 'from-stdin'],
      ['a.yaml', 'general'],
    ]);
    expect(r.errors).toEqual([
      { file: missing, index: -1, message: `${missing}: no such file or directory` },
      {
        file: join(dir, 'empty'),
        index: -1,
        message: `${join(dir, 'empty')}: folder contains no .yaml, .yml or .json files`,
      },
    ]);
  });
});
