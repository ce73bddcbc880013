/**
 * Records the Kubernetes API requests a client makes, as RBAC sees them: (verb, API group, resource[/subresource],
 * namespace). Used to derive the Helm chart's least-privilege RBAC from what the controllers actually do.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { ROOT } from '../../scripts/build.ts';
import { KubeClient, type WatchHandle, type WatchOptions } from '../../src/kube/client.ts';
import { resolveKubeconfig } from '../../src/kube/kubeconfig.ts';
import type { ObjectOf, ResourceRef } from '../../src/kube/resources.ts';
import type { WatchEvent } from '../../src/kube/types.ts';

/** One request as an RBAC attribute set. */
export interface ApiRequest {
  verb: string;
  /** API group (`''` for core). */
  group: string;
  /** Plural resource, with `/subresource` when one is addressed (`pods/eviction`, `nodeclaims/status`). */
  resource: string;
  /** Namespace of the request, `undefined` for cluster-scoped or all-namespace requests. */
  namespace?: string;
}

/**
 * Maps an HTTP method and API path to the RBAC attributes (kube-apiserver's RequestInfo rules). Returns `undefined`
 * for non-resource paths (discovery, `/version`), which every authenticated user may read.
 */
export function requestAttributes(method: string, path: string, watch = false): ApiRequest | undefined {
  const p = path.split('?')[0]!.split('/').filter(Boolean);
  let group: string;
  let rest: string[];
  if (p[0] === 'api' && p[1] === 'v1') {
    group = '';
    rest = p.slice(2);
  } else if (p[0] === 'apis' && p.length >= 3) {
    group = p[1]!;
    rest = p.slice(3);
  } else return undefined;
  if (rest.length === 0) return undefined;
  let namespace: string | undefined;
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    namespace = rest[1];
    rest = rest.slice(2);
  }
  const [resource, name, sub] = rest;
  if (!resource) return undefined;
  const m = method.toUpperCase();
  const verb = watch
    ? 'watch'
    : m === 'GET'
      ? name
        ? 'get'
        : 'list'
      : m === 'POST'
        ? 'create'
        : m === 'PUT'
          ? 'update'
          : m === 'PATCH'
            ? 'patch'
            : m === 'DELETE'
              ? name
                ? 'delete'
                : 'deletecollection'
              : m.toLowerCase();
  return {
    verb,
    group,
    resource: sub ? `${resource}/${sub}` : resource,
    ...(namespace ? { namespace } : {}),
  };
}

/** A {@link KubeClient} that records every request it makes (including watches) into `requests`. */
export class RecordingClient extends KubeClient {
  readonly requests: ApiRequest[] = [];

  static fromKubeconfigText(yaml: string, userAgent = 'capenter-controller'): RecordingClient {
    return new RecordingClient(resolveKubeconfig(yaml), { userAgent });
  }

  override async request<T = unknown>(
    method: string,
    path: string,
    req: Parameters<KubeClient['request']>[2] = {},
  ): Promise<T> {
    const a = requestAttributes(method, path);
    if (a) this.requests.push(a);
    return super.request<T>(method, path, req);
  }

  override async watch<R extends ResourceRef>(
    ref: R,
    opts: WatchOptions,
    onEvent: (ev: WatchEvent<ObjectOf<R>>) => void,
    onDone: (err: unknown) => void,
  ): Promise<WatchHandle> {
    const rt = this.resource(ref);
    const a = requestAttributes('GET', this.path(rt, opts.namespace), true);
    if (a) this.requests.push(a);
    return super.watch(ref, opts, onEvent, onDone);
  }
}

/** `verb group resource` keys of `reqs`, sorted and unique (namespaces dropped). */
export function requestKeys(reqs: readonly ApiRequest[]): string[] {
  return [...new Set(reqs.map((r) => `${r.verb} ${r.group || 'core'} ${r.resource}`))].sort();
}

/** An RBAC PolicyRule. */
export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

/** True when `rules` allow request `r` (exact names only: the chart uses no wildcards). */
export function allows(rules: readonly PolicyRule[], r: ApiRequest): boolean {
  return rules.some(
    (rule) =>
      rule.apiGroups.includes(r.group) && rule.resources.includes(r.resource) && rule.verbs.includes(r.verb),
  );
}

/** Every `verb group resource` a list of rules grants. */
export function ruleKeys(rules: readonly PolicyRule[]): string[] {
  const out = new Set<string>();
  for (const rule of rules)
    for (const g of rule.apiGroups)
      for (const res of rule.resources) for (const v of rule.verbs) out.add(`${v} ${g || 'core'} ${res}`);
  return [...out].sort();
}

/** The chart's rules: ClusterRole and the Role of the Lease (the templates include these files verbatim). */
export function chartRules(): { cluster: PolicyRule[]; namespaced: PolicyRule[] } {
  const read = (f: string) =>
    parse(readFileSync(join(ROOT, 'charts/capenter/files', f), 'utf8')) as PolicyRule[];
  return { cluster: read('clusterrole-rules.yaml'), namespaced: read('role-rules.yaml') };
}
