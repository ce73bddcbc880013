/**
 * `capenter bootstrap aws` against moto (IAM, SQS, EventBridge, STS): create, idempotent second run, update of
 * drifted attributes, refusal on a same-named untagged resource, a denied call, delete; the CloudFormation
 * template compared with what the API path created (golden: documents read back from moto); CAPA inputs read
 * from an embedded management cluster.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  DescribeRuleCommand,
  EventBridgeClient,
  ListTargetsByRuleCommand,
} from '@aws-sdk/client-eventbridge';
import {
  AddRoleToInstanceProfileCommand,
  CreateInstanceProfileCommand,
  CreateRoleCommand,
  GetInstanceProfileCommand,
  GetPolicyCommand,
  GetPolicyVersionCommand,
  GetRoleCommand,
  IAMClient,
  ListAttachedRolePoliciesCommand,
} from '@aws-sdk/client-iam';
import {
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  SetQueueAttributesCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { STSClient } from '@aws-sdk/client-sts';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import type { KubeObject } from '../../src/apis/core.ts';
import { runBootstrapAwsCommand } from '../../src/cli/bootstrap.ts';
import type { BootstrapClients, BootstrapReport } from '../../src/cloudprovider/aws/bootstrap/apply.ts';
import { resolveSub } from '../../src/cloudprovider/aws/bootstrap/cloudformation.ts';
import { startSimulatedCluster } from '../../src/embedded/cluster.ts';
import { type MotoServer, startMoto } from '../aws/moto.ts';

// moto answers slowly on a loaded machine (its serialiser; DescribeInstanceTypes is 5.5 MB): under `stress --cpu 4`
// beside other tests a first test took over 60 s. A test may be slow, never flaky (issue 24).
vi.setConfig({ testTimeout: 240_000, hookTimeout: 240_000 });

const here = dirname(fileURLToPath(import.meta.url));
let moto: MotoServer;
beforeAll(async () => {
  moto = await startMoto({ env: { MOTO_IAM_LOAD_MANAGED_POLICIES: 'true' } });
}, 120_000);
afterEach(() => moto.reset());
afterAll(() => moto.stop());

const ACCOUNT = '123456789012';

function clients(region = moto.region): BootstrapClients & { sts: STSClient } {
  const cfg = { ...moto.clientConfig, region };
  return {
    iam: new IAMClient(cfg),
    sqs: new SQSClient(cfg),
    events: new EventBridgeClient(cfg),
    sts: new STSClient(cfg),
  };
}

async function run(
  flags: Parameters<typeof runBootstrapAwsCommand>[0],
  clientsFor: (region: string) => BootstrapClients & { sts: STSClient } = clients,
) {
  let out = '';
  let err = '';
  const code = await runBootstrapAwsCommand(
    { output: 'json', ...flags },
    { stdout: (t) => (out += t), stderr: (t) => (err += t), env: {}, clientsFor },
  );
  return {
    code,
    out,
    err,
    json:
      out && flags.output !== 'cloudformation' && (flags.output ?? 'json') === 'json'
        ? (JSON.parse(out) as BootstrapReport & { notices: string[] })
        : undefined,
  };
}

const results = (r: BootstrapReport) => Object.fromEntries(r.resources.map((x) => [x.resource, x.result]));

describe('capenter bootstrap aws (moto)', () => {
  it('creates every resource, a second run changes nothing, and the template matches what was created', async () => {
    const c = clients();
    await c.iam.send(new CreateRoleCommand({ RoleName: 'c1-karpenter', AssumeRolePolicyDocument: '{}' }));
    const first = await run({ clusterName: 'c1', region: moto.region, controllerRole: 'c1-karpenter' });
    expect(first.err).toBe('');
    expect(first.code).toBe(0);
    expect(first.json!.summary).toBe('created 17, updated 0, unchanged 0');
    expect(results(first.json!)).toEqual({
      'IAMRole KarpenterNodeRole-c1': 'created',
      'IAMInstanceProfile KarpenterNodeInstanceProfile-c1': 'created',
      'SQSQueue c1': 'created',
      'EventBridgeRule Karpenter-c1-ScheduledChange': 'created',
      'EventBridgeRule Karpenter-c1-SpotInterruption': 'created',
      'EventBridgeRule Karpenter-c1-Rebalance': 'created',
      'EventBridgeRule Karpenter-c1-InstanceStateChange': 'created',
      'IAMManagedPolicy KarpenterControllerNodeLifecyclePolicy-c1': 'created',
      'IAMManagedPolicy KarpenterControllerIAMIntegrationPolicy-c1': 'created',
      'IAMManagedPolicy KarpenterControllerEKSIntegrationPolicy-c1': 'created',
      'IAMManagedPolicy KarpenterControllerInterruptionPolicy-c1': 'created',
      'IAMManagedPolicy KarpenterControllerResourceDiscoveryPolicy-c1': 'created',
      'RolePolicyAttachment c1-karpenter ← KarpenterControllerNodeLifecyclePolicy-c1': 'created',
      'RolePolicyAttachment c1-karpenter ← KarpenterControllerIAMIntegrationPolicy-c1': 'created',
      'RolePolicyAttachment c1-karpenter ← KarpenterControllerEKSIntegrationPolicy-c1': 'created',
      'RolePolicyAttachment c1-karpenter ← KarpenterControllerInterruptionPolicy-c1': 'created',
      'RolePolicyAttachment c1-karpenter ← KarpenterControllerResourceDiscoveryPolicy-c1': 'created',
    });

    // What exists in the emulator.
    const role = await c.iam.send(new GetRoleCommand({ RoleName: 'KarpenterNodeRole-c1' }));
    expect(role.Role?.Tags).toContainEqual({ Key: 'capenter.io/bootstrap-cluster', Value: 'c1' });
    const attached = await c.iam.send(
      new ListAttachedRolePoliciesCommand({ RoleName: 'KarpenterNodeRole-c1' }),
    );
    expect((attached.AttachedPolicies ?? []).map((p) => p.PolicyName).sort()).toEqual([
      'AmazonEC2ContainerRegistryPullOnly',
      'AmazonEKSWorkerNodePolicy',
      'AmazonEKS_CNI_Policy',
      'AmazonSSMManagedInstanceCore',
    ]);
    const profile = await c.iam.send(
      new GetInstanceProfileCommand({ InstanceProfileName: 'KarpenterNodeInstanceProfile-c1' }),
    );
    expect(profile.InstanceProfile?.Roles?.map((r) => r.RoleName)).toEqual(['KarpenterNodeRole-c1']);
    const url = (await c.sqs.send(new GetQueueUrlCommand({ QueueName: 'c1' }))).QueueUrl;
    const attrs = (
      await c.sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['All'] }))
    ).Attributes!;
    expect(attrs.MessageRetentionPeriod).toBe('300');
    expect(attrs.SqsManagedSseEnabled).toBe('true');
    const rule = await c.events.send(new DescribeRuleCommand({ Name: 'Karpenter-c1-SpotInterruption' }));
    expect(JSON.parse(rule.EventPattern!)).toEqual({
      source: ['aws.ec2'],
      'detail-type': ['EC2 Spot Instance Interruption Warning'],
    });
    const targets = await c.events.send(
      new ListTargetsByRuleCommand({ Rule: 'Karpenter-c1-SpotInterruption' }),
    );
    expect(targets.Targets?.map((t) => t.Arn)).toEqual([`arn:aws:sqs:${moto.region}:${ACCOUNT}:c1`]);
    const controller = await c.iam.send(new ListAttachedRolePoliciesCommand({ RoleName: 'c1-karpenter' }));
    expect(controller.AttachedPolicies).toHaveLength(5);

    // Golden: the dry-run CloudFormation template, references resolved, equals the created documents.
    const tpl = await run({
      clusterName: 'c1',
      region: moto.region,
      controllerRole: 'c1-karpenter',
      dryRun: true,
      output: 'cloudformation',
    });
    expect(tpl.code).toBe(0);
    const template = parseYaml(tpl.out) as {
      Resources: Record<string, { Type: string; Properties: Record<string, unknown> }>;
    };
    expect(Object.fromEntries(Object.entries(template.Resources).map(([k, v]) => [k, v.Type]))).toEqual({
      KarpenterNodeRole: 'AWS::IAM::Role',
      KarpenterNodeInstanceProfile: 'AWS::IAM::InstanceProfile',
      KarpenterInterruptionQueue: 'AWS::SQS::Queue',
      KarpenterInterruptionQueuePolicy: 'AWS::SQS::QueuePolicy',
      ScheduledChangeRule: 'AWS::Events::Rule',
      SpotInterruptionRule: 'AWS::Events::Rule',
      RebalanceRule: 'AWS::Events::Rule',
      InstanceStateChangeRule: 'AWS::Events::Rule',
      NodeLifecyclePolicy: 'AWS::IAM::ManagedPolicy',
      IAMIntegrationPolicy: 'AWS::IAM::ManagedPolicy',
      EKSIntegrationPolicy: 'AWS::IAM::ManagedPolicy',
      InterruptionPolicy: 'AWS::IAM::ManagedPolicy',
      ResourceDiscoveryPolicy: 'AWS::IAM::ManagedPolicy',
    });
    const vars = {
      'AWS::Partition': 'aws',
      'AWS::Region': moto.region,
      'AWS::AccountId': ACCOUNT,
      ClusterName: 'c1',
    };
    for (const key of [
      'NodeLifecyclePolicy',
      'IAMIntegrationPolicy',
      'EKSIntegrationPolicy',
      'InterruptionPolicy',
      'ResourceDiscoveryPolicy',
    ]) {
      const props = template.Resources[key]!.Properties;
      const name = resolveSub(props.ManagedPolicyName, vars) as string;
      const arn = `arn:aws:iam::${ACCOUNT}:policy/${name}`;
      const pol = await c.iam.send(new GetPolicyCommand({ PolicyArn: arn }));
      const ver = await c.iam.send(
        new GetPolicyVersionCommand({ PolicyArn: arn, VersionId: pol.Policy!.DefaultVersionId }),
      );
      const created = JSON.parse(decodeURIComponent(ver.PolicyVersion!.Document!));
      expect(JSON.parse(resolveSub(props.PolicyDocument, vars) as string), `${key} document`).toEqual(
        created,
      );
      expect(props.Roles).toEqual(['c1-karpenter']);
    }
    const qp = template.Resources.KarpenterInterruptionQueuePolicy!.Properties.PolicyDocument;
    expect(JSON.parse(resolveSub(qp, vars) as string)).toEqual(JSON.parse(attrs.Policy!));
    expect(resolveSub(template.Resources.SpotInterruptionRule!.Properties.Name, vars)).toBe(
      'Karpenter-c1-SpotInterruption',
    );

    // Second run: nothing changes, and it says so.
    const second = await run({ clusterName: 'c1', region: moto.region, controllerRole: 'c1-karpenter' });
    expect(second.code, JSON.stringify(second.json?.resources.filter((r) => r.result !== 'unchanged'))).toBe(
      0,
    );
    expect(second.json!.summary).toBe('nothing to change: all 17 resources exist as planned');
    expect(new Set(second.json!.resources.map((r) => r.result))).toEqual(new Set(['unchanged']));

    // A drifted attribute is put back (the policy is passed along: moto drops it otherwise, real SQS keeps it).
    await c.sqs.send(
      new SetQueueAttributesCommand({
        QueueUrl: url,
        Attributes: { MessageRetentionPeriod: '600', Policy: attrs.Policy! },
      }),
    );
    const third = await run({ clusterName: 'c1', region: moto.region, controllerRole: 'c1-karpenter' });
    expect(third.json!.resources.find((r) => r.resource === 'SQSQueue c1')).toEqual({
      type: 'SQSQueue',
      key: 'KarpenterInterruptionQueue',
      resource: 'SQSQueue c1',
      result: 'updated',
      detail: 'MessageRetentionPeriod 600 → 300',
    });

    // Delete removes exactly what was created; a second delete finds nothing.
    const del = await run({
      clusterName: 'c1',
      region: moto.region,
      controllerRole: 'c1-karpenter',
      delete: true,
    });
    expect(del.code).toBe(0);
    expect(del.json!.summary).toBe('deleted 17');
    await expect(c.iam.send(new GetRoleCommand({ RoleName: 'KarpenterNodeRole-c1' }))).rejects.toThrow();
    await expect(c.iam.send(new GetRoleCommand({ RoleName: 'c1-karpenter' }))).resolves.toBeDefined();
    const again = await run({ clusterName: 'c1', region: moto.region, delete: true });
    expect(again.json!.summary).toBe('nothing to delete for cluster c1');
  }, 120_000);

  it('refuses a same-named resource it did not create, before creating anything', async () => {
    const c = clients();
    await c.iam.send(
      new CreateRoleCommand({ RoleName: 'KarpenterNodeRole-c2', AssumeRolePolicyDocument: '{}' }),
    );
    const r = await run({ clusterName: 'c2', region: moto.region });
    expect(r.code).toBe(1);
    expect(r.json!.summary).toBe(
      'refused: IAMRole KarpenterNodeRole-c2 already exists and was not created by capenter bootstrap; nothing was changed',
    );
    expect(r.json!.resources[0]!.detail).toContain('tag it capenter.io/bootstrap-cluster=c2 to adopt it');
    expect(r.json!.resources.filter((x) => x.result === 'not attempted')).toHaveLength(11);
    await expect(c.sqs.send(new GetQueueUrlCommand({ QueueName: 'c2' }))).rejects.toThrow();
    // --delete leaves it alone too.
    const del = await run({ clusterName: 'c2', region: moto.region, delete: true });
    expect(del.json!.summary).toBe(
      'nothing to delete for cluster c2 (1 same-named resources not created by capenter left in place)',
    );
    await expect(c.iam.send(new GetRoleCommand({ RoleName: 'KarpenterNodeRole-c2' }))).resolves.toBeDefined();
  }, 60_000);

  it('a denied call names the action and the resource and reports what already exists', async () => {
    const denyCreateQueue = (region: string) => {
      const cs = clients(region);
      cs.sqs.middlewareStack.add(
        (next, ctx) => async (args) => {
          if (ctx.commandName === 'CreateQueueCommand')
            throw Object.assign(
              new Error(
                'User: arn:aws:iam::123456789012:user/ci is not authorized to perform: sqs:createqueue',
              ),
              {
                name: 'AccessDenied',
              },
            );
          return next(args);
        },
        { step: 'initialize' },
      );
      return cs;
    };
    const r = await run({ clusterName: 'c3', region: moto.region }, denyCreateQueue);
    expect(r.code).toBe(1);
    expect(results(r.json!)).toMatchObject({
      'IAMRole KarpenterNodeRole-c3': 'created',
      'IAMInstanceProfile KarpenterNodeInstanceProfile-c3': 'created',
      'SQSQueue c3': 'failed',
      'EventBridgeRule Karpenter-c3-ScheduledChange': 'not attempted',
    });
    expect(r.json!.summary).toBe(
      'failed: sqs:CreateQueue on SQSQueue c3 failed: AccessDenied: User: arn:aws:iam::123456789012:user/ci is not authorized to perform: sqs:createqueue — the caller lacks permission sqs:CreateQueue. Created by this run and left in place (run again to finish, or --delete to remove): IAMRole KarpenterNodeRole-c3, IAMInstanceProfile KarpenterNodeInstanceProfile-c3',
    );
  }, 60_000);

  it('a call failing after the role was created reports the role as existing, and a second run finishes it', async () => {
    // CreateRole succeeds, the first AttachRolePolicy is denied: the role exists (it said "Nothing was created").
    const denyAttach = (region: string) => {
      const cs = clients(region);
      cs.iam.middlewareStack.add(
        (next, ctx) => async (args) => {
          if (ctx.commandName === 'AttachRolePolicyCommand')
            throw Object.assign(new Error('not authorized to perform: iam:AttachRolePolicy'), {
              name: 'AccessDenied',
            });
          return next(args);
        },
        { step: 'initialize' },
      );
      return cs;
    };
    const r = await run({ clusterName: 'c5', region: moto.region }, denyAttach);
    expect(r.code).toBe(1);
    expect(r.json!.resources[0]).toEqual({
      type: 'IAMRole',
      key: 'KarpenterNodeRole',
      resource: 'IAMRole KarpenterNodeRole-c5',
      result: 'incomplete',
      detail:
        'iam:AttachRolePolicy on IAMRole KarpenterNodeRole-c5 failed: AccessDenied: not authorized to perform: iam:AttachRolePolicy — the caller lacks permission iam:AttachRolePolicy',
    });
    expect(r.json!.summary).toBe(
      'failed: iam:AttachRolePolicy on IAMRole KarpenterNodeRole-c5 failed: AccessDenied: not authorized to perform: iam:AttachRolePolicy — the caller lacks permission iam:AttachRolePolicy. Created by this run and left in place (run again to finish, or --delete to remove): IAMRole KarpenterNodeRole-c5 (incomplete)',
    );
    expect(r.json!.resources.slice(1).map((x) => x.result)).toEqual(Array(11).fill('not attempted'));
    const c = clients();
    const role = await c.iam.send(new GetRoleCommand({ RoleName: 'KarpenterNodeRole-c5' }));
    expect(role.Role!.Tags).toContainEqual({ Key: 'capenter.io/bootstrap-cluster', Value: 'c5' });
    expect(
      (await c.iam.send(new ListAttachedRolePoliciesCommand({ RoleName: 'KarpenterNodeRole-c5' })))
        .AttachedPolicies,
    ).toEqual([]);
    // A second run with the permission adopts the tagged role and attaches its policies.
    const again = await run({ clusterName: 'c5', region: moto.region });
    expect(again.code).toBe(0);
    expect(again.json!.resources[0]!.result).toBe('updated');
    expect(
      (await c.iam.send(new ListAttachedRolePoliciesCommand({ RoleName: 'KarpenterNodeRole-c5' })))
        .AttachedPolicies?.length,
    ).toBe(4);
    expect(again.json!.summary).toBe('created 11, updated 1, unchanged 0');
  }, 60_000);

  it('reads region, tags and the worker instance profile from a CAPA management cluster', async () => {
    const crdDir = join(here, '..', 'fixtures', 'crds');
    const crds = [
      'cluster-api/cluster.x-k8s.io_clusters.yaml',
      'cluster-api-provider-aws/infrastructure.cluster.x-k8s.io_awsclusters.yaml',
      'cluster-api-provider-aws/infrastructure.cluster.x-k8s.io_awsmachinetemplates.yaml',
      'cluster-api-provider-aws/infrastructure.cluster.x-k8s.io_awsmachinepools.yaml',
    ].flatMap((f) =>
      parseAllDocuments(readFileSync(join(crdDir, f), 'utf8')).map((d) => d.toJS() as KubeObject),
    );
    const mgmt = await startSimulatedCluster({
      extraCRDs: crds,
      components: { scheduler: false, kubelet: false, podGC: false, workloads: false },
    });
    try {
      await mgmt.client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'org-a' } });
      await mgmt.client.create({
        apiVersion: 'infrastructure.cluster.x-k8s.io/v1beta2',
        kind: 'AWSCluster',
        metadata: { name: 'prod-1', namespace: 'org-a' },
        spec: { region: 'eu-west-1', additionalTags: { team: 'platform' } },
      } as KubeObject);
      await mgmt.client.create({
        apiVersion: 'cluster.x-k8s.io/v1beta2',
        kind: 'Cluster',
        metadata: { name: 'prod-1', namespace: 'org-a' },
        spec: {
          infrastructureRef: {
            apiGroup: 'infrastructure.cluster.x-k8s.io',
            kind: 'AWSCluster',
            name: 'prod-1',
          },
        },
      } as KubeObject);
      await mgmt.client.create({
        apiVersion: 'infrastructure.cluster.x-k8s.io/v1beta2',
        kind: 'AWSMachineTemplate',
        metadata: {
          name: 'prod-1-md-0',
          namespace: 'org-a',
          labels: { 'cluster.x-k8s.io/cluster-name': 'prod-1' },
        },
        spec: {
          template: {
            spec: {
              instanceType: 'm5.large',
              iamInstanceProfile: 'nodes.cluster-api-provider-aws.sigs.k8s.io',
            },
          },
        },
      } as KubeObject);
      const eu = clients('eu-west-1');
      await eu.iam.send(
        new CreateRoleCommand({
          RoleName: 'nodes.cluster-api-provider-aws.sigs.k8s.io',
          AssumeRolePolicyDocument: '{}',
        }),
      );
      await eu.iam.send(
        new CreateInstanceProfileCommand({
          InstanceProfileName: 'nodes.cluster-api-provider-aws.sigs.k8s.io',
        }),
      );
      await eu.iam.send(
        new AddRoleToInstanceProfileCommand({
          InstanceProfileName: 'nodes.cluster-api-provider-aws.sigs.k8s.io',
          RoleName: 'nodes.cluster-api-provider-aws.sigs.k8s.io',
        }),
      );
      const r = await run({ capiKubeconfig: mgmt.kubeconfig, capiCluster: 'org-a/prod-1' });
      expect(r.err).toBe('');
      expect(r.code).toBe(0);
      expect(r.json!.region).toBe('eu-west-1');
      expect(r.json!.clusterName).toBe('prod-1');
      expect(r.json!.notices).toContain(
        "reusing CAPA's worker instance profile nodes.cluster-api-provider-aws.sigs.k8s.io (role nodes.cluster-api-provider-aws.sigs.k8s.io): no node role is created",
      );
      expect(r.json!.resources.map((x) => x.type)).not.toContain('IAMRole');
      const q = (await eu.sqs.send(new GetQueueUrlCommand({ QueueName: 'prod-1' }))).QueueUrl;
      expect(q).toContain('prod-1');
      const pol = await eu.iam.send(
        new GetPolicyVersionCommand({
          PolicyArn: `arn:aws:iam::${ACCOUNT}:policy/KarpenterControllerIAMIntegrationPolicy-prod-1`,
          VersionId: 'v1',
        }),
      );
      const doc = JSON.parse(decodeURIComponent(pol.PolicyVersion!.Document!));
      expect(doc.Statement[0].Resource).toBe(
        `arn:aws:iam::${ACCOUNT}:role/nodes.cluster-api-provider-aws.sigs.k8s.io`,
      );
    } finally {
      await mgmt.stop();
    }
  }, 60_000);

  it('bad input exits 2 naming the flag', async () => {
    expect((await run({ region: moto.region })).err).toBe(
      'error: --cluster-name is required (or --capi-cluster NAMESPACE/NAME)\n',
    );
    const bad = await run({ clusterName: 'my cluster', region: moto.region });
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('--cluster-name "my cluster": use 1–80 letters, digits, "-" or "_"');
    expect((await run({ clusterName: 'c', region: moto.region, output: 'cloudformation' })).err).toBe(
      'error: -o cloudformation prints a template and needs --dry-run\n',
    );
  });
});
