/**
 * Two clusters as Cluster API runs them, in one process: a management cluster (an embedded API server with the
 * real Cluster API v1.14 and CAPA v2.11 CRDs from `crds/capi/` plus capenter's KarpenterMachinePool CRD, and the
 * CAPI MachinePool stand-in) and a workload cluster (the simulated cluster of `sim/cluster.ts`: API server,
 * kube-scheduler, kubelet and workload controllers). The workload cluster is reachable from the management cluster
 * only through the `<cluster>-kubeconfig` Secret, as with CAPI.
 * Used by `capenter start --capi` and the CAPI end-to-end tests; {@link sampleCAPIObjects} gives a ready
 * Cluster/AWSCluster/KubeadmConfig/bootstrap Secret/MachinePool/KarpenterMachinePool set.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { KMPApiVersion, LabelClusterName } from '../../apis/capi.ts';
import type { KubeObject } from '../../apis/core.ts';
import { KubeClient } from '../../kube/client.ts';
import { type Clock, RealClock } from '../../kube/clock.ts';
import { isAlreadyExists } from '../../kube/errors.ts';
import { SharedInformers } from '../../kube/informer.ts';
import { type EmbeddedCluster, startEmbeddedCluster } from '../apiserver/index.ts';
import {
  capenterCRDs,
  type SimulatedCluster,
  type SimulatedClusterOptions,
  startSimulatedCluster,
} from '../cluster.ts';
import type { SchedulingRules } from '../kubescheduler/rules.ts';
import { type CAPIMachinePoolOptions, CAPIMachinePoolStandIn } from './machinepool.ts';

/**
 * Directory of the vendored Cluster API / CAPA CRDs (`crds/capi/` of the package): the nearest `crds/capi` above
 * this module, so it is found from the sources (`src/sim/capi/`) and from the bundle (`dist/capenter.mjs`) alike.
 */
export function capiCRDDir(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  for (let dir = here; ; dir = dirname(dir)) {
    const candidate = join(dir, 'crds', 'capi');
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) return resolve(here, '..', '..', '..', 'crds', 'capi');
  }
}

/** The vendored Cluster API / CAPA CRD objects. @throws when the directory is missing (broken install). */
export function capiCRDs(): KubeObject[] {
  const dir = capiCRDDir();
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((f) => parse(readFileSync(join(dir, f), 'utf8')) as KubeObject);
}

/** Options of {@link startCAPIEnvironment}. */
export interface CAPIEnvironmentOptions {
  /** The workload cluster's scheduling rules (see `SimulatedClusterOptions.rules`). */
  rules: SchedulingRules;
  clock?: Clock;
  /** Options of the workload cluster (sim/cluster.ts). */
  workload?: Omit<SimulatedClusterOptions, 'rules'>;
  /** Write the management cluster's kubeconfig here. */
  managementKubeconfigPath?: string;
  /** The CAPI MachinePool stand-in (default on); `false` to run without it. */
  machinePoolStandIn?:
    | Partial<Omit<CAPIMachinePoolOptions, 'client' | 'informers' | 'clock' | 'workload'>>
    | false;
  onError?: (err: unknown, where: string) => void;
}

/** A running two-cluster environment. */
export interface CAPIEnvironment {
  management: EmbeddedCluster;
  /** Client of the management cluster. */
  mgmt: KubeClient;
  /** Informers of the management cluster (shared with the stand-in; pass them to the KMP controller). */
  mgmtInformers: SharedInformers;
  workload: SimulatedCluster;
  standIn?: CAPIMachinePoolStandIn;
  clock: Clock;
  /** Writes CAPI's `<cluster>-kubeconfig` Secret for the workload cluster into `namespace` (created when missing). */
  writeKubeconfigSecret(namespace: string, clusterName: string): Promise<void>;
  stop(): Promise<void>;
}

/** Starts both clusters and the stand-in; resolves once the management informers have synced. */
export async function startCAPIEnvironment(opts: CAPIEnvironmentOptions): Promise<CAPIEnvironment> {
  const clock = opts.clock ?? new RealClock();
  const workload = await startSimulatedCluster({ clock, ...(opts.workload ?? {}), rules: opts.rules });
  let management: EmbeddedCluster | undefined;
  try {
    management = await startEmbeddedCluster({});
    for (const crd of capenterCRDs()) management.installCRD(crd);
    for (const crd of capiCRDs()) management.installCRD(crd);
    if (opts.managementKubeconfigPath) await management.writeKubeconfig(opts.managementKubeconfigPath);
  } catch (err) {
    await management?.stop();
    await workload.stop();
    throw err;
  }
  const mgmt = KubeClient.fromKubeconfig(management.kubeconfig, { clock, userAgent: 'capenter-capi-sim' });
  const mgmtInformers = new SharedInformers(mgmt, {
    clock,
    ...(opts.onError ? { onError: (e, phase) => opts.onError?.(e, `management informer ${phase}`) } : {}),
  });
  const workloadClient = workload.client;
  const env: CAPIEnvironment = {
    management,
    mgmt,
    mgmtInformers,
    workload,
    clock,
    async writeKubeconfigSecret(namespace, clusterName) {
      const secret = {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: {
          name: `${clusterName}-kubeconfig`,
          namespace,
          labels: { [LabelClusterName]: clusterName },
        },
        type: 'cluster.x-k8s.io/secret',
        data: { value: Buffer.from(workload.kubeconfig).toString('base64') },
      };
      // The Cluster's namespace may come with the user's manifests, applied after this Secret: make it first.
      if (!(await mgmt.tryGet('Namespace', namespace)))
        await mgmt
          .create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } })
          .catch((err) => {
            if (!isAlreadyExists(err)) throw err;
          });
      const have = await mgmt.tryGet('Secret', secret.metadata.name, namespace);
      if (!have) await mgmt.create(secret);
    },
    async stop() {
      await env.standIn?.stop();
      await mgmtInformers.stop();
      mgmt.close();
      await management?.stop();
      await workload.stop();
    },
  };
  if (opts.machinePoolStandIn !== false) {
    env.standIn = new CAPIMachinePoolStandIn({
      ...(opts.machinePoolStandIn ?? {}),
      client: mgmt,
      informers: mgmtInformers,
      clock,
      // One workload cluster: every Cluster of the management cluster points to it.
      workload: async () => workloadClient,
      ...(opts.onError ? { onError: opts.onError } : {}),
    });
  }
  mgmtInformers.start();
  await mgmtInformers.waitForSync(30_000);
  env.standIn?.start();
  return env;
}

/** Parameters of {@link sampleCAPIObjects}. */
export interface SampleCAPIOptions {
  namespace?: string;
  clusterName?: string;
  /** KarpenterMachinePool (and MachinePool) name. */
  poolName?: string;
  /** MachinePool Kubernetes version (default v1.33.1). */
  version?: string;
  /** Control-plane version (Cluster.spec.topology.version; default = version). */
  controlPlaneVersion?: string;
  region?: string;
  /** Bootstrap data (default: a cloud-config with a fake join token). */
  bootstrapData?: string;
  /** Register nodes with karpenter.sh/unregistered:NoExecute in the KubeadmConfig (default true). */
  registrationTaint?: boolean;
  /** `spec.nodePool` of the KarpenterMachinePool (default: on-demand amd64 c/m/r, budget 100%). */
  nodePool?: Record<string, unknown>;
  /** `spec.ec2NodeClass` of the KarpenterMachinePool (default none: all derived from CAPA). */
  ec2NodeClass?: Record<string, unknown>;
}

/** A fake kubeadm join cloud-config (the token is not a secret of any real cluster). */
export function fakeBootstrapData(token = 'abcdef.0123456789abcdef'): string {
  return `## template: jinja\n#cloud-config\nruncmd:\n  - kubeadm join --config /run/kubeadm/kubeadm-join-config.yaml\nwrite_files:\n  - path: /run/kubeadm/kubeadm-join-config.yaml\n    content: |\n      apiVersion: kubeadm.k8s.io/v1beta4\n      kind: JoinConfiguration\n      discovery:\n        bootstrapToken:\n          token: ${token}\n          apiServerEndpoint: 10.0.0.10:6443\n          unsafeSkipCAVerification: true\n`;
}

/**
 * Cluster (v1beta2) + AWSCluster (v1beta2) + KubeadmConfig (v1beta2) + bootstrap Secret + MachinePool (v1beta2) +
 * KarpenterMachinePool, as CAPI/CAPA would hold them for a kubeadm cluster on AWS. Pure.
 */
export function sampleCAPIObjects(o: SampleCAPIOptions = {}): KubeObject[] {
  const ns = o.namespace ?? 'default';
  const cluster = o.clusterName ?? 'demo';
  const pool = o.poolName ?? 'workers';
  const version = o.version ?? 'v1.33.1';
  const region = o.region ?? 'us-east-1';
  const labels = { [LabelClusterName]: cluster };
  const taints = [
    ...(o.registrationTaint === false ? [] : [{ key: 'karpenter.sh/unregistered', effect: 'NoExecute' }]),
    { key: 'node.cluster.x-k8s.io/uninitialized', effect: 'NoSchedule' },
  ];
  return [
    {
      apiVersion: 'infrastructure.cluster.x-k8s.io/v1beta2',
      kind: 'AWSCluster',
      metadata: { name: cluster, namespace: ns, labels },
      spec: {
        region,
        s3Bucket: { name: `${cluster}-capa-bootstrap`, nodesIAMInstanceProfiles: [`nodes-${cluster}`] },
        additionalTags: { team: 'platform', 'cost-center': '1234' },
        network: {
          vpc: { id: 'vpc-0abc' },
          subnets: [
            {
              id: 'subnet-private-a',
              resourceID: 'subnet-0a1',
              availabilityZone: `${region}a`,
              isPublic: false,
            },
            {
              id: 'subnet-private-b',
              resourceID: 'subnet-0b1',
              availabilityZone: `${region}b`,
              isPublic: false,
            },
            {
              id: 'subnet-public-a',
              resourceID: 'subnet-0a9',
              availabilityZone: `${region}a`,
              isPublic: true,
            },
          ],
          securityGroupOverrides: { node: 'sg-0node' },
        },
      },
    },
    {
      apiVersion: 'cluster.x-k8s.io/v1beta2',
      kind: 'Cluster',
      metadata: { name: cluster, namespace: ns, labels },
      spec: {
        infrastructureRef: { apiGroup: 'infrastructure.cluster.x-k8s.io', kind: 'AWSCluster', name: cluster },
        topology: { classRef: { name: 'aws-kubeadm' }, version: o.controlPlaneVersion ?? version },
      },
    },
    {
      apiVersion: 'bootstrap.cluster.x-k8s.io/v1beta2',
      kind: 'KubeadmConfig',
      metadata: { name: pool, namespace: ns, labels },
      spec: { format: 'cloud-config', joinConfiguration: { nodeRegistration: { taints } } },
    },
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: `${pool}-bootstrap`, namespace: ns, labels },
      type: 'cluster.x-k8s.io/secret',
      data: {
        value: Buffer.from(o.bootstrapData ?? fakeBootstrapData()).toString('base64'),
        format: Buffer.from('cloud-config').toString('base64'),
      },
    },
    {
      apiVersion: 'cluster.x-k8s.io/v1beta2',
      kind: 'MachinePool',
      metadata: { name: pool, namespace: ns, labels },
      spec: {
        clusterName: cluster,
        replicas: 0,
        template: {
          spec: {
            clusterName: cluster,
            version,
            bootstrap: {
              configRef: { apiGroup: 'bootstrap.cluster.x-k8s.io', kind: 'KubeadmConfig', name: pool },
              dataSecretName: `${pool}-bootstrap`,
            },
            infrastructureRef: {
              apiGroup: 'infrastructure.cluster.x-k8s.io',
              kind: 'KarpenterMachinePool',
              name: pool,
            },
          },
        },
      },
    },
    {
      apiVersion: KMPApiVersion,
      kind: 'KarpenterMachinePool',
      metadata: { name: pool, namespace: ns, labels },
      spec: {
        nodePool: o.nodePool ?? {
          disruption: { consolidateAfter: '30s', budgets: [{ nodes: '100%' }] },
          template: {
            spec: {
              expireAfter: '720h',
              requirements: [
                { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] },
                { key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] },
                { key: 'karpenter.k8s.aws/instance-category', operator: 'In', values: ['c', 'm', 'r'] },
              ],
            },
          },
        },
        ...(o.ec2NodeClass ? { ec2NodeClass: o.ec2NodeClass } : {}),
      },
    },
  ] as KubeObject[];
}
