/**
 * `AWSCluster.spec.identityRef`: the credentials that act for a CAPA cluster, resolved as CAPA does
 * (cluster-api-provider-aws `pkg/cloud/scope/session.go` `buildProvidersForRef`, `isClusterPermittedToUsePrincipal`;
 * `pkg/cloud/identity/identity.go`):
 * - no identityRef, or `AWSClusterControllerIdentity` (its name must be `default`): the controller's own credentials;
 * - `AWSClusterStaticIdentity`: the keys `AccessKeyID`, `SecretAccessKey` (and optional `SessionToken`) of the Secret
 *   `spec.secretRef` in the controller's namespace;
 * - `AWSClusterRoleIdentity`: `sts:AssumeRole` of `spec.roleARN` (`externalID`, `sessionName`, `durationSeconds`,
 *   `inlinePolicy`, `policyARNs`), called with the credentials of `spec.sourceIdentityRef` (resolved the same way,
 *   chains allowed) or the controller's own.
 * Every identity of the chain must allow the Cluster's namespace (`spec.allowedNamespaces`: absent = none, `{}` =
 * all, else `list` plus the namespaces `selector` matches; an empty selector matches none).
 * {@link ClusterCredentials} is the credential provider the aws provider's SDK clients are built with, switched to
 * the resolved identity. Credentials are never logged and never put in a message.
 */
import { AssumeRoleCommand, STSClient } from '@aws-sdk/client-sts';
import type { AWSCluster, AWSClusterIdentity, AWSIdentityReference } from '../../apis/capi.ts';
import type { KubeObject } from '../../apis/core.ts';
import type { KubeClient } from '../../kube/client.ts';
import { isNotFound, KubeApiError } from '../../kube/errors.ts';
import { selectorMatches } from '../../scheduling/labelselector.ts';

/** Credentials as the AWS SDK v3 takes them (`AwsCredentialIdentity`); `expiration` ends a cache entry. */
export interface AwsCredentialIdentity {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  expiration?: Date;
}

/** A credential provider as the AWS SDK v3 takes it (`AwsCredentialIdentityProvider`; its argument is ignored). */
export type AwsCredentialIdentityProvider = (o?: unknown) => Promise<AwsCredentialIdentity>;

/** CAPA's condition reasons (`api/v1beta2/conditions_consts.go`) plus capenter's for a missing or broken identity. */
export const IdentityReasons = {
  /** The Cluster's namespace is not in the identity's `spec.allowedNamespaces` (CAPA's reason). */
  PrincipalUsageUnauthorized: 'PrincipalUsageUnauthorized',
  /** A `sourceIdentityRef` of the chain does not allow the namespace (CAPA's reason). */
  SourcePrincipalUsageUnauthorized: 'SourcePrincipalUsageUnauthorized',
  /** The identity, its Secret or a key of the Secret is missing, or the reference is malformed. */
  IdentityNotFound: 'IdentityNotFound',
  InvalidIdentity: 'InvalidIdentity',
} as const;

/** The outcome of {@link resolveClusterIdentity}: a credential provider (undefined = the controller's own), or why not. */
export type IdentityResolution =
  | { ok: true; key: string; provider?: AwsCredentialIdentityProvider }
  | { ok: false; reason: string; message: string };

/** What {@link resolveClusterIdentity} needs besides the AWSCluster. */
export interface IdentityDeps {
  /** Client of the management cluster (identities, Namespaces, the static identity's Secret). */
  management: KubeClient;
  /** The controller's namespace: where an `AWSClusterStaticIdentity`'s Secret is read (CAPA: the manager's). */
  controllerNamespace: string;
  /** The controller's own credentials (the SDK's default chain, or an emulator's keys). */
  controller: AwsCredentialIdentityProvider;
  /** Region of the STS calls (the AWSCluster's region). */
  region: string;
  /** STS endpoint (an emulator); undefined = the SDK's default, including `AWS_ENDPOINT_URL`. */
  endpoint?: string;
}

/** A failed step of the resolution, turned into `{ok: false}` by {@link resolveClusterIdentity}. */
class IdentityError extends Error {
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

const KINDS = ['AWSClusterControllerIdentity', 'AWSClusterRoleIdentity', 'AWSClusterStaticIdentity'] as const;

/**
 * Resolves `aws.spec.identityRef` for a Cluster in `aws.metadata.namespace`. `key` changes only when the resolved
 * chain changes (identity specs, Secret versions), so a caller keeps its cached provider otherwise. Never throws for
 * bad input: a missing identity/Secret/key, a non-`default` controller identity, an unknown kind or a disallowed
 * namespace is `{ok: false}` with a message naming the object, the field and the fix. API errors other than
 * NotFound are rethrown.
 */
export async function resolveClusterIdentity(
  aws: AWSCluster,
  deps: IdentityDeps,
): Promise<IdentityResolution> {
  const ref = aws.spec?.identityRef;
  const namespace = aws.metadata.namespace ?? 'default';
  if (!ref) return { ok: true, key: 'controller' };
  try {
    const r = await resolveRef(ref, namespace, deps, true, 0);
    return { ok: true, key: r.key, ...(r.provider ? { provider: r.provider } : {}) };
  } catch (err) {
    if (err instanceof IdentityError)
      return {
        ok: false,
        reason: err.reason,
        message: `AWSCluster ${namespace}/${aws.metadata.name} spec.identityRef: ${err.message}`,
      };
    throw err;
  }
}

/** One identity of the chain: its provider (undefined = the controller's own) and a key of what it was built from. */
async function resolveRef(
  ref: AWSIdentityReference,
  namespace: string,
  deps: IdentityDeps,
  top: boolean,
  depth: number,
): Promise<{ key: string; provider?: AwsCredentialIdentityProvider }> {
  if (!(KINDS as readonly string[]).includes(ref.kind))
    throw new IdentityError(
      IdentityReasons.InvalidIdentity,
      `unknown kind "${ref.kind}"; use one of ${KINDS.join(', ')}`,
    );
  if (depth > 8)
    throw new IdentityError(
      IdentityReasons.InvalidIdentity,
      `${ref.kind} ${ref.name}: sourceIdentityRef chain is longer than 8 (a cycle?); fix spec.sourceIdentityRef`,
    );
  if (ref.kind === 'AWSClusterControllerIdentity' && ref.name !== 'default')
    throw new IdentityError(
      IdentityReasons.InvalidIdentity,
      `AWSClusterControllerIdentity must be named "default", got "${ref.name}"`,
    );
  const id = await getIdentity(deps.management, ref);
  await checkAllowed(id, ref, namespace, deps, top);
  const key = `${ref.kind}/${ref.name}@${id.metadata.resourceVersion ?? ''}`;
  if (ref.kind === 'AWSClusterControllerIdentity') return { key };
  if (ref.kind === 'AWSClusterStaticIdentity') return staticIdentity(id, deps, key);
  const source = id.spec?.sourceIdentityRef
    ? await resolveRef(id.spec.sourceIdentityRef, namespace, deps, false, depth + 1)
    : undefined;
  return {
    key: `${key}<-${source?.key ?? 'controller'}`,
    provider: assumeRoleProvider(id, source?.provider ?? deps.controller, deps),
  };
}

/** The identity object. @throws IdentityError IdentityNotFound when it does not exist. */
async function getIdentity(management: KubeClient, ref: AWSIdentityReference): Promise<AWSClusterIdentity> {
  try {
    return (await management.get(ref.kind, ref.name)) as AWSClusterIdentity;
  } catch (err) {
    if (!isNotFound(err)) throw err;
    throw new IdentityError(
      IdentityReasons.IdentityNotFound,
      `${ref.kind} ${ref.name} not found; create it (cluster-scoped) or fix the reference`,
    );
  }
}

/** @throws IdentityError (Source)PrincipalUsageUnauthorized when `id` does not allow `namespace` (CAPA's message). */
async function checkAllowed(
  id: AWSClusterIdentity,
  ref: AWSIdentityReference,
  namespace: string,
  deps: IdentityDeps,
  top: boolean,
): Promise<void> {
  if (await namespaceAllowed(id, namespace, deps.management)) return;
  throw new IdentityError(
    top ? IdentityReasons.PrincipalUsageUnauthorized : IdentityReasons.SourcePrincipalUsageUnauthorized,
    `Namespace is not permitted to use ${ref.kind}: ${ref.name}; add "${namespace}" to its spec.allowedNamespaces.list (or match it with spec.allowedNamespaces.selector, or set spec.allowedNamespaces: {} to allow every namespace)`,
  );
}

/** CAPA `isClusterPermittedToUsePrincipal`: absent = none, `{}` = all, `list`, then `selector` (empty = none). */
async function namespaceAllowed(
  id: AWSClusterIdentity,
  namespace: string,
  management: KubeClient,
): Promise<boolean> {
  const allowed = id.spec?.allowedNamespaces;
  if (!allowed) return false;
  const selector = allowed.selector;
  const emptySelector =
    !selector ||
    (Object.keys(selector.matchLabels ?? {}).length === 0 && (selector.matchExpressions ?? []).length === 0);
  if ((allowed.list ?? []).length === 0 && emptySelector) return allowed.list == null; // `{}`: every namespace
  if ((allowed.list ?? []).includes(namespace)) return true;
  if (emptySelector) return false;
  let ns: KubeObject;
  try {
    ns = await management.get('Namespace', namespace);
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
  return selectorMatches(selector as Parameters<typeof selectorMatches>[0], ns.metadata?.labels ?? {});
}

/** The static identity's keys from its Secret. @throws IdentityError when the Secret or a required key is missing. */
async function staticIdentity(
  id: AWSClusterIdentity,
  deps: IdentityDeps,
  key: string,
): Promise<{ key: string; provider: AwsCredentialIdentityProvider }> {
  const name = id.spec?.secretRef;
  const where = `AWSClusterStaticIdentity ${id.metadata.name} spec.secretRef`;
  if (!name) throw new IdentityError(IdentityReasons.InvalidIdentity, `${where} is empty; name a Secret`);
  let secret: KubeObject & { data?: Record<string, string> };
  try {
    secret = await deps.management.get('Secret', name, deps.controllerNamespace);
  } catch (err) {
    if (!isNotFound(err)) throw err;
    throw new IdentityError(
      IdentityReasons.IdentityNotFound,
      `${where}: Secret ${deps.controllerNamespace}/${name} not found; create it in the controller's namespace with keys AccessKeyID and SecretAccessKey`,
    );
  }
  try {
    secret = await ensureOwnedByIdentity(secret, id, deps.management);
  } catch (err) {
    if (!(err instanceof KubeApiError && err.code === 403)) throw err;
    throw new IdentityError(
      IdentityReasons.InvalidIdentity,
      `${where}: cannot set the owner reference of Secret ${deps.controllerNamespace}/${name} to the identity (as CAPA does for clusterctl move): the controller may not patch Secrets in ${deps.controllerNamespace}; grant it (the chart's Role does)`,
    );
  }
  const value = (k: string): string | undefined => {
    const b64 = secret.data?.[k];
    return b64 ? Buffer.from(b64, 'base64').toString('utf8') : undefined;
  };
  const missing = ['AccessKeyID', 'SecretAccessKey'].filter((k) => !value(k));
  if (missing.length > 0)
    throw new IdentityError(
      IdentityReasons.InvalidIdentity,
      `${where}: Secret ${deps.controllerNamespace}/${name} has no ${missing.join(' or ')} key; add it`,
    );
  const creds: AwsCredentialIdentity = {
    accessKeyId: value('AccessKeyID') as string,
    secretAccessKey: value('SecretAccessKey') as string,
    ...(value('SessionToken') ? { sessionToken: value('SessionToken') as string } : {}),
  };
  return { key: `${key}:${secret.metadata?.resourceVersion ?? ''}`, provider: async () => creds };
}

/**
 * CAPA `buildAWSClusterStaticIdentity`: "Set ClusterStaticPrincipal as Secret's owner reference for 'clusterctl
 * move'" — the Secret gets an owner reference to its AWSClusterStaticIdentity (`util.EnsureOwnerRef`: an existing
 * reference to the same group, kind and name is replaced, else one is appended; no `controller` flag), so `clusterctl
 * move` carries the Secret with the identity and deleting the identity garbage-collects it. A merge patch carrying
 * the read `resourceVersion` (a concurrent change is a Conflict, retried by the reconcile). Returns the patched
 * Secret (unchanged when the reference is already there). @throws the API error of the patch (Forbidden: the
 * controller needs `patch` on Secrets in its namespace).
 */
export async function ensureOwnedByIdentity<T extends KubeObject>(
  secret: T,
  id: AWSClusterIdentity,
  management: KubeClient,
): Promise<T> {
  const apiVersion = id.apiVersion ?? 'infrastructure.cluster.x-k8s.io/v1beta2';
  const group = apiVersion.split('/')[0];
  const ref = {
    apiVersion,
    kind: 'AWSClusterStaticIdentity',
    name: id.metadata.name,
    uid: id.metadata.uid ?? '',
  };
  const refs = secret.metadata?.ownerReferences ?? [];
  const same = (r: (typeof refs)[number]): boolean =>
    r.apiVersion.split('/')[0] === group && r.kind === ref.kind && r.name === ref.name;
  const existing = refs.find(same);
  if (existing && existing.uid === ref.uid && existing.apiVersion === ref.apiVersion) return secret;
  const ownerReferences = existing ? refs.map((r) => (same(r) ? ref : r)) : [...refs, ref];
  return (await management.patch(
    'Secret',
    secret.metadata?.name ?? '',
    secret.metadata?.namespace,
    { metadata: { ownerReferences, resourceVersion: secret.metadata?.resourceVersion } },
    { type: 'merge' },
  )) as T;
}

/**
 * A provider that calls `sts:AssumeRole` for `id` with the `source` credentials and caches the result until five
 * minutes before it expires (as aws-sdk-go-v2's `aws.CredentialsCache` around `stscreds.AssumeRoleProvider`).
 */
function assumeRoleProvider(
  id: AWSClusterIdentity,
  source: AwsCredentialIdentityProvider,
  deps: IdentityDeps,
): AwsCredentialIdentityProvider {
  const sts = new STSClient({
    region: deps.region,
    credentials: source,
    ...(deps.endpoint ? { endpoint: deps.endpoint } : {}),
  });
  const spec = id.spec ?? {};
  let cached: AwsCredentialIdentity | undefined;
  return async () => {
    if (cached?.expiration && cached.expiration.getTime() - 5 * 60_000 > Date.now()) return cached;
    const out = await sts.send(
      new AssumeRoleCommand({
        RoleArn: spec.roleARN,
        RoleSessionName: spec.sessionName || `capenter-${id.metadata.name}`,
        ...(spec.externalID ? { ExternalId: spec.externalID } : {}),
        ...(spec.durationSeconds ? { DurationSeconds: spec.durationSeconds } : {}),
        ...(spec.inlinePolicy ? { Policy: spec.inlinePolicy } : {}),
        ...(spec.policyARNs?.length ? { PolicyArns: spec.policyARNs.map((arn) => ({ arn })) } : {}),
      }),
    );
    const c = out.Credentials;
    if (!c?.AccessKeyId || !c.SecretAccessKey)
      throw new Error(
        `sts:AssumeRole of ${spec.roleARN} (AWSClusterRoleIdentity ${id.metadata.name}) returned no credentials`,
      );
    cached = {
      accessKeyId: c.AccessKeyId,
      secretAccessKey: c.SecretAccessKey,
      ...(c.SessionToken ? { sessionToken: c.SessionToken } : {}),
      ...(c.Expiration ? { expiration: c.Expiration } : {}),
    };
    return cached;
  };
}

/**
 * The credential provider of the aws provider's SDK clients: the controller's own until {@link apply} switches it to
 * a cluster identity's; after a failed resolution is applied every call fails with its reason and message (a disallowed or broken identity
 * launches nothing with the wrong credentials). After {@link requireIdentity} (CAPI mode: the cluster's AWSCluster
 * may name an `identityRef`) no call goes out before the first {@link apply}: calls wait for it (at most the given
 * time, then fail naming what is missing), so a launch right after a controller restart never signs with the
 * controller's own credentials when the cluster has an identity of its own.
 */
export class ClusterCredentials {
  private current: AwsCredentialIdentityProvider | undefined;
  private refusal: string | undefined;
  private currentKey = 'controller';
  private pending: { resolved: Promise<void>; release: () => void; timeoutMs: number } | undefined;
  private waiters = 0;

  /** @param controller the controller's own credentials (the SDK's default chain or an emulator's keys). */
  constructor(readonly controller: AwsCredentialIdentityProvider) {}

  /** The provider to build SDK clients with (`credentials`). */
  readonly provider: AwsCredentialIdentityProvider = async (o) => {
    if (this.pending) await this.awaitIdentity(this.pending);
    if (this.refusal) throw new Error(this.refusal);
    const c = await (this.current ?? this.controller)(o);
    // the SDK memoizes a client's credentials until 5 min before `expiration` (forever without one): "expiring now"
    // makes it ask again on every request, so a switch or a refusal applies at once (the providers cache themselves)
    return { ...c, expiration: new Date() };
  };

  /** Calls waiting for the first {@link apply} now (0 when none or when no identity is required). */
  get waiting(): number {
    return this.waiters;
  }

  /**
   * From now until the first {@link apply}, every call waits for the cluster identity to be resolved; a call that
   * waited `timeoutMs` (default 120 000 ms) fails with an error naming the KarpenterMachinePool controller. Idempotent.
   */
  requireIdentity(timeoutMs = 120_000): void {
    if (this.pending || this.currentKey !== 'controller' || this.refusal) return;
    let release = (): void => {};
    const resolved = new Promise<void>((r) => {
      release = r;
    });
    this.pending = { resolved, release, timeoutMs };
  }

  /** Waits for `p` to be released, or fails after its timeout. */
  private async awaitIdentity(p: NonNullable<ClusterCredentials['pending']>): Promise<void> {
    this.waiters++;
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      await Promise.race([
        p.resolved,
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () =>
              reject(
                new Error(
                  `IdentityNotResolved: the AWSCluster spec.identityRef of this cluster is not resolved yet after ${p.timeoutMs / 1000}s: no AWS call is made with the controller's own credentials before the KarpenterMachinePool controller has reconciled a KarpenterMachinePool of the cluster (check that one exists: kubectl get karpentermachinepools -A, and its Ready condition)`,
                ),
              ),
            p.timeoutMs,
          );
          timer.unref?.();
        }),
      ]);
    } finally {
      clearTimeout(timer);
      this.waiters--;
    }
  }

  /** Applies a resolution: switches to its provider (kept when `key` is unchanged) or refuses with its message. */
  apply(r: IdentityResolution): void {
    if (!r.ok) this.refusal = `${r.reason}: ${r.message}`;
    else {
      this.refusal = undefined;
      if (r.key !== this.currentKey) {
        this.currentKey = r.key;
        this.current = r.provider;
      }
    }
    const p = this.pending;
    this.pending = undefined;
    p?.release();
  }
}

/**
 * The aws provider's {@link ClusterCredentials} over the SDK's default credential chain (environment, profiles,
 * IRSA/Pod Identity, instance metadata): the controller's own credentials. No network I/O until the first call.
 */
export function defaultClusterCredentials(region: string): ClusterCredentials {
  const chain = new STSClient({ region }).config.credentials as AwsCredentialIdentityProvider;
  return new ClusterCredentials(chain);
}

/**
 * `ProviderSetup.capi.clusterIdentity` of the aws provider: resolves the AWSCluster's `spec.identityRef`
 * ({@link resolveClusterIdentity}, region: the AWSCluster's, else `deps.region`) and applies it to `credentials`.
 * Building it makes `credentials` wait for the first check ({@link ClusterCredentials.requireIdentity}): the
 * provider's calls after a controller restart go out only once the cluster's identity is known.
 */
export function clusterIdentityCheck(
  credentials: ClusterCredentials,
  deps: { management: KubeClient; controllerNamespace: string; region: string; endpoint?: string },
): (infraCluster: KubeObject) => Promise<{ ok: true } | { ok: false; reason: string; message: string }> {
  credentials.requireIdentity();
  return async (infraCluster) => {
    const aws = infraCluster as AWSCluster;
    const r = await resolveClusterIdentity(aws, {
      management: deps.management,
      controllerNamespace: deps.controllerNamespace,
      controller: credentials.controller,
      region: aws.spec?.region || deps.region,
      ...(deps.endpoint ? { endpoint: deps.endpoint } : {}),
    });
    credentials.apply(r);
    return r.ok ? { ok: true } : { ok: false, reason: r.reason, message: r.message };
  };
}
