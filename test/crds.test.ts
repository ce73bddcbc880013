/**
 * The checked-in crds/ are exactly what src/apis/crds.ts generates; the generated schemas are structural;
 * upstream's example NodePools/EC2NodeClasses (test/fixtures/manifests/karpenter-examples, vendored from shared/data/manifests) are accepted by both
 * our zod validation and ajv on the generated openAPIV3Schema, and bad objects are rejected.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import type { KubeObject } from '../src/apis/core.ts';
import {
  type CustomResourceDefinition,
  crdObjects,
  generateCRDs,
  type JSONSchemaNode,
} from '../src/apis/crds.ts';
import { applyDefaults } from '../src/apis/defaults.ts';
import { exampleEC2NodeClass, exampleNodePool } from '../src/apis/examples.ts';
import { validateObject } from '../src/apis/validation.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const examplesDir = resolve(root, 'test/fixtures/manifests/karpenter-examples');

const addFormats = addFormatsModule as unknown as (a: Ajv) => Ajv;

function makeAjv(useDefaults: boolean): Ajv {
  const ajv = new Ajv({ strict: false, allErrors: true, useDefaults });
  addFormats(ajv);
  return ajv;
}

const crds = crdObjects();
const byKind = new Map<string, CustomResourceDefinition>(
  Object.values(crds).map((c) => [c.spec.names.kind, c]),
);

function validatorFor(kind: string, ajv: Ajv): ValidateFunction {
  const crd = byKind.get(kind);
  if (!crd) throw new Error(`no CRD for ${kind}`);
  return ajv.compile(crd.spec.versions[0]!.schema.openAPIV3Schema);
}

describe('generated CRDs', () => {
  it('crds/ holds exactly generateCRDs() output, byte for byte', () => {
    const generated = generateCRDs();
    const dir = join(root, 'crds');
    expect(
      readdirSync(dir)
        .filter((f) => f.endsWith('.yaml'))
        .sort(),
    ).toEqual(Object.keys(generated).sort());
    for (const [file, text] of Object.entries(generated)) {
      expect(
        readFileSync(join(dir, file), 'utf8'),
        `${file} is stale: run npx tsx scripts/generate-crds.ts`,
      ).toBe(text);
    }
  });

  it('has upstream names, scope, subresources and printer columns', () => {
    expect(Object.keys(crds).sort()).toEqual([
      'infrastructure.cluster.x-k8s.io_karpentermachinepools.yaml',
      'karpenter.cluster.x-k8s.io_clusterapinodeclasses.yaml',
      'karpenter.k8s.aws_ec2nodeclasses.yaml',
      'karpenter.kwok.sh_kwoknodeclasses.yaml',
      'karpenter.sh_nodeclaims.yaml',
      'karpenter.sh_nodeoverlays.yaml',
      'karpenter.sh_nodepools.yaml',
    ]);
    const np = byKind.get('NodePool')!;
    expect(np.metadata.name).toBe('nodepools.karpenter.sh');
    expect(np.spec.scope).toBe('Cluster');
    expect(np.spec.names.categories).toEqual(['karpenter']);
    expect(np.spec.versions[0]!.subresources).toEqual({
      scale: { specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.nodes' },
      status: {},
    });
    expect(np.spec.versions[0]!.additionalPrinterColumns!.map((c) => c.name)).toEqual([
      'NodeClass',
      'Nodes',
      'Ready',
      'Age',
      'Weight',
      'CPU',
      'Memory',
    ]);
    expect(byKind.get('EC2NodeClass')!.spec.names.shortNames).toEqual(['ec2nc', 'ec2ncs']);
    expect(byKind.get('KWOKNodeClass')!.spec.names.shortNames).toEqual(['kwoknc', 'kwokncs']);
    expect(byKind.get('NodeClaim')!.spec.versions[0]!.subresources).toEqual({ status: {} });
  });

  it('ClusterAPINodeClass matches upstream karpenter-provider-cluster-api: names, scope, fields', () => {
    const upstream = parseAllDocuments(
      readFileSync(
        join(
          root,
          'test/fixtures/crds/karpenter-provider-cluster-api/karpenter.cluster.x-k8s.io_clusterapinodeclasses.yaml',
        ),
        'utf8',
      ),
    )
      .map((d) => d.toJS() as CustomResourceDefinition | null)
      .find((d) => d?.kind === 'CustomResourceDefinition')!;
    const ours = byKind.get('ClusterAPINodeClass')!;
    expect(ours.metadata.name).toBe(upstream.metadata.name);
    expect(ours.spec.scope).toBe(upstream.spec.scope);
    expect(ours.spec.names).toEqual(upstream.spec.names);
    expect(ours.spec.versions.map((v) => v.name)).toEqual(['v1alpha1']);
    const props = (crd: CustomResourceDefinition, ...path: string[]): string[] => {
      let n = crd.spec.versions[0]!.schema.openAPIV3Schema as JSONSchemaNode;
      for (const p of path) n = (n.properties as Record<string, JSONSchemaNode>)[p]!;
      return Object.keys(n.properties as object).sort();
    };
    expect(props(ours, 'spec')).toEqual(props(upstream, 'spec'));
    expect(props(ours, 'spec', 'scalableResourceSelector')).toEqual(
      props(upstream, 'spec', 'scalableResourceSelector'),
    );
    expect(props(ours, 'status')).toEqual(props(upstream, 'status'));
    const ajv = makeAjv(false);
    const validate = validatorFor('ClusterAPINodeClass', ajv);
    const good = {
      apiVersion: 'karpenter.cluster.x-k8s.io/v1alpha1',
      kind: 'ClusterAPINodeClass',
      metadata: { name: 'default' },
      spec: {
        scalableResourceSelector: {
          matchLabels: { team: 'a' },
          matchExpressions: [{ key: 'tier', operator: 'In', values: ['x'] }],
        },
      },
    };
    expect(validate(good), JSON.stringify(validate.errors)).toBe(true);
    expect(validateObject(good as unknown as KubeObject).ok).toBe(true);
    const bad = structuredClone(good);
    bad.spec.scalableResourceSelector.matchExpressions[0]!.operator = 'Equals';
    expect(validate(bad)).toBe(false);
  });

  it('are structural: typed nodes only, no JSON-Schema-only keywords', () => {
    const problems: string[] = [];
    const walk = (n: JSONSchemaNode, at: string) => {
      for (const k of ['$schema', '$ref', '$defs', 'propertyNames', 'oneOf', 'allOf', 'not', 'const']) {
        if (k in n) problems.push(`${at}: has ${k}`);
      }
      if (n.additionalProperties === false) problems.push(`${at}: additionalProperties: false`);
      if (n['x-kubernetes-int-or-string'] === true) {
        expect(n.anyOf, at).toEqual([{ type: 'integer' }, { type: 'string' }]);
        return;
      }
      if ('anyOf' in n) problems.push(`${at}: anyOf outside int-or-string`);
      if (typeof n.type !== 'string' && n['x-kubernetes-preserve-unknown-fields'] !== true)
        problems.push(`${at}: no type`);
      if (n.properties && n.additionalProperties) problems.push(`${at}: properties and additionalProperties`);
      for (const [name, child] of Object.entries((n.properties as Record<string, JSONSchemaNode>) ?? {}))
        walk(child, `${at}.${name}`);
      if (n.items) walk(n.items as JSONSchemaNode, `${at}[]`);
      if (typeof n.additionalProperties === 'object')
        walk(n.additionalProperties as JSONSchemaNode, `${at}{}`);
    };
    for (const crd of Object.values(crds))
      walk(crd.spec.versions[0]!.schema.openAPIV3Schema, crd.spec.names.kind);
    expect(problems).toEqual([]);
  });

  it('carry upstream CEL rules and defaults', () => {
    // biome-ignore lint/suspicious/noExplicitAny: schema walk
    const np = byKind.get('NodePool')!.spec.versions[0]!.schema.openAPIV3Schema as any;
    const spec = np.properties.spec;
    expect(spec.properties.disruption.default).toEqual({ consolidateAfter: '0s' });
    expect(spec.properties.disruption.properties.budgets.default).toEqual([{ nodes: '10%' }]);
    expect(spec.properties.disruption.properties.consolidationPolicy.default).toBe(
      'WhenEmptyOrUnderutilized',
    );
    expect(spec.properties.template.properties.spec.properties.expireAfter.default).toBe('720h');
    expect(spec.properties.weight).toMatchObject({ minimum: 1, maximum: 100, type: 'integer' });
    const key = spec.properties.template.properties.spec.properties.requirements.items.properties.key;
    expect(key['x-kubernetes-validations']).toContainEqual({
      rule: 'self != "kubernetes.io/hostname"',
      message: 'label "kubernetes.io/hostname" is restricted',
    });
    expect(
      spec.properties.template.properties.spec.properties.requirements.items.properties.minValues,
    ).toMatchObject({
      minimum: 1,
      maximum: 50,
    });
  });

  it("EC2NodeClass spec.kubelet is upstream v1.14.1's schema: fields, types, int32 formats, bounds, patterns, CEL rules (issue 28)", () => {
    const withoutDescriptions = (n: unknown): unknown =>
      Array.isArray(n)
        ? n.map(withoutDescriptions)
        : n && typeof n === 'object'
          ? Object.fromEntries(
              Object.entries(n)
                .filter(([k]) => k !== 'description')
                .map(([k, v]) => [k, withoutDescriptions(v)]),
            )
          : n;
    const kubelet = (crd: CustomResourceDefinition) =>
      withoutDescriptions(
        (
          crd.spec.versions[0]!.schema.openAPIV3Schema as JSONSchemaNode & {
            properties: Record<string, JSONSchemaNode & { properties: Record<string, unknown> }>;
          }
        ).properties.spec!.properties.kubelet,
      );
    const upstream = parseAllDocuments(
      readFileSync(
        join(root, 'test/fixtures/crds/karpenter-provider-aws/karpenter.k8s.aws_ec2nodeclasses.yaml'),
        'utf8',
      ),
    )[0]!.toJS() as CustomResourceDefinition;
    const ours = kubelet(byKind.get('EC2NodeClass')!) as Record<string, Record<string, unknown>>;
    expect(ours).toEqual(kubelet(upstream));
    expect(ours.properties!.maxPods).toEqual({ format: 'int32', minimum: 0, type: 'integer' });
  });

  it('compile with ajv, and ajv defaulting equals applyDefaults', () => {
    const ajv = makeAjv(true);
    const np = exampleNodePool('default', {
      group: 'karpenter.kwok.sh',
      kind: 'KWOKNodeClass',
      name: 'default',
    });
    const ajvDefaulted = structuredClone(np);
    expect(validatorFor('NodePool', ajv)(ajvDefaulted)).toBe(true);
    expect(ajvDefaulted).toEqual(applyDefaults(np));
    const ec2 = exampleEC2NodeClass({
      role: 'r',
      subnetSelectorTerms: [{ id: 'subnet-1' }],
      securityGroupSelectorTerms: [{ id: 'sg-1' }],
    });
    const ec2Defaulted = structuredClone(ec2);
    expect(validatorFor('EC2NodeClass', ajv)(ec2Defaulted)).toBe(true);
    expect(ec2Defaulted).toEqual(applyDefaults(ec2));
  });
});

/** Upstream example documents with placeholders filled in. */
function exampleDocs(): Array<{ file: string; index: number; object: KubeObject }> {
  const out: Array<{ file: string; index: number; object: KubeObject }> = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (/\.ya?ml$/.test(e.name)) {
        // ${CLUSTER_NAME} and $CLUSTER_NAME placeholders
        const text = readFileSync(p, 'utf8').replace(/\$\{?CLUSTER_NAME\}?/g, 'cluster-1');
        parseAllDocuments(text).forEach((d, index) => {
          const o = d.toJS() as KubeObject | null;
          if (o && (o.kind === 'NodePool' || o.kind === 'EC2NodeClass'))
            out.push({ file: relative(examplesDir, p), index, object: o });
        });
      }
    }
  };
  walk(examplesDir);
  return out;
}

/** Upstream examples that upstream's own CRDs reject too (so we must reject them). */
const UPSTREAM_INVALID: Record<string, string> = {
  'v1/windows-custom-userdata.yaml#0':
    'NodePool "windows2022": spec.template.spec.nodeClassRef.group: Invalid value "karpenter.k8s.aws/v1": must be an API group without a version, like "karpenter.k8s.aws"',
};

describe('upstream karpenter examples', () => {
  const docs = exampleDocs();
  const ajv = makeAjv(false);
  const validators = {
    NodePool: validatorFor('NodePool', ajv),
    EC2NodeClass: validatorFor('EC2NodeClass', ajv),
  };

  it('finds the NodePools and EC2NodeClasses', () => {
    expect(docs.filter((d) => d.object.kind === 'NodePool')).toHaveLength(24);
    expect(docs.filter((d) => d.object.kind === 'EC2NodeClass')).toHaveLength(23);
  });

  it('every example is accepted by zod and by ajv on the generated schema (except upstream-invalid ones)', () => {
    const failures: string[] = [];
    for (const d of docs) {
      const id = `${d.file}#${d.index}`;
      const zod = validateObject(d.object);
      const v = validators[d.object.kind as 'NodePool' | 'EC2NodeClass'];
      const ajvOk = v(structuredClone(d.object));
      if (id in UPSTREAM_INVALID) {
        expect(zod.ok ? [] : zod.issues.map((i) => i.message), id).toEqual([UPSTREAM_INVALID[id]]);
        expect(ajvOk, id).toBe(false);
        continue;
      }
      if (!zod.ok) failures.push(`${id}: ${zod.issues.map((i) => i.message).join('; ')}`);
      if (!ajvOk) failures.push(`${id}: ajv: ${JSON.stringify(v.errors)}`);
    }
    expect(failures).toEqual([]);
  });

  it('rejects broken variants of upstream examples, with zod and (for schema rules) ajv', () => {
    const find = (file: string, kind: string) => {
      const d = docs.find((x) => x.file === file && x.object.kind === kind);
      if (!d) throw new Error(`${file} ${kind} missing`);
      // biome-ignore lint/suspicious/noExplicitAny: mutated fixture
      return structuredClone(d.object) as any;
    };
    const cases: Array<{ object: KubeObject; message: string; ajvRejects: boolean }> = [];

    const hostname = find('v1/general-purpose.yaml', 'NodePool');
    hostname.spec.template.spec.requirements.push({
      key: 'kubernetes.io/hostname',
      operator: 'In',
      values: ['ip-10-0-0-1'],
    });
    cases.push({
      object: hostname,
      message:
        'NodePool "general-purpose": spec.template.spec.requirements[5].key: Invalid value "kubernetes.io/hostname": label "kubernetes.io/hostname" is restricted',
      ajvRejects: false, // a CEL rule: ajv does not evaluate x-kubernetes-validations
    });

    const operator = find('v1/spot.yaml', 'NodePool');
    operator.spec.template.spec.requirements[0].operator = 'Equals';
    cases.push({
      object: operator,
      message: `NodePool "${operator.metadata.name}": spec.template.spec.requirements[0].operator: Unsupported value "Equals": must be one of In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte`,
      ajvRejects: true,
    });

    const minValues = find('v1/min-values-family.yaml', 'NodePool');
    const withMin = minValues.spec.template.spec.requirements.findIndex(
      (r: { minValues?: number }) => r.minValues !== undefined,
    );
    minValues.spec.template.spec.requirements[withMin].minValues = 51;
    cases.push({
      object: minValues,
      message: `NodePool "${minValues.metadata.name}": spec.template.spec.requirements[${withMin}].minValues: Invalid value 51: must be less than or equal to 50`,
      ajvRejects: true,
    });

    const ec2 = find('v1/general-purpose.yaml', 'EC2NodeClass');
    ec2.spec.instanceProfile = 'KarpenterNodeInstanceProfile-cluster-1';
    cases.push({
      object: ec2,
      message: `EC2NodeClass "default": spec: Invalid value: must specify exactly one of ['role', 'instanceProfile']`,
      ajvRejects: false,
    });

    for (const c of cases) {
      const r = validateObject(c.object);
      expect(r.ok ? [] : r.issues.map((i) => i.message)).toEqual([c.message]);
      const v = validators[c.object.kind as 'NodePool' | 'EC2NodeClass'];
      expect(v(structuredClone(c.object)), c.message).toBe(!c.ajvRejects);
    }
  });
});
