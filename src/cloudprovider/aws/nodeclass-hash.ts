/**
 * The EC2NodeClass static-drift hash, equal to upstream's (aws/karpenter-provider-aws v1.12 to v1.14
 * `pkg/apis/v1/ec2nodeclass.go` `EC2NodeClass.Hash(caBundle)`, hash version `v5`):
 * `hashstructure.Hash([]any{spec, AMIFamily(), caBundle}, FormatV2, {SlicesAsSets, IgnoreZeroValue, ZeroNil})`
 * (`apis/hashstructure.ts`) over the Go type `EC2NodeClassSpec` of v1.14, field for field: the selector terms,
 * `amiFamily` and `ipPrefixCount` carry `hash:"ignore"` (the selectors drift through the resolved AMI, subnet and
 * security-group checks; `amiFamily` is hashed as the resolved family instead), `blockDeviceMappings[].ebs.volumeSize`
 * carries `hash:"string"` (its canonical quantity text). `caBundle` is the controller's cluster CA bundle
 * (`CLUSTER_CA_BUNDLE`, else the base64 CA of its kubeconfig: upstream `operator.GetCABundle`).
 * Upstream v1.3 to v1.11 stamped version `v4` (the same hash without the CA bundle); a v4 NodeClaim is re-stamped
 * by the hash step of the EC2NodeClass controller, never compared. Pure: no I/O.
 */
import { goMetaV1Duration } from '../../apis/hash.ts';
import { type GoField, type GoType, hashAnySlice } from '../../apis/hashstructure.ts';
import type { EC2NodeClass } from '../../apis/karpenter.ts';

/** Upstream's `EC2NodeClassHashVersion` (v1.12 to v1.14). */
export const EC2NodeClassHashVersion = 'v5';

const str: GoType = { kind: 'string' };
const pstr: GoType = { kind: 'ptr', elem: str };
const pbool: GoType = { kind: 'ptr', elem: { kind: 'bool' } };
const pi32: GoType = { kind: 'ptr', elem: { kind: 'int32' } };
const pi64: GoType = { kind: 'ptr', elem: { kind: 'int64' } };
const stringMap: GoType = { kind: 'map', key: str, value: str };

function struct(name: string, fields: [string, string, GoType, GoField['tag']?][]): GoType {
  return {
    kind: 'struct',
    name,
    fields: fields.map(([goName, json, type, tag]) => ({
      name: goName,
      json,
      type,
      ...(tag ? { tag } : {}),
    })),
  };
}

const DECIMAL_SUFFIX: Record<string, number> = {
  n: -9,
  u: -6,
  m: -3,
  '': 0,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18,
};
const BINARY_SUFFIX: Record<string, number> = { Ki: 1, Mi: 2, Gi: 3, Ti: 4, Pi: 5, Ei: 6 };

/**
 * `resource.Quantity.String()` (k8s.io/apimachinery `quantity.go` `CanonicalizeBytes`) of a quantity text:
 * binary-suffixed values of at least 1Ki that are whole print with the largest exact binary suffix (`1024Mi` →
 * `1Gi`), others as DecimalSI with an exponent that is a multiple of 3 (`1000M` → `1G`, `1500M` → `1500M`),
 * exponent forms as `<n>e<exp>`. Throws naming the text when it is not a quantity.
 */
export function canonicalQuantity(text: string): string {
  const m = /^([+-]?)(\d*)(?:\.(\d*))?(?:(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])|[eE]([+-]?\d+))?$/.exec(
    String(text).trim(),
  );
  if (!m || (m[2] === '' && !m[3]))
    throw new Error(`quantity ${JSON.stringify(text)}: not a Kubernetes quantity`);
  const neg = m[1] === '-';
  const frac = m[3] ?? '';
  let mant = BigInt(`${m[2] || '0'}${frac}`) * (neg ? -1n : 1n);
  let exp = -frac.length;
  const bin = m[4] ? BINARY_SUFFIX[m[4]] : undefined;
  if (bin !== undefined) {
    mant *= 1024n ** BigInt(bin);
    const whole = exp >= 0 || mant % 10n ** BigInt(-exp) === 0n;
    const value = exp >= 0 ? mant * 10n ** BigInt(exp) : mant / 10n ** BigInt(-exp);
    if (whole && (value >= 1024n || value <= -1024n)) {
      let v = value;
      let k = 0;
      while (k < 6 && v % 1024n === 0n) {
        v /= 1024n;
        k++;
      }
      return `${v}${['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'][k]}`;
    }
  } else if (m[4] !== undefined) exp += DECIMAL_SUFFIX[m[4]]!;
  else if (m[5] !== undefined) exp += Number(m[5]);
  if (mant === 0n) return '0';
  while (mant % 10n === 0n) {
    mant /= 10n;
    exp++;
  }
  while (((exp % 3) + 3) % 3 !== 0) {
    mant *= 10n;
    exp--;
  }
  if (m[5] !== undefined) return exp === 0 ? `${mant}` : `${mant}e${exp}`;
  const suffix = Object.entries(DECIMAL_SUFFIX).find(([, e]) => e === exp)?.[0];
  return suffix === undefined ? `${mant}e${exp}` : `${mant}${suffix}`;
}

const goBlockDevice: GoType = {
  kind: 'struct',
  name: 'BlockDevice',
  fields: [
    { name: 'DeleteOnTermination', json: 'deleteOnTermination', type: pbool },
    { name: 'Encrypted', json: 'encrypted', type: pbool },
    { name: 'IOPS', json: 'iops', type: pi64 },
    { name: 'KMSKeyID', json: 'kmsKeyID', type: pstr },
    { name: 'SnapshotID', json: 'snapshotID', type: pstr },
    { name: 'Throughput', json: 'throughput', type: pi64 },
    { name: 'VolumeInitializationRate', json: 'volumeInitializationRate', type: pi32 },
    {
      name: 'VolumeSize',
      json: 'volumeSize',
      type: pstr,
      tag: 'string',
      stringer: (v) => canonicalQuantity(String(v)),
    },
    { name: 'VolumeType', json: 'volumeType', type: pstr },
  ],
};

/** Upstream's `EC2NodeClassSpec` Go type (v1.14), field for field, in declaration order. */
export const goEC2NodeClassSpec: GoType = struct('EC2NodeClassSpec', [
  ['SubnetSelectorTerms', 'subnetSelectorTerms', { kind: 'slice', elem: str }, 'ignore'],
  ['SecurityGroupSelectorTerms', 'securityGroupSelectorTerms', { kind: 'slice', elem: str }, 'ignore'],
  [
    'CapacityReservationSelectorTerms',
    'capacityReservationSelectorTerms',
    { kind: 'slice', elem: str },
    'ignore',
  ],
  [
    'PlacementGroupSelector',
    'placementGroupSelector',
    {
      kind: 'ptr',
      elem: struct('PlacementGroupSelector', [
        ['Name', 'name', pstr],
        ['ID', 'id', pstr],
      ]),
    },
  ],
  ['AssociatePublicIPAddress', 'associatePublicIPAddress', pbool],
  ['IPPrefixCount', 'ipPrefixCount', pi32, 'ignore'],
  ['AMISelectorTerms', 'amiSelectorTerms', { kind: 'slice', elem: str }, 'ignore'],
  ['AMIFamily', 'amiFamily', pstr, 'ignore'],
  ['UserData', 'userData', pstr],
  ['Role', 'role', str],
  ['InstanceProfile', 'instanceProfile', pstr],
  ['Tags', 'tags', stringMap],
  [
    'Kubelet',
    'kubelet',
    {
      kind: 'ptr',
      elem: struct('KubeletConfiguration', [
        ['ClusterDNS', 'clusterDNS', { kind: 'slice', elem: str }],
        ['MaxPods', 'maxPods', pi32],
        ['PodsPerCore', 'podsPerCore', pi32],
        ['SystemReserved', 'systemReserved', stringMap],
        ['KubeReserved', 'kubeReserved', stringMap],
        ['EvictionHard', 'evictionHard', stringMap],
        ['EvictionSoft', 'evictionSoft', stringMap],
        [
          'EvictionSoftGracePeriod',
          'evictionSoftGracePeriod',
          { kind: 'map', key: str, value: goMetaV1Duration },
        ],
        ['EvictionMaxPodGracePeriod', 'evictionMaxPodGracePeriod', pi32],
        ['ImageGCHighThresholdPercent', 'imageGCHighThresholdPercent', pi32],
        ['ImageGCLowThresholdPercent', 'imageGCLowThresholdPercent', pi32],
        ['CPUCFSQuota', 'cpuCFSQuota', pbool],
      ]),
    },
  ],
  [
    'BlockDeviceMappings',
    'blockDeviceMappings',
    {
      kind: 'slice',
      elem: {
        kind: 'ptr',
        elem: struct('BlockDeviceMapping', [
          ['DeviceName', 'deviceName', pstr],
          ['EBS', 'ebs', { kind: 'ptr', elem: goBlockDevice }],
          ['RootVolume', 'rootVolume', { kind: 'bool' }],
        ]),
      },
    },
  ],
  ['InstanceStorePolicy', 'instanceStorePolicy', pstr],
  [
    'NetworkInterfaces',
    'networkInterfaces',
    {
      kind: 'slice',
      elem: {
        kind: 'ptr',
        elem: struct('NetworkInterface', [
          ['NetworkCardIndex', 'networkCardIndex', { kind: 'int32' }],
          ['DeviceIndex', 'deviceIndex', { kind: 'int32' }],
          ['InterfaceType', 'interfaceType', str],
        ]),
      },
    },
  ],
  ['DetailedMonitoring', 'detailedMonitoring', pbool],
  [
    'MetadataOptions',
    'metadataOptions',
    {
      kind: 'ptr',
      elem: struct('MetadataOptions', [
        ['HTTPEndpoint', 'httpEndpoint', pstr],
        ['HTTPProtocolIPv6', 'httpProtocolIPv6', pstr],
        ['HTTPPutResponseHopLimit', 'httpPutResponseHopLimit', pi64],
        ['HTTPTokens', 'httpTokens', pstr],
      ]),
    },
  ],
  [
    'ConnectionTracking',
    'connectionTracking',
    {
      kind: 'ptr',
      elem: struct('ConnectionTracking', [
        ['TCPEstablishedTimeout', 'tcpEstablishedTimeout', pi32],
        ['UDPStreamTimeout', 'udpStreamTimeout', pi32],
        ['UDPTimeout', 'udpTimeout', pi32],
      ]),
    },
  ],
  ['Context', 'context', pstr],
  [
    'CPUOptions',
    'cpuOptions',
    { kind: 'ptr', elem: struct('CPUOptions', [['NestedVirtualization', 'nestedVirtualization', pstr]]) },
  ],
]);

const ALIAS_FAMILIES = ['AL2', 'AL2023', 'Bottlerocket', 'Windows2019', 'Windows2022', 'Windows2025'];

/**
 * Upstream's `EC2NodeClass.AMIFamily()`: `spec.amiFamily` when set, else the family of the first `alias` term
 * (`al2023@latest` → `AL2023`), else `Custom`. Not capenter's `resolveAMIFamily` (that maps unknown families to
 * AL2 for user data): the hash needs the literal value.
 */
export function hashedAMIFamily(nodeClass: Pick<EC2NodeClass, 'spec'>): string {
  if (nodeClass.spec.amiFamily !== undefined && nodeClass.spec.amiFamily !== null)
    return nodeClass.spec.amiFamily;
  const alias = nodeClass.spec.amiSelectorTerms?.find(
    (t) => typeof t.alias === 'string' && t.alias !== '',
  )?.alias;
  if (alias) {
    const prefix = alias.split('@')[0];
    const family = ALIAS_FAMILIES.find((f) => f.toLowerCase() === prefix);
    if (family) return family;
  }
  return 'Custom';
}

/**
 * The EC2NodeClass hash upstream v1.14 stamps (`karpenter.k8s.aws/ec2nodeclass-hash` with version
 * {@link EC2NodeClassHashVersion}), a decimal string. `caBundle`: the controller's cluster CA bundle (base64;
 * empty when it has none, as upstream's `lo.FromPtr`). Pure.
 * @throws Error naming the EC2NodeClass and field when a duration or quantity is malformed.
 */
export function ec2NodeClassHash(nodeClass: EC2NodeClass, caBundle: string): string {
  return hashAnySlice(
    [
      { type: goEC2NodeClassSpec, value: nodeClass.spec },
      { type: str, value: hashedAMIFamily(nodeClass) },
      { type: str, value: caBundle },
    ],
    `EC2NodeClass ${nodeClass.metadata.name} spec`,
  );
}
