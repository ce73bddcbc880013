/**
 * Creates manifest objects through the Kubernetes client, in dependency order, as `kubectl create -f` would on a
 * fresh cluster: Namespaces first (and any namespace an object names but the input does not create), then
 * NodeClasses (every provider module's kinds, `src/cloudprovider/modules.ts`, at their `applyOrder`), then NodePools,
 * then everything else (workloads last). Namespaced objects without
 * `metadata.namespace` go to `defaultNamespace`. Objects that already exist are left alone (reported `exists`).
 */
import type { KubeObject } from '../apis/core.ts';
import { PROVIDER_MODULES } from '../cloudprovider/modules.ts';
import type { KubeClient } from '../kube/client.ts';
import { isAlreadyExists } from '../kube/errors.ts';

/** Outcome of one object. */
export interface AppliedObject {
  kind: string;
  namespace?: string;
  name: string;
  result: 'created' | 'exists' | 'failed';
  /** Error message when `failed` (names the object). */
  error?: string;
}

const ORDER: Record<string, number> = {
  Namespace: 0,
  CustomResourceDefinition: 0,
  PriorityClass: 1,
  StorageClass: 1,
  LimitRange: 2,
  ResourceQuota: 2,
  // before the workloads whose pods name them: ServiceAccount admission refuses a pod whose ServiceAccount is
  // missing (Helm's install order puts ServiceAccount, Secret and ConfigMap early too)
  ServiceAccount: 2,
  Secret: 2,
  ConfigMap: 2,
  ...Object.fromEntries(
    PROVIDER_MODULES.flatMap((m) => m.nodeClassKinds.map((k) => [k.kind, k.applyOrder ?? 3])),
  ),
  NodePool: 4,
  Node: 5,
  PersistentVolume: 5,
  PersistentVolumeClaim: 6,
  PodDisruptionBudget: 6,
  DaemonSet: 7,
};

/**
 * Creates `objects` (see the module comment). Never throws for single objects: failures are returned with their
 * message; the caller decides whether they are fatal.
 */
export async function applyObjects(
  client: KubeClient,
  objects: readonly KubeObject[],
  opts: { defaultNamespace?: string; fieldManager?: string } = {},
): Promise<AppliedObject[]> {
  const defaultNs = opts.defaultNamespace ?? 'default';
  const out: AppliedObject[] = [];
  const sorted = objects
    .map((o, i) => ({ o, i }))
    .sort((a, b) => (ORDER[a.o.kind ?? ''] ?? 8) - (ORDER[b.o.kind ?? ''] ?? 8) || a.i - b.i)
    .map((x) => x.o);
  const namespaces = new Set<string>();
  const prepared: KubeObject[] = [];
  for (const o of sorted) {
    const obj = structuredClone(o);
    // kinds outside the client's static registry (Service, ServiceAccount, ...) through API discovery, as kubectl
    // does; a kind the server does not serve yet (a CRD applied in the same input) is left to the create's error
    const rt =
      client.registry.forApiVersionKind(obj.apiVersion ?? '', obj.kind ?? '') ??
      (obj.apiVersion && obj.kind
        ? await client.discover(obj.apiVersion, obj.kind).catch(() => undefined)
        : undefined);
    const namespaced = rt?.namespaced ?? false;
    if (namespaced) {
      obj.metadata = { ...(obj.metadata ?? {}), namespace: obj.metadata?.namespace ?? defaultNs };
      namespaces.add(obj.metadata.namespace as string);
    }
    prepared.push(obj);
  }
  const declared = new Set(prepared.filter((o) => o.kind === 'Namespace').map((o) => o.metadata?.name ?? ''));
  const existing = new Set((await client.list('Namespace')).items.map((n) => n.metadata.name ?? ''));
  for (const ns of namespaces) {
    if (declared.has(ns) || existing.has(ns)) continue;
    try {
      await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
    }
  }
  for (const obj of prepared) {
    const rec: AppliedObject = {
      kind: obj.kind ?? '',
      name: obj.metadata?.name ?? '',
      ...(obj.metadata?.namespace ? { namespace: obj.metadata.namespace } : {}),
      result: 'created',
    };
    try {
      await client.create(obj, opts.fieldManager ? { fieldManager: opts.fieldManager } : {});
    } catch (err) {
      if (isAlreadyExists(err)) rec.result = 'exists';
      else {
        rec.result = 'failed';
        rec.error = `${rec.kind} ${rec.namespace ? `${rec.namespace}/` : ''}${rec.name}: ${(err as Error).message}`;
      }
    }
    out.push(rec);
  }
  return out;
}
