/**
 * `AWSCluster.spec.identityRef` across a controller restart (issue 29): the aws provider's credentials start fresh
 * in a new process, and the first launch after the restart must sign with the cluster's assumed role, not with the
 * controller's own keys. The KMP controller's identity check is held back after the restart, so the launch for a new
 * pending pod comes first: the provider's calls (instance types, the launch) wait, nothing reaches the emulator signed
 * with the controller's keys, until the check has resolved the role; then the launch goes out signed with the
 * `sts:AssumeRole` keys. Which keys signed what is read from the emulator proxy's log.
 */
import { CreateRoleCommand, IAMClient } from '@aws-sdk/client-iam';
import { S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ClusterCredentials, clusterIdentityCheck } from '../../src/cloudprovider/aws/identity.ts';
import { S3BootstrapStore } from '../../src/cloudprovider/aws/s3store.ts';
import { applyObjects } from '../../src/embedded/apply.ts';
import { type CAPIStack, startCAPIStack } from '../../src/embedded/capi.ts';
import { prepareCAPAEmulator } from '../../src/sim/capi/aws.ts';
import { sampleCAPIObjects } from '../../src/sim/capi/environment.ts';
import { type MotoServer, startMoto } from '../aws/moto.ts';
import { allRunning, eventually } from '../e2e/harness.ts';

vi.setConfig({ testTimeout: 240_000, hookTimeout: 240_000 });

const ACCOUNT = '123456789012';
const G = 'infrastructure.cluster.x-k8s.io/v1beta2';
let moto: MotoServer;
let stack: CAPIStack | undefined;
let store: S3BootstrapStore | undefined;
/** While set, the KMP controller's identity checks wait for it (the test's stand-in for a slow first reconcile). */
let hold: Promise<void> | undefined;
let releaseHold = (): void => {};

beforeAll(async () => {
  moto = await startMoto({ region: 'us-east-1' });
}, 120_000);
afterAll(async () => {
  releaseHold();
  await stack?.stop();
  store?.close();
  await moto?.stop();
});

/** A Deployment of `replicas` pods of 1 CPU, one per node (hostname anti-affinity): each new replica needs a launch. */
const app = (replicas: number): never =>
  ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'app', namespace: 'default' },
    spec: {
      replicas,
      selector: { matchLabels: { app: 'app' } },
      template: {
        metadata: { labels: { app: 'app' } },
        spec: {
          affinity: {
            podAntiAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: [
                { labelSelector: { matchLabels: { app: 'app' } }, topologyKey: 'kubernetes.io/hostname' },
              ],
            },
          },
          containers: [{ name: 'a', image: 'pause', resources: { requests: { cpu: '1', memory: '1Gi' } } }],
        },
      },
    },
  }) as never;

describe('AWSClusterRoleIdentity after a controller restart', () => {
  it('the first launch after a restart waits for the identity and signs with the assumed role', async () => {
    const controllerKey = moto.clientConfig.credentials.accessKeyId;
    // startEmbeddedAws builds the stand-ins' SDK clients from the default credential chain (as `capenter start` does)
    process.env.AWS_ACCESS_KEY_ID ??= controllerKey;
    process.env.AWS_SECRET_ACCESS_KEY ??= moto.clientConfig.credentials.secretAccessKey;
    const iam = new IAMClient(moto.clientConfig);
    await iam.send(
      new CreateRoleCommand({
        RoleName: 'capa-controller',
        AssumeRolePolicyDocument: JSON.stringify({
          Version: '2012-10-17',
          Statement: [{ Effect: 'Allow', Principal: { AWS: ACCOUNT }, Action: 'sts:AssumeRole' }],
        }),
      }),
    );
    const s3 = new S3Client({ ...moto.clientConfig, forcePathStyle: true });
    store = new S3BootstrapStore(() => ({ ...moto.clientConfig, forcePathStyle: true }));
    stack = await startCAPIStack({
      bootstrapStore: store,
      aws: {
        emulatorEndpoint: moto.endpoint,
        region: 'us-east-1',
        clusterName: 'demo',
        credentials: () => new ClusterCredentials(async () => moto.clientConfig.credentials),
      },
      clusterIdentity: (env, aws) => {
        const check = clusterIdentityCheck(aws!.credentials, {
          management: env.mgmt,
          controllerNamespace: 'capenter',
          region: 'us-east-1',
          endpoint: aws!.endpoint,
        });
        return async (c) => {
          await hold;
          return check(c);
        };
      },
      operator: { clusterName: 'demo', batchIdleSeconds: 0.3, batchMaxSeconds: 3 },
      env: {
        workload: { kubeletReadyDelaySeconds: 0, podStartDelaySeconds: 0.2, maxTerminationSeconds: 1 },
        machinePoolStandIn: { periodSeconds: 0.3 },
      },
    });
    const aws = stack.aws!;
    const prepared = await prepareCAPAEmulator({
      ec2: aws.clients.ec2,
      iam,
      s3,
      clusterName: 'demo',
      region: 'us-east-1',
      versions: ['v1.33.1'],
      subnets: aws.seed.subnets,
      securityGroup: aws.seed.securityGroups[0] as string,
    });
    iam.destroy();
    s3.destroy();
    const { env } = stack;
    await env.mgmt.create({
      apiVersion: G,
      kind: 'AWSClusterRoleIdentity',
      metadata: { name: 'demo-role' },
      spec: {
        roleARN: `arn:aws:iam::${ACCOUNT}:role/capa-controller`,
        sessionName: 'capenter-demo',
        allowedNamespaces: {},
      },
    });
    const objs = sampleCAPIObjects().map((o) =>
      o.kind === 'AWSCluster'
        ? {
            ...o,
            spec: {
              ...(o.spec as object),
              ...prepared.awsClusterSpec,
              identityRef: { kind: 'AWSClusterRoleIdentity', name: 'demo-role' },
            },
          }
        : o,
    );
    await env.writeKubeconfigSecret('default', 'demo');
    await applyObjects(env.mgmt, objs);
    const wl = env.workload.client;
    await eventually(async () => !!(await wl.tryGet('NodePool', 'workers')), 'NodePool written');
    await applyObjects(wl, [app(1)]);
    await eventually(() => allRunning(wl, 1), 'the first pod running on an EC2 instance', 120_000);
    const log = aws.proxy.signedCalls;
    const fleets = () => log.filter((c) => c.call === 'ec2:CreateFleet');
    const first = fleets();
    expect(first.length).toBeGreaterThan(0);
    expect(first.every((c) => c.accessKeyId.startsWith('ASIA'))).toBe(true);

    // a restarted controller: fresh credentials; its identity check held back while a new pod is pending
    hold = new Promise<void>((r) => {
      releaseHold = r;
    });
    await stack.restart();
    const since = log.length;
    const sinceRestart = () => log.slice(since);
    await wl.patch('Deployment', 'app', 'default', { spec: { replicas: 2 } }, { type: 'merge' });
    await eventually(
      async () => (stack?.credentials?.waiting ?? 0) > 0,
      'a provider call (instance types, launch) waiting for the identity',
    );
    expect(sinceRestart().filter((c) => c.call === 'ec2:CreateFleet')).toEqual([]);
    // since the restart the controller's own keys signed only the joining-kubelet stand-in's polls
    const ownKeyCalls = new Set(
      sinceRestart().flatMap((c) => (c.accessKeyId === controllerKey ? [c.call] : [])),
    );
    expect([...ownKeyCalls].filter((c) => c !== 'ec2:DescribeInstances')).toEqual([]);

    releaseHold();
    hold = undefined;
    await eventually(() => allRunning(wl, 2), 'the second pod running on an EC2 instance', 120_000);
    const relaunch = sinceRestart().filter((c) => c.call === 'ec2:CreateFleet');
    expect(relaunch.length).toBeGreaterThan(0);
    const assumed = (await stack.credentials!.provider()).accessKeyId;
    expect(assumed).toMatch(/^ASIA/);
    expect(assumed).not.toBe(first[0]?.accessKeyId); // a new process assumed the role again
    expect(relaunch.map((c) => c.accessKeyId)).toEqual(relaunch.map(() => assumed));
    const assumeAt = sinceRestart().findIndex((c) => c.call === 'sts:AssumeRole');
    const launchAt = sinceRestart().findIndex((c) => c.call === 'ec2:CreateFleet');
    expect(assumeAt).toBeGreaterThanOrEqual(0);
    expect(assumeAt).toBeLessThan(launchAt);
    expect(sinceRestart()[assumeAt]?.accessKeyId).toBe(controllerKey);
  }, 300_000);
});
