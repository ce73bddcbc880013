/**
 * The Helm chart as users run it, per cloud provider, on the real control plane (`npm run test:cluster`): `helm
 * install` of `charts/capenter` with `cloudProvider: aws` and with `cloudProvider: clusterapi`. The controller image
 * is not available here, so `capenter controller` runs as a local process with exactly the installed Deployment's
 * arguments and environment (read back with `helm get manifest`) and the release ServiceAccount's token: the chart's
 * values, settings and RBAC are what run.
 * - aws: moto behind the project's proxy, reached through the chart's `controller.env` (AWS_ENDPOINT_URL, dummy
 *   credentials); the ServiceAccount carries the IRSA annotation; the joining-kubelet stand-in registers the EC2
 *   instances as Nodes and kwok (annotation `kwok.x-k8s.io/node=fake`) runs their pods. A NodePool + EC2NodeClass and
 *   a Deployment lead to instances in moto of the NodeClaims' types and pods Running on them.
 * - clusterapi: the Cluster API CRDs and the MachineDeployment stand-in on the same cluster (`clusterapi.namespace`),
 *   the chart's Cluster API rules in the ClusterRole; a pending pod scales a MachineDeployment from 0.
 * Measured: 63 s for the file on 2 shared cores (aws 41 s including moto's start, clusterapi 20 s).
 */

import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { CreateClusterCommand } from '@aws-sdk/client-eks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import type { KubeObject } from '../../src/apis/core.ts';
import { type AwsClients, createAwsClients } from '../../src/cloudprovider/aws/clients.ts';
import {
  type ClusterAPITestbed,
  startClusterAPITestbed,
} from '../../src/cloudprovider/clusterapi/testing.ts';
import { catalogNodeShape } from '../../src/embedded/aws.ts';
import { KubeClient } from '../../src/kube/client.ts';
import { RealClock } from '../../src/kube/clock.ts';
import { prepareEmulator } from '../../src/sim/aws/emulator.ts';
import { Ec2NodeJoiner } from '../../src/sim/aws/joiner.ts';
import { type AwsEmulator, startAwsEmulator } from '../aws/moto.ts';
import { CHART, helmBinary } from '../cli/helm-tools.ts';
import { type ControllerProcess, clusterKubeconfig, kubectl, startController, until } from './helpers.ts';

type EnvVar = { name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath?: string } } };
type Deployment = KubeObject & {
  spec: { template: { spec: { containers: Array<{ args?: string[]; env?: EnvVar[] }> } } };
};

function helm(args: string[]): { code: number | null; out: string } {
  const r = spawnSync(helmBinary(), [...args, '--kubeconfig', clusterKubeconfig()], { encoding: 'utf8' });
  return { code: r.status, out: r.stdout + r.stderr };
}

/** `helm install` of the chart as `release` in `ns` with `values` (written to a file); throws with helm's output. */
function install(release: string, ns: string, values: Record<string, unknown>): KubeObject[] {
  helm(['uninstall', release, '-n', ns]); // a previous run on a kept cluster
  const file = `${process.env.TMPDIR ?? '/tmp'}/capenter-${release}-${process.pid}.values.json`;
  writeFileSync(file, JSON.stringify(values));
  const r = helm(['install', release, CHART, '-n', ns, '--create-namespace', '-f', file]);
  if (r.code !== 0) throw new Error(`helm install ${release}: ${r.out}`);
  const m = helm(['get', 'manifest', release, '-n', ns]);
  return parseAllDocuments(m.out)
    .map((d) => d.toJS() as KubeObject | null)
    .filter((o): o is KubeObject => !!o && typeof o === 'object' && 'kind' in o);
}

/** The installed Deployment's controller arguments (after `controller`) and variables (fieldRefs: the namespace). */
function controllerCommand(objs: KubeObject[], ns: string): { args: string[]; env: Record<string, string> } {
  const d = objs.find((o) => o.kind === 'Deployment') as Deployment;
  const c = d.spec.template.spec.containers[0]!;
  const env: Record<string, string> = {};
  for (const e of c.env ?? [])
    env[e.name] = e.value ?? (e.valueFrom?.fieldRef?.fieldPath === 'metadata.namespace' ? ns : '');
  return { args: (c.args ?? []).slice(1), env };
}

/** A kubeconfig of the ServiceAccount `sa` in `ns` (a token from the TokenRequest API), written to a file. */
async function serviceAccountKubeconfig(ns: string, sa: string): Promise<string> {
  const kc = clusterKubeconfig();
  const token = await kubectl(kc, ['create', 'token', sa, '-n', ns, '--duration=1h']);
  if (token.code !== 0) throw new Error(token.stderr);
  const admin = parse(readFileSync(kc, 'utf8')) as {
    clusters: Array<{ cluster: { server: string; 'certificate-authority-data': string } }>;
  };
  const cluster = admin.clusters[0]!.cluster;
  const path = `${process.env.TMPDIR ?? '/tmp'}/capenter-${ns}-${process.pid}.kubeconfig`;
  writeFileSync(
    path,
    `apiVersion: v1
kind: Config
clusters: [{name: real, cluster: {server: "${cluster.server}", certificate-authority-data: "${cluster['certificate-authority-data']}"}}]
users: [{name: ${sa}, user: {token: "${token.stdout.trim()}"}}]
contexts: [{name: real, context: {cluster: real, user: ${sa}, namespace: ${ns}}}]
current-context: real
`,
    { mode: 0o600 },
  );
  return path;
}

/** A Deployment of `replicas` pods of `cpu` each, pinned to NodePool `pool`. */
function workload(name: string, pool: string, replicas: number, cpu: string): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: 'default' },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          nodeSelector: { 'karpenter.sh/nodepool': pool },
          containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10', resources: { requests: { cpu } } }],
        },
      },
    },
  } as KubeObject;
}

type Pod = KubeObject & { spec?: { nodeName?: string }; status?: { phase?: string } };
type NodeClaimObj = KubeObject & {
  status?: { providerID?: string };
  metadata: { labels?: Record<string, string> };
};

/** Deletes the workload and the NodePool, and waits until the controller removed every NodeClaim of the pool. */
async function cleanUp(client: KubeClient, deployment: string, pool: string): Promise<void> {
  await client.tryDelete('Deployment', deployment, 'default');
  await client.tryDelete('NodePool', pool);
  await until(
    async () =>
      ((await client.list('NodeClaim')).items as NodeClaimObj[]).filter(
        (n) => n.metadata.labels?.['karpenter.sh/nodepool'] === pool,
      ).length === 0,
    `the NodeClaims of ${pool} removed`,
    120_000,
    250,
  );
}

/**
 * Hands each Node of NodePool `pool` to kwok (annotation `kwok.x-k8s.io/node=fake`), which then reports it Ready and
 * runs its pods, as the kubelet the stand-ins do not start would. Returns the stop function.
 */
function kwokHandOver(client: KubeClient, pool: string): () => void {
  const timer = setInterval(() => {
    void (async () => {
      for (const n of (await client.list('Node')).items)
        if (
          n.metadata?.labels?.['karpenter.sh/nodepool'] === pool &&
          !n.metadata.annotations?.['kwok.x-k8s.io/node']
        )
          await client
            .patch('Node', n.metadata.name!, undefined, {
              metadata: { annotations: { 'kwok.x-k8s.io/node': 'fake' } },
            })
            .catch(() => undefined);
    })().catch(() => undefined);
  }, 250);
  return () => clearInterval(timer);
}

/** What the controller and the cluster say, for a failure message: warnings and errors logged, NodePool and pods. */
async function diagnosis(
  c: ControllerProcess | undefined,
  client: KubeClient,
  pool: string,
): Promise<string> {
  const logs = (c?.logs ?? [])
    .filter((l) => l.level !== 'info' || /launch|nodeclaim|scale/i.test(l.message))
    .slice(-40)
    .map((l) => JSON.stringify(l).slice(0, 400));
  const np = await client.tryGet('NodePool', pool);
  const claims = ((await client.list('NodeClaim')).items as NodeClaimObj[]).map((n) =>
    JSON.stringify(n.status ?? {}).slice(0, 600),
  );
  return `\ncontroller text:\n${c?.text() ?? ''}\nlogs:\n${logs.join('\n')}\nNodePool status: ${JSON.stringify(
    (np as { status?: unknown } | undefined)?.status,
  )}\nNodeClaims: ${claims.join('\n')}`;
}

/** {@link until}, with {@link diagnosis} added to the error. */
async function untilDiagnosed<T>(
  fn: () => Promise<T>,
  what: string,
  client: KubeClient,
  pool: string,
  timeoutMs = 180_000,
): Promise<NonNullable<T>> {
  try {
    return await until(fn, what, timeoutMs, 250);
  } catch (err) {
    throw new Error(`${(err as Error).message}${await diagnosis(controller, client, pool)}`);
  }
}

/**
 * `client`, except that the Nodes it creates carry `kwok.x-k8s.io/node=fake` (as the kwok provider's do), so kwok
 * reports the joining-kubelet stand-in's Nodes Ready and runs their pods from the start.
 */
function kwokRegistering(client: KubeClient): KubeClient {
  return new Proxy(client, {
    get(target, prop) {
      if (prop === 'create')
        return (obj: KubeObject, ...rest: unknown[]) =>
          (target.create as (o: KubeObject, ...r: unknown[]) => Promise<KubeObject>).call(
            target,
            obj.kind === 'Node'
              ? {
                  ...obj,
                  metadata: {
                    ...obj.metadata,
                    annotations: { ...(obj.metadata?.annotations ?? {}), 'kwok.x-k8s.io/node': 'fake' },
                  },
                }
              : obj,
            ...rest,
          );
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

const t0 = Date.now();
let controller: ControllerProcess | undefined;
beforeAll(() => {
  helmBinary();
}, 900_000);
afterAll(async () => {
  await controller?.stop();
  console.log(`chart-providers.test.ts: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
});

describe('helm install per cloud provider on a real control plane', () => {
  it('aws (moto through the chart env): a NodePool + EC2NodeClass give instances in moto and pods Running', async () => {
    const NS = 'capenter-aws';
    const CLUSTER = `chart-aws-${process.pid}`;
    const POOL = 'chart-aws';
    const kc = clusterKubeconfig();
    const client = KubeClient.fromKubeconfig(kc, { userAgent: 'chart-providers-test' });
    const emu: AwsEmulator = await startAwsEmulator();
    const clients: AwsClients = createAwsClients({
      region: emu.region,
      endpoint: emu.endpoint,
      credentials: emu.clientConfig.credentials,
      maxAttempts: 3,
    });
    const joiner = new Ec2NodeJoiner({
      client: kwokRegistering(client),
      ec2: clients.ec2,
      clock: new RealClock(),
      clusterName: CLUSTER,
      region: emu.region,
      shape: catalogNodeShape(emu.region),
      pollSeconds: 0.25,
    });
    const handOver = kwokHandOver(client, POOL);
    try {
      const seed = await prepareEmulator(clients.ec2, clients.iam, CLUSTER);
      // AL2023 needs the cluster's service CIDR, which the controller reads from EKS DescribeCluster as upstream
      // does (otherwise the class is ClusterCIDRResolutionFailed and nothing launches)
      await clients.eks.send(
        new CreateClusterCommand({
          name: CLUSTER,
          roleArn: 'arn:aws:iam::123456789012:role/eks-cluster',
          resourcesVpcConfig: { subnetIds: seed.subnets },
          kubernetesNetworkConfig: { serviceIpv4Cidr: '10.96.0.0/12' },
        }),
      );
      const server = (parse(readFileSync(kc, 'utf8')) as { clusters: Array<{ cluster: { server: string } }> })
        .clusters[0]!.cluster.server;
      const objs = install(NS, NS, {
        cloudProvider: 'aws',
        replicas: 1,
        serviceAccount: {
          annotations: { 'eks.amazonaws.com/role-arn': 'arn:aws:iam::123456789012:role/KarpenterController' },
        },
        settings: {
          clusterName: CLUSTER,
          clusterEndpoint: server,
          awsRegion: emu.region,
          batchMaxDuration: '2s',
        },
        controller: {
          // the SDK's standard variables; AWS_REGION comes from settings.awsRegion
          env: Object.entries({ ...emu.env, AWS_EC2_METADATA_DISABLED: 'true' })
            .filter(([name]) => name !== 'AWS_REGION')
            .map(([name, value]) => ({ name, value })),
        },
      });
      const sa = await kubectl(kc, ['get', 'serviceaccount', NS, '-n', NS, '-o', 'json']);
      expect(
        (JSON.parse(sa.stdout) as KubeObject).metadata?.annotations?.['eks.amazonaws.com/role-arn'],
      ).toBe('arn:aws:iam::123456789012:role/KarpenterController');
      const { args, env } = controllerCommand(objs, NS);
      expect(args).toEqual(['--cloud-provider=aws']);
      expect(env).toMatchObject({
        CLUSTER_NAME: CLUSTER,
        AWS_ENDPOINT_URL: emu.endpoint,
        AWS_REGION: emu.region,
      });
      joiner.start();
      controller = await startController(await serviceAccountKubeconfig(NS, NS), args, {
        ...env,
        LOG_LEVEL: 'debug',
      });
      await client.apply(
        {
          apiVersion: 'karpenter.k8s.aws/v1',
          kind: 'EC2NodeClass',
          metadata: { name: POOL },
          spec: {
            role: seed.role,
            amiFamily: 'AL2023',
            amiSelectorTerms: [{ tags: { 'karpenter.sh/discovery': CLUSTER } }],
            subnetSelectorTerms: [{ tags: { 'karpenter.sh/discovery': CLUSTER } }],
            securityGroupSelectorTerms: [{ tags: { 'karpenter.sh/discovery': CLUSTER } }],
          },
        } as KubeObject,
        { fieldManager: 'chart-test', force: true },
      );
      await client.apply(
        {
          apiVersion: 'karpenter.sh/v1',
          kind: 'NodePool',
          metadata: { name: POOL },
          spec: {
            template: {
              spec: {
                nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: POOL },
                requirements: [
                  { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] },
                  { key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] },
                  { key: 'karpenter.k8s.aws/instance-category', operator: 'In', values: ['c', 'm'] },
                ],
              },
            },
          },
        } as KubeObject,
        { fieldManager: 'chart-test', force: true },
      );
      await client.apply(workload(POOL, POOL, 3, '1'), { fieldManager: 'chart-test', force: true });
      const running = await untilDiagnosed(
        async () => {
          const pods = ((await client.list('Pod', { namespace: 'default' })).items as Pod[]).filter(
            (p) => p.metadata?.labels?.app === POOL,
          );
          return pods.length === 3 && pods.every((p) => p.status?.phase === 'Running') ? pods : undefined;
        },
        '3 pods Running on instances',
        client,
        POOL,
      );
      const claims = ((await client.list('NodeClaim')).items as NodeClaimObj[]).filter(
        (n) => n.metadata.labels?.['karpenter.sh/nodepool'] === POOL,
      );
      const instances = (
        await clients.ec2.send(
          new (
            await import('@aws-sdk/client-ec2')
          ).DescribeInstancesCommand({
            Filters: [
              { Name: 'tag-key', Values: [`kubernetes.io/cluster/${CLUSTER}`] },
              { Name: 'instance-state-name', Values: ['pending', 'running'] },
            ],
          }),
        )
      ).Reservations!.flatMap((r) => r.Instances ?? []);
      // every NodeClaim is an instance in moto of the type it names, and the pods run on those Nodes
      expect(instances.length).toBe(claims.length);
      expect(claims.length).toBeGreaterThanOrEqual(1);
      const byId = new Map(instances.map((i) => [i.InstanceId!, i.InstanceType!]));
      for (const c of claims) {
        const id = c.status!.providerID!.split('/').pop()!;
        expect(byId.get(id), c.metadata.name).toBe(c.metadata.labels!['node.kubernetes.io/instance-type']);
        expect(byId.get(id)).toMatch(/^[cm]\d/);
      }
      const nodes = new Set(
        ((await client.list('Node')).items as Array<KubeObject & { spec?: { providerID?: string } }>)
          .filter((n) => byId.has(n.spec?.providerID?.split('/').pop() ?? ''))
          .map((n) => n.metadata!.name!),
      );
      expect(running.every((p) => nodes.has(p.spec!.nodeName!))).toBe(true);
      console.log(
        `chart aws: ${claims.length} instance(s) ${[...byId.values()].join(', ')} in moto, 3 pods Running`,
      );
      const forbidden = controller.logs.filter((l) => /forbidden/i.test(JSON.stringify(l)));
      expect(forbidden, 'no request refused by the chart RBAC').toEqual([]);
    } finally {
      await cleanUp(client, POOL, POOL).catch((err: unknown) => console.log(`aws clean-up: ${String(err)}`));
      // the controller removes the EC2NodeClass's termination finalizer: delete it while it runs
      await client.tryDelete('EC2NodeClass', POOL);
      await until(
        async () => !(await client.tryGet('EC2NodeClass', POOL)),
        'EC2NodeClass deleted',
        60_000,
      ).catch((err: unknown) => console.log(`aws clean-up: ${String(err)}`));
      handOver();
      await controller?.stop();
      controller = undefined;
      await joiner.stop();
      clients.destroy();
      await emu.stop();
      helm(['uninstall', NS, '-n', NS]);
      client.close();
    }
  });

  it('clusterapi: a pending pod scales a MachineDeployment under the chart RBAC', async () => {
    const NS = 'capenter-capi';
    const POOL = 'chart-capi';
    const kc = clusterKubeconfig();
    const client = KubeClient.fromKubeconfig(kc, { userAgent: 'chart-providers-test' });
    let bed: ClusterAPITestbed | undefined;
    const handOver = kwokHandOver(client, POOL);
    try {
      bed = await startClusterAPITestbed({}, kc);
      const { namespace } = await bed.namespace([
        { name: 'm5-large-a', instanceType: 'm5.large', failureDomain: 'us-east-1a' },
      ]);
      const objs = install(NS, NS, {
        cloudProvider: 'clusterapi',
        replicas: 1,
        settings: { clusterName: 'demo' },
        clusterapi: { namespace, machineTimeout: '60s' },
      });
      const { args, env } = controllerCommand(objs, NS);
      expect(args).toEqual(['--cloud-provider=clusterapi']);
      expect(env).toMatchObject({ CLUSTER_API_NAMESPACE: namespace, CLUSTER_API_MACHINE_TIMEOUT: '60s' });
      // in a pod, CLUSTER_API_KUBECONFIG empty means the in-cluster config: here, the same ServiceAccount
      const saKubeconfig = await serviceAccountKubeconfig(NS, NS);
      controller = await startController(saKubeconfig, args, {
        ...env,
        CLUSTER_API_KUBECONFIG: saKubeconfig,
      });
      await client.apply(
        {
          apiVersion: 'karpenter.cluster.x-k8s.io/v1alpha1',
          kind: 'ClusterAPINodeClass',
          metadata: { name: POOL },
          spec: { scalableResourceSelector: { matchLabels: {} } },
        } as KubeObject,
        { fieldManager: 'chart-test', force: true },
      );
      await client.apply(
        {
          apiVersion: 'karpenter.sh/v1',
          kind: 'NodePool',
          metadata: { name: POOL },
          spec: {
            template: {
              spec: {
                nodeClassRef: {
                  group: 'karpenter.cluster.x-k8s.io',
                  kind: 'ClusterAPINodeClass',
                  name: POOL,
                },
                requirements: [],
              },
            },
          },
        } as KubeObject,
        { fieldManager: 'chart-test', force: true },
      );
      await client.apply(workload(POOL, POOL, 1, '1'), { fieldManager: 'chart-test', force: true });
      const replicas = await untilDiagnosed(
        async () =>
          (
            (await client.get('MachineDeployment', 'm5-large-a', namespace)) as {
              spec?: { replicas?: number };
            }
          ).spec?.replicas,
        'MachineDeployment m5-large-a scaled up',
        client,
        POOL,
      );
      expect(replicas).toBe(1);
      await until(
        async () =>
          ((await client.list('NodeClaim')).items as NodeClaimObj[]).some(
            (n) => n.metadata.labels?.['karpenter.sh/nodepool'] === POOL && n.status?.providerID,
          ),
        'a NodeClaim launched on the Machine',
        120_000,
        250,
      );
      console.log(`chart clusterapi: MachineDeployment m5-large-a replicas 0 -> ${replicas}`);
      const forbidden = controller.logs.filter((l) => /forbidden/i.test(JSON.stringify(l)));
      expect(forbidden, 'no request refused by the chart RBAC').toEqual([]);
      await cleanUp(client, POOL, POOL);
      await untilDiagnosed(
        async () =>
          (
            (await client.get('MachineDeployment', 'm5-large-a', namespace)) as {
              spec?: { replicas?: number };
            }
          ).spec?.replicas === 0,
        'MachineDeployment m5-large-a scaled back to 0',
        client,
        POOL,
      );
    } finally {
      await cleanUp(client, POOL, POOL).catch((err: unknown) =>
        console.log(`clusterapi clean-up: ${String(err)}`),
      );
      await controller?.stop();
      controller = undefined;
      handOver();
      await client.tryDelete('ClusterAPINodeClass', POOL);
      await bed?.stop();
      helm(['uninstall', NS, '-n', NS]);
      client.close();
    }
  });
});
