/**
 * CustomResourceDefinitions generated from the zod schemas in schemas.ts (the single source of truth):
 * `apiextensions.k8s.io/v1` CRDs with a structural openAPIV3Schema (what `z.toJSONSchema` emits, minus the
 * JSON-Schema-only parts Kubernetes rejects: `$schema`, `additionalProperties: false`, `propertyNames`,
 * safe-integer bounds, date-time patterns; quantities as `x-kubernetes-int-or-string`), upstream's
 * names, short names, categories, printer columns and subresources, and upstream's CEL rules.
 *
 * `scripts/generate-crds.ts` writes `generateCRDs()` to `crds/`; tests check the files are current, and
 * the embedded API server installs the same objects at runtime.
 * Source of the presentation details: shared/data/crds/karpenter and karpenter-provider-aws (Karpenter v1.14.1).
 */
import { stringify } from 'yaml';
import { z } from 'zod';
import { KarpenterMachinePoolKind } from './capi.ts';
import { type KarpenterKindInfo, KarpenterKinds } from './schemas.ts';

/** A JSON/OpenAPI schema node. */
export type JSONSchemaNode = { [key: string]: unknown };

/** An `apiextensions.k8s.io/v1` CustomResourceDefinition as a plain object. */
export interface CustomResourceDefinition {
  apiVersion: 'apiextensions.k8s.io/v1';
  kind: 'CustomResourceDefinition';
  metadata: { name: string; labels?: Record<string, string> };
  spec: {
    group: string;
    names: {
      categories: string[];
      kind: string;
      listKind: string;
      plural: string;
      shortNames?: string[];
      singular: string;
    };
    scope: 'Cluster' | 'Namespaced';
    versions: Array<{
      additionalPrinterColumns?: Array<{
        jsonPath: string;
        name: string;
        priority?: number;
        type: string;
        description?: string;
      }>;
      name: string;
      schema: { openAPIV3Schema: JSONSchemaNode };
      served: boolean;
      storage: boolean;
      subresources: {
        status: Record<string, never>;
        scale?: { specReplicasPath: string; statusReplicasPath: string };
      };
    }>;
  };
}

const MAX_SAFE = Number.MAX_SAFE_INTEGER;

/**
 * Converts a JSON Schema emitted by `z.toJSONSchema` into a Kubernetes structural schema.
 * @throws Error when a construct has no structural equivalent (a union other than int-or-string, `$ref`).
 */
export function toStructural(node: JSONSchemaNode, where = '<root>'): JSONSchemaNode {
  if (node.$ref !== undefined) throw new Error(`${where}: $ref is not allowed in a CRD schema`);
  if (node['x-kubernetes-int-or-string'] === true) {
    const anyOf = Array.isArray(node.anyOf) ? (node.anyOf as JSONSchemaNode[]) : [];
    const stringBranch = anyOf.find((b) => b.type === 'string');
    const out: JSONSchemaNode = {
      anyOf: [{ type: 'integer' }, { type: 'string' }],
      'x-kubernetes-int-or-string': true,
    };
    if (stringBranch?.pattern !== undefined) out.pattern = stringBranch.pattern;
    if (node.description !== undefined) out.description = node.description;
    if (node.default !== undefined) out.default = node.default;
    return sortKeys(out);
  }
  if (node.anyOf !== undefined || node.oneOf !== undefined || node.allOf !== undefined) {
    throw new Error(`${where}: unions are not structural; use x-kubernetes-int-or-string or a single type`);
  }
  const out: JSONSchemaNode = {};
  for (const [k, v] of Object.entries(node)) {
    switch (k) {
      case '$schema':
      case 'propertyNames':
      case 'id':
        break;
      case 'additionalProperties':
        if (v === false) break;
        if (typeof v === 'object' && v !== null && Object.keys(v).length === 0) {
          out['x-kubernetes-preserve-unknown-fields'] = true;
          break;
        }
        out[k] = toStructural(v as JSONSchemaNode, `${where}.additionalProperties`);
        break;
      case 'properties': {
        const props: JSONSchemaNode = {};
        for (const name of Object.keys(v as JSONSchemaNode).sort()) {
          props[name] = toStructural((v as Record<string, JSONSchemaNode>)[name]!, `${where}.${name}`);
        }
        if (Object.keys(props).length > 0) out.properties = props;
        break;
      }
      case 'items':
        out.items = toStructural(v as JSONSchemaNode, `${where}[]`);
        break;
      case 'required':
        if (Array.isArray(v) && v.length > 0) out.required = [...(v as string[])].sort();
        break;
      case 'minimum':
        if (v !== -MAX_SAFE) out[k] = v;
        break;
      case 'maximum':
        if (v !== MAX_SAFE) out[k] = v;
        break;
      case 'pattern':
        if (node.format !== 'date-time') out[k] = v;
        break;
      default:
        out[k] = v;
    }
  }
  return sortKeys(out);
}

function sortKeys(o: JSONSchemaNode): JSONSchemaNode {
  const out: JSONSchemaNode = {};
  for (const k of Object.keys(o).sort()) out[k] = o[k];
  return out;
}

/** Structural schema of a zod schema (input shape: fields with defaults are optional and carry `default`). */
export function structuralSchemaOf(schema: z.ZodType, where: string): JSONSchemaNode {
  return toStructural(z.toJSONSchema(schema, { io: 'input' }) as JSONSchemaNode, where);
}

const API_VERSION_DESC =
  'APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values.';
const KIND_DESC =
  'Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. In CamelCase.';

/** The whole-object openAPIV3Schema for one kind. */
export function openAPIV3SchemaFor(info: KarpenterKindInfo): JSONSchemaNode {
  const root: JSONSchemaNode = {
    description: info.description,
    properties: {
      apiVersion: { description: API_VERSION_DESC, type: 'string' },
      kind: { description: KIND_DESC, type: 'string' },
      metadata: { type: 'object' },
      spec: structuralSchemaOf(info.spec, `${info.kind}.spec`),
      status: structuralSchemaOf(info.status, `${info.kind}.status`),
    },
    type: 'object',
  };
  if (info.specRequired) root.required = ['spec'];
  return sortKeys(root);
}

type PrinterColumn = NonNullable<
  CustomResourceDefinition['spec']['versions'][number]['additionalPrinterColumns']
>;

const READY = '.status.conditions[?(@.type=="Ready")].status';
const AGE = { jsonPath: '.metadata.creationTimestamp', name: 'Age', type: 'date' };

/** Upstream's printer columns per kind. */
const PRINTER_COLUMNS: Record<string, PrinterColumn> = {
  NodePool: [
    { jsonPath: '.spec.template.spec.nodeClassRef.name', name: 'NodeClass', type: 'string' },
    { jsonPath: '.status.nodes', name: 'Nodes', type: 'string' },
    { jsonPath: READY, name: 'Ready', type: 'string' },
    AGE,
    { jsonPath: '.spec.weight', name: 'Weight', priority: 1, type: 'integer' },
    { jsonPath: '.status.resources.cpu', name: 'CPU', priority: 1, type: 'string' },
    { jsonPath: '.status.resources.memory', name: 'Memory', priority: 1, type: 'string' },
  ],
  NodeClaim: [
    { jsonPath: '.metadata.labels.node\\.kubernetes\\.io/instance-type', name: 'Type', type: 'string' },
    { jsonPath: '.metadata.labels.karpenter\\.sh/capacity-type', name: 'Capacity', type: 'string' },
    { jsonPath: '.metadata.labels.topology\\.kubernetes\\.io/zone', name: 'Zone', type: 'string' },
    { jsonPath: '.status.nodeName', name: 'Node', type: 'string' },
    { jsonPath: READY, name: 'Ready', type: 'string' },
    AGE,
    { jsonPath: '.status.imageID', name: 'ImageID', priority: 1, type: 'string' },
    { jsonPath: '.status.providerID', name: 'ID', priority: 1, type: 'string' },
    { jsonPath: '.metadata.labels.karpenter\\.sh/nodepool', name: 'NodePool', priority: 1, type: 'string' },
    { jsonPath: '.spec.nodeClassRef.name', name: 'NodeClass', priority: 1, type: 'string' },
    {
      jsonPath: '.status.conditions[?(@.type=="Drifted")].status',
      name: 'Drifted',
      priority: 1,
      type: 'string',
    },
  ],
  EC2NodeClass: [
    { jsonPath: READY, name: 'Ready', type: 'string' },
    AGE,
    { jsonPath: '.spec.role', name: 'Role', priority: 1, type: 'string' },
  ],
  KWOKNodeClass: [],
};

/** The CRD object for one kind. */
export function crdFor(info: KarpenterKindInfo): CustomResourceDefinition {
  const columns = info.printerColumns ?? PRINTER_COLUMNS[info.kind] ?? [];
  const version: CustomResourceDefinition['spec']['versions'][number] = {
    ...(columns.length > 0 ? { additionalPrinterColumns: columns } : {}),
    name: info.version,
    schema: { openAPIV3Schema: openAPIV3SchemaFor(info) },
    served: true,
    storage: true,
    subresources:
      info.kind === 'NodePool'
        ? { scale: { specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.nodes' }, status: {} }
        : { status: {} },
  };
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      ...(info.labels ? { labels: info.labels } : {}),
      name: `${info.plural}.${info.group}`,
    },
    spec: {
      group: info.group,
      names: {
        categories: info.categories ?? ['karpenter'],
        kind: info.kind,
        listKind: `${info.kind}List`,
        plural: info.plural,
        ...(info.shortNames.length > 0 ? { shortNames: info.shortNames } : {}),
        singular: info.singular,
      },
      scope: info.scope ?? 'Cluster',
      versions: [version],
    },
  };
}

/** All CRD objects, keyed by file name (`karpenter.sh_nodepools.yaml`, ...). */
export function crdObjects(): Record<string, CustomResourceDefinition> {
  const out: Record<string, CustomResourceDefinition> = {};
  for (const info of [...Object.values(KarpenterKinds), KarpenterMachinePoolKind])
    out[`${info.group}_${info.plural}.yaml`] = crdFor(info);
  return out;
}

const HEADER =
  '# Generated by scripts/generate-crds.ts from src/apis/schemas.ts. Do not edit; run `npm run generate`.\n---\n';

/**
 * Renders every CRD as YAML, keyed by file name: `karpenter.sh_nodepools.yaml`,
 * `karpenter.sh_nodeclaims.yaml`, `karpenter.k8s.aws_ec2nodeclasses.yaml`,
 * `karpenter.kwok.sh_kwoknodeclasses.yaml`. Deterministic (sorted keys, no line folding).
 */
export function generateCRDs(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [file, crd] of Object.entries(crdObjects())) {
    out[file] = HEADER + stringify(crd, { lineWidth: 0, aliasDuplicateObjects: false });
  }
  return out;
}
