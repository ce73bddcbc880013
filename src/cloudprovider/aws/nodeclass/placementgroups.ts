/**
 * Placement-group resolution of an EC2NodeClass's `spec.placementGroupSelector`, after aws/karpenter-provider-aws
 * v1.14.1 `pkg/providers/placementgroup/{provider,types}.go`: one `DescribePlacementGroups` with the selector's
 * `GroupIds` (for `id`) or `GroupNames` (for `name`) and the filter `state=available` (a group `pending`,
 * `deleting` or `deleted` matches nothing); the first group returned is the class's. As upstream the result is
 * kept in memory, not in the class's `status` (upstream's EC2NodeClass status has no placement-group field): a
 * result cache of 1 minute (upstream `pgCache`, `DefaultTTL`) and the last group found per selector for 24 hours
 * (upstream `pgAvailabilityCache`, `PlacementGroupAvailabilityTTL`), which answers while EC2 fails. The
 * EC2NodeClass controller (`PlacementGroupReady`), the instance types (placement-group labels and partition
 * offerings), the launch (`Placement.GroupId`, `PartitionNumber`) and drift (`PlacementGroupDrift`) share one
 * {@link PlacementGroups} (the provider's).
 */
import {
  DescribePlacementGroupsCommand,
  type EC2Client,
  type PlacementGroup as EC2PlacementGroup,
} from '@aws-sdk/client-ec2';
import type { EC2NodeClass } from '../../../apis/karpenter.ts';
import type { Requirements } from '../../../scheduling/requirements.ts';
import type { InstanceType, Offering } from '../../types.ts';

/** Node label with the placement group's ID (upstream `v1.LabelPlacementGroupID`). */
export const LabelPlacementGroupID = 'karpenter.k8s.aws/placement-group-id';
/** Node label with the partition (1-based) of a partition placement group (upstream `LabelPlacementGroupPartition`). */
export const LabelPlacementGroupPartition = 'karpenter.k8s.aws/placement-group-partition';

/** Placement strategy (upstream `placementgroup.Strategy`). */
export type PlacementGroupStrategy = 'cluster' | 'partition' | 'spread';

/** A resolved placement group (upstream `placementgroup.PlacementGroup`). */
export interface PlacementGroup {
  /** Group ID, e.g. `pg-0123456789abcdef0`. */
  id: string;
  /** Group name. */
  name: string;
  strategy: PlacementGroupStrategy;
  /** Partitions of a `partition` group (1 to 7); 0 otherwise. */
  partitionCount: number;
  /** `rack` or `host` for a `spread` group; '' otherwise. */
  spreadLevel: string;
}

/** `spec.placementGroupSelector`: exactly one of `id` and `name` (the CRD rules). */
export interface PlacementGroupSelector {
  id?: string;
  name?: string;
}

/** The class's `spec.placementGroupSelector`, or undefined. */
export function placementGroupSelector(nodeClass: EC2NodeClass): PlacementGroupSelector | undefined {
  const s = nodeClass.spec.placementGroupSelector as PlacementGroupSelector | undefined;
  return s && (s.id || s.name) ? s : undefined;
}

/** The selector's field and value for messages: `spec.placementGroupSelector.name "db"`. */
export function describePlacementGroupSelector(s: PlacementGroupSelector): string {
  return s.id
    ? `spec.placementGroupSelector.id "${s.id}"`
    : `spec.placementGroupSelector.name "${s.name ?? ''}"`;
}

/** Upstream `PlacementGroupFromEC2`. */
function fromEC2(pg: EC2PlacementGroup): PlacementGroup {
  return {
    id: pg.GroupId ?? '',
    name: pg.GroupName ?? '',
    strategy: (pg.Strategy ?? 'cluster') as PlacementGroupStrategy,
    partitionCount: pg.PartitionCount ?? 0,
    spreadLevel: pg.SpreadLevel ?? '',
  };
}

/**
 * The available placement group `selector` names, or undefined when none is (upstream `Query.DescribePlacementGroupsInput`
 * and `Get`). Read-only.
 * @throws Error naming the selector when EC2 fails (an unknown name is an EC2 error, `InvalidPlacementGroup.Unknown`).
 */
export async function describePlacementGroup(
  ec2: EC2Client,
  selector: PlacementGroupSelector,
): Promise<PlacementGroup | undefined> {
  const out = await ec2
    .send(
      new DescribePlacementGroupsCommand({
        Filters: [{ Name: 'state', Values: ['available'] }],
        ...(selector.id ? { GroupIds: [selector.id] } : { GroupNames: [selector.name ?? ''] }),
      }),
    )
    .catch((err: unknown) => {
      throw new Error(
        `describing placement groups (${describePlacementGroupSelector(selector)}): ${(err as Error).message}`,
        { cause: err },
      );
    });
  const first = out.PlacementGroups?.[0];
  return first ? fromEC2(first) : undefined;
}

/** Options of {@link PlacementGroups}. */
export interface PlacementGroupsDeps {
  ec2: EC2Client;
  /** Milliseconds now (the controller's clock). */
  now: () => number;
  /** Result cache lifetime, ms (default 60 000, upstream `DefaultTTL`). */
  ttlMs?: number;
  /** Lifetime of the last group found per selector, ms (default 24 h, upstream `PlacementGroupAvailabilityTTL`). */
  availabilityTtlMs?: number;
}

/** The placement-group provider (upstream `placementgroup.DefaultProvider`), keyed by selector. */
export class PlacementGroups {
  private readonly results = new Map<string, { at: number; pg: PlacementGroup | undefined }>();
  private readonly available = new Map<string, { at: number; pg: PlacementGroup }>();
  private readonly inflight = new Map<string, Promise<PlacementGroup | undefined>>();

  constructor(private readonly deps: PlacementGroupsDeps) {}

  /**
   * The class's placement group: undefined without a selector or when none is available (upstream `Get`). Cached
   * for a minute per selector; concurrent callers share one call.
   * @throws Error naming the selector when EC2 fails; `cause.lastKnown` holds the last group found (24 h), if any.
   */
  async get(nodeClass: EC2NodeClass): Promise<PlacementGroup | undefined> {
    const selector = placementGroupSelector(nodeClass);
    if (!selector) return undefined;
    const key = JSON.stringify([selector.id ?? '', selector.name ?? '']);
    const now = this.deps.now();
    const hit = this.results.get(key);
    if (hit && now - hit.at < (this.deps.ttlMs ?? 60_000)) return hit.pg;
    let p = this.inflight.get(key);
    if (!p) {
      p = this.describe(key, selector).finally(() => this.inflight.delete(key));
      this.inflight.set(key, p);
    }
    return p;
  }

  /** The last group found for the class's selector within the availability lifetime (EC2 failing), or undefined. */
  lastKnown(nodeClass: EC2NodeClass): PlacementGroup | undefined {
    const selector = placementGroupSelector(nodeClass);
    if (!selector) return undefined;
    const a = this.available.get(JSON.stringify([selector.id ?? '', selector.name ?? '']));
    return a && this.deps.now() - a.at < (this.deps.availabilityTtlMs ?? 86_400_000) ? a.pg : undefined;
  }

  private async describe(key: string, selector: PlacementGroupSelector): Promise<PlacementGroup | undefined> {
    const pg = await describePlacementGroup(this.deps.ec2, selector);
    const at = this.deps.now();
    if (pg) this.available.set(key, { at, pg });
    this.results.set(key, { at, pg });
    return pg;
  }
}

/**
 * `types` as the class's placement group offers them (upstream `InjectOfferings` and `PlacementGroupResolver`):
 * every type carries `karpenter.k8s.aws/placement-group-id` = the group's ID; for a `partition` group every
 * offering becomes one offering per partition (1..`partitionCount`) labelled
 * `karpenter.k8s.aws/placement-group-partition`, so a requirement or a topology spread on the partition picks one.
 * Without a group `types` are returned as they are. Pure.
 */
export function withPlacementGroup(types: InstanceType[], pg: PlacementGroup | undefined): InstanceType[] {
  if (!pg) return types;
  const partitions = pg.strategy === 'partition' ? pg.partitionCount : 0;
  return types.map((it) => {
    const offerings: Offering[] =
      partitions <= 0
        ? it.offerings
        : it.offerings.flatMap((o) =>
            Array.from({ length: partitions }, (_, i) => ({
              ...o,
              labels: { ...(o.labels ?? {}), [LabelPlacementGroupPartition]: String(i + 1) },
            })),
          );
    return { ...it, labels: { ...it.labels, [LabelPlacementGroupID]: pg.id }, offerings };
  });
}

/**
 * The partition a launch into a `partition` group asks for (upstream `launchtemplate.go` `CreateLaunchTemplates`): the
 * lowest value the NodeClaim's `karpenter.k8s.aws/placement-group-partition` requirement allows (an `In` set),
 * compared as strings as upstream sorts them; undefined without one (EC2 picks the partition). Pure.
 */
export function requestedPartition(reqs: Requirements): number | undefined {
  const r = reqs.get(LabelPlacementGroupPartition);
  if (!r || r.complement) return undefined;
  const first = [...r.values].sort()[0];
  const n = first === undefined ? Number.NaN : Number.parseInt(first, 10);
  return Number.isInteger(n) && n > 0 ? n : undefined;
}
