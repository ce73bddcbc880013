/**
 * Placement groups for the emulator proxy (moto 5.2 has none, and launches fleet instances without the launch
 * template's `Placement`): an in-memory model of EC2's placement groups per region, answering
 * `CreatePlacementGroup`, `DescribePlacementGroups` and `DeletePlacementGroup` in EC2's query/XML protocol, and the
 * launch side: an instance launched from a template with `Placement.GroupId` (or `GroupName`) is in that group, in
 * the template's `Placement.PartitionNumber` or, for a `partition` group without one, the partition with the fewest
 * instances (EC2 spreads them); `DescribeInstances` reports `<placement>` `groupName`, `groupId` and
 * `partitionNumber` for it. A group's `state` can be set with {@link PlacementGroupStore.setState} (EC2's groups
 * are `pending` briefly after creation and `deleting` while being deleted).
 */
import { randomUUID } from 'node:crypto';
import { formFilters, xmlEscape } from './query.ts';

/** One placement group as the emulator keeps it. */
export interface EmulatedPlacementGroup {
  id: string;
  name: string;
  region: string;
  strategy: 'cluster' | 'partition' | 'spread';
  /** Partitions of a `partition` group (default 2, as EC2); 0 otherwise. */
  partitionCount: number;
  /** `rack` (default) or `host` for a `spread` group; '' otherwise. */
  spreadLevel: string;
  state: 'pending' | 'available' | 'deleting' | 'deleted';
  tags: Record<string, string>;
}

/** Where one emulated instance was placed. */
export interface EmulatedPlacement {
  groupId: string;
  /** The instance's availability zone. */
  zone: string;
  groupName: string;
  /** 1-based, for a `partition` group. */
  partition?: number;
}

/** A request the store refuses, with EC2's error code. */
export class PlacementGroupRequestError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** The values of `Prefix.N` keys of an EC2 query form, in order. */
function listParam(form: URLSearchParams, prefix: string): string[] {
  const out: string[] = [];
  for (const [k, v] of form) if (new RegExp(`^${prefix}\\.\\d+$`).test(k)) out.push(v);
  return out;
}

function filterMatches(g: EmulatedPlacementGroup, name: string, want: readonly string[]): boolean {
  if (name.startsWith('tag:')) return want.includes(g.tags[name.slice(4)] ?? '\u0000');
  const field: Record<string, string> = {
    'group-name': g.name,
    'group-id': g.id,
    state: g.state,
    strategy: g.strategy,
    'spread-level': g.spreadLevel,
  };
  if (name === 'tag-key') return want.some((k) => k in g.tags);
  return field[name] !== undefined && want.includes(field[name]);
}

function groupXml(g: EmulatedPlacementGroup): string {
  const tags = Object.entries(g.tags)
    .map(([k, v]) => `<item><key>${xmlEscape(k)}</key><value>${xmlEscape(v)}</value></item>`)
    .join('');
  return (
    `<groupName>${xmlEscape(g.name)}</groupName><state>${g.state}</state><strategy>${g.strategy}</strategy>` +
    (g.strategy === 'partition' ? `<partitionCount>${g.partitionCount}</partitionCount>` : '') +
    `<groupId>${g.id}</groupId><tagSet>${tags}</tagSet>` +
    `<groupArn>arn:aws:ec2:${g.region}:123456789012:placement-group/${xmlEscape(g.name)}</groupArn>` +
    (g.spreadLevel ? `<spreadLevel>${g.spreadLevel}</spreadLevel>` : '')
  );
}

const XMLNS = 'http://ec2.amazonaws.com/doc/2016-11-15/';

/** The placement groups of every region and where each launched instance is. */
export class PlacementGroupStore {
  private readonly groups = new Map<string, EmulatedPlacementGroup>();
  private readonly placed = new Map<string, EmulatedPlacement>();

  /** Adds a group (defaults: available, 2 partitions for `partition`, `rack` for `spread`); returns it. */
  add(
    g: Pick<EmulatedPlacementGroup, 'region' | 'name' | 'strategy'> & Partial<EmulatedPlacementGroup>,
  ): EmulatedPlacementGroup {
    const full: EmulatedPlacementGroup = {
      id: `pg-${randomUUID().replace(/-/g, '').slice(0, 17)}`,
      partitionCount: g.strategy === 'partition' ? 2 : 0,
      spreadLevel: g.strategy === 'spread' ? 'rack' : '',
      state: 'available',
      tags: {},
      ...g,
    };
    this.groups.set(full.id, full);
    return full;
  }

  /** Sets the state of the group named `name` in `region`. @throws PlacementGroupRequestError when unknown. */
  setState(region: string, name: string, state: EmulatedPlacementGroup['state']): void {
    this.byName(region, name).state = state;
  }

  /** Forgets every group and placement. */
  clear(): void {
    this.groups.clear();
    this.placed.clear();
  }

  private byName(region: string, name: string): EmulatedPlacementGroup {
    const g = [...this.groups.values()].find(
      (x) => x.region === region && x.name === name && x.state !== 'deleted',
    );
    if (!g)
      throw new PlacementGroupRequestError(
        'InvalidPlacementGroup.Unknown',
        `The Placement Group '${name}' is unknown.`,
      );
    return g;
  }

  /** `CreatePlacementGroup`. @throws PlacementGroupRequestError for a duplicate name or bad parameters. */
  create(region: string, form: URLSearchParams): string {
    const name = form.get('GroupName') ?? '';
    if (!name) throw new PlacementGroupRequestError('MissingParameter', 'The request must contain GroupName');
    if (
      [...this.groups.values()].some((g) => g.region === region && g.name === name && g.state !== 'deleted')
    )
      throw new PlacementGroupRequestError(
        'InvalidPlacementGroup.Duplicate',
        `The placement group '${name}' already exists.`,
      );
    const strategy = (form.get('Strategy') ?? 'cluster') as EmulatedPlacementGroup['strategy'];
    if (!['cluster', 'partition', 'spread'].includes(strategy))
      throw new PlacementGroupRequestError('InvalidParameterValue', `Invalid strategy '${strategy}'`);
    const tags: Record<string, string> = {};
    for (const [k, v] of form) {
      const m = /^TagSpecification\.(\d+)\.Tag\.(\d+)\.Key$/.exec(k);
      if (m) tags[v] = form.get(`TagSpecification.${m[1]}.Tag.${m[2]}.Value`) ?? '';
    }
    const g = this.add({
      region,
      name,
      strategy,
      ...(form.get('PartitionCount') ? { partitionCount: Number(form.get('PartitionCount')) } : {}),
      ...(form.get('SpreadLevel') ? { spreadLevel: form.get('SpreadLevel')! } : {}),
      tags,
    });
    return `<CreatePlacementGroupResponse xmlns="${XMLNS}"><requestId>${randomUUID()}</requestId><return>true</return><placementGroup>${groupXml(g)}</placementGroup></CreatePlacementGroupResponse>`;
  }

  /**
   * `DescribePlacementGroups`: `GroupName.N` or `GroupId.N` (an unknown one is EC2's `InvalidPlacementGroup.Unknown`
   * / `InvalidPlacementGroupId.NotFound`), then `Filter.N` (`group-name`, `group-id`, `state`, `strategy`,
   * `spread-level`, `tag:<key>`, `tag-key`). @throws PlacementGroupRequestError for an unknown name or ID.
   */
  describe(region: string, form: URLSearchParams): string {
    const names = listParam(form, 'GroupName');
    const ids = listParam(form, 'GroupId');
    let out = [...this.groups.values()].filter((g) => g.region === region && g.state !== 'deleted');
    if (names.length > 0) out = names.map((n) => this.byName(region, n));
    if (ids.length > 0) {
      out = ids.map((id) => {
        const g = out.find((x) => x.id === id);
        if (!g)
          throw new PlacementGroupRequestError(
            'InvalidPlacementGroupId.NotFound',
            `The placement group ID '${id}' does not exist`,
          );
        return g;
      });
    }
    for (const [name, want] of formFilters(form)) out = out.filter((g) => filterMatches(g, name, want));
    const items = out.map((g) => `<item>${groupXml(g)}</item>`).join('');
    return `<DescribePlacementGroupsResponse xmlns="${XMLNS}"><requestId>${randomUUID()}</requestId><placementGroupSet>${items}</placementGroupSet></DescribePlacementGroupsResponse>`;
  }

  /** `DeletePlacementGroup` (the group is gone at once). @throws PlacementGroupRequestError when unknown. */
  delete(region: string, form: URLSearchParams): string {
    this.byName(region, form.get('GroupName') ?? '').state = 'deleted';
    return `<DeletePlacementGroupResponse xmlns="${XMLNS}"><requestId>${randomUUID()}</requestId><return>true</return></DeletePlacementGroupResponse>`;
  }

  /**
   * Places `instanceIds` launched from a template whose `Placement` names a group (by ID or name); a `partition`
   * group's instances go to the template's partition or, without one, each to the partition with the fewest
   * instances (lowest first). Unknown groups are ignored (EC2 would have refused the launch).
   */
  place(
    region: string,
    placement:
      | { GroupId?: string | undefined; GroupName?: string | undefined; PartitionNumber?: number | undefined }
      | undefined,
    instanceIds: readonly string[],
    zone: string,
  ): void {
    const g = this.groupOf(region, placement);
    if (!g) return;
    for (const id of instanceIds) {
      let partition: number | undefined;
      if (g.strategy === 'partition') {
        partition = placement?.PartitionNumber;
        if (partition === undefined) {
          const counts = Array.from({ length: g.partitionCount }, () => 0);
          for (const p of this.placed.values())
            if (p.groupId === g.id && p.partition) counts[p.partition - 1]! += 1;
          partition = counts.indexOf(Math.min(...counts)) + 1;
        }
      }
      this.placed.set(id, { groupId: g.id, groupName: g.name, zone, ...(partition ? { partition } : {}) });
    }
  }

  /** The live group a template's `Placement` names (by ID or name), or undefined. */
  private groupOf(
    region: string,
    placement: { GroupId?: string | undefined; GroupName?: string | undefined } | undefined,
  ): EmulatedPlacementGroup | undefined {
    const id = placement?.GroupId;
    const name = placement?.GroupName;
    if (!id && !name) return undefined;
    return [...this.groups.values()].find(
      (x) => x.region === region && x.state !== 'deleted' && (id ? x.id === id : x.name === name),
    );
  }

  /** True when `placement` names a `spread` group that already holds seven instances in `zone` (EC2's limit). */
  spreadLimitReached(
    region: string,
    placement: { GroupId?: string | undefined; GroupName?: string | undefined } | undefined,
    zone: string,
  ): boolean {
    const g = this.groupOf(region, placement);
    if (g?.strategy !== 'spread') return false;
    let n = 0;
    for (const p of this.placed.values()) if (p.groupId === g.id && p.zone === zone) n++;
    return n >= 7;
  }

  /** Forgets instances that were terminated (they no longer count against a spread group's limit). */
  terminated(ids: readonly string[]): void {
    for (const id of ids) this.placed.delete(id);
  }

  /** Where instance `id` was placed, or undefined. */
  placementOf(id: string): EmulatedPlacement | undefined {
    return this.placed.get(id);
  }

  /**
   * A `DescribeInstances` answer with `groupName`, `groupId` and `partitionNumber` in the `<placement>` of each
   * placed instance (moto writes an empty or no `groupName`).
   */
  annotateInstances(xml: string): string {
    if (this.placed.size === 0) return xml;
    const parts = xml.split('<instanceId>');
    for (let i = 1; i < parts.length; i++) {
      const id = parts[i]!.slice(0, parts[i]!.indexOf('</instanceId>'));
      const p = this.placed.get(id);
      if (!p) continue;
      const fields =
        `<groupName>${xmlEscape(p.groupName)}</groupName><groupId>${p.groupId}</groupId>` +
        (p.partition ? `<partitionNumber>${p.partition}</partitionNumber>` : '');
      parts[i] = parts[i]!.replace(
        /<placement>((?:(?!<\/placement>).)*)<\/placement>/s,
        (_m, inner: string) => {
          const rest = inner.replace(/<groupName\s*\/>|<groupName>[^<]*<\/groupName>/, '');
          return `<placement>${fields}${rest}</placement>`;
        },
      );
    }
    return parts.join('<instanceId>');
  }
}
