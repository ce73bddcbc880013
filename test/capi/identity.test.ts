/**
 * `AWSCluster.spec.identityRef` (issue 29 item 4) against moto and an embedded management cluster serving CAPA's
 * identity CRDs (`crds/capi/`): the aws provider's SDK clients sign with the credentials CAPA would use for the
 * cluster — an assumed role (chained through a static identity), a static identity's Secret, the controller's own —
 * and a disallowed namespace, a missing identity or a Secret without a key give the KMP `Ready=False` with CAPA's
 * reason and a message naming the fix, a Warning Event, no NodePool, and refused AWS calls.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DescribeRegionsCommand } from '@aws-sdk/client-ec2';
import { CreateAccessKeyCommand, CreateRoleCommand, CreateUserCommand, IAMClient } from '@aws-sdk/client-iam';
import { GetCallerIdentityCommand, STSClient } from '@aws-sdk/client-sts';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { parse } from 'yaml';
import { ROOT } from '../../scripts/build.ts';
import type { AWSCluster, KarpenterMachinePool } from '../../src/apis/capi.ts';
import type { KubeObject } from '../../src/apis/core.ts';
import { type AwsClients, createAwsClients } from '../../src/cloudprovider/aws/clients.ts';
import { ClusterCredentials, clusterIdentityCheck } from '../../src/cloudprovider/aws/identity.ts';
import { applyObjects } from '../../src/embedded/apply.ts';
import { type CAPIStack, startCAPIStack } from '../../src/embedded/capi.ts';
import { sampleCAPIObjects } from '../../src/sim/capi/environment.ts';
import { type MotoServer, startMoto } from '../aws/moto.ts';
import { allows, RecordingClient, requestKeys } from '../cli/api-requests.ts';
import { eventually } from '../e2e/harness.ts';

vi.setConfig({ testTimeout: 240_000, hookTimeout: 240_000 });

const ACCOUNT = '123456789012';
const G = 'infrastructure.cluster.x-k8s.io/v1beta2';
let moto: MotoServer;
let stack: CAPIStack;
let creds: ClusterCredentials;
let clients: AwsClients;
/** Access key ids of the EC2 requests, read from their signed Authorization headers. */
const signedWith: string[] = [];
let check: ReturnType<typeof clusterIdentityCheck>;
let recorder: RecordingClient;

beforeAll(async () => {
  moto = await startMoto({ region: 'us-east-1' });
  const base = moto.clientConfig.credentials;
  creds = new ClusterCredentials(async () => base);
  clients = createAwsClients({ region: 'us-east-1', endpoint: moto.endpoint, credentials: creds.provider });
  clients.ec2.middlewareStack.add(
    (next, _ctx) => async (args) => {
      const auth = String((args.request as { headers: Record<string, string> }).headers.authorization ?? '');
      signedWith.push(/Credential=([^/]+)\//.exec(auth)?.[1] ?? '');
      return next(args);
    },
    { step: 'deserialize', name: 'recordSigner' },
  );
  stack = await startCAPIStack({
    withOperator: false,
    env: { machinePoolStandIn: false },
    clusterIdentity: (env) => {
      // the identity reads go through a recording client: the chart's management-cluster rules must grant them
      recorder = RecordingClient.fromKubeconfigText(env.management.kubeconfig);
      check = clusterIdentityCheck(creds, {
        management: recorder,
        controllerNamespace: 'capenter',
        region: 'us-east-1',
        endpoint: moto.endpoint,
      });
      return check;
    },
  });
  await stack.env.mgmt.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'capenter' } });
  for (const [name, labels] of [
    ['team-a', {}],
    ['team-b', { tenant: 'blue' }],
  ] as const)
    await stack.env.mgmt.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } });
}, 240_000);
afterAll(async () => {
  recorder?.close();
  clients?.destroy();
  await stack?.stop();
  await moto?.stop();
});

const create = (o: KubeObject) => stack.env.mgmt.create(o);
const awsCluster = (namespace: string, identityRef?: { kind: string; name: string }): AWSCluster => ({
  apiVersion: G,
  kind: 'AWSCluster',
  metadata: { name: 'demo', namespace },
  spec: { region: 'us-east-1', ...(identityRef ? { identityRef } : {}) },
});
const callerArn = async (): Promise<string | undefined> =>
  (
    await new STSClient({ ...moto.clientConfig, credentials: creds.provider }).send(
      new GetCallerIdentityCommand({}),
    )
  ).Arn;

/** An IAM user of moto with an access key: the static identity's keys, which GetCallerIdentity names. */
async function staticKeys(user: string): Promise<{ id: string; secret: string }> {
  const iam = new IAMClient(moto.clientConfig);
  await iam.send(new CreateUserCommand({ UserName: user }));
  const k = (await iam.send(new CreateAccessKeyCommand({ UserName: user }))).AccessKey;
  return { id: k?.AccessKeyId as string, secret: k?.SecretAccessKey as string };
}

describe('AWSCluster.spec.identityRef', () => {
  it('AWSClusterStaticIdentity: the clients sign with the Secret of the controller namespace', async () => {
    const keys = await staticKeys('capa-static');
    await create({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'capa-static', namespace: 'capenter' },
      data: {
        AccessKeyID: Buffer.from(keys.id).toString('base64'),
        SecretAccessKey: Buffer.from(keys.secret).toString('base64'),
      },
    });
    await create({
      apiVersion: G,
      kind: 'AWSClusterStaticIdentity',
      metadata: { name: 'static' },
      spec: { secretRef: 'capa-static', allowedNamespaces: { list: ['team-a'] } },
    });
    expect(await check(awsCluster('team-a', { kind: 'AWSClusterStaticIdentity', name: 'static' }))).toEqual({
      ok: true,
    });
    expect(await callerArn()).toBe(`arn:aws:iam::${ACCOUNT}:user/capa-static`);
    // CAPA's owner reference from the Secret to the identity (for clusterctl move), set once
    const identity = await stack.env.mgmt.get('AWSClusterStaticIdentity', 'static');
    const secret = await stack.env.mgmt.get('Secret', 'capa-static', 'capenter');
    expect(secret.metadata?.ownerReferences).toEqual([
      { apiVersion: G, kind: 'AWSClusterStaticIdentity', name: 'static', uid: identity.metadata?.uid },
    ]);
    expect(await check(awsCluster('team-a', { kind: 'AWSClusterStaticIdentity', name: 'static' }))).toEqual({
      ok: true,
    });
    const again = await stack.env.mgmt.get('Secret', 'capa-static', 'capenter');
    expect(again.metadata?.resourceVersion).toBe(secret.metadata?.resourceVersion);
    await clients.ec2.send(new DescribeRegionsCommand({}));
    expect(signedWith.at(-1)).toBe(keys.id);
  });

  it('AWSClusterRoleIdentity chained through the static identity: sts:AssumeRole, the clients sign with its keys', async () => {
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
    await create({
      apiVersion: G,
      kind: 'AWSClusterRoleIdentity',
      metadata: { name: 'demo-role' },
      spec: {
        roleARN: `arn:aws:iam::${ACCOUNT}:role/capa-controller`,
        sessionName: 'capenter-demo',
        externalID: 'ext-1',
        durationSeconds: 900,
        allowedNamespaces: { selector: { matchLabels: { tenant: 'blue' } }, list: ['team-a'] },
        sourceIdentityRef: { kind: 'AWSClusterStaticIdentity', name: 'static' },
      },
    });
    const ref = { kind: 'AWSClusterRoleIdentity', name: 'demo-role' };
    expect(await check(awsCluster('team-a', ref))).toEqual({ ok: true });
    expect(await callerArn()).toBe(`arn:aws:sts::${ACCOUNT}:assumed-role/capa-controller/capenter-demo`);
    const assumed = (await creds.provider()).accessKeyId;
    expect(assumed).toMatch(/^ASIA/);
    await clients.ec2.send(new DescribeRegionsCommand({}));
    expect(signedWith.at(-1)).toBe(assumed);
    // team-b is allowed by the role's selector (label tenant=blue) but not by its source identity's list
    expect(await check(awsCluster('team-b', ref))).toEqual({
      ok: false,
      reason: 'SourcePrincipalUsageUnauthorized',
      message:
        'AWSCluster team-b/demo spec.identityRef: Namespace is not permitted to use AWSClusterStaticIdentity: static; add "team-b" to its spec.allowedNamespaces.list (or match it with spec.allowedNamespaces.selector, or set spec.allowedNamespaces: {} to allow every namespace)',
    });
    await expect(clients.ec2.send(new DescribeRegionsCommand({}))).rejects.toThrow(
      /^SourcePrincipalUsageUnauthorized: AWSCluster team-b\/demo spec.identityRef: Namespace is not permitted/,
    );
  });

  it('AWSClusterControllerIdentity "default" and no identityRef: the controller credentials; allowedNamespaces {} = all, absent = none', async () => {
    await create({
      apiVersion: G,
      kind: 'AWSClusterControllerIdentity',
      metadata: { name: 'default' },
      spec: { allowedNamespaces: {} },
    });
    const ref = { kind: 'AWSClusterControllerIdentity', name: 'default' };
    expect(await check(awsCluster('team-a', ref))).toEqual({ ok: true });
    await clients.ec2.send(new DescribeRegionsCommand({}));
    expect(signedWith.at(-1)).toBe(moto.clientConfig.credentials.accessKeyId);
    expect(await check(awsCluster('team-b'))).toEqual({ ok: true });
    await stack.env.mgmt.patch(
      'AWSClusterControllerIdentity',
      'default',
      undefined,
      [{ op: 'remove', path: '/spec/allowedNamespaces' }],
      { type: 'json' },
    );
    expect(await check(awsCluster('team-a', ref))).toEqual({
      ok: false,
      reason: 'PrincipalUsageUnauthorized',
      message:
        'AWSCluster team-a/demo spec.identityRef: Namespace is not permitted to use AWSClusterControllerIdentity: default; add "team-a" to its spec.allowedNamespaces.list (or match it with spec.allowedNamespaces.selector, or set spec.allowedNamespaces: {} to allow every namespace)',
    });
    expect(await check(awsCluster('team-a', { kind: 'AWSClusterControllerIdentity', name: 'mine' }))).toEqual(
      {
        ok: false,
        reason: 'InvalidIdentity',
        message:
          'AWSCluster team-a/demo spec.identityRef: AWSClusterControllerIdentity must be named "default", got "mine"',
      },
    );
  });

  it('a missing identity and a Secret without a key: IdentityNotFound / InvalidIdentity naming the fix', async () => {
    expect(await check(awsCluster('team-a', { kind: 'AWSClusterRoleIdentity', name: 'nope' }))).toEqual({
      ok: false,
      reason: 'IdentityNotFound',
      message:
        'AWSCluster team-a/demo spec.identityRef: AWSClusterRoleIdentity nope not found; create it (cluster-scoped) or fix the reference',
    });
    await create({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'half', namespace: 'capenter' },
      data: { AccessKeyID: Buffer.from('AKIAHALF').toString('base64') },
    });
    await create({
      apiVersion: G,
      kind: 'AWSClusterStaticIdentity',
      metadata: { name: 'half' },
      spec: { secretRef: 'half', allowedNamespaces: {} },
    });
    expect(await check(awsCluster('team-a', { kind: 'AWSClusterStaticIdentity', name: 'half' }))).toEqual({
      ok: false,
      reason: 'InvalidIdentity',
      message:
        'AWSCluster team-a/demo spec.identityRef: AWSClusterStaticIdentity half spec.secretRef: Secret capenter/half has no SecretAccessKey key; add it',
    });
  });

  it('a KMP whose Cluster may not use the identity: Ready=False, a Warning Event, no EC2NodeClass', async () => {
    await create({
      apiVersion: G,
      kind: 'AWSClusterRoleIdentity',
      metadata: { name: 'only-team-a' },
      spec: {
        roleARN: `arn:aws:iam::${ACCOUNT}:role/capa-controller`,
        allowedNamespaces: { list: ['team-a'] },
      },
    });
    await stack.env.writeKubeconfigSecret('team-b', 'demo');
    const objs = sampleCAPIObjects({ namespace: 'team-b' }).map((o) =>
      o.kind === 'AWSCluster'
        ? {
            ...o,
            spec: {
              ...(o.spec as object),
              identityRef: { kind: 'AWSClusterRoleIdentity', name: 'only-team-a' },
            },
          }
        : o,
    );
    await applyObjects(stack.env.mgmt, objs);
    const message =
      'AWSCluster team-b/demo spec.identityRef: Namespace is not permitted to use AWSClusterRoleIdentity: only-team-a; add "team-b" to its spec.allowedNamespaces.list (or match it with spec.allowedNamespaces.selector, or set spec.allowedNamespaces: {} to allow every namespace)';
    const ready = await eventually(async () => {
      const kmp = (await stack.env.mgmt.tryGet('KarpenterMachinePool', 'workers', 'team-b')) as
        | KarpenterMachinePool
        | undefined;
      return kmp?.status?.conditions?.find(
        (c) => c.type === 'Ready' && c.reason === 'PrincipalUsageUnauthorized',
      );
    }, 'KMP Ready=False PrincipalUsageUnauthorized');
    expect(ready.status).toBe('False');
    expect(ready.message).toBe(message);
    const event = await eventually(
      async () =>
        ((await stack.env.mgmt.list('Event', { namespace: 'team-b' })).items as KubeObject[]).find(
          (e) => (e as { reason?: string }).reason === 'PrincipalUsageUnauthorized',
        ),
      'Warning Event',
    );
    expect(event).toMatchObject({
      type: 'Warning',
      message,
      involvedObject: { kind: 'KarpenterMachinePool' },
    });
    expect(await stack.env.workload.client.tryGet('EC2NodeClass', 'workers')).toBeUndefined();
    await expect(creds.provider()).rejects.toThrow(`PrincipalUsageUnauthorized: ${message}`);
  });

  it("the identity requests are granted by the chart's management-cluster rules (ClusterRole, and the Role of the controller namespace for Secrets)", () => {
    type Rule = { apiGroups: string[]; resources: string[]; verbs: string[] };
    const file = (f: string) => parse(readFileSync(join(ROOT, 'charts/capenter/files', f), 'utf8')) as Rule[];
    const cluster = file('clusterrole-rules-capi.yaml');
    const namespaced = file('role-rules-capi.yaml');
    const keys = requestKeys(recorder.requests);
    expect(keys).toEqual([
      'get core namespaces',
      'get core secrets',
      'get infrastructure.cluster.x-k8s.io awsclustercontrolleridentities',
      'get infrastructure.cluster.x-k8s.io awsclusterroleidentities',
      'get infrastructure.cluster.x-k8s.io awsclusterstaticidentities',
      'patch core secrets',
    ]);
    for (const r of recorder.requests) {
      const secret = r.resource === 'secrets';
      // Secrets only in the controller's namespace, under its Role; everything else under the ClusterRole
      if (secret) expect(r.namespace).toBe('capenter');
      expect(allows(secret ? namespaced : cluster, r), `${r.verb} ${r.group} ${r.resource}`).toBe(true);
    }
  });
});
