/**
 * The mutating half of kube-apiserver's ServiceAccount admission plugin for a new Pod (kubernetes
 * `plugin/pkg/admission/serviceaccount/admission.go` `Admit`, `shouldAutomount`, `mountServiceAccountToken`,
 * `TokenVolumeSource`), as pure functions on plain JSON: the store looks the ServiceAccount up and refuses a
 * missing one; these set what the real plugin sets. Mirror pods are not passed here (the plugin leaves their spec
 * alone).
 */

/** A JSON object (the store's pods are plain JSON). */
type Json = Record<string, unknown>;

/** Prefix of the projected token volume's name (upstream `ServiceAccountVolumeName` + `-`). */
export const ServiceAccountVolumePrefix = 'kube-api-access-';

/** Where every container mounts the token volume (upstream `DefaultAPITokenMountPath`). */
export const DefaultAPITokenMountPath = '/var/run/secrets/kubernetes.io/serviceaccount';

/** The ServiceAccount a pod runs as when it names none (upstream `DefaultServiceAccountName`). */
export const DefaultServiceAccountName = 'default';

/**
 * The projected volume source of the token volume (upstream `TokenVolumeSource`): mode 0644 (420), a bound token
 * at `token` valid 3607 s (`WarnOnlyBoundTokenExpirationSeconds`), `ca.crt` from the namespace's
 * `kube-root-ca.crt` ConfigMap and the pod's namespace from the downward API at `namespace`.
 */
export function tokenVolumeSource(): Json {
  return {
    defaultMode: 420,
    sources: [
      { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
      { configMap: { items: [{ key: 'ca.crt', path: 'ca.crt' }], name: 'kube-root-ca.crt' } },
      {
        downwardAPI: {
          items: [{ fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' }, path: 'namespace' }],
        },
      },
    ],
  };
}

/**
 * The ServiceAccount name a new pod runs as: `spec.serviceAccountName`, else the deprecated `spec.serviceAccount`
 * (the v1 → internal conversion's alias), else `default` (admission).
 */
export function podServiceAccountName(spec: Json): string {
  const named = spec.serviceAccountName;
  if (typeof named === 'string' && named !== '') return named;
  const deprecated = spec.serviceAccount;
  if (typeof deprecated === 'string' && deprecated !== '') return deprecated;
  return DefaultServiceAccountName;
}

/** Upstream `shouldAutomount`: the pod's `automountServiceAccountToken` wins, then the ServiceAccount's, else true. */
export function shouldAutomount(serviceAccount: Json, spec: Json): boolean {
  if (typeof spec.automountServiceAccountToken === 'boolean') return spec.automountServiceAccountToken;
  if (typeof serviceAccount.automountServiceAccountToken === 'boolean')
    return serviceAccount.automountServiceAccountToken;
  return true;
}

/** Adds the token mount to each container without a mount at the default path; true when one was added. */
function mountInto(containers: unknown, volumeName: string): boolean {
  if (!Array.isArray(containers)) return false;
  let added = false;
  for (const c of containers as Json[]) {
    if (typeof c !== 'object' || c === null) continue;
    const mounts = Array.isArray(c.volumeMounts) ? (c.volumeMounts as Json[]) : [];
    if (mounts.some((m) => m?.mountPath === DefaultAPITokenMountPath)) continue;
    c.volumeMounts = [...mounts, { mountPath: DefaultAPITokenMountPath, name: volumeName, readOnly: true }];
    added = true;
  }
  return added;
}

/**
 * Upstream `mountServiceAccountToken`, in place on `spec`: reuses the first volume named `kube-api-access-*`, else
 * names one `newVolumeName()` (upstream: `kube-api-access-` + 5 random characters); mounts it read-only at
 * {@link DefaultAPITokenMountPath} in every init container and container that has no mount there, and appends the
 * projected volume ({@link tokenVolumeSource}) when the pod had none and a container needed it.
 */
export function mountServiceAccountToken(spec: Json, newVolumeName: () => string): void {
  const volumes = Array.isArray(spec.volumes) ? (spec.volumes as Json[]) : [];
  const existing = volumes.find(
    (v) => typeof v?.name === 'string' && v.name.startsWith(ServiceAccountVolumePrefix),
  );
  const volumeName = existing ? String(existing.name) : newVolumeName();
  const inInit = mountInto(spec.initContainers, volumeName);
  const inMain = mountInto(spec.containers, volumeName);
  if (!existing && (inInit || inMain))
    spec.volumes = [...volumes, { name: volumeName, projected: tokenVolumeSource() }];
}

/**
 * Upstream `Admit` for a pod whose ServiceAccount `serviceAccount` was found, in place on `spec`: sets
 * `serviceAccountName` (and the deprecated `serviceAccount`, as the v1 conversion writes it) to the account's
 * name, mounts the token unless {@link shouldAutomount} says not to, and copies the account's `imagePullSecrets`
 * (names only) when the pod has none.
 */
export function admitPodServiceAccount(spec: Json, serviceAccount: Json, newVolumeName: () => string): void {
  const name = podServiceAccountName(spec);
  spec.serviceAccountName = name;
  spec.serviceAccount = name;
  if (shouldAutomount(serviceAccount, spec)) mountServiceAccountToken(spec, newVolumeName);
  const own = Array.isArray(spec.imagePullSecrets) ? spec.imagePullSecrets : [];
  const fromAccount = Array.isArray(serviceAccount.imagePullSecrets)
    ? (serviceAccount.imagePullSecrets as Json[])
    : [];
  if (own.length === 0 && fromAccount.length > 0)
    spec.imagePullSecrets = fromAccount.map((s) => ({ name: s?.name }));
}
