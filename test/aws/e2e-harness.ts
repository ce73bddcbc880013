/**
 * End-to-end harness for the aws provider: the embedded cluster (API server + kube-scheduler, kubelet, workload
 * stand-ins), moto behind the fault-injecting proxy, the emulator prepared as `capenter start --cloud-provider aws`
 * prepares it (discovery-tagged default network, node role), the joining-kubelet stand-in, and the real operator
 * with `--cloud-provider aws` (provider + EC2NodeClass and interruption controllers), everything through the real
 * clients. One emulator per test file ({@link startAwsE2EEmulator}), a fresh cluster per test.
 */
import { DescribeInstancesCommand, type Instance } from '@aws-sdk/client-ec2';
import type { NodeClaim } from '../../src/apis/karpenter.ts';
import { type AwsClients, createAwsClients } from '../../src/cloudprovider/aws/clients.ts';
import type { AwsCloudProvider } from '../../src/cloudprovider/aws/provider.ts';
import { awsSettings } from '../../src/cloudprovider/aws/settings.ts';
import { awsSetup } from '../../src/cloudprovider/aws/setup.ts';
import { catalogNodeShape } from '../../src/embedded/aws.ts';
import type { Operator, OperatorConfig } from '../../src/operator/operator.ts';
import type { OperatorOptions } from '../../src/operator/options.ts';
import { prepareEmulator } from '../../src/sim/aws/emulator.ts';
import { Ec2NodeJoiner } from '../../src/sim/aws/joiner.ts';
import { allRunning, type E2E, eventually, startE2E } from '../e2e/harness.ts';
import { interruptionQueue } from './e2e-events.ts';
import type { AwsEmulator } from './moto.ts';

let clusters = 0;

/** A running aws e2e environment. */
export interface AwsE2E {
  /** This cluster's name (`e2e-<n>`: tests share one emulator, each cluster sees only its own instances). */
  clusterName: string;
  env: E2E;
  emu: AwsEmulator;
  clients: AwsClients;
  joiner: Ec2NodeJoiner;
  /** The operator currently running (replaced by {@link restartOperator}). */
  operator: Operator;
  provider: AwsCloudProvider;
  /** Stops the operator (as a crash would: no cleanup of in-flight work beyond its own stop). */
  stopOperator(): Promise<void>;
  /** Starts a new operator process (after {@link stopOperator}). */
  startOperator(): Promise<Operator>;
  /** Instances tagged for the cluster, by state (`pending`/`running` unless `all`). */
  instances(all?: boolean): Promise<Instance[]>;
  stop(): Promise<void>;
}

/** Options of {@link startAwsE2E}. */
export interface AwsE2EOptions {
  /** Operator options over the fast test defaults. */
  options?: Partial<OperatorOptions>;
  tuning?: OperatorConfig['tuning'];
  /** Run the interruption controller on {@link E2E_QUEUE} (created here). */
  interruption?: boolean;
  /** Seconds between the instance status controller's DescribeInstanceStatus polls (default upstream's 60). */
  instanceStatusPeriodSeconds?: number;
}

/**
 * Starts a cluster + operator against the emulator `emu`. The emulator is not reset (a reset makes moto rebuild its
 * image catalogue, seconds per test): each cluster has its own name, discovery tags, role and queue; the proxy's
 * faults are cleared.
 */
export async function startAwsE2E(emu: AwsEmulator, o: AwsE2EOptions = {}): Promise<AwsE2E> {
  emu.proxy.clearFaults();
  const E2E_CLUSTER = `e2e-${++clusters}`;
  const E2E_QUEUE = `${E2E_CLUSTER}-interruption`;
  const env = await startE2E({ operator: false, sim: { maxTerminationSeconds: 1 } });
  const clients = createAwsClients({
    region: emu.region,
    endpoint: emu.endpoint,
    credentials: emu.clientConfig.credentials,
    maxAttempts: 3,
  });
  await prepareEmulator(clients.ec2, clients.iam, E2E_CLUSTER);
  if (o.interruption) await interruptionQueue(emu.moto, E2E_QUEUE);
  const joiner = new Ec2NodeJoiner({
    client: env.client,
    ec2: clients.ec2,
    clock: env.sim.clock,
    clusterName: E2E_CLUSTER,
    region: emu.region,
    shape: catalogNodeShape(emu.region),
    pollSeconds: 0.25,
  });
  joiner.start();
  const settings = awsSettings({
    clusterName: E2E_CLUSTER,
    region: emu.region,
    clusterEndpoint: env.sim.apiServer.url,
    clusterCABundle: /certificate-authority-data:\s*(\S+)/.exec(env.sim.kubeconfig)?.[1] ?? '',
    interruptionQueue: o.interruption ? E2E_QUEUE : '',
  });
  const start = (): Promise<Operator> =>
    env.startOperator(
      { clusterName: E2E_CLUSTER, region: emu.region, gcPeriodSeconds: 2, ...(o.options ?? {}) },
      {
        provider: awsSetup({
          clients,
          settings,
          region: emu.region,
          interruptionWaitSeconds: 1,
          ...(o.instanceStatusPeriodSeconds !== undefined
            ? { instanceStatusPeriodSeconds: o.instanceStatusPeriodSeconds }
            : {}),
          clusterCIDR: '10.96.0.0/12',
          kubernetesVersion: async () => '1.32',
        }),
        tuning: { provisioningResyncSeconds: 1, ...(o.tuning ?? {}) },
      },
    );
  let operator = await start();
  const e: AwsE2E = {
    clusterName: E2E_CLUSTER,
    env,
    emu,
    clients,
    joiner,
    get operator() {
      return operator;
    },
    get provider() {
      return operator.cloudProvider as AwsCloudProvider;
    },
    async stopOperator() {
      await operator.stop();
      env.operators.splice(env.operators.indexOf(operator), 1);
    },
    async startOperator() {
      operator = await start();
      return operator;
    },
    async instances(all = false) {
      const out: Instance[] = [];
      let token: string | undefined;
      do {
        const page = await clients.ec2.send(
          new DescribeInstancesCommand({
            Filters: [
              { Name: 'tag-key', Values: [`kubernetes.io/cluster/${E2E_CLUSTER}`] },
              ...(all ? [] : [{ Name: 'instance-state-name', Values: ['pending', 'running'] }]),
            ],
            ...(token ? { NextToken: token } : {}),
          }),
        );
        for (const r of page.Reservations ?? []) out.push(...(r.Instances ?? []));
        token = page.NextToken;
      } while (token);
      return out;
    },
    async stop() {
      await joiner.stop();
      await env.stop();
      clients.destroy();
    },
  };
  return e;
}

/** The EC2NodeClass + NodePool of the e2e cluster `e` (discovery tags, AL2023 alias) as YAML. */
export function awsNodePoolYaml(
  e: AwsE2E,
  o: {
    capacityTypes?: string[];
    budget?: string;
    extraRequirements?: string;
    subnetTag?: string;
    /** `spec.placementGroupSelector.name` of the class. */
    placementGroupName?: string;
  } = {},
): string {
  const E2E_CLUSTER = e.clusterName;
  return `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: KarpenterNodeRole-${E2E_CLUSTER}
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: ${o.subnetTag ?? E2E_CLUSTER}}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: ${E2E_CLUSTER}}}]
${o.placementGroupName ? `  placementGroupSelector: {name: ${o.placementGroupName}}\n` : ''}---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      expireAfter: 720h
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [${(o.capacityTypes ?? ['on-demand']).join(', ')}]}
        - {key: kubernetes.io/arch, operator: In, values: [amd64]}
        - {key: kubernetes.io/os, operator: In, values: [linux]}
        - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
${o.extraRequirements ?? ''}  disruption:
    consolidationPolicy: WhenEmpty
    consolidateAfter: 1h
    budgets: [{nodes: "${o.budget ?? '10%'}"}]
`;
}

/**
 * Waits until the EC2NodeClass `default` is Ready (the nodeclass controller resolved it, and its EC2 authorization dry
 * runs passed, which first list the class's instance types: moto's 5.5 MB DescribeInstanceTypes on a file's first
 * test). Bounded at 3 minutes, a bound for a hang: resolving takes several moto calls (subnets, security groups,
 * AMIs, instance profile), seconds each on a loaded machine, where the former 20 s ran out (issue 24).
 */
export async function nodeClassReady(e: AwsE2E): Promise<void> {
  await eventually(
    async () => {
      const c = (await e.env.client.tryGet('EC2NodeClass', 'default')) as
        | { status?: { conditions?: Array<{ type: string; status: string }> } }
        | undefined;
      return c?.status?.conditions?.some((x) => x.type === 'Ready' && x.status === 'True');
    },
    'EC2NodeClass default Ready',
    180_000,
    100,
  );
}

/**
 * Waits until at least `n` pods of `namespace` run and at least `n` NodeClaims are launched (live, with their
 * `status.providerID`); returns the launched NodeClaims. Both, because the one does not imply the other at every
 * moment: when the joiner registers the Node while the launch step's CreateFleet is answered, the registration step
 * of the same reconcile removes the Node's unregistered taint (pods are scheduled and run) before the reconcile
 * writes the NodeClaim's status, `providerID` included (`lifecycle/controller.ts` persists once at the end, as
 * upstream's lifecycle controller); on a loaded machine a test saw 3 pods Running and 1 launched NodeClaim. With `noDeletions` (the
 * wait before a test disrupts anything) a NodeClaim seen deleting fails the wait at once instead of being waited
 * past, so a NodeClaim removed without cause is reported, not hidden. Bounded at 3 minutes, a bound for a hang.
 */
export async function runningOnLaunched(
  e: AwsE2E,
  n: number,
  o: { namespace?: string; noDeletions?: boolean } = {},
): Promise<NodeClaim[]> {
  const deleting = new Set<string>();
  const claims = await eventually(
    async () => {
      if (o.noDeletions) {
        for (const c of (await e.env.client.list('NodeClaim')).items as NodeClaim[])
          if (c.metadata.deletionTimestamp) deleting.add(c.metadata.name ?? '');
        if (deleting.size > 0) return 'deleting';
      }
      if (!(await allRunning(e.env.client, n, o.namespace ?? 'default'))) return undefined;
      const launched = await launchedNodeClaims(e);
      return launched.length >= n ? launched : undefined;
    },
    `${n} pods Running on ${n} launched NodeClaims`,
    180_000,
    100,
  );
  if (claims === 'deleting')
    throw new Error(
      `NodeClaim(s) ${[...deleting].join(', ')} deleted before the test disrupted anything (waiting for ${n} pods Running on ${n} launched NodeClaims)`,
    );
  return claims;
}

/** Launched, live NodeClaims. */
export async function launchedNodeClaims(e: AwsE2E): Promise<NodeClaim[]> {
  return ((await e.env.client.list('NodeClaim')).items as NodeClaim[]).filter(
    (n) => !n.metadata.deletionTimestamp && n.status?.providerID,
  );
}

/** The EC2 instance ID of a NodeClaim. */
export function instanceIdOf(nc: NodeClaim): string | undefined {
  return /\/(i-[0-9a-zA-Z]+)$/.exec(nc.status?.providerID ?? '')?.[1];
}
