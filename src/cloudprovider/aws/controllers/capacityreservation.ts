/**
 * The capacity reservation controllers of the aws provider (with the `ReservedCapacity` gate).
 *
 * `capacityreservation.capacitytype` (upstream `pkg/controllers/capacityreservation/capacitytype/controller.go`):
 * every minute, a NodeClaim (and its registered Node) labelled `karpenter.sh/capacity-type: reserved` whose instance
 * EC2 no longer reports in a reservation (the reservation ended or was cancelled; the instance runs on as
 * on-demand) is relabelled `on-demand` and loses the `karpenter.k8s.aws/capacity-reservation-*` labels, so
 * disruption prices it as on-demand.
 *
 * `capacityreservation.expiration`: drains the nodes of capacity blocks before the blocks end, after
 * aws/karpenter-provider-aws v1.14.1 `pkg/controllers/capacityreservation/expiration/controller.go`. Every minute it
 * lists the NodeClaims labelled `karpenter.k8s.aws/capacity-reservation-id`, describes their reservations (one
 * `DescribeCapacityReservations` call for all of them; one per ID when EC2 does not know one), and deletes each
 * NodeClaim whose reservation is `expiring` (a capacity block 40 minutes or less from its end): the termination
 * controller then cordons and drains it gracefully while the block still runs.
 */
import {
  type CapacityReservation,
  DescribeCapacityReservationsCommand,
  type EC2Client,
} from '@aws-sdk/client-ec2';
import type { Node } from '../../../apis/core.ts';
import type { NodeClaim } from '../../../apis/karpenter.ts';
import {
  LabelCapacityReservationID,
  LabelCapacityReservationInterruptible,
  LabelCapacityReservationType,
  LabelCapacityType,
  LabelNodeRegistered,
} from '../../../apis/labels.ts';
import { SingletonController } from '../../../controllers/runtime/index.ts';
import type { KubeClient } from '../../../kube/client.ts';
import type { Clock } from '../../../kube/clock.ts';
import { isNotFound } from '../../../kube/errors.ts';
import type { Logger } from '../../../kube/logger.ts';
import { capacityReservationFromEC2 } from '../nodeclass/capacityreservations.ts';
import { withThrottleRetry } from '../retry.ts';

/** Dependencies of {@link capacityReservationExpirationController}. */
export interface CapacityReservationExpirationDeps {
  client: KubeClient;
  ec2: EC2Client;
  clock: Clock;
  logger: Logger;
  /** Seconds between passes (upstream one minute). */
  periodSeconds?: number;
}

/** The reservations `ids` as EC2 reports them (IDs EC2 does not know are left out). @throws on other EC2 errors. */
async function describeReservations(ec2: EC2Client, ids: string[]): Promise<CapacityReservation[]> {
  const one = (list: string[]) =>
    withThrottleRetry(() =>
      ec2.send(new DescribeCapacityReservationsCommand({ CapacityReservationIds: list })),
    ).then((o) => o.CapacityReservations ?? []);
  try {
    return await one(ids);
  } catch (err) {
    if ((err as { name?: string }).name !== 'InvalidCapacityReservationId.NotFound') throw err;
    const out: CapacityReservation[] = [];
    for (const id of ids) {
      out.push(
        ...(await one([id]).catch((e: unknown) => {
          if ((e as { name?: string }).name === 'InvalidCapacityReservationId.NotFound') return [];
          throw e;
        })),
      );
    }
    return out;
  }
}

/**
 * One pass: deletes the NodeClaims of expiring capacity blocks; returns their names (sorted).
 * @throws on API or EC2 errors (the controller retries).
 */
export async function expireCapacityBlockNodeClaims(
  deps: CapacityReservationExpirationDeps,
): Promise<string[]> {
  const claims = ((await deps.client.list('NodeClaim')).items as NodeClaim[]).filter(
    (nc) => nc.metadata.labels?.[LabelCapacityReservationID] && !nc.metadata.deletionTimestamp,
  );
  const ids = [...new Set(claims.map((nc) => nc.metadata.labels![LabelCapacityReservationID]!))].sort();
  if (ids.length === 0) return [];
  const now = deps.clock.now();
  const expiring = new Set(
    (await describeReservations(deps.ec2, ids))
      .map((cr) => capacityReservationFromEC2(cr, now))
      .filter((r) => r?.state === 'expiring')
      .map((r) => r!.id),
  );
  const deleted: string[] = [];
  for (const nc of claims) {
    const id = nc.metadata.labels![LabelCapacityReservationID]!;
    if (!expiring.has(id)) continue;
    try {
      await deps.client.delete('NodeClaim', nc.metadata.name!);
    } catch (err) {
      if (isNotFound(err)) continue;
      throw err;
    }
    deleted.push(nc.metadata.name!);
    deps.logger.info(
      {
        controller: 'capacityreservation.expiration',
        nodeclaim: nc.metadata.name,
        'capacity-reservation-id': id,
      },
      'initiating delete for capacity block expiration',
    );
  }
  return deleted.sort();
}

/** The `capacityreservation.expiration` singleton controller. */
export function capacityReservationExpirationController(
  deps: CapacityReservationExpirationDeps,
): SingletonController {
  return new SingletonController({
    name: 'capacityreservation.expiration',
    clock: deps.clock,
    logger: deps.logger,
    reconcile: async () => {
      await expireCapacityBlockNodeClaims(deps);
      return { requeueAfter: deps.periodSeconds ?? 60 };
    },
  });
}

/** The label patch that turns a reserved NodeClaim or Node into an on-demand one. */
const ON_DEMAND_PATCH = {
  metadata: {
    labels: {
      [LabelCapacityType]: 'on-demand',
      [LabelCapacityReservationID]: null,
      [LabelCapacityReservationType]: null,
      [LabelCapacityReservationInterruptible]: null,
    },
  },
};

/**
 * One `capacityreservation.capacitytype` pass: `cloudNodeClaims` are the provider's view (`CloudProvider.list()`).
 * Returns the names of the NodeClaims and Nodes relabelled (sorted).
 * @throws on API errors (the controller retries).
 */
export async function syncReservedCapacityTypes(
  client: KubeClient,
  cloudNodeClaims: readonly NodeClaim[],
): Promise<string[]> {
  const cloud = new Map(
    cloudNodeClaims.map((nc) => [nc.status?.providerID ?? '', nc.metadata.labels?.[LabelCapacityType]]),
  );
  const nodes = (await client.list('Node')).items as Node[];
  const out: string[] = [];
  const patch = async (kind: 'NodeClaim' | 'Node', name: string) => {
    try {
      await client.patch(kind, name, undefined, ON_DEMAND_PATCH, { type: 'merge' });
      out.push(`${kind}/${name}`);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  };
  for (const nc of (await client.list('NodeClaim')).items as NodeClaim[]) {
    const providerID = nc.status?.providerID;
    if (!providerID || nc.metadata.deletionTimestamp || cloud.get(providerID) !== 'on-demand') continue;
    if (nc.metadata.labels?.[LabelCapacityType] === 'reserved') await patch('NodeClaim', nc.metadata.name!);
    for (const n of nodes) {
      const l = n.metadata.labels ?? {};
      if (n.spec?.providerID !== providerID || n.metadata.deletionTimestamp) continue;
      if (l[LabelNodeRegistered] !== 'true' || l[LabelCapacityType] !== 'reserved') continue;
      await patch('Node', n.metadata.name!);
    }
  }
  return out.sort();
}

/** The `capacityreservation.capacitytype` singleton controller over the provider's `list()`. */
export function capacityReservationCapacityTypeController(deps: {
  client: KubeClient;
  list: () => Promise<NodeClaim[]>;
  clock: Clock;
  logger: Logger;
  periodSeconds?: number;
}): SingletonController {
  return new SingletonController({
    name: 'capacityreservation.capacitytype',
    clock: deps.clock,
    logger: deps.logger,
    reconcile: async () => {
      const updated = await syncReservedCapacityTypes(deps.client, await deps.list());
      if (updated.length > 0)
        deps.logger.info(
          { controller: 'capacityreservation.capacitytype', updated },
          'updated capacity type for nodeclaims',
        );
      return { requeueAfter: deps.periodSeconds ?? 60 };
    },
  });
}
