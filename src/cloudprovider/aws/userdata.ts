/**
 * User data per AMI family, merged with the EC2NodeClass's `spec.userData`, as upstream Karpenter (v1.14) writes it
 * (aws/karpenter-provider-aws `pkg/providers/amifamily/bootstrap/{nodeadm,eksbootstrap,bottlerocket,windows}.go` and
 * the golden files under `pkg/providers/launchtemplate/testdata/`, copied to `./testdata/`):
 * - AL2023: MIME multipart (boundary `//`): the user's parts (a MIME document's parts, a NodeConfig YAML, or a shell
 *   script), then Karpenter's nodeadm `NodeConfig` last, so nodeadm's in-order merge lets Karpenter's values win. Its
 *   `spec.kubelet.config` carries the `spec.kubelet` fields as upstream marshals them, plus maxPods and registerWithTaints.
 * - AL2: MIME multipart; the user's parts first, then Karpenter's `/etc/eks/bootstrap.sh` script.
 * - Bottlerocket: TOML settings; the user's TOML is the base and Karpenter's cluster settings, labels, taints,
 *   max-pods and kubelet settings overwrite it (labels are merged, taints replaced); RAID0 instance stores are
 *   mounted by a `bootstrap-commands` entry.
 * - Windows2019/2022/2025: a `<powershell>` block, the user's script then `Start-EKSBootstrap.ps1`.
 * - Custom: the user's data, unchanged (Karpenter adds nothing).
 * Every family but Custom labels its node `karpenter.sh/do-not-sync-taints=true` (the node registers its taints).
 *
 * Pure: strings in, string out. The result carries join credentials (cluster CA) — never log it.
 */
import { parse as parseToml } from 'smol-toml';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import type { Taint } from '../../apis/core.ts';
import type { KubeletConfiguration } from '../../apis/karpenter.ts';
import { LabelNodeDoNotSyncTaints } from '../../apis/labels.ts';
import { marshalBottlerocketTOML } from './bottlerocket-toml.ts';
import type { AMIFamily } from './catalog/index.ts';

/** What the bootstrap needs to join the node (upstream `bootstrap.Options`). */
export interface BootstrapOptions {
  clusterName: string;
  /** API server URL. */
  clusterEndpoint: string;
  /** Base64 PEM of the cluster CA. */
  caBundle: string;
  /** Service CIDR (AL2023 `spec.cluster.cidr`); omitted when unknown. */
  clusterCIDR?: string;
  /** The class's kubelet settings (clusterDNS, maxPods, reservations, eviction thresholds, ...). */
  kubelet?: KubeletConfiguration;
  /** Max pods for this group of instance types (the ENI-limited count, or kubelet.maxPods). */
  maxPods?: number;
  /** Node labels (already filtered to what a kubelet may set). */
  labels: Record<string, string>;
  /** Taints registered with the node (NodeClaim taints + startup taints + `karpenter.sh/unregistered`). */
  taints: Taint[];
  /** `spec.instanceStorePolicy`. */
  instanceStorePolicy?: string;
  /** `spec.userData`. */
  customUserData?: string;
  /** The kube-dns Service IP: `clusterDNS` when `spec.kubelet.clusterDNS` is unset (upstream `KubeDNSIP`). */
  kubeDNSIP?: string;
  /**
   * The AMI version (`v1.46.0`, `latest`; `provider.ts` `resolveAMIVersion`: alias, name term, or resolved AMI
   * name): picks Bottlerocket's ephemeral-storage bind.
   */
  amiVersion?: string;
}

/** Label domains whose labels the NodeRestriction admission plugin rejects from a kubelet (upstream `isRestrictedLabel`). */
const RESTRICTED_DOMAINS = ['node-restriction.kubernetes.io', 'kubernetes.io', 'k8s.io'];

/**
 * The labels passed to the kubelet's `--node-labels`: every label outside the `kubernetes.io` / `k8s.io` /
 * `node-restriction.kubernetes.io` domains and their sub-domains (upstream `amifamily.RejectForbiddenLabels`; the
 * kubelet sets its own well-known labels, and Karpenter applies the rest when the Node registers).
 */
export function kubeletLabels(labels: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(labels)) {
    const slash = k.indexOf('/');
    const domain = slash >= 0 ? k.slice(0, slash) : '';
    if (!RESTRICTED_DOMAINS.some((d) => domain === d || domain.endsWith(`.${d}`))) out[k] = v;
  }
  return out;
}

function sortedEntries<V>(m: Readonly<Record<string, V>>): Array<[string, V]> {
  return Object.entries(m).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/** Go's `%q` for the printable ASCII strings that labels, taints and quantities are. */
function goQuote(s: string): string {
  return JSON.stringify(s);
}

const DURATION_UNITS: Record<string, number> = {
  h: 3.6e12,
  m: 6e10,
  s: 1e9,
  ms: 1e6,
  us: 1e3,
  µs: 1e3,
  ns: 1,
};

/**
 * A Kubernetes duration (`1m30s`, `90s`, `2h`, `500ms`) as Go's `time.Duration.String()` prints it (`1m30s`,
 * `1m30s`, `2h0m0s`, `500ms`) — what upstream writes after decoding it into a `metav1.Duration`.
 * @throws Error naming `field` when `text` is not a duration.
 */
export function goDuration(text: string, field: string): string {
  const re = /(\d+(?:\.\d*)?|\.\d+)(h|ms|us|µs|ns|m|s)/gy;
  let ns = 0;
  let matched = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    ns += Number(m[1]) * DURATION_UNITS[m[2]!]!;
    matched = re.lastIndex;
  }
  if (text === '' || matched !== text.length) {
    throw new Error(
      `EC2NodeClass ${field}: "${text}" is not a duration; use a value such as "1m30s" or "90s"`,
    );
  }
  ns = Math.round(ns);
  if (ns === 0) return '0s';
  if (ns < 1e9) {
    const [unit, div] = ns < 1e3 ? ['ns', 1] : ns < 1e6 ? ['µs', 1e3] : ['ms', 1e6];
    return `${ns / (div as number)}${unit}`;
  }
  const h = Math.floor(ns / 3.6e12);
  const min = Math.floor((ns % 3.6e12) / 6e10);
  const sec = (ns % 6e10) / 1e9;
  return `${h > 0 ? `${h}h` : ''}${h > 0 || min > 0 ? `${min}m` : ''}${sec}s`;
}

/** Upstream `joinParameterArgs`: `--name="k<sep>v,..."`, or nothing for an empty map (keys sorted). */
function joinParameterArgs(
  name: string,
  m: unknown,
  sep: string,
  value = (v: unknown) => String(v),
): string[] {
  if (!m || typeof m !== 'object' || Object.keys(m).length === 0) return [];
  const pairs = sortedEntries(m as Record<string, unknown>).map(([k, v]) => `${k}${sep}${value(v)}`);
  return [`${name}=${goQuote(pairs.join(','))}`];
}

function isInt(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v);
}

/**
 * The kubelet flags of the flag-based bootstraps (AL2 `--kubelet-extra-args`, Windows `-KubeletExtraArgs`), in
 * upstream's order (`bootstrap.Options.kubeletExtraArgs`): node labels, taints (always, even none), max pods, pods per
 * core, reservations, eviction thresholds and grace periods, image GC thresholds, CPU CFS quota.
 * @throws Error naming the field when an eviction grace period is not a duration.
 */
export function kubeletExtraArgs(o: BootstrapOptions): string[] {
  const k = o.kubelet ?? {};
  const args: string[] = [];
  if (Object.keys(o.labels).length > 0) args.push(`--node-labels=${goQuote(labelArg(o.labels))}`);
  args.push(`--register-with-taints=${goQuote(taintArg(o.taints))}`);
  if (o.maxPods !== undefined) args.push(`--max-pods=${o.maxPods}`);
  if (isInt(k.podsPerCore)) args.push(`--pods-per-core=${k.podsPerCore}`);
  args.push(...joinParameterArgs('--system-reserved', k.systemReserved, '='));
  args.push(...joinParameterArgs('--kube-reserved', k.kubeReserved, '='));
  args.push(...joinParameterArgs('--eviction-hard', k.evictionHard, '<'));
  args.push(...joinParameterArgs('--eviction-soft', k.evictionSoft, '<'));
  args.push(
    ...joinParameterArgs('--eviction-soft-grace-period', k.evictionSoftGracePeriod, '=', (v) =>
      goDuration(String(v), 'spec.kubelet.evictionSoftGracePeriod'),
    ),
  );
  if (isInt(k.evictionMaxPodGracePeriod)) {
    args.push(`--eviction-max-pod-grace-period=${k.evictionMaxPodGracePeriod}`);
  }
  if (isInt(k.imageGCHighThresholdPercent)) {
    args.push(`--image-gc-high-threshold=${k.imageGCHighThresholdPercent}`);
  }
  if (isInt(k.imageGCLowThresholdPercent))
    args.push(`--image-gc-low-threshold=${k.imageGCLowThresholdPercent}`);
  if (typeof k.cpuCFSQuota === 'boolean') args.push(`--cpu-cfs-quota=${k.cpuCFSQuota}`);
  return args;
}

function labelArg(labels: Readonly<Record<string, string>>): string {
  return sortedEntries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}

/** Go's `corev1.Taint.ToString()`: `key[=value]:effect`. */
function taintArg(taints: readonly Taint[]): string {
  return taints.map((t) => `${t.key}${t.value ? `=${t.value}` : ''}:${t.effect}`).join(',');
}

/** One part of a MIME multipart document. */
export interface MimePart {
  contentType: string;
  body: string;
}

const BOUNDARY = '//';

/** Whether user data is a MIME document (upstream: it starts with `MIME-Version:` or `Content-Type:`). */
function isMime(text: string): boolean {
  const t = text.trim();
  return t.startsWith('MIME-Version:') || t.startsWith('Content-Type:');
}

/**
 * Splits MIME multipart user data into its parts; returns undefined when `text` is not a MIME multipart document.
 * A part's body excludes the line break before the next boundary (as Go's `mime/multipart` reads it).
 * @throws Error when it declares multipart but has no boundary.
 */
export function parseMime(text: string): MimePart[] | undefined {
  const normalized = text.replace(/\r\n/g, '\n');
  const headerEnd = normalized.indexOf('\n\n');
  const head = headerEnd >= 0 ? normalized.slice(0, headerEnd) : normalized;
  if (!/^content-type:\s*multipart\//im.test(head)) return undefined;
  const m = /boundary="?([^";\n]+)"?/i.exec(head);
  if (!m) throw new Error('MIME multipart user data has no boundary parameter in its Content-Type header');
  const boundary = m[1]!;
  const parts: MimePart[] = [];
  const chunks = normalized.slice(headerEnd + 2).split(`--${boundary}`);
  for (const chunk of chunks.slice(1)) {
    if (chunk.startsWith('--')) break;
    // A document that ends with an opening boundary and no closing one leaves an empty chunk.
    if (chunk.trim() === '') continue;
    const c = chunk.replace(/^\n/, '');
    const sep = c.indexOf('\n\n');
    const headers = sep >= 0 ? c.slice(0, sep) : c;
    const body = sep >= 0 ? c.slice(sep + 2) : '';
    const ct =
      /^content-type:\s*(.+)$/im.exec(headers)?.[1]?.trim() ?? 'text/x-shellscript; charset="us-ascii"';
    parts.push({ contentType: ct, body: body.replace(/\n$/, '') });
  }
  return parts;
}

/** Renders parts as a MIME multipart document with boundary `//` (upstream `mime.Archive.Serialize`, CRs removed). */
export function renderMime(parts: readonly MimePart[]): string {
  let out = `MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="${BOUNDARY}"\n\n`;
  for (const p of parts) out += `--${BOUNDARY}\nContent-Type: ${p.contentType}\n\n${p.body}\n`;
  return `${out}--${BOUNDARY}--\n`;
}

const SHELL = 'text/x-shellscript; charset="us-ascii"';
const NODEADM = 'application/node.eks.aws';

/** Whether Go's `yaml.Unmarshal` would decode `text` into a map (a mapping, or a document with no value). */
function isYamlMap(text: string): boolean {
  try {
    const v: unknown = parseYaml(text);
    return v === null || v === undefined || (typeof v === 'object' && !Array.isArray(v));
  } catch {
    return false;
  }
}

/**
 * The user's data as MIME parts (upstream `Nodeadm.parseUserData` / `EKS.mimeify`): a MIME document's parts; for
 * AL2023 YAML → one nodeadm part; else one shell part. A non-MIME body is kept byte for byte.
 */
function userParts(userData: string | undefined, nodeConfigAware: boolean): MimePart[] {
  if (!userData) return [];
  if (isMime(userData)) {
    const mime = parseMime(userData);
    if (!mime) throw new Error('EC2NodeClass spec.userData starts with MIME headers but is not multipart/*');
    return mime;
  }
  if (nodeConfigAware && isYamlMap(userData)) return [{ contentType: NODEADM, body: userData }];
  return [{ contentType: SHELL, body: userData }];
}

/** `v` with every object's keys sorted, as sigs.k8s.io/yaml (JSON → YAML) writes a NodeConfig. */
function sortKeysDeep(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeysDeep);
  if (v && typeof v === 'object') {
    return Object.fromEntries(
      sortedEntries(v as Record<string, unknown>).map(([k, x]) => [k, sortKeysDeep(x)]),
    );
  }
  return v;
}

/** The JSON names of upstream's `v1.KubeletConfiguration` (all `omitempty`), the fields nodeadm's config gets. */
const KubeletConfigFields = [
  'clusterDNS',
  'maxPods',
  'podsPerCore',
  'systemReserved',
  'kubeReserved',
  'evictionHard',
  'evictionSoft',
  'evictionSoftGracePeriod',
  'evictionMaxPodGracePeriod',
  'imageGCHighThresholdPercent',
  'imageGCLowThresholdPercent',
  'cpuCFSQuota',
] as const;

/** Go's `omitempty`: nil, an empty slice or an empty map is left out. */
function omitEmpty(v: unknown): boolean {
  if (v === undefined || v === null) return true;
  if (Array.isArray(v)) return v.length === 0;
  return typeof v === 'object' && Object.keys(v).length === 0;
}

/**
 * NodeConfig `spec.kubelet.config`: upstream's `json.Marshal` of the class's `v1.KubeletConfiguration` — its twelve
 * fields, empty ones left out, eviction grace periods printed as Go durations (`90s` → `1m30s`) — with `maxPods` the
 * group's count unless the class set an integer, and `registerWithTaints` the node's taints. Upstream
 * `Nodeadm.generateInlineKubeletConfiguration`.
 * @throws Error naming `spec.kubelet.evictionSoftGracePeriod` when a grace period is not a duration.
 */
function nodeadmKubeletConfig(o: BootstrapOptions): Record<string, unknown> {
  const k = o.kubelet ?? {};
  const cfg: Record<string, unknown> = {};
  for (const f of KubeletConfigFields) if (!omitEmpty(k[f])) cfg[f] = k[f];
  if (cfg.evictionSoftGracePeriod) {
    cfg.evictionSoftGracePeriod = Object.fromEntries(
      Object.entries(cfg.evictionSoftGracePeriod as Record<string, unknown>).map(([sig, d]) => [
        sig,
        goDuration(String(d), 'spec.kubelet.evictionSoftGracePeriod'),
      ]),
    );
  }
  if (!isInt(cfg.maxPods) && o.maxPods !== undefined) cfg.maxPods = o.maxPods;
  cfg.registerWithTaints = o.taints.map((t) => ({
    effect: t.effect,
    key: t.key,
    ...(t.value ? { value: t.value } : {}),
  }));
  return cfg;
}

/** AL2023: the user's parts, then Karpenter's nodeadm NodeConfig (so its values win). Upstream `bootstrap/nodeadm.go`. */
export function al2023UserData(o: BootstrapOptions): string {
  const nodeConfig = sortKeysDeep({
    apiVersion: 'node.eks.aws/v1alpha1',
    kind: 'NodeConfig',
    metadata: {},
    spec: {
      cluster: {
        apiServerEndpoint: o.clusterEndpoint,
        ...(o.caBundle ? { certificateAuthority: o.caBundle } : {}),
        ...(o.clusterCIDR ? { cidr: o.clusterCIDR } : {}),
        name: o.clusterName,
      },
      containerd: {},
      instance: { localStorage: o.instanceStorePolicy === 'RAID0' ? { strategy: 'RAID0' } : {} },
      kubelet: {
        config: nodeadmKubeletConfig(o),
        ...(Object.keys(o.labels).length > 0
          ? { flags: [`--node-labels=${goQuote(labelArg(o.labels))}`] }
          : {}),
      },
    },
  });
  const yaml = `# Karpenter Generated NodeConfig\n${stringifyYaml(nodeConfig, { indentSeq: false })}`;
  return renderMime([...userParts(o.customUserData, true), { contentType: NODEADM, body: yaml }]);
}

/** AL2: the user's parts, then `/etc/eks/bootstrap.sh`. Upstream `bootstrap/eksbootstrap.go`. */
export function al2UserData(o: BootstrapOptions): string {
  const dns = clusterDNS(o);
  let cmd = `/etc/eks/bootstrap.sh '${o.clusterName}' --apiserver-endpoint '${o.clusterEndpoint}' ${o.caBundle ? `--b64-cluster-ca '${o.caBundle}'` : ''}`;
  if (dns[0]?.includes(':')) cmd += ' \\\n--ip-family ipv6';
  if (dns.length > 0) cmd += ` \\\n--dns-cluster-ip '${dns[0]}'`;
  if (o.maxPods !== undefined) cmd += ' \\\n--use-max-pods false';
  const args = kubeletExtraArgs(o);
  if (args.length > 0) cmd += ` \\\n--kubelet-extra-args '${args.join(' ')}'`;
  if (o.instanceStorePolicy === 'RAID0') cmd += ' \\\n--local-disks raid0';
  const script = [
    '#!/bin/bash -xe',
    'exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1',
    cmd,
  ].join('\n');
  return renderMime([...userParts(o.customUserData, false), { contentType: SHELL, body: script }]);
}

/**
 * Windows (2019, 2022, 2025): a `<powershell>` block — the user's script first, then the EKS bootstrap script
 * `Start-EKSBootstrap.ps1` with the cluster, CA, kubelet flags (labels, taints, max pods, ...) and cluster DNS.
 * Upstream `bootstrap/windows.go`, byte for byte (before its base64 encoding).
 */
export function windowsUserData(o: BootstrapOptions): string {
  let out = '<powershell>\n';
  if (o.customUserData) out += `${o.customUserData}\n`;
  out += '[string]$EKSBootstrapScriptFile = "$env:ProgramFiles\\Amazon\\EKS\\Start-EKSBootstrap.ps1"\n';
  out += `& $EKSBootstrapScriptFile -EKSClusterName '${o.clusterName}' -APIServerEndpoint '${o.clusterEndpoint}'`;
  if (o.caBundle) out += ` -Base64ClusterCA '${o.caBundle}'`;
  const args = kubeletExtraArgs(o);
  if (args.length > 0) out += ` -KubeletExtraArgs '${args.join(' ')}'`;
  const dns = clusterDNS(o);
  if (dns.length > 0) out += ` -DNSClusterIP '${dns[0]}'`;
  return `${out}\n</powershell>`;
}

function clusterDNS(o: BootstrapOptions): string[] {
  const dns = o.kubelet?.clusterDNS;
  return Array.isArray(dns) ? dns.map(String) : [];
}

type TomlTable = Record<string, unknown>;

function table(parent: TomlTable, key: string): TomlTable {
  const v = parent[key];
  if (v && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Date)) return v as TomlTable;
  const t: TomlTable = {};
  parent[key] = t;
  return t;
}

/**
 * Bottlerocket `settings.kubernetes` kubelet keys Karpenter sets from `spec.kubelet` (upstream `bootstrap/bottlerocket.go`):
 * each replaces the user's value.
 */
function bottlerocketKubelet(kube: TomlTable, o: BootstrapOptions): void {
  const k = o.kubelet ?? {};
  const dns = clusterDNS(o);
  if (dns.length > 0) kube['cluster-dns-ip'] = dns[0];
  if (o.maxPods !== undefined) kube['max-pods'] = o.maxPods;
  for (const [from, to] of [
    ['systemReserved', 'system-reserved'],
    ['kubeReserved', 'kube-reserved'],
    ['evictionHard', 'eviction-hard'],
    ['evictionSoft', 'eviction-soft'],
  ] as const) {
    if (k[from] && typeof k[from] === 'object') kube[to] = { ...k[from] };
  }
  if (k.evictionSoftGracePeriod && typeof k.evictionSoftGracePeriod === 'object') {
    kube['eviction-soft-grace-period'] = Object.fromEntries(
      Object.entries(k.evictionSoftGracePeriod as Record<string, unknown>).map(([sig, d]) => [
        sig,
        goDuration(String(d), 'spec.kubelet.evictionSoftGracePeriod'),
      ]),
    );
  }
  if (isInt(k.evictionMaxPodGracePeriod)) kube['eviction-max-pod-grace-period'] = k.evictionMaxPodGracePeriod;
  if (isInt(k.imageGCHighThresholdPercent)) {
    kube['image-gc-high-threshold-percent'] = String(k.imageGCHighThresholdPercent);
  }
  if (isInt(k.imageGCLowThresholdPercent)) {
    kube['image-gc-low-threshold-percent'] = String(k.imageGCLowThresholdPercent);
  }
  if (typeof k.cpuCFSQuota === 'boolean') kube['cpu-cfs-quota-enforced'] = k.cpuCFSQuota;
}

/**
 * Whether a Bottlerocket version binds ephemeral storage to its default paths (`apiclient ephemeral-storage bind`
 * with no `--dirs`): `latest` or v1.46.0 and later (upstream `version.SupportsDefaultBind`).
 */
export function bottlerocketSupportsDefaultBind(amiVersion: string | undefined): boolean {
  if (!amiVersion) return false;
  if (amiVersion === 'latest') return true;
  const parts = amiVersion.replace(/^v+/, '').split('.');
  if (parts.length < 3) return false;
  const [major, minor] = [Number.parseInt(parts[0]!, 10), Number.parseInt(parts[1]!, 10)];
  if (Number.isNaN(major) || Number.isNaN(minor)) return false;
  return major > 1 || (major === 1 && minor >= 46);
}

/**
 * Bottlerocket: the user's `settings` as the base, Karpenter's settings on top, written as upstream's go-toml does
 * ({@link marshalBottlerocketTOML}; keys outside `settings` are dropped, as upstream). Upstream `bootstrap/bottlerocket.go`.
 * With `instanceStorePolicy: RAID0`, a `settings.bootstrap-commands."000-mount-instance-storage"` entry that
 * initialises and binds the instance stores as ephemeral storage.
 * @throws Error naming `spec.userData` when the user's data is not valid TOML.
 */
export function bottlerocketUserData(o: BootstrapOptions): string {
  let base: TomlTable = {};
  if (o.customUserData && o.customUserData.trim() !== '') {
    try {
      base = parseToml(o.customUserData) as TomlTable;
    } catch (err) {
      throw new Error(
        `EC2NodeClass spec.userData is not valid TOML for Bottlerocket: ${(err as Error).message}`,
      );
    }
  }
  const settings = table(base, 'settings');
  const kube = table(settings, 'kubernetes');
  kube['api-server'] = o.clusterEndpoint;
  if (o.caBundle) kube['cluster-certificate'] = o.caBundle;
  kube['cluster-name'] = o.clusterName;
  const labels = table(kube, 'node-labels');
  for (const [key, v] of sortedEntries(o.labels)) labels[key] = v;
  bottlerocketKubelet(kube, o);
  const taints: Record<string, string[]> = {};
  for (const t of o.taints) {
    const list = taints[t.key] ?? [];
    list.push(`${t.value ?? ''}:${t.effect}`);
    taints[t.key] = list;
  }
  kube['node-taints'] = taints;
  if (o.instanceStorePolicy === 'RAID0') {
    const bind = bottlerocketSupportsDefaultBind(o.amiVersion)
      ? ['apiclient', 'ephemeral-storage', 'bind']
      : [
          'apiclient',
          'ephemeral-storage',
          'bind',
          '--dirs',
          '/var/lib/containerd',
          '/var/lib/kubelet',
          '/var/log/pods',
        ];
    table(settings, 'bootstrap-commands')['000-mount-instance-storage'] = {
      commands: [['apiclient', 'ephemeral-storage', 'init'], bind],
      mode: 'always',
      essential: true,
    };
  }
  return marshalBottlerocketTOML(settings);
}

/**
 * Upstream's launch-time adjustments before any family renders: the `karpenter.sh/do-not-sync-taints=true` label on
 * every family but Custom (`launchtemplate.InjectDoNotSyncTaintsLabel`: the node registers its own taints, so
 * Karpenter must not sync them again), and `clusterDNS` defaulted to the kube-dns Service IP
 * (`DefaultResolver.defaultClusterDNS`).
 */
function launchOptions(family: AMIFamily, o: BootstrapOptions): BootstrapOptions {
  const labels = family === 'Custom' ? o.labels : { ...o.labels, [LabelNodeDoNotSyncTaints]: 'true' };
  const hasDNS = Array.isArray(o.kubelet?.clusterDNS) && o.kubelet.clusterDNS.length > 0;
  const kubelet = !hasDNS && o.kubeDNSIP ? { ...(o.kubelet ?? {}), clusterDNS: [o.kubeDNSIP] } : o.kubelet;
  return { ...o, labels, ...(kubelet ? { kubelet } : {}) };
}

/**
 * The user data for `family`, merged with `customUserData` (see the module doc).
 * @throws Error naming `spec.userData` when the user's data cannot be merged (invalid TOML, MIME without boundary),
 * or the kubelet field when one cannot be written (an eviction grace period that is not a duration).
 */
export function renderUserData(family: AMIFamily, options: BootstrapOptions): string {
  const o = launchOptions(family, options);
  switch (family) {
    case 'AL2023':
      return al2023UserData(o);
    case 'AL2':
      return al2UserData(o);
    case 'Bottlerocket':
      return bottlerocketUserData(o);
    case 'Windows2019':
    case 'Windows2022':
    case 'Windows2025':
      return windowsUserData(o);
    default:
      return o.customUserData ?? '';
  }
}
