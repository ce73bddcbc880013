/**
 * AMI resolution of an EC2NodeClass (`amiSelectorTerms` → `status.amis`), after aws/karpenter-provider-aws
 * `pkg/providers/amifamily/{ami,types,al2023,al2,bottlerocket,windows}.go`:
 * - an `alias` (`al2023@latest`, `al2@v20240807`, `bottlerocket@1.20.0`, `windows2022@latest`) reads the public
 *   SSM parameters of that family for the cluster's Kubernetes version, one per architecture × variant
 *   (standard, nvidia, neuron), each parameter's image carrying that variant's requirements;
 * - `id`, `name` (+`owner`, default owners `self`,`amazon`), `tags`, `ssmParameter` terms are looked up with
 *   `DescribeImages` (state `available`, deprecated images included);
 * - per distinct requirement set the best image wins: non-deprecated before deprecated, then newest
 *   `CreationDate`, then name (descending); the result is sorted newest first, then by ID.
 */
import { DescribeImagesCommand, type EC2Client, type Image } from '@aws-sdk/client-ec2';
import { GetParameterCommand, type SSMClient } from '@aws-sdk/client-ssm';
import type { NodeSelectorRequirement } from '../../../apis/core.ts';
import type { EC2NodeClass } from '../../../apis/karpenter.ts';
import { type Filter, imageQueries, type SelectorTerm } from './filters.ts';
import type { AMIStatus } from './types.ts';

/** Requirement keys of the AMI variants (upstream `LabelInstanceGPUCount`, `LabelInstanceAcceleratorCount`). */
export const LabelInstanceGPUCount = 'karpenter.k8s.aws/instance-gpu-count';
export const LabelInstanceAcceleratorCount = 'karpenter.k8s.aws/instance-accelerator-count';

/** An AMI variant: which instance types an image of an alias serves. */
export type AMIVariant = 'standard' | 'nvidia' | 'neuron';

/** Requirements of a variant (upstream `Variant.Requirements`). */
export function variantRequirements(v: AMIVariant): NodeSelectorRequirement[] {
  switch (v) {
    case 'standard':
      return [
        { key: LabelInstanceAcceleratorCount, operator: 'DoesNotExist' },
        { key: LabelInstanceGPUCount, operator: 'DoesNotExist' },
      ];
    case 'nvidia':
      return [{ key: LabelInstanceGPUCount, operator: 'Exists' }];
    case 'neuron':
      return [{ key: LabelInstanceAcceleratorCount, operator: 'Exists' }];
  }
}

/** EC2 architecture → `kubernetes.io/arch` (upstream `AWSToKubeArchitectures`). */
export const AWSToKubeArchitectures: Readonly<Record<string, string>> = { x86_64: 'amd64', arm64: 'arm64' };

/** Windows builds by alias version (upstream `Windows*Build`). */
const WindowsBuilds: Readonly<Record<string, string>> = {
  '2019': '10.0.17763',
  '2022': '10.0.20348',
  '2025': '10.0.26100',
};

/** A parsed alias, e.g. `{family: 'al2023', version: 'latest'}`. */
export interface AMIAlias {
  /** Lower-case family: `al2`, `al2023`, `bottlerocket`, `windows2019`, `windows2022`, `windows2025`. */
  family: string;
  /** `latest` or a pinned version (`v20240807`, `1.20.0`). */
  version: string;
}

/** The first `alias` term of the class, parsed; `undefined` when there is none. @throws Error on a malformed alias. */
export function aliasOf(nodeClass: EC2NodeClass): AMIAlias | undefined {
  const term = (nodeClass.spec.amiSelectorTerms ?? []).find((t) => t.alias);
  if (!term?.alias) return undefined;
  const parts = term.alias.split('@');
  const family = parts[0] ?? '';
  if (
    parts.length !== 2 ||
    !['al2', 'al2023', 'bottlerocket', 'windows2019', 'windows2022', 'windows2025'].includes(family)
  )
    throw new Error(
      `EC2NodeClass ${nodeClass.metadata.name} spec.amiSelectorTerms alias "${term.alias}" is not <family>@<version> with family al2, al2023, bottlerocket, windows2019, windows2022 or windows2025`,
    );
  return { family, version: parts[1] as string };
}

/** One SSM parameter an alias reads, and the requirements of the image it names. */
export interface AliasParameter {
  path: string;
  requirements: NodeSelectorRequirement[][];
}

/**
 * The SSM parameters of an alias for Kubernetes `k8sVersion` (`1.32`), each with the requirement sets (before
 * `kubernetes.io/arch`, which comes from the image) its image serves. Paths exactly as upstream builds them.
 */
export function aliasParameters(alias: AMIAlias, k8sVersion: string): AliasParameter[] {
  const latest = alias.version === 'latest';
  const req = (...vs: AMIVariant[]): NodeSelectorRequirement[][] => vs.map(variantRequirements);
  switch (alias.family) {
    case 'al2023': {
      const out: AliasParameter[] = [];
      const variants: Record<string, AMIVariant[]> = {
        x86_64: ['standard', 'nvidia', 'neuron'],
        arm64: ['standard', 'nvidia'],
      };
      for (const [arch, vs] of Object.entries(variants))
        for (const v of vs) {
          const name = latest
            ? 'recommended'
            : `amazon-eks-node-al2023-${arch}-${v}-${k8sVersion}-${alias.version}`;
          out.push({
            path: `/aws/service/eks/optimized-ami/${k8sVersion}/amazon-linux-2023/${arch}/${v}/${name}/image_id`,
            requirements: req(v),
          });
        }
      return out;
    }
    case 'al2': {
      const p = (dir: string, prefix: string): string =>
        `/aws/service/eks/optimized-ami/${k8sVersion}/${dir}/${latest ? 'recommended' : `${prefix}-${k8sVersion}-${alias.version}`}/image_id`;
      return [
        { path: p('amazon-linux-2', 'amazon-eks-node'), requirements: req('standard') },
        { path: p('amazon-linux-2-arm64', 'amazon-eks-arm64-node'), requirements: req('standard') },
        { path: p('amazon-linux-2-gpu', 'amazon-eks-gpu-node'), requirements: req('neuron', 'nvidia') },
      ];
    }
    case 'bottlerocket': {
      const v = alias.version.replace(/^v+/, '');
      const p = (flavor: string, arch: string): string =>
        `/aws/service/bottlerocket/aws-k8s-${k8sVersion}${flavor}/${arch}/${v}/image_id`;
      return [
        { path: p('', 'x86_64'), requirements: req('standard', 'neuron') },
        { path: p('', 'arm64'), requirements: req('standard') },
        { path: p('-nvidia', 'x86_64'), requirements: req('nvidia') },
        { path: p('-nvidia', 'arm64'), requirements: req('nvidia') },
      ];
    }
    default: {
      const version = alias.family.slice('windows'.length);
      return [
        {
          path: `/aws/service/ami-windows-latest/Windows_Server-${version}-English-Core-EKS_Optimized-${k8sVersion}/image_id`,
          requirements: [
            [
              { key: 'kubernetes.io/os', operator: 'In', values: ['windows'] },
              {
                key: 'node.kubernetes.io/windows-build',
                operator: 'In',
                values: [WindowsBuilds[version] ?? ''],
              },
            ],
          ],
        },
      ];
    }
  }
}

/** Result of {@link AMIResolver.resolve}: the AMIs, or why none (for the `AMIsReady=False` condition). */
export type AMIResolution =
  | { amis: AMIStatus[] }
  | { amis: []; reason: 'AMINotFound' | 'UnsupportedAlias'; message: string };

/** Dependencies of {@link AMIResolver}. */
export interface AMIResolverDeps {
  ec2: EC2Client;
  ssm: SSMClient;
  /** Current time in ms (for `DeprecationTime`). */
  now: () => number;
}

interface Candidate {
  status: AMIStatus;
  created: number;
}

const MIN_TIME = Number.NEGATIVE_INFINITY;

/** Key order upstream writes AMI requirements in: key length, then key. */
function sortRequirements(reqs: NodeSelectorRequirement[]): NodeSelectorRequirement[] {
  return [...reqs].sort((a, b) => a.key.length - b.key.length || a.key.localeCompare(b.key));
}

/** Resolves `amiSelectorTerms` through SSM and EC2 `DescribeImages`. */
export class AMIResolver {
  constructor(private readonly deps: AMIResolverDeps) {}

  /**
   * Resolves the class's AMIs for Kubernetes `k8sVersion` (`major.minor`, e.g. `1.32`).
   * @throws Error on EC2/SSM failures other than a missing parameter (the controller retries).
   */
  async resolve(nodeClass: EC2NodeClass, k8sVersion: string): Promise<AMIResolution> {
    const terms = (nodeClass.spec.amiSelectorTerms ?? []) as SelectorTerm[];
    let alias: AMIAlias | undefined;
    try {
      alias = aliasOf(nodeClass);
    } catch (err) {
      return { amis: [], reason: 'UnsupportedAlias', message: (err as Error).message };
    }
    const known = new Map<string, NodeSelectorRequirement[][]>();
    let queries: Array<{ filters: Filter[]; owners: string[] }>;
    if (alias) {
      const minor = Number(k8sVersion.split('.')[1]);
      if (alias.family === 'al2' && minor >= 33)
        return {
          amis: [],
          reason: 'UnsupportedAlias',
          message: `AL2 aliases are no longer supported on EKS 1.33+ (cluster is ${k8sVersion}); use al2023@latest`,
        };
      if (alias.family === 'windows2025' && minor < 35)
        return {
          amis: [],
          reason: 'UnsupportedAlias',
          message: `Windows Server 2025 requires EKS version 1.35 or higher, current version: ${k8sVersion}`,
        };
      const params = aliasParameters(alias, k8sVersion);
      for (const p of params) {
        const id = await this.parameter(p.path);
        if (id) known.set(id, [...(known.get(id) ?? []), ...p.requirements]);
      }
      if (known.size === 0)
        return {
          amis: [],
          reason: 'AMINotFound',
          message: `failed to discover any AMIs for alias ${alias.family}@${alias.version}: none of the SSM parameters ${params.map((p) => p.path).join(', ')} exists`,
        };
      queries = [{ filters: [{ Name: 'image-id', Values: [...known.keys()] }], owners: [] }];
    } else {
      const resolved: string[] = [];
      for (const t of terms) {
        if (!t.ssmParameter) continue;
        const id = await this.parameter(t.ssmParameter);
        if (id?.startsWith('ami-')) resolved.push(id);
      }
      queries = imageQueries(terms, resolved);
    }
    const best = new Map<string, Candidate>();
    const now = this.deps.now();
    for (const q of queries) {
      for (const image of await this.describeImages(q.filters, q.owners)) {
        const arch = AWSToKubeArchitectures[image.Architecture ?? ''];
        if (!arch || !image.ImageId) continue;
        const archReq: NodeSelectorRequirement = {
          key: 'kubernetes.io/arch',
          operator: 'In',
          values: [arch],
        };
        const sets = known.get(image.ImageId) ?? [[]];
        const deprecation = image.DeprecationTime
          ? Date.parse(image.DeprecationTime)
          : Number.POSITIVE_INFINITY;
        for (const set of sets) {
          const requirements = sortRequirements([...set, archReq]);
          const key = JSON.stringify(requirements);
          const c: Candidate = {
            status: {
              id: image.ImageId,
              ...(image.Name ? { name: image.Name } : {}),
              ...(deprecation <= now ? { deprecated: true } : {}),
              requirements,
            },
            created: image.CreationDate ? Date.parse(image.CreationDate) : MIN_TIME,
          };
          const prev = best.get(key);
          if (!prev || compareCandidates(c, prev) < 0) best.set(key, c);
        }
      }
    }
    const amis = [...best.values()]
      .sort((a, b) => b.created - a.created || a.status.id.localeCompare(b.status.id))
      .map((c) => c.status);
    if (amis.length === 0)
      return {
        amis: [],
        reason: 'AMINotFound',
        message: alias
          ? `AMISelector did not match any AMIs: the images named by the ${alias.family}@${alias.version} SSM parameters (${[...known.keys()].join(', ')}) are not available`
          : `AMISelector did not match any AMIs (amiSelectorTerms: ${JSON.stringify(terms)})`,
      };
    return { amis };
  }

  /** The value of an SSM parameter, `undefined` when it does not exist. */
  private async parameter(name: string): Promise<string | undefined> {
    try {
      const out = await this.deps.ssm.send(new GetParameterCommand({ Name: name }));
      return out.Parameter?.Value;
    } catch (err) {
      if ((err as { name?: string }).name === 'ParameterNotFound') return undefined;
      throw new Error(`getting SSM parameter ${name}: ${(err as Error).message}`, { cause: err });
    }
  }

  private async describeImages(filters: Filter[], owners: string[]): Promise<Image[]> {
    const out: Image[] = [];
    let token: string | undefined;
    do {
      const page = await this.deps.ec2.send(
        new DescribeImagesCommand({
          Filters: [...filters, { Name: 'state', Values: ['available'] }],
          ...(owners.length > 0 ? { Owners: owners } : {}),
          IncludeDeprecated: true,
          ...(token ? { NextToken: token } : {}),
        }),
      );
      out.push(...(page.Images ?? []));
      token = page.NextToken;
    } while (token);
    return out;
  }
}

/** Negative when `a` is preferred: non-deprecated, newer, then greater name (upstream `compareAMI`). */
function compareCandidates(a: Candidate, b: Candidate): number {
  const ad = a.status.deprecated === true;
  const bd = b.status.deprecated === true;
  if (ad !== bd) return ad ? 1 : -1;
  if (a.created !== b.created) return a.created > b.created ? -1 : 1;
  const an = a.status.name ?? '';
  const bn = b.status.name ?? '';
  if (an !== bn) return an > bn ? -1 : 1;
  return 0;
}
