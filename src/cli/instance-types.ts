/**
 * `capenter instance-types [--region R] [-f PATH...] [--nodepool NAME] [-o table|json]`: lists the embedded AWS
 * instance types of a region with their labels, capacity, allocatable and offerings. With `-f`, reads NodePool and
 * EC2NodeClass manifests: allocatable follows each NodePool's EC2NodeClass (kubelet, blockDeviceMappings, AMI family)
 * and the list is filtered by the NodePool's requirements and template labels, as upstream Karpenter filters
 * instance types for a NodePool (offerings are narrowed to the allowed zones and capacity types; a type without any
 * remaining offering is left out). With `--feature-gates NodeOverlay=true`, the manifests' NodeOverlays are applied
 * to each NodePool's instance types first (overlaid prices and extended capacity are shown; without the gate, as
 * upstream, they are ignored with a note). Notices (price fallbacks, estimates, overlays) go to stderr.
 * Exit codes: 0 success; 2 invalid input (bad flag, unreadable/invalid manifest, missing EC2NodeClass); 1 unexpected.
 * See docs/catalog.md.
 */
import type { Command } from 'commander';
import type { EC2NodeClass, NodeOverlay, NodePool } from '../apis/karpenter.ts';
import { LabelCapacityType, LabelTopologyRegion, LabelTopologyZone } from '../apis/labels.ts';
import { formatResource, formatResources } from '../apis/quantity.ts';
import {
  type CatalogResult,
  DEFAULT_REGION,
  getInstanceTypes,
  isSupportedRegion,
  SUPPORTED_REGIONS,
} from '../cloudprovider/aws/catalog/index.ts';
import type { InstanceType, Offering } from '../cloudprovider/types.ts';
import { parseFeatureGates } from '../operator/options.ts';
import { instanceTypeCompatible, providerKeys } from '../scheduling/instancetypes.ts';
import { nodeClaimTemplateRequirements } from '../scheduling/nodeclaimtemplate.ts';
import { overlayInstanceTypes } from '../scheduling/nodeoverlay.ts';
import type { Requirements } from '../scheduling/requirements.ts';

/** Options of {@link runInstanceTypes} (the parsed command line). */
export interface InstanceTypesCommandOptions {
  /** AWS region; default us-east-1. */
  region?: string;
  /** Manifest files or folders (recursively `*.yaml`/`*.yml`/`*.json`) holding NodePools / EC2NodeClasses. */
  filenames?: string[];
  /** Only this NodePool (when the manifests hold several). */
  nodePool?: string;
  /** `table` (default) or `json`. */
  output?: string;
  /** `--feature-gates` (`NodeOverlay=true` applies the manifests' NodeOverlays); unknown gates exit 2. */
  featureGates?: string;
}

/** Where the command writes; injected so tests run it in-process. */
export interface InstanceTypesIO {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
}

/** One entry of the JSON output; resource lists are Kubernetes quantity strings. */
export interface InstanceTypeJSON {
  name: string;
  /** The NodePool whose requirements selected this entry (only with `-f` and NodePools). */
  nodePool?: string;
  labels: Record<string, string>;
  capacity: Record<string, string>;
  allocatable: Record<string, string>;
  offerings: Array<{
    zone: string;
    capacityType: Offering['capacityType'];
    /** USD per hour. */
    priceUSDPerHour: number;
    available: boolean;
    priceSource: Offering['priceSource'];
  }>;
}

/** Exit code of a successful run. */
export const EXIT_OK = 0;
/** Exit code of an unexpected failure. */
export const EXIT_FAILURE = 1;
/** Exit code for invalid input. */
export const EXIT_INVALID_INPUT = 2;

class InputError extends Error {}

/** Reads NodePools and EC2NodeClasses (validated and defaulted by the shared loader); other kinds are ignored. */
async function loadManifests(paths: string[]): Promise<{
  nodePools: NodePool[];
  nodeClasses: EC2NodeClass[];
  kwokNodeClasses: Set<string>;
  nodeOverlays: NodeOverlay[];
  errors: string[];
}> {
  const { loadManifestPaths } = await import('../apis/load.ts');
  const res = await loadManifestPaths(paths);
  const kwokNodeClasses = new Set<string>();
  const nodePools: NodePool[] = [];
  const nodeClasses: EC2NodeClass[] = [];
  const nodeOverlays: NodeOverlay[] = [];
  for (const { object } of res.objects) {
    if (object.kind === 'NodeOverlay' && object.apiVersion === 'karpenter.sh/v1alpha1')
      nodeOverlays.push(object as NodeOverlay);
    if (object.kind === 'NodePool' && object.apiVersion === 'karpenter.sh/v1')
      nodePools.push(object as NodePool);
    if (object.kind === 'KWOKNodeClass' && object.metadata?.name) kwokNodeClasses.add(object.metadata.name);
    if (object.kind === 'EC2NodeClass' && object.apiVersion === 'karpenter.k8s.aws/v1') {
      nodeClasses.push(object as EC2NodeClass);
    }
  }
  return { nodePools, nodeClasses, kwokNodeClasses, nodeOverlays, errors: res.errors.map((e) => e.message) };
}

/**
 * Narrows an instance type to a NodePool's requirements: undefined when a label requirement rejects it or no
 * offering is left in an allowed zone/capacity type/region; otherwise the type with the allowed offerings only.
 */
export function filterInstanceType(
  it: InstanceType,
  reqs: Requirements,
  region: string,
  keys: ReadonlySet<string>,
): InstanceType | undefined {
  const regionReq = reqs.get(LabelTopologyRegion);
  if (regionReq && !regionReq.has(region)) return undefined;
  if (!instanceTypeCompatible(it, reqs, keys)) return undefined;
  const zone = reqs.get(LabelTopologyZone);
  const ct = reqs.get(LabelCapacityType);
  const offerings = it.offerings.filter(
    (o) => (!zone || zone.has(o.zone)) && (!ct || ct.has(o.capacityType)),
  );
  if (offerings.length === 0) return undefined;
  return { ...it, offerings };
}

function toJSON(it: InstanceType, nodePool?: string): InstanceTypeJSON {
  return {
    name: it.name,
    ...(nodePool !== undefined ? { nodePool } : {}),
    labels: { ...it.labels },
    capacity: formatResources(it.capacity),
    allocatable: formatResources(it.allocatable),
    offerings: it.offerings.map((o) => ({
      zone: o.zone,
      capacityType: o.capacityType,
      priceUSDPerHour: o.priceUSDPerHour,
      available: o.available,
      priceSource: o.priceSource,
    })),
  };
}

function cheapest(it: InstanceType, ct: Offering['capacityType']): string {
  const prices = it.offerings
    .filter((o) => o.capacityType === ct && o.available)
    .map((o) => o.priceUSDPerHour);
  return prices.length ? Math.min(...prices).toFixed(4) : '-';
}

/** Table order: family (numbers compared as numbers), then size by vCPU and memory (`c3.large` before `c3.2xlarge`). */
function compareForTable(a: InstanceType, b: InstanceType): number {
  const fa = a.name.split('.')[0] ?? a.name;
  const fb = b.name.split('.')[0] ?? b.name;
  return (
    fa.localeCompare(fb, 'en', { numeric: true }) ||
    (a.capacity.cpu ?? 0) - (b.capacity.cpu ?? 0) ||
    (a.capacity.memory ?? 0) - (b.capacity.memory ?? 0) ||
    a.name.localeCompare(b.name, 'en', { numeric: true })
  );
}

function table(unsorted: Array<{ it: InstanceType; nodePool?: string }>): string {
  const rows = [...unsorted].sort(
    (x, y) => (x.nodePool ?? '').localeCompare(y.nodePool ?? '') || compareForTable(x.it, y.it),
  );
  const withPool = rows.some((r) => r.nodePool !== undefined);
  const head = [
    ...(withPool ? ['NODEPOOL'] : []),
    'NAME',
    'VCPU',
    'MEMORY',
    'PODS',
    'ALLOC CPU',
    'ALLOC MEMORY',
    'ON-DEMAND $/H',
    'SPOT $/H (EST.)',
    'ZONES',
  ];
  const lines = rows.map(({ it, nodePool }) => {
    const zones = [...new Set(it.offerings.map((o) => o.zone))];
    return [
      ...(withPool ? [nodePool ?? ''] : []),
      it.name,
      String(it.labels['karpenter.k8s.aws/instance-cpu'] ?? it.capacity.cpu! / 1000),
      `${(Number(it.labels['karpenter.k8s.aws/instance-memory']) / 1024).toFixed(1)}Gi`,
      String(it.allocatable.pods ?? 0),
      formatResource('cpu', it.allocatable.cpu ?? 0),
      formatResource('memory', it.allocatable.memory ?? 0),
      cheapest(it, 'on-demand'),
      cheapest(it, 'spot'),
      zones.map((z) => z.slice(-1)).join('') || '-',
    ];
  });
  const widths = head.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const fmt = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return `${[fmt(head), ...lines.map(fmt)].join('\n')}\n${rows.length} instance types\n`;
}

/** One NodePool (or the bare catalog) whose instance types are listed. */
interface Selection {
  nodePool?: string;
  pool?: NodePool;
  nodeClass?: EC2NodeClass;
  reqs?: Requirements;
}

/**
 * The rows of every selection: the catalog's types for its NodeClass, overlaid by the NodeOverlays when the
 * gate is on (before the NodePool filter, as upstream's decorated GetInstanceTypes), then filtered by the
 * NodePool. Overlay verdicts other than applied, and ignored overlays, are added to `notices`.
 * @throws InputError for an EC2NodeClass the catalog cannot resolve.
 */
function selectionRows(
  selections: readonly Selection[],
  region: string,
  notices: Set<string>,
  ov: { overlays: readonly NodeOverlay[]; gateOn: boolean },
): Array<{ it: InstanceType; nodePool?: string }> {
  const resolved = selections.map((sel) => {
    let res: CatalogResult;
    try {
      res = getInstanceTypes({ region, ...(sel.nodeClass ? { nodeClass: sel.nodeClass } : {}) });
    } catch (e) {
      if ((e as { code?: string }).code === 'InvalidNodeClassValue') {
        throw new InputError(`EC2NodeClass "${sel.nodeClass?.metadata.name}": ${(e as Error).message}`);
      }
      throw e;
    }
    for (const n of res.notices) notices.add(n);
    return { sel, types: res.instanceTypes as InstanceType[] };
  });
  if (ov.overlays.length > 0 && !ov.gateOn) {
    notices.add(
      `${ov.overlays.length} NodeOverlay(s) ignored (${ov.overlays.map((o) => o.metadata.name).join(', ')}): the NodeOverlay feature gate is off (alpha; upstream default false). Pass --feature-gates NodeOverlay=true to apply them.`,
    );
  } else if (ov.overlays.length > 0) {
    const pools = resolved.flatMap((r) =>
      r.sel.pool ? [{ nodePool: r.sel.pool, instanceTypes: r.types }] : [],
    );
    const { instanceTypes, evaluation } = overlayInstanceTypes(ov.overlays, pools);
    for (const r of resolved) if (r.sel.pool) r.types = instanceTypes[r.sel.pool.metadata.name] ?? r.types;
    for (const name of evaluation.order) {
      const v = evaluation.verdicts.get(name);
      if (v && !v.ok)
        notices.add(
          `NodeOverlay "${name}" is not applied: ValidationSucceeded=False, reason ${v.reason}: ${v.message}`,
        );
    }
  }
  const rows: Array<{ it: InstanceType; nodePool?: string }> = [];
  for (const { sel, types } of resolved) {
    const keys = providerKeys(types);
    for (const it of types) {
      const kept = sel.reqs ? filterInstanceType(it, sel.reqs, region, keys) : it;
      if (kept) rows.push({ it: kept, ...(sel.nodePool !== undefined ? { nodePool: sel.nodePool } : {}) });
    }
  }
  return rows;
}

/**
 * Runs `capenter instance-types` and returns its exit code (0, 1 or 2). Never throws: unexpected errors are
 * printed to stderr with exit code 1.
 */
export async function runInstanceTypes(
  opts: InstanceTypesCommandOptions,
  io: InstanceTypesIO,
): Promise<number> {
  try {
    const output = opts.output ?? 'table';
    if (output !== 'table' && output !== 'json') {
      throw new InputError(`--output must be "table" or "json", got "${output}"`);
    }
    const region = opts.region ?? DEFAULT_REGION;
    if (!isSupportedRegion(region)) {
      throw new InputError(
        `--region "${region}" is not in the embedded catalog; use one of: ${SUPPORTED_REGIONS.join(', ')}`,
      );
    }

    let gates: Record<string, boolean>;
    try {
      gates = parseFeatureGates(opts.featureGates ?? '');
    } catch (e) {
      throw new InputError(`--feature-gates: ${(e as Error).message}`);
    }
    const selections: Selection[] = [];
    let overlays: NodeOverlay[] = [];
    if (opts.filenames && opts.filenames.length > 0) {
      const { nodePools, nodeClasses, kwokNodeClasses, nodeOverlays, errors } = await loadManifests(
        opts.filenames,
      );
      overlays = nodeOverlays;
      if (errors.length > 0) throw new InputError(errors.join('\n'));
      const byName = new Map(nodeClasses.map((nc) => [nc.metadata.name, nc]));
      const pools = opts.nodePool ? nodePools.filter((np) => np.metadata.name === opts.nodePool) : nodePools;
      if (opts.nodePool && pools.length === 0) {
        throw new InputError(
          `--nodepool "${opts.nodePool}" is not in the manifests (NodePools: ${nodePools.map((n) => n.metadata.name).join(', ') || 'none'})`,
        );
      }
      for (const np of pools) {
        const ref = np.spec.template.spec.nodeClassRef;
        let nodeClass: EC2NodeClass | undefined;
        if (ref?.kind === 'EC2NodeClass' || ref?.group === 'karpenter.k8s.aws') {
          nodeClass = byName.get(ref.name);
          if (!nodeClass) {
            throw new InputError(
              `NodePool "${np.metadata.name}": spec.template.spec.nodeClassRef.name "${ref.name}" names no EC2NodeClass in the manifests; add it with -f`,
            );
          }
        } else if (ref?.kind === 'KWOKNodeClass') {
          // the kwok provider launches the region's catalog types with the default allocatable
          if (!kwokNodeClasses.has(ref.name))
            throw new InputError(
              `NodePool "${np.metadata.name}": spec.template.spec.nodeClassRef.name "${ref.name}" names no KWOKNodeClass in the manifests; add it with -f`,
            );
        } else {
          throw new InputError(
            `NodePool "${np.metadata.name}": spec.template.spec.nodeClassRef.kind "${ref?.kind ?? ''}" is not supported here; use an EC2NodeClass or a KWOKNodeClass`,
          );
        }
        let reqs: Requirements;
        try {
          reqs = nodeClaimTemplateRequirements(np);
        } catch (e) {
          throw new InputError(
            `NodePool "${np.metadata.name}": spec.template.spec.requirements: ${(e as Error).message}`,
          );
        }
        selections.push({ nodePool: np.metadata.name, pool: np, reqs, ...(nodeClass ? { nodeClass } : {}) });
      }
      if (pools.length === 0) {
        if (nodeClasses.length > 1) {
          throw new InputError(
            `the manifests hold ${nodeClasses.length} EC2NodeClasses and no NodePool; add the NodePool that references one`,
          );
        }
        selections.push(nodeClasses[0] ? { nodeClass: nodeClasses[0] } : {});
      }
    } else {
      selections.push({});
    }

    const notices = new Set<string>();
    const rows = selectionRows(selections, region, notices, { overlays, gateOn: gates.NodeOverlay ?? false });
    for (const n of notices) io.stderr(`note: ${n}\n`);
    if (output === 'json') {
      io.stdout(
        `${JSON.stringify(
          rows.map((r) => toJSON(r.it, r.nodePool)),
          null,
          2,
        )}\n`,
      );
    } else {
      io.stdout(table(rows));
    }
    return EXIT_OK;
  } catch (e) {
    if (e instanceof InputError) {
      io.stderr(`error: ${e.message}\n`);
      return EXIT_INVALID_INPUT;
    }
    io.stderr(`error: instance-types failed unexpectedly: ${(e as Error).stack ?? String(e)}\n`);
    return EXIT_FAILURE;
  }
}

/** Registers `capenter instance-types` on the program. */
export function registerInstanceTypesCommand(program: Command): void {
  program
    .command('instance-types')
    .description(
      'list the embedded AWS instance types with labels, allocatable and prices, optionally filtered by NodePools',
    )
    .option(
      '-f, --filename <paths...>',
      'NodePool/EC2NodeClass manifest files or folders (repeatable)',
      (value: string, previous: string[] | undefined) => [...(previous ?? []), value],
    )
    .option('--region <region>', `AWS region (${SUPPORTED_REGIONS.join(', ')})`, DEFAULT_REGION)
    .option('--nodepool <name>', 'only the instance types of this NodePool')
    .option('-o, --output <format>', 'output format: table or json', 'table')
    .option(
      '--feature-gates <gates>',
      "feature gates, e.g. NodeOverlay=true (applies the manifests' NodeOverlays)",
    )
    .action(
      async (o: {
        filename?: string[];
        region: string;
        nodepool?: string;
        output: string;
        featureGates?: string;
      }) => {
        process.exitCode = await runInstanceTypes(
          {
            region: o.region,
            output: o.output,
            ...(o.filename ? { filenames: o.filename } : {}),
            ...(o.nodepool ? { nodePool: o.nodepool } : {}),
            ...(o.featureGates ? { featureGates: o.featureGates } : {}),
          },
          { stdout: (t) => process.stdout.write(t), stderr: (t) => process.stderr.write(t) },
        );
      },
    );
}
