/**
 * Step 2 of a KarpenterMachinePool reconcile: the bootstrap data and the bootstrap config.
 * - The MachinePool's bootstrap Secret (`spec.template.spec.bootstrap.dataSecretName`) is uploaded to the store
 *   when its SHA-256 differs from the KMP annotation `capenter.sh/userdata-hash` or the object is missing (a
 *   rotation rewrites only the object); `BootstrapDataReady` says whether it is there.
 * - The bootstrap config (KubeadmConfig, `bootstrap.configRef`) is read for its node-registration taints:
 *   `RegistrationTaintConfigured=False` + a Warning Event (on transition) when it does not register nodes with
 *   `karpenter.sh/unregistered:NoExecute`, Unknown when it cannot be read.
 * Secrets are never logged.
 */
import { AnnotationUserDataHash, type CAPIRef, KMPConditions, type MachinePool } from '../../../apis/capi.ts';
import type { KubeObject } from '../../../apis/core.ts';
import { isNotFound } from '../../../kube/errors.ts';
import type { Secret } from '../../../kube/types.ts';
import { errorMessage } from '../../runtime/index.ts';
import {
  type BootstrapFormat,
  type BootstrapLocation,
  BootstrapSecretError,
  readBootstrapSecret,
} from '../bootstrap.ts';
import { hasRegistrationTaint } from '../desired.ts';
import type { KMPPass, KMPStepContext, NotReady } from './context.ts';
import type { PoolInputs } from './resolve.ts';

/** What the bootstrap step hands on. */
export interface BootstrapResult {
  /** Format of the uploaded data. */
  format: BootstrapFormat;
  /** The bootstrap config object, when referenced and readable. */
  config: KubeObject | undefined;
}

/**
 * Uploads the bootstrap data (when changed) and checks the bootstrap config's registration taint.
 * @throws NotReady with `BootstrapDataReady=False` and `Ready=False` reason `WaitingForBootstrapData` or
 * `InvalidBootstrapData`; the store's and the client's errors otherwise.
 */
export async function reconcileBootstrap(
  ctx: KMPStepContext,
  pass: KMPPass,
  inputs: PoolInputs,
): Promise<BootstrapResult> {
  const format = await uploadBootstrap(ctx, pass, inputs.machinePool, inputs.location);
  const config = await bootstrapConfig(ctx, inputs.machinePool);
  const hasTaint = hasRegistrationTaint(config);
  const prev = pass.condition(KMPConditions.RegistrationTaintConfigured);
  if (hasTaint === false) {
    const msg = `bootstrap config ${config?.kind}/${config?.metadata?.name} does not register nodes with karpenter.sh/unregistered:NoExecute; add it to spec.joinConfiguration.nodeRegistration.taints, or Karpenter's registration fails`;
    pass.cond(KMPConditions.RegistrationTaintConfigured, false, 'RegistrationTaintMissing', msg);
    if (prev?.status !== 'False')
      void ctx.recorder.publish(pass.kmp, 'Warning', 'RegistrationTaintMissing', msg);
  } else pass.cond(KMPConditions.RegistrationTaintConfigured, hasTaint === undefined ? 'Unknown' : true);
  return { format, config };
}

/** Uploads the bootstrap data when its hash changed; returns its format. Sets BootstrapDataReady. */
async function uploadBootstrap(
  ctx: KMPStepContext,
  pass: KMPPass,
  mp: MachinePool,
  loc: BootstrapLocation,
): Promise<BootstrapFormat> {
  const ns = pass.namespace;
  const secretName = mp.spec?.template?.spec?.bootstrap?.dataSecretName;
  const notReady = (reason: string, message: string): NotReady => {
    pass.cond(KMPConditions.BootstrapDataReady, false, reason, message);
    return pass.notReady(reason, message);
  };
  if (!secretName)
    throw notReady(
      'WaitingForBootstrapData',
      `MachinePool ${ns}/${mp.metadata.name} has no spec.template.spec.bootstrap.dataSecretName yet`,
    );
  const secret = (await ctx.client.tryGet('Secret', secretName, ns)) as Secret | undefined;
  if (!secret) throw notReady('WaitingForBootstrapData', `bootstrap Secret ${ns}/${secretName} not found`);
  let data: ReturnType<typeof readBootstrapSecret>;
  try {
    data = readBootstrapSecret(secret);
  } catch (err) {
    if (err instanceof BootstrapSecretError) throw notReady('InvalidBootstrapData', err.message);
    throw err;
  }
  const stored = pass.kmp.metadata.annotations?.[AnnotationUserDataHash];
  if (stored !== data.sha256 || !(await ctx.bootstrapStore.get(loc))) {
    await ctx.bootstrapStore.put(loc, data.value);
    await ctx.client.patch(
      'KarpenterMachinePool',
      pass.name,
      ns,
      { metadata: { annotations: { [AnnotationUserDataHash]: data.sha256 } } },
      { type: 'merge' },
    );
    ctx.log.info(
      { kmp: `${ns}/${pass.name}`, sha256: data.sha256, bucket: loc.bucket, key: loc.key },
      'uploaded bootstrap data',
    );
  }
  pass.cond(KMPConditions.BootstrapDataReady, true);
  return data.format;
}

/**
 * The MachinePool's bootstrap config object (KubeadmConfig), when referenced and readable (a live read; not found
 * or unreadable → undefined, the latter logged at debug).
 */
export async function bootstrapConfig(
  ctx: Pick<KMPStepContext, 'client' | 'log'>,
  mp: MachinePool,
): Promise<KubeObject | undefined> {
  const ref: CAPIRef | undefined = mp.spec?.template?.spec?.bootstrap?.configRef;
  if (!ref) return undefined;
  try {
    return await ctx.client.get(ref.kind, ref.name, mp.metadata.namespace);
  } catch (err) {
    if (isNotFound(err)) return undefined;
    ctx.log.debug({ err: errorMessage(err) }, 'bootstrap config unreadable');
    return undefined;
  }
}
