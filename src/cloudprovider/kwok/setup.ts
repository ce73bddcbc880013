/**
 * The loaded `kwok` provider ({@link kwokSetup}): the {@link EmbeddedCloudProvider} writing Node objects through the
 * operator's client. The operator's default provider (`createOperator` without `provider`).
 */
import type { ProviderSetup } from '../module.ts';
import { readyDependentsOf } from '../module.ts';
import { EmbeddedCloudProvider, type EmbeddedCloudProviderDeps } from './embedded.ts';
import { kwokNodeClassKinds, kwokProviderName } from './kinds.ts';
import { KubeNodeWriter } from './kubenodes.ts';

/**
 * The kwok provider for an operator; `kwok` overrides its options (instance IDs, registration delay, ...).
 * Its `createProvider` throws UnsupportedRegionError when the operator's region has no embedded catalog.
 */
export function kwokSetup(kwok: EmbeddedCloudProviderDeps['kwok'] = {}): ProviderSetup {
  return {
    name: kwokProviderName,
    readyDependents: readyDependentsOf(kwokNodeClassKinds),
    createProvider: (ctx) =>
      new EmbeddedCloudProvider({
        region: ctx.region,
        nodes: new KubeNodeWriter(ctx.client),
        clock: ctx.clock,
        nodeClass: ctx.nodeClass,
        kwok: {
          onError: (err, c) =>
            ctx.logger.warn(
              {
                nodeclaim: c.nodeClaim,
                action: c.action,
                err: err instanceof Error ? err.message : String(err),
              },
              'kwok node write failed',
            ),
          ...kwok,
        },
      }),
  };
}
