/**
 * Pure translation of EC2NodeClass selector terms into EC2 `Describe*` filter sets (one EC2 call per set, the
 * results unioned), after aws/karpenter-provider-aws `pkg/providers/{subnet,securitygroup}` `getFilterSets` and
 * `pkg/providers/amifamily/ami.go` `DescribeImageQueries`:
 * - a term with `id` contributes to one shared `subnet-id` / `group-id` / `image-id` filter set;
 * - a security-group term with `name` to one shared `group-name` set;
 * - any other term is its own set: each tag `k: v` becomes `tag:k = v`, `k: "*"` becomes `tag-key = k`
 *   (all filters of a set must match: AND within a term, OR across terms).
 */

/** An EC2 filter as the SDK takes it. */
export interface Filter {
  Name: string;
  Values: string[];
}

/** A selector term: `tags`, `id`, `name` (security groups, AMIs), `owner` / `ssmParameter` / `alias` (AMIs). */
export interface SelectorTerm {
  tags?: Record<string, string>;
  id?: string;
  name?: string;
  owner?: string;
  ssmParameter?: string;
  alias?: string;
}

function tagFilters(tags: Record<string, string> | undefined): Filter[] {
  return Object.entries(tags ?? {})
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => (v === '*' ? { Name: 'tag-key', Values: [k] } : { Name: `tag:${k}`, Values: [v] }));
}

/** Filter sets of `subnetSelectorTerms` (empty when there are no terms: nothing is selected). */
export function subnetFilterSets(terms: readonly SelectorTerm[] | undefined): Filter[][] {
  const ids: string[] = [];
  const out: Filter[][] = [];
  for (const t of terms ?? []) {
    if (t.id) ids.push(t.id);
    else out.push(tagFilters(t.tags));
  }
  if (ids.length > 0) out.push([{ Name: 'subnet-id', Values: ids }]);
  return out;
}

/** Filter sets of `securityGroupSelectorTerms` (id, name, or tags). */
export function securityGroupFilterSets(terms: readonly SelectorTerm[] | undefined): Filter[][] {
  const ids: string[] = [];
  const names: string[] = [];
  const out: Filter[][] = [];
  for (const t of terms ?? []) {
    if (t.id) ids.push(t.id);
    else if (t.name) names.push(t.name);
    else out.push(tagFilters(t.tags));
  }
  if (ids.length > 0) out.push([{ Name: 'group-id', Values: ids }]);
  if (names.length > 0) out.push([{ Name: 'group-name', Values: names }]);
  return out;
}

/** One `DescribeImages` query of a non-alias AMI selector term. */
export interface ImageQuery {
  filters: Filter[];
  /** `Owners` (empty: any owner). */
  owners: string[];
}

/**
 * `DescribeImages` queries for the non-alias, non-SSM terms, plus one `image-id` query for `id` terms and the
 * image IDs resolved from `ssmParameter` terms (`resolvedIDs`). A `name` term without `owner` is restricted to
 * owners `self` and `amazon`, as upstream (so a public look-alike image is never picked).
 */
export function imageQueries(
  terms: readonly SelectorTerm[] | undefined,
  resolvedIDs: string[] = [],
): ImageQuery[] {
  const ids: string[] = [];
  const out: ImageQuery[] = [];
  for (const t of terms ?? []) {
    if (t.alias || t.ssmParameter) continue;
    if (t.id) {
      ids.push(t.id);
      continue;
    }
    const q: ImageQuery = { filters: [], owners: t.owner ? [t.owner] : [] };
    if (t.name) {
      q.owners = t.owner ? [t.owner] : ['self', 'amazon'];
      q.filters.push({ Name: 'name', Values: [t.name] });
    }
    q.filters.push(...tagFilters(t.tags));
    out.push(q);
  }
  ids.push(...resolvedIDs);
  if (ids.length > 0) out.push({ filters: [{ Name: 'image-id', Values: [...new Set(ids)] }], owners: [] });
  return out;
}

/** A compact JSON rendering of selector terms for condition messages (`[{"tags":{"k":"v"}}]`). */
export function describeTerms(terms: readonly unknown[] | undefined): string {
  return JSON.stringify(terms ?? []);
}
