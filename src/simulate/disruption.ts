/**
 * `capenter simulate --disruption`: the first disruption pass (see `disruption/index.ts`) over loaded manifests.
 * Builds the cluster snapshot with the simulator's own input builder (`input.ts` `buildSchedulingInput`: Nodes,
 * bound pods, DaemonSet pods, NodePools and their catalog instance types, PDBs), then calls the pure core.
 *
 * Input rules (as `shared/cases/README.md`): a managed Node (label `karpenter.sh/nodepool`) has a registered,
 * initialized NodeClaim of the same name. Unless the input lists that NodeClaim (matched by name or
 * `status.nodeName`), one is synthesized carrying the NodePool's CURRENT hash annotations — so only requirement
 * drift (labels no longer satisfy the NodePool) or a listed NodeClaim with an old hash shows up as drift. A Node
 * without `metadata.creationTimestamp` was created `now`.
 */
import type { KubeObject } from '../apis/core.ts';
import { doNotDisruptState } from '../apis/donotdisrupt.ts';
import { NodePoolHashVersion, nodePoolHash } from '../apis/hash.ts';
import type { NodeClaim } from '../apis/karpenter.ts';
import {
  AnnotationDoNotDisrupt,
  AnnotationNodePoolHash,
  AnnotationNodePoolHashVersion,
} from '../apis/labels.ts';
import { DEFAULT_REGION, getInstanceTypes } from '../cloudprovider/aws/catalog/index.ts';
import { podName } from '../disruption/candidates.ts';
import { computeDisruption, type DisruptionStats } from '../disruption/index.ts';
import type {
  BlockedNode,
  Command,
  DisruptionFeatureGates,
  DisruptionInput,
  DisruptionNode,
  DisruptionOptions,
  DisruptionResult,
} from '../disruption/types.ts';
import {
  type BuiltInput,
  buildSchedulingInput,
  type CatalogFunction,
  type SimulationIssue,
  type SourcedObject,
} from './input.ts';
import { renderTable } from './output.ts';

/** One replacement NodeClaim as printed. */
export interface ReplacementSummary {
  nodePool: string;
  /** Every instance type it allows, cheapest first. */
  instanceTypeOptions: string[];
  /** Cheapest option (what launches). */
  instanceType: string;
  zone: string;
  capacityType: string;
  /** Price of the cheapest option's cheapest offering, USD/hour. */
  priceUSDPerHour: number;
  /** `namespace/name` of the pods it takes. */
  pods: string[];
}

/** One command as printed (`disruption.commands[]` of `-o json`). */
export interface CommandSummary {
  decision: Command['decision'];
  reason: Command['reason'];
  method: string;
  /** Node names. */
  candidates: string[];
  replacements: ReplacementSummary[];
  /** USD/hour, 6 decimals. */
  savingsUSDPerHour: number;
}

/** The `disruption` member of the `-o json` document. */
export interface DisruptionJSON {
  /** The pass time, RFC 3339. */
  now: string;
  commands: CommandSummary[];
  blocked: BlockedNode[];
  /** Disruption-only notices (e.g. `karpenter.sh/do-not-disrupt` values that protect nothing); absent when none. */
  notices?: string[];
}

/** What {@link simulateDisruption} returns. */
export interface DisruptionReport extends DisruptionJSON {
  region: string;
  errors: SimulationIssue[];
  notices: string[];
  /** Raw core output and input (not serialised). */
  result: DisruptionResult;
  input: DisruptionInput;
  built: BuiltInput;
  stats: DisruptionStats;
}

/** Options of {@link simulateDisruption}. */
export interface SimulateDisruptionOptions {
  region?: string;
  /** Pass time, ms since the epoch (the CLI passes the wall clock; tests a fixed value). Default: `Date.now()`. */
  now?: number;
  catalog?: CatalogFunction;
  featureGates?: DisruptionFeatureGates;
  /** The `NodeOverlay` feature gate: apply the input's NodeOverlays to the instance types (default false). */
  nodeOverlay?: boolean;
  options?: DisruptionOptions;
}

/** A load result or a plain object list (as `run.ts` `simulate` takes). */
export type DisruptionSource =
  | ReadonlyArray<SourcedObject | KubeObject>
  | { objects: ReadonlyArray<SourcedObject>; errors?: ReadonlyArray<SimulationIssue> };

function toSourced(source: DisruptionSource): { objects: SourcedObject[]; errors: SimulationIssue[] } {
  if (Array.isArray(source)) {
    return {
      objects: (source as ReadonlyArray<SourcedObject | KubeObject>).map((o) =>
        typeof (o as SourcedObject).object === 'object' && !('kind' in o)
          ? (o as SourcedObject)
          : { object: o as KubeObject },
      ),
      errors: [],
    };
  }
  const s = source as Exclude<DisruptionSource, ReadonlyArray<unknown>>;
  return { objects: [...s.objects], errors: [...(s.errors ?? [])] };
}

const round6 = (v: number) => Math.round(v * 1e6) / 1e6;

/** Summarises one command for printing. */
export function summariseCommand(c: Command): CommandSummary {
  return {
    decision: c.decision,
    reason: c.reason,
    method: c.method,
    candidates: c.candidates.map((x) => x.name),
    replacements: c.replacements.map((r) => ({
      nodePool: r.nodePool,
      instanceTypeOptions: r.instanceTypeOptions.map((t) => t.name),
      instanceType: r.cheapest.instanceType.name,
      zone: r.cheapest.offering.zone,
      capacityType: r.cheapest.offering.capacityType,
      priceUSDPerHour: round6(r.cheapest.offering.priceUSDPerHour),
      pods: r.pods.map(podName),
    })),
    savingsUSDPerHour: round6(c.savingsUSDPerHour),
  };
}

/**
 * Computes the first disruption pass for the given manifests (see the module doc). Never throws for bad input
 * (problems are in `errors`); throws only if the catalog fails unexpectedly.
 */
export async function simulateDisruption(
  source: DisruptionSource,
  opts: SimulateDisruptionOptions = {},
): Promise<DisruptionReport> {
  const region = opts.region ?? DEFAULT_REGION;
  const now = opts.now ?? Date.now();
  const { objects, errors } = toSourced(source);
  const catalog: CatalogFunction = opts.catalog ?? ((args) => getInstanceTypes(args));
  const built = await buildSchedulingInput(objects, {
    region,
    catalog,
    nodeOverlay: opts.nodeOverlay ?? false,
  });
  errors.push(...built.errors);

  const listedClaims = new Map<string, NodeClaim>();
  for (const s of objects) {
    if (s.object?.kind !== 'NodeClaim') continue;
    const nc = s.object as NodeClaim;
    listedClaims.set(nc.status?.nodeName ?? nc.metadata.name ?? '', nc);
    if (nc.metadata.name) listedClaims.set(nc.metadata.name, nc);
  }
  const pools = new Map(built.input.nodePools.map((np) => [np.metadata.name, np]));
  const nowIso = new Date(now).toISOString();
  const nodes: DisruptionNode[] = built.input.existingNodes.map((en) => {
    const name = en.node.metadata.name ?? '';
    const dn: DisruptionNode = { node: en.node, pods: en.pods };
    if (en.markedForDeletion) dn.markedForDeletion = true;
    const listed = listedClaims.get(name);
    if (listed) {
      dn.nodeClaim = listed;
    } else if (en.nodeClaim) {
      const nc = structuredClone(en.nodeClaim);
      nc.metadata.creationTimestamp ??= en.node.metadata.creationTimestamp ?? nowIso;
      const pool = pools.get(en.node.metadata.labels?.['karpenter.sh/nodepool'] ?? '');
      if (pool) {
        nc.metadata.annotations = {
          ...(nc.metadata.annotations ?? {}),
          [AnnotationNodePoolHash]: nodePoolHash(pool),
          [AnnotationNodePoolHashVersion]: NodePoolHashVersion,
        };
      }
      dn.nodeClaim = nc;
    }
    return dn;
  });
  const input: DisruptionInput = {
    nodes,
    pendingPods: built.input.pods,
    nodePools: built.input.nodePools,
    instanceTypes: built.input.instanceTypes,
    daemonSets: built.input.daemonSets,
    pdbs: built.podDisruptionBudgets,
    now,
    ...(built.input.namespaces ? { namespaces: built.input.namespaces } : {}),
    ...(built.input.volumes ? { volumes: built.input.volumes } : {}),
    ...(opts.featureGates ? { featureGates: opts.featureGates } : {}),
    ...(opts.options ? { options: opts.options } : {}),
  };
  const stats: DisruptionStats = { simulations: 0 };
  const result = computeDisruption(input, stats);
  return {
    region,
    now: nowIso,
    commands: result.commands.map(summariseCommand),
    blocked: result.blocked,
    errors,
    notices: [...built.notices, ...doNotDisruptNotices(nodes, now)],
    result,
    input,
    built,
    stats,
  };
}

/**
 * Notices for `karpenter.sh/do-not-disrupt` values that protect nothing at `now` (ms): an invalid pod value
 * (ignored, as upstream, which also publishes the Warning Event `InvalidDoNotDisruptAnnotation`), and a Node or
 * NodeClaim value other than `"true"` (upstream reads durations on pods only). Each names the object and the fix.
 */
export function doNotDisruptNotices(nodes: readonly DisruptionNode[], now: number): string[] {
  const out: string[] = [];
  for (const dn of nodes) {
    for (const [kind, obj] of [
      ['Node', dn.node],
      ['NodeClaim', dn.nodeClaim],
    ] as const) {
      const v = obj?.metadata.annotations?.[AnnotationDoNotDisrupt];
      if (v === undefined || v === 'true') continue;
      out.push(
        `${kind} ${obj?.metadata.name ?? '?'}: karpenter.sh/do-not-disrupt "${v}" protects nothing; on Nodes and NodeClaims only "true" counts (durations apply to pods). Use "true", or annotate the pods.`,
      );
    }
    for (const p of dn.pods) {
      const st = doNotDisruptState(p, now);
      if (st.state !== 'invalid') continue;
      out.push(
        `Pod ${podName(p)}: invalid karpenter.sh/do-not-disrupt annotation: ${st.message}, ignoring annotation (InvalidDoNotDisruptAnnotation). Use "true" or a positive Go duration such as "30m", "1h30m" or "87600h".`,
      );
    }
  }
  return out;
}

/** The `disruption` member of the `-o json` document. */
export function disruptionJSON(report: DisruptionReport): DisruptionJSON {
  const own = disruptionNotices(report);
  return {
    now: report.now,
    commands: report.commands,
    blocked: report.blocked,
    ...(own.length > 0 ? { notices: own } : {}),
  };
}

/** The report's notices the scheduling section does not already print (those of the disruption pass). */
function disruptionNotices(report: DisruptionReport): string[] {
  return report.notices.filter((n) => !report.built.notices.includes(n));
}

const usd = (v: number) => `$${v.toFixed(4)}`;

/**
 * The human-readable disruption section: one row per command (decision, reason, candidates, replacement options —
 * first three names and a count — with the launch price, savings per hour), then the nodes left alone and why,
 * then the disruption pass's own notices.
 */
export function formatDisruptionTable(report: DisruptionReport): string {
  const out: string[] = [];
  out.push(`Disruption (pass at ${report.now})`);
  if (report.commands.length === 0) {
    out.push('No disruption command.');
  } else {
    const rows = [['DECISION', 'REASON', 'METHOD', 'CANDIDATES', 'REPLACEMENT', 'PRICE/H', 'SAVINGS/H']];
    for (const c of report.commands) {
      const r = c.replacements
        .map((x) => {
          const head = x.instanceTypeOptions.slice(0, 3).join(',');
          const more = x.instanceTypeOptions.length > 3 ? ` (+${x.instanceTypeOptions.length - 3})` : '';
          return `${head}${more}`;
        })
        .join('; ');
      const price = c.replacements.reduce((s, x) => s + x.priceUSDPerHour, 0);
      rows.push([
        c.decision,
        c.reason,
        c.method,
        c.candidates.join(','),
        r || '-',
        c.replacements.length ? usd(price) : '-',
        usd(c.savingsUSDPerHour),
      ]);
    }
    out.push(renderTable(rows, new Set([5, 6])));
  }
  if (report.blocked.length > 0) {
    out.push('');
    out.push(
      renderTable([['NODE', 'NOT DISRUPTED BECAUSE'], ...report.blocked.map((b) => [b.node, b.reason])]),
    );
  }
  const own = disruptionNotices(report);
  if (own.length > 0) out.push('', 'Disruption notices:', ...own.map((n) => `  - ${n}`));
  return `${out.join('\n')}\n`;
}
