/**
 * NodeClass kinds a provider module declares from its own folder (`ProviderNodeClassKind.api`,
 * `src/cloudprovider/module.ts`), registered at run time beside the built-in ones of `schemas.ts`
 * (`KarpenterKinds`): `validateObject` (validation.ts) parses them with their schema and defaults, and their CRDs
 * are `crdFor(info)` (crds.ts). Upstream has no such registry: a provider's `main` links its own API package.
 * This module imports no zod (types only), so the operator can register kinds without loading the validator.
 */
import type { KarpenterKindInfo } from './schemas.ts';

const registered = new Map<string, KarpenterKindInfo>();

/**
 * Registers (or replaces) a provider's kind, keyed by `group/version/kind`.
 * @throws Error when the kind is one of the built-in API groups (`karpenter.sh`, `karpenter.k8s.aws`,
 *   `karpenter.kwok.sh`): a new provider's kind needs its own group.
 */
export function registerProviderKind(info: KarpenterKindInfo): void {
  if (['karpenter.sh', 'karpenter.k8s.aws', 'karpenter.kwok.sh'].includes(info.group))
    throw new Error(
      `NodeClass kind ${info.kind}: group "${info.group}" is capenter's own; declare the kind in a group of the provider (e.g. karpenter.<provider>.sh)`,
    );
  registered.set(`${info.group}/${info.version}/${info.kind}`, info);
}

/** A registered provider kind by `apiVersion` (`group/version`) and kind, else `undefined`. */
export function providerKind(apiVersion: string, kind: string): KarpenterKindInfo | undefined {
  return registered.get(`${apiVersion}/${kind}`);
}

/** Every registered provider kind of API group `group`. */
export function providerKindsOf(group: string): KarpenterKindInfo[] {
  return [...registered.values()].filter((k) => k.group === group);
}
