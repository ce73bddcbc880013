/**
 * Generates capenter's embedded AWS instance-type catalog from the reference data in `../shared/data/aws`
 * (or the folder given as the first argument) into `src/cloudprovider/aws/catalog/data/`:
 *
 * - `instance-types.json`: one compact spec per EC2 instance type (only the fields needed for labels,
 *   capacity and allocatable; `null`, `false`, `0` and `[]` values are omitted to keep the file small);
 * - `offerings.json`: per supported region, the zone names and for each instance type the zones it is
 *   offered in, as a string of zone suffix letters (`"abcdf"` → `us-east-1a`, `us-east-1b`, ...);
 * - `prices.json`: us-east-1 Linux on-demand prices (USD/hour) and, per supported region, the Spot
 *   Instance Advisor savings percent and interruption-frequency bucket;
 * - `SOURCES.md`: where every fact came from (repository, file, commit, date).
 *
 * Usage: `tsx scripts/generate-catalog.ts [path/to/shared/data/aws]`. Deterministic: same input, same bytes.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const REGIONS = ['us-east-1', 'us-west-2', 'eu-west-1', 'eu-central-1'] as const;

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const srcDir = resolve(process.argv[2] ?? join(repoRoot, '..', 'shared', 'data', 'aws'));
const outDir = join(repoRoot, 'src', 'cloudprovider', 'aws', 'catalog', 'data');

/** The subset of a `shared/data/aws/instance-types.json` entry this script reads. */
interface SourceInstanceType {
  name: string;
  family: string;
  size: string;
  category: string | null;
  generation: string | null;
  capabilityFlex: boolean;
  architecture: string;
  supportedArchitectures: string[];
  cpuManufacturer: string | null;
  clockSpeedGHz: number | null;
  vcpu: number;
  memoryMiB: number;
  gpuCount: number;
  gpuName: string | null;
  gpuManufacturer: string | null;
  gpuMemoryMiB: number | null;
  acceleratorName: string | null;
  acceleratorManufacturer: string | null;
  acceleratorCount: number;
  neuronDeviceCount: number;
  neuronCoreCount: number;
  localStorageGB: number;
  localNvmeGB: number | null;
  networkBandwidthMbps: number | null;
  defaultCardMaxENIs: number;
  maxNetworkCards: number;
  ipv4PerENI: number;
  efaMaxInterfaces: number | null;
  encryptionInTransitSupported: boolean;
  trunkingCompatible: boolean | null;
  branchENIs: number | null;
  ebsBandwidthMbps: number | null;
  hypervisor: string;
  bareMetal: boolean;
  supportedUsageClasses: string[];
}

interface SourceOfferings {
  region: string;
  zones: Record<string, string[]>;
}

interface SourceSpotAdvisor {
  ranges: Array<{ index: number; label: string }>;
  regions: Record<string, { Linux?: Record<string, { s: number; r: number }> }>;
}

function readJson<T>(file: string): T {
  const path = join(srcDir, file);
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as T;
  } catch (e) {
    throw new Error(
      `cannot read ${path}: ${(e as Error).message}. Pass the folder holding the shared AWS data as the first argument.`,
    );
  }
}

/** Keys copied from the source spec, in output order. */
const SPEC_KEYS = [
  'name',
  'family',
  'size',
  'category',
  'generation',
  'capabilityFlex',
  'architecture',
  'supportedArchitectures',
  'cpuManufacturer',
  'clockSpeedGHz',
  'vcpu',
  'memoryMiB',
  'gpuCount',
  'gpuName',
  'gpuManufacturer',
  'gpuMemoryMiB',
  'acceleratorName',
  'acceleratorManufacturer',
  'acceleratorCount',
  'neuronDeviceCount',
  'neuronCoreCount',
  'localStorageGB',
  'localNvmeGB',
  'networkBandwidthMbps',
  'defaultCardMaxENIs',
  'maxNetworkCards',
  'ipv4PerENI',
  'efaMaxInterfaces',
  'encryptionInTransitSupported',
  'trunkingCompatible',
  'branchENIs',
  'ebsBandwidthMbps',
  'hypervisor',
  'bareMetal',
  'supportedUsageClasses',
] as const satisfies ReadonlyArray<keyof SourceInstanceType>;

/** Fields whose `null`/`false`/`0` must be kept because the absence would change meaning. */
const KEEP_FALSY = new Set<string>(['hypervisor', 'trunkingCompatible']);

function compactSpec(t: SourceInstanceType): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of SPEC_KEYS) {
    const v = t[k];
    if (!KEEP_FALSY.has(k)) {
      if (v === null || v === false || v === 0 || (Array.isArray(v) && v.length === 0)) continue;
    } else if (v === null) {
      continue;
    }
    out[k] = v;
  }
  return out;
}

function main(): void {
  const types = readJson<SourceInstanceType[]>('instance-types.json');
  const prices = readJson<Record<string, Record<string, number>>>('prices-on-demand.json');
  const advisor = readJson<SourceSpotAdvisor>('spot-advisor.json');
  const names = new Set(types.map((t) => t.name));

  mkdirSync(outDir, { recursive: true });

  const specs = [...types].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)).map(compactSpec);
  writeFileSync(join(outDir, 'instance-types.json'), `${JSON.stringify(specs)}\n`);

  const offerings: Record<string, { zones: string[]; types: Record<string, string> }> = {};
  for (const region of REGIONS) {
    const src = readJson<SourceOfferings>(`offerings-${region}.json`);
    const zones = Object.keys(src.zones).sort();
    const byType = new Map<string, string>();
    for (const zone of zones) {
      if (!zone.startsWith(region) || zone.length !== region.length + 1) {
        throw new Error(`zone ${zone} of ${region} is not <region><letter>; the compact encoding needs that`);
      }
      const letter = zone.slice(region.length);
      for (const t of src.zones[zone] ?? []) {
        if (!names.has(t)) continue; // offered but not described: nothing to build it from
        byType.set(t, (byType.get(t) ?? '') + letter);
      }
    }
    const typesOut: Record<string, string> = {};
    for (const t of [...byType.keys()].sort()) typesOut[t] = byType.get(t)!;
    offerings[region] = { zones, types: typesOut };
  }
  writeFileSync(join(outDir, 'offerings.json'), `${JSON.stringify(offerings)}\n`);

  const onDemand: Record<string, number> = {};
  const usEast1 = prices['us-east-1'] ?? {};
  for (const t of Object.keys(usEast1).sort()) onDemand[t] = usEast1[t]!;
  const spot: Record<string, Record<string, [number, number]>> = {};
  for (const region of REGIONS) {
    const linux = advisor.regions[region]?.Linux ?? {};
    const out: Record<string, [number, number]> = {};
    for (const t of Object.keys(linux).sort()) out[t] = [linux[t]!.s, linux[t]!.r];
    spot[region] = out;
  }
  writeFileSync(
    join(outDir, 'prices.json'),
    `${JSON.stringify({
      onDemandRegion: 'us-east-1',
      onDemand,
      spotInterruptionRanges: advisor.ranges.map((r) => r.label),
      spotSavings: spot,
    })}\n`,
  );

  writeFileSync(join(outDir, 'SOURCES.md'), SOURCES);
  const summary = REGIONS.map((r) => `${r} ${Object.keys(offerings[r]!.types).length}`).join(', ');
  console.log(
    `wrote ${specs.length} instance types, offerings (${summary}), ${Object.keys(onDemand).length} prices`,
  );
}

const SOURCES = `# Sources of the embedded AWS catalog

Generated by \`scripts/generate-catalog.ts\` from \`../shared/data/aws\` (see \`shared/data/README.md\`).
Every value is copied from public data; nothing was estimated except the spot price, which capenter computes
at runtime as on-demand × (1 − Spot Advisor savings %). All source repositories are licensed Apache-2.0.

| file here | fields | source repository | source file | commit | date |
|---|---|---|---|---|---|
| instance-types.json | EC2 \`DescribeInstanceTypes\` specs (vCPU, memory, ENIs, GPUs, accelerators, storage, EBS, hypervisor, usage classes) | getmoto/moto | moto/ec2/resources/instance_types.json | 34d6cad5abbb7b91c97578f3249b39a7e2df1ed5 (snapshot HEAD 0af643a5dbfc98797f08ee64f5be3ef8002d56ff) | 2026-08-02 |
| instance-types.json | \`networkBandwidthMbps\` (Karpenter \`InstanceTypeBandwidthMegabits\`) | aws/karpenter-provider-aws | pkg/providers/instancetype/zz_generated.bandwidth.go | 7f27b4e85d3157418ab84eb04a3c91da7cb8fbba | 2026-08-18 |
| instance-types.json | \`trunkingCompatible\`, \`branchENIs\` (Karpenter VPC \`Limits\`) | aws/karpenter-provider-aws | pkg/providers/instancetype/zz_generated.vpclimits.go | 7f27b4e85d3157418ab84eb04a3c91da7cb8fbba (generated 2026-08-06T04:02:42Z) | 2026-08-18 |
| offerings.json | zones offering each type (\`DescribeInstanceTypeOfferings\`, LocationType=availability-zone) for us-east-1, us-west-2, eu-west-1, eu-central-1 | getmoto/moto | moto/ec2/resources/instance_type_offerings/availability-zone/<region>.json | c6bd43ff2d090b35b6491f1cc80bffd29063e5c8 (snapshot HEAD 0af643a5dbfc98797f08ee64f5be3ef8002d56ff) | 2026-08-01 |
| prices.json \`onDemand\` | Linux on-demand USD/hour, us-east-1 only (the only commercial region upstream commits) | aws/karpenter-provider-aws | pkg/providers/pricing/zz_generated.pricing_aws.go (var \`InitialOnDemandPricesAWS\`, generated 2026-07-20T13:44:30Z) | 6fc13b5236fd04fd16ff3f9dc7490d0813994099 (snapshot HEAD 1d927085dd81a9df9301e613f371dac5b4d16bfe) | 2026-07-20 |
| prices.json \`spotSavings\` | Spot Instance Advisor, Linux: \`[savings %, interruption bucket index]\` per type and region | alexei-led/spotinfo (copy of AWS's public feed https://spot-bid-advisor.s3.amazonaws.com/spot-advisor-data.json) | internal/spot/data/spot-advisor-data.json | 5eedf20a99614443af215f4aaf09bd10805cac72 (snapshot HEAD 05e933139449b888c78795b28af8e9370429a031) | 2025-06-28 |

Compact encoding: in \`instance-types.json\` a missing key means \`null\`, \`false\`, \`0\` or \`[]\`; in
\`offerings.json\` each type maps to the suffix letters of the zones that offer it.
The golden reference used by \`test/catalog-golden.test.ts\` lives in \`test/fixtures/aws/\` with its own note.
`;

main();
