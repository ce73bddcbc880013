/**
 * The CustomResourceDefinitions the controller needs, a check that the cluster serves them, and an
 * installer for `capenter controller --install-crds`.
 *
 * Upstream Karpenter ships its CRDs in the Helm chart and crashes at start when they are absent
 * (controller-runtime: "no matches for kind"). capenter instead keeps running, logs one error that names the
 * missing CRDs and the fix (`kubectl apply -f crds/`), reports them on `/readyz`, and starts its
 * controllers once they are served. The CRD objects are `crdObjects()` (src/apis/crds.ts), byte for byte
 * what `crds/` holds (test/crds.test.ts checks), so `--install-crds` applies exactly `kubectl apply -f crds/`.
 * They are generated from the zod schemas, so `installCRDs` imports them when it runs; the check needs only the
 * resource names ({@link ShippedCRDKinds}), and a controller that does not install CRDs never loads zod for it.
 */
import type { CustomResourceDefinition } from '../apis/crds.ts';
import { registerProviderKind } from '../apis/provider-kinds.ts';
import type { KarpenterKindInfo } from '../apis/schemas.ts';
import type { NodeClassKind } from '../cloudprovider/types.ts';
import type { KubeClient } from '../kube/client.ts';
import { isNotFound } from '../kube/errors.ts';
import { Resources, type ResourceType } from '../kube/resources.ts';

/** One CRD the controller reads: its name (`nodepools.karpenter.sh`) and the resource it serves. */
export interface RequiredCRD {
  /** CRD name, `<plural>.<group>`. */
  name: string;
  /** The served resource (group, version, plural, kind; cluster-scoped). */
  resource: ResourceType;
}

/**
 * The kinds whose CRDs capenter ships (`crds/`: the kinds of `KarpenterKinds` in `apis/schemas.ts`, which
 * crds.test.ts checks), as the resources they serve.
 */
export const ShippedCRDKinds: readonly ResourceType[] = [
  Resources.NodePool,
  Resources.NodeClaim,
  Resources.EC2NodeClass,
  Resources.KWOKNodeClass,
  Resources.ClusterAPINodeClass,
  Resources.NodeOverlay,
];

/** The served resource of a module's own NodeClass kind (cluster-scoped unless its `scope` says otherwise). */
export function resourceOf(info: KarpenterKindInfo): ResourceType {
  return {
    group: info.group,
    version: info.version,
    plural: info.plural,
    kind: info.kind,
    namespaced: info.scope === 'Namespaced',
  };
}

/**
 * Registers a module's own NodeClass kinds (`ProviderNodeClassKind.api`): in `client`'s resource registry (so the
 * cluster state, the NodeClass controllers and informers serve them like built-in kinds) and for validation
 * (`apis/provider-kinds.ts`). @throws Error for a kind in one of capenter's own API groups.
 */
export function registerOwnKinds(client: KubeClient, ownKinds: readonly KarpenterKindInfo[]): void {
  for (const info of ownKinds) {
    registerProviderKind(info);
    client.registry.register(resourceOf(info));
  }
}

/** The fix printed with every missing-CRD message. */
export const CRDFix = 'kubectl apply -f crds/';

/**
 * The CRDs the controller needs: NodePool and NodeClaim (`karpenter.sh/v1`) plus the CRD of every
 * NodeClass kind the cloud provider supports that capenter ships or its module declares (`ownKinds`,
 * `ProviderNodeClassKind.api`); other kinds are the provider's business. Order: NodePool, NodeClaim, then the
 * NodeClasses in the provider's order.
 */
export function requiredCRDs(
  nodeClasses: readonly NodeClassKind[],
  ownKinds: readonly KarpenterKindInfo[] = [],
): RequiredCRD[] {
  const wanted = [
    { group: 'karpenter.sh', kind: 'NodePool' },
    { group: 'karpenter.sh', kind: 'NodeClaim' },
    ...nodeClasses,
  ];
  const out: RequiredCRD[] = [];
  for (const w of wanted) {
    const info =
      ShippedCRDKinds.find((i) => i.group === w.group && i.kind === w.kind) ??
      ownKinds.map(resourceOf).find((i) => i.group === w.group && i.kind === w.kind);
    if (!info || out.some((r) => r.resource.kind === info.kind && r.resource.group === info.group)) continue;
    out.push({
      name: `${info.plural}.${info.group}`,
      resource: {
        group: info.group,
        version: info.version,
        plural: info.plural,
        kind: info.kind,
        namespaced: false,
      },
    });
  }
  return out;
}

/** Outcome of {@link checkCRDs}. */
export interface CRDCheck {
  /** Names of the required CRDs the cluster does not serve (not installed, or not yet Established). */
  missing: string[];
  /** Set when a check failed for another reason (connection, authorization): the first such message. */
  error?: string;
}

/**
 * Asks the API server for each required resource (a list with `limit=1`: needs only the `list` permission
 * the controller has anyway, and answers 404 until the CRD is Established). Never throws.
 */
export async function checkCRDs(client: KubeClient, required: readonly RequiredCRD[]): Promise<CRDCheck> {
  const missing: string[] = [];
  let error: string | undefined;
  await Promise.all(
    required.map(async (r) => {
      try {
        await client.list(r.resource, { limit: 1 });
      } catch (err) {
        if (isNotFound(err)) missing.push(r.name);
        else error ??= `${r.name}: ${(err as Error).message}`;
      }
    }),
  );
  const order = required.map((r) => r.name);
  missing.sort((a, b) => order.indexOf(a) - order.indexOf(b));
  return error === undefined ? { missing } : { missing, error };
}

/** The `/readyz` reason (and log message) for a failed {@link CRDCheck}; `undefined` when all are served. */
export function crdProblem(check: CRDCheck): string | undefined {
  if (check.missing.length > 0) {
    const s = check.missing.length === 1 ? '' : 's';
    return `CustomResourceDefinition${s} not installed: ${check.missing.join(', ')}; install with \`${CRDFix}\` (or run \`capenter controller --install-crds\`)`;
  }
  if (check.error !== undefined) return `cannot check the CustomResourceDefinitions: ${check.error}`;
  return undefined;
}

/**
 * Applies capenter's CRDs (all of `crds/`, as `kubectl apply -f crds/` would; `crdObjects()` unless `crds` is
 * given) with server-side apply, field manager `capenter`, forcing ownership (an older copy is updated in place).
 * Returns the CRD names.
 * @throws KubeApiError when the API server rejects one (e.g. 403 without permission on
 * customresourcedefinitions); earlier ones stay applied.
 */
export async function installCRDs(
  client: KubeClient,
  crds?: readonly CustomResourceDefinition[],
  ownKinds: readonly KarpenterKindInfo[] = [],
): Promise<string[]> {
  const names: string[] = [];
  const { crdFor, crdObjects } = await import('../apis/crds.ts');
  for (const crd of [...(crds ?? Object.values(crdObjects())), ...ownKinds.map(crdFor)]) {
    await client.apply(structuredClone(crd) as never, { fieldManager: 'capenter', force: true });
    names.push(crd.metadata.name);
  }
  return names;
}
