/**
 * Discovery documents (legacy, unaggregated: /api, /api/v1, /apis, /apis/<g>, /apis/<g>/<v>), /version
 * and minimal OpenAPI documents: /openapi/v3 lists every group/version and each group/version document
 * declares, per resource, the operations with their `x-kubernetes-group-version-kind` and the
 * `fieldValidation`/`dryRun`/`fieldManager` query parameters, so kubectl uses server-side field
 * validation instead of client-side schema validation. Schemas of custom resources are included.
 */

import type { JsonObject, ResourceDef } from '../../apis/builtin/types.ts';
import { compareKubeVersions } from './crd.ts';
import type { ClusterStore } from './store.ts';

/** Kubernetes version the embedded server reports. */
export const SERVER_VERSION = {
  major: '1',
  minor: '32',
  gitVersion: 'v1.32.0-capenter',
  gitCommit: '0000000000000000000000000000000000000000',
  gitTreeState: 'clean',
  buildDate: '2025-01-01T00:00:00Z',
  goVersion: 'go1.23.0',
  compiler: 'gc',
  platform: 'linux/amd64',
};

function subresourceEntries(d: ResourceDef): JsonObject[] {
  const out: JsonObject[] = [];
  if (d.hasStatus)
    out.push({
      name: `${d.plural}/status`,
      singularName: '',
      namespaced: d.namespaced,
      kind: d.kind,
      verbs: ['get', 'patch', 'update'],
    });
  if (d.scale)
    out.push({
      name: `${d.plural}/scale`,
      singularName: '',
      namespaced: d.namespaced,
      group: 'autoscaling',
      version: 'v1',
      kind: 'Scale',
      verbs: ['get', 'patch', 'update'],
    });
  if (d.postSubresources.includes('binding'))
    out.push({
      name: `${d.plural}/binding`,
      singularName: '',
      namespaced: true,
      kind: 'Binding',
      verbs: ['create'],
    });
  if (d.postSubresources.includes('eviction'))
    out.push({
      name: `${d.plural}/eviction`,
      singularName: '',
      namespaced: true,
      group: 'policy',
      version: 'v1',
      kind: 'Eviction',
      verbs: ['create'],
    });
  return out;
}

/** APIResourceList for one group/version. */
export function resourceList(store: ClusterStore, group: string, version: string): JsonObject | undefined {
  const defs = store
    .resources()
    .filter((d) => d.group === group && d.version === version)
    .sort((a, b) => (a.plural < b.plural ? -1 : 1));
  if (defs.length === 0) return undefined;
  const resources: JsonObject[] = [];
  for (const d of defs) {
    const r: JsonObject = {
      name: d.plural,
      singularName: d.singular,
      namespaced: d.namespaced,
      kind: d.kind,
      verbs: d.verbs,
    };
    if (d.shortNames.length) r.shortNames = d.shortNames;
    if (d.categories.length) r.categories = d.categories;
    resources.push(r, ...subresourceEntries(d));
  }
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: group ? `${group}/${version}` : version,
    resources,
  };
}

/** Groups with their served versions, preferred version first. */
export function groups(store: ClusterStore): { name: string; versions: string[] }[] {
  const m = new Map<string, Set<string>>();
  for (const d of store.resources()) {
    if (!d.group) continue;
    let s = m.get(d.group);
    if (!s) {
      s = new Set();
      m.set(d.group, s);
    }
    s.add(d.version);
  }
  const builtinOrder = [
    'apps',
    'events.k8s.io',
    'batch',
    'policy',
    'storage.k8s.io',
    'coordination.k8s.io',
    'apiextensions.k8s.io',
  ];
  const names = [...m.keys()].sort((a, b) => {
    const ia = builtinOrder.indexOf(a);
    const ib = builtinOrder.indexOf(b);
    if (ia >= 0 || ib >= 0) return (ia < 0 ? 99 : ia) - (ib < 0 ? 99 : ib);
    return a < b ? -1 : 1;
  });
  return names.map((name) => ({ name, versions: [...m.get(name)!].sort(compareKubeVersions) }));
}

function groupDoc(name: string, versions: string[]): JsonObject {
  const vs = versions.map((v) => ({ groupVersion: `${name}/${v}`, version: v }));
  return { name, versions: vs, preferredVersion: vs[0] ?? null };
}

/** APIGroupList for /apis. */
export function apiGroupList(store: ClusterStore): JsonObject {
  return {
    kind: 'APIGroupList',
    apiVersion: 'v1',
    groups: groups(store).map((g) => groupDoc(g.name, g.versions)),
  };
}

/** APIGroup for /apis/<group>. */
export function apiGroup(store: ClusterStore, group: string): JsonObject | undefined {
  const g = groups(store).find((x) => x.name === group);
  return g ? { kind: 'APIGroup', apiVersion: 'v1', ...groupDoc(g.name, g.versions) } : undefined;
}

/** APIVersions for /api. */
export function apiVersions(serverAddress: string): JsonObject {
  return {
    kind: 'APIVersions',
    versions: ['v1'],
    serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }],
  };
}

/** The `paths` key of a group/version in /openapi/v3 (`api/v1`, `apis/apps/v1`). */
export function openapiKey(group: string, version: string): string {
  return group ? `apis/${group}/${version}` : `api/${version}`;
}

/** /openapi/v3 root: every served group/version with its document URL. */
export function openapiV3Root(store: ClusterStore, hash: string): JsonObject {
  const paths: JsonObject = {};
  const gvs = new Set(store.resources().map((d) => `${d.group}|${d.version}`));
  for (const gv of gvs) {
    const [g, v] = gv.split('|') as [string, string];
    const k = openapiKey(g, v);
    paths[k] = { serverRelativeURL: `/openapi/v3/${k}?hash=${hash}` };
  }
  return { paths };
}

const PARAMS = ['dryRun', 'fieldManager', 'fieldValidation', 'pretty'].map((name) => ({
  name,
  in: 'query',
  schema: { type: 'string', uniqueItems: true },
}));

function schemaName(d: ResourceDef): string {
  const g = d.group ? d.group.split('.').reverse().join('.') : 'io.k8s.api.core';
  return `${g}.${d.version}.${d.kind}`;
}

/** OpenAPI v3 document of one group/version (operations + schemas of custom resources). */
export function openapiV3Doc(store: ClusterStore, group: string, version: string): JsonObject | undefined {
  const defs = store.resources().filter((d) => d.group === group && d.version === version);
  if (defs.length === 0) return undefined;
  const paths: JsonObject = {};
  const schemas: JsonObject = {};
  for (const d of defs) {
    const gvk = { group: d.group, version: d.version, kind: d.kind };
    const base = `/${openapiKey(group, version)}${d.namespaced ? '/namespaces/{namespace}' : ''}/${d.plural}`;
    const name = schemaName(d);
    const ref = { $ref: `#/components/schemas/${name}` };
    const op = (action: string): JsonObject => ({
      operationId: `${action}${d.kind}`,
      parameters: PARAMS,
      responses: { '200': { description: 'OK', content: { 'application/json': { schema: ref } } } },
      'x-kubernetes-action': action,
      'x-kubernetes-group-version-kind': gvk,
    });
    paths[base] = { get: op('list'), post: op('post') };
    paths[`${base}/{name}`] = { get: op('get'), put: op('put'), patch: op('patch'), delete: op('delete') };
    const s = store.schemaFor(d)?.schema;
    const schema: JsonObject = s
      ? { ...s, 'x-kubernetes-group-version-kind': [gvk] }
      : {
          type: 'object',
          'x-kubernetes-group-version-kind': [gvk],
          'x-kubernetes-preserve-unknown-fields': true,
        };
    schemas[name] = schema;
  }
  return {
    openapi: '3.0.0',
    info: { title: 'Kubernetes', version: SERVER_VERSION.gitVersion },
    paths,
    components: { schemas },
  };
}

/** Minimal OpenAPI v2 (JSON) document: paths and definitions with GVK extensions, no field schemas. */
export function openapiV2Doc(store: ClusterStore): JsonObject {
  const definitions: JsonObject = {};
  for (const d of store.resources()) {
    definitions[schemaName(d)] = {
      type: 'object',
      'x-kubernetes-group-version-kind': [{ group: d.group, version: d.version, kind: d.kind }],
    };
  }
  return {
    swagger: '2.0',
    info: { title: 'Kubernetes', version: SERVER_VERSION.gitVersion },
    paths: {},
    definitions,
  };
}
