/**
 * User data per AMI family, merged with the EC2NodeClass's `spec.userData`, as upstream Karpenter writes it
 * (aws/karpenter-provider-aws `pkg/providers/amifamily/bootstrap/{nodeadm,eksbootstrap,bottlerocket}.go` and the
 * golden files under `pkg/providers/launchtemplate/testdata/`):
 * - AL2023: a nodeadm `NodeConfig` (YAML) as the first part of a MIME multipart document (boundary `//`), followed
 *   by the user's parts (a NodeConfig YAML, a shell script, or the parts of a MIME document). nodeadm merges the
 *   NodeConfigs in order, so the user's values win.
 * - AL2: MIME multipart; the user's parts first, then Karpenter's `/etc/eks/bootstrap.sh` script.
 * - Bottlerocket: TOML settings; the user's TOML is the base and Karpenter's cluster settings, labels, taints,
 *   max-pods and kubelet reservations overwrite it (labels are merged, taints replaced).
 * - Custom: the user's data, unchanged (Karpenter adds nothing).
 * Windows families are not generated here (capenter launches Linux nodes).
 *
 * Pure: strings in, string out. The result carries join credentials (cluster CA) — never log it.
 */
import { parse as parseToml, stringify as stringifyToml } from 'smol-toml';
import { stringify as stringifyYaml } from 'yaml';
import type { Taint } from '../../apis/core.ts';
import type { KubeletConfiguration } from '../../apis/karpenter.ts';
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
}

/** Label domains the kubelet may not set on itself, except the allowed keys below (kubelet `--node-labels` rules). */
const RESTRICTED_DOMAINS = ['kubernetes.io', 'k8s.io'];
const KUBELET_ALLOWED = new Set([
  'kubernetes.io/hostname',
  'kubernetes.io/arch',
  'kubernetes.io/os',
  'beta.kubernetes.io/instance-type',
  'beta.kubernetes.io/arch',
  'beta.kubernetes.io/os',
  'failure-domain.beta.kubernetes.io/region',
  'failure-domain.beta.kubernetes.io/zone',
  'topology.kubernetes.io/region',
  'topology.kubernetes.io/zone',
  'node.kubernetes.io/instance-type',
]);

/**
 * The labels a kubelet may register itself with: keys outside the `kubernetes.io` / `k8s.io` domains, the kubelet's
 * allowed well-known keys, and the `kubelet.kubernetes.io` / `node.kubernetes.io` sub-domains (Kubernetes
 * NodeRestriction rules, as upstream filters `--node-labels`).
 */
export function kubeletLabels(labels: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(labels)) {
    const slash = k.indexOf('/');
    const domain = slash >= 0 ? k.slice(0, slash) : '';
    const restricted = RESTRICTED_DOMAINS.some((d) => domain === d || domain.endsWith(`.${d}`));
    const allowedSub =
      domain === 'kubelet.kubernetes.io' ||
      domain.endsWith('.kubelet.kubernetes.io') ||
      domain === 'node.kubernetes.io' ||
      domain.endsWith('.node.kubernetes.io');
    if (!restricted || KUBELET_ALLOWED.has(k) || allowedSub) out[k] = v;
  }
  return out;
}

function sortedEntries(m: Readonly<Record<string, string>>): Array<[string, string]> {
  return Object.entries(m).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

function labelArg(labels: Readonly<Record<string, string>>): string {
  return sortedEntries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}

function taintArg(taints: readonly Taint[]): string {
  return taints.map((t) => `${t.key}${t.value ? `=${t.value}` : ''}:${t.effect}`).join(',');
}

/** One part of a MIME multipart document. */
export interface MimePart {
  contentType: string;
  body: string;
}

const BOUNDARY = '//';

/**
 * Splits MIME multipart user data into its parts; returns undefined when `text` is not a MIME multipart document.
 * @throws Error when it declares multipart but has no boundary.
 */
export function parseMime(text: string): MimePart[] | undefined {
  const normalized = text.replace(/\r\n/g, '\n');
  const headerEnd = normalized.indexOf('\n\n');
  const head = headerEnd >= 0 ? normalized.slice(0, headerEnd) : normalized;
  if (!/^mime-version:/im.test(head) || !/content-type:\s*multipart\//i.test(head)) return undefined;
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

/** Renders parts as a MIME multipart document with boundary `//` (upstream's layout). */
export function renderMime(parts: readonly MimePart[]): string {
  let out = `MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="${BOUNDARY}"\n\n`;
  for (const p of parts) out += `--${BOUNDARY}\nContent-Type: ${p.contentType}\n\n${p.body}\n`;
  return `${out}--${BOUNDARY}--\n`;
}

const SHELL = 'text/x-shellscript; charset="us-ascii"';
const NODEADM = 'application/node.eks.aws';

/** The user's data as MIME parts: a MIME document's parts; a NodeConfig → one nodeadm part; else one shell part. */
function userParts(userData: string | undefined, nodeConfigAware: boolean): MimePart[] {
  if (!userData || userData.trim() === '') return [];
  const mime = parseMime(userData);
  if (mime) return mime;
  if (
    nodeConfigAware &&
    /^\s*apiVersion:\s*node\.eks\.aws\//m.test(userData) &&
    /kind:\s*NodeConfig/.test(userData)
  ) {
    return [{ contentType: NODEADM, body: userData.replace(/\n$/, '') }];
  }
  return [{ contentType: SHELL, body: userData.replace(/\n$/, '') }];
}

/** Kubelet config keys written into NodeConfig `spec.kubelet.config` / Bottlerocket settings. */
function kubeletConfig(o: BootstrapOptions): Record<string, unknown> {
  const k = o.kubelet ?? {};
  const cfg: Record<string, unknown> = {};
  if (Array.isArray(k.clusterDNS) && k.clusterDNS.length > 0) cfg.clusterDNS = k.clusterDNS;
  if (o.maxPods !== undefined) cfg.maxPods = o.maxPods;
  if (k.podsPerCore !== undefined) cfg.podsPerCore = k.podsPerCore;
  for (const key of [
    'kubeReserved',
    'systemReserved',
    'evictionHard',
    'evictionSoft',
    'evictionSoftGracePeriod',
    'evictionMaxPodGracePeriod',
    'imageGCHighThresholdPercent',
    'imageGCLowThresholdPercent',
    'cpuCFSQuota',
  ] as const) {
    if (k[key] !== undefined) cfg[key] = k[key];
  }
  if (o.taints.length > 0) {
    cfg.registerWithTaints = o.taints.map((t) => ({
      effect: t.effect,
      key: t.key,
      ...(t.value ? { value: t.value } : {}),
    }));
  }
  return cfg;
}

/** AL2023: nodeadm NodeConfig first, then the user's parts. Upstream `bootstrap/nodeadm.go`. */
export function al2023UserData(o: BootstrapOptions): string {
  const nodeConfig = {
    apiVersion: 'node.eks.aws/v1alpha1',
    kind: 'NodeConfig',
    metadata: { creationTimestamp: null },
    spec: {
      cluster: {
        apiServerEndpoint: o.clusterEndpoint,
        certificateAuthority: o.caBundle,
        ...(o.clusterCIDR ? { cidr: o.clusterCIDR } : {}),
        name: o.clusterName,
      },
      containerd: {},
      ...(o.instanceStorePolicy === 'RAID0'
        ? { instance: { localStorage: { strategy: 'RAID0' } } }
        : { instance: { localStorage: {} } }),
      kubelet: {
        config: kubeletConfig(o),
        ...(Object.keys(o.labels).length > 0 ? { flags: [`--node-labels="${labelArg(o.labels)}"`] } : {}),
      },
    },
  };
  const yaml = `# Karpenter Generated NodeConfig\n${stringifyYaml(nodeConfig, { indentSeq: false })}`;
  return renderMime([{ contentType: NODEADM, body: yaml }, ...userParts(o.customUserData, true)]);
}

function shellQuote(s: string): string {
  return `'${s.replaceAll("'", `'"'"'`)}'`;
}

/** AL2: the user's parts, then `/etc/eks/bootstrap.sh`. Upstream `bootstrap/eksbootstrap.go`. */
export function al2UserData(o: BootstrapOptions): string {
  const k = o.kubelet ?? {};
  const lines = [
    '#!/bin/bash -xe',
    'exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1',
  ];
  let cmd = `/etc/eks/bootstrap.sh ${shellQuote(o.clusterName)} --apiserver-endpoint ${shellQuote(o.clusterEndpoint)} --b64-cluster-ca ${shellQuote(o.caBundle)}`;
  const dns = Array.isArray(k.clusterDNS) ? (k.clusterDNS as string[]) : [];
  if (dns.length > 0) cmd += ` \\\n--dns-cluster-ip ${shellQuote(dns[0]!)}`;
  cmd += ' \\\n--use-max-pods false';
  const extra: string[] = [];
  if (Object.keys(o.labels).length > 0) extra.push(`--node-labels="${labelArg(o.labels)}"`);
  if (o.taints.length > 0) extra.push(`--register-with-taints="${taintArg(o.taints)}"`);
  if (o.maxPods !== undefined) extra.push(`--max-pods=${o.maxPods}`);
  if (k.podsPerCore !== undefined) extra.push(`--pods-per-core=${k.podsPerCore}`);
  const mapArg = (flag: string, m: unknown): void => {
    if (m && typeof m === 'object' && Object.keys(m).length > 0) {
      extra.push(
        `--${flag}="${sortedEntries(m as Record<string, string>)
          .map(([a, b]) => `${a}=${b}`)
          .join(',')}"`,
      );
    }
  };
  mapArg('system-reserved', k.systemReserved);
  mapArg('kube-reserved', k.kubeReserved);
  if (k.evictionHard && Object.keys(k.evictionHard).length > 0) {
    extra.push(
      `--eviction-hard="${sortedEntries(k.evictionHard)
        .map(([a, b]) => `${a}<${b}`)
        .join(',')}"`,
    );
  }
  if (k.evictionSoft && Object.keys(k.evictionSoft).length > 0) {
    extra.push(
      `--eviction-soft="${sortedEntries(k.evictionSoft)
        .map(([a, b]) => `${a}<${b}`)
        .join(',')}"`,
    );
  }
  if (extra.length > 0) cmd += ` \\\n--kubelet-extra-args ${shellQuote(extra.join(' '))}`;
  if (o.instanceStorePolicy === 'RAID0') cmd += ' \\\n--local-disks raid0';
  lines.push(cmd);
  return renderMime([...userParts(o.customUserData, false), { contentType: SHELL, body: lines.join('\n') }]);
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
 * Bottlerocket: the user's TOML as the base, Karpenter's settings on top. Upstream `bootstrap/bottlerocket.go`.
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
  kube['cluster-certificate'] = o.caBundle;
  kube['cluster-name'] = o.clusterName;
  const k = o.kubelet ?? {};
  const dns = Array.isArray(k.clusterDNS) ? (k.clusterDNS as string[]) : [];
  if (dns.length === 1) kube['cluster-dns-ip'] = dns[0];
  else if (dns.length > 1) kube['cluster-dns-ip'] = dns;
  if (o.maxPods !== undefined) kube['max-pods'] = o.maxPods;
  if (k.podsPerCore !== undefined) kube['pods-per-core'] = k.podsPerCore;
  const labels = table(kube, 'node-labels');
  // Bottlerocket registers taints itself; upstream marks its nodes so Karpenter does not sync them again.
  for (const [key, v] of sortedEntries({ ...o.labels, 'karpenter.sh/do-not-sync-taints': 'true' }))
    labels[key] = v;
  const taints: Record<string, string[]> = {};
  for (const t of o.taints) {
    const list = taints[t.key] ?? [];
    list.push(`${t.value ?? ''}:${t.effect}`);
    taints[t.key] = list;
  }
  kube['node-taints'] = taints;
  if (k.kubeReserved)
    kube['kube-reserved'] = { ...(table(kube, 'kube-reserved') as object), ...k.kubeReserved };
  if (k.systemReserved) {
    kube['system-reserved'] = { ...(table(kube, 'system-reserved') as object), ...k.systemReserved };
  }
  if (k.evictionHard)
    kube['eviction-hard'] = { ...(table(kube, 'eviction-hard') as object), ...k.evictionHard };
  if (k.evictionSoft)
    kube['eviction-soft'] = { ...(table(kube, 'eviction-soft') as object), ...k.evictionSoft };
  return `${stringifyToml(base)}\n`;
}

/**
 * The user data for `family`, merged with `customUserData` (see the module doc).
 * @throws Error naming `spec.userData` when the user's data cannot be merged (invalid TOML, MIME without boundary).
 */
export function renderUserData(family: AMIFamily, o: BootstrapOptions): string {
  switch (family) {
    case 'AL2023':
      return al2023UserData(o);
    case 'AL2':
      return al2UserData(o);
    case 'Bottlerocket':
      return bottlerocketUserData(o);
    default:
      return o.customUserData ?? '';
  }
}
