/**
 * Carries out a {@link BootstrapPlan} with AWS SDK v3 (IAM, SQS, EventBridge), idempotently:
 * 1. inspect every resource read-only: absent, ours (carries {@link BOOTSTRAP_TAG} for this cluster), or
 *    foreign (same name, not ours);
 * 2. any foreign resource → refuse before creating anything (a name collision is never adopted or changed);
 * 3. create what is absent, update what is ours but differs, leave the rest (`unchanged`).
 * `deleteBootstrap` removes only resources that carry the tag, in reverse order. A failed call stops the run;
 * the report then names the action and the resource and lists what exists. Credentials come only from the
 * SDK's default chain (the injected clients); nothing here logs them.
 */
import {
  DeleteRuleCommand,
  DescribeRuleCommand,
  type EventBridgeClient,
  ListTagsForResourceCommand,
  ListTargetsByRuleCommand,
  PutRuleCommand,
  PutTargetsCommand,
  RemoveTargetsCommand,
} from '@aws-sdk/client-eventbridge';
import {
  AddRoleToInstanceProfileCommand,
  AttachRolePolicyCommand,
  CreateInstanceProfileCommand,
  CreatePolicyCommand,
  CreatePolicyVersionCommand,
  CreateRoleCommand,
  DeleteInstanceProfileCommand,
  DeletePolicyCommand,
  DeletePolicyVersionCommand,
  DeleteRoleCommand,
  DetachRolePolicyCommand,
  GetInstanceProfileCommand,
  GetPolicyCommand,
  GetPolicyVersionCommand,
  GetRoleCommand,
  type IAMClient,
  ListAttachedRolePoliciesCommand,
  ListEntitiesForPolicyCommand,
  ListPolicyTagsCommand,
  ListPolicyVersionsCommand,
  RemoveRoleFromInstanceProfileCommand,
  UpdateAssumeRolePolicyCommand,
} from '@aws-sdk/client-iam';
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  ListQueueTagsCommand,
  SetQueueAttributesCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { BOOTSTRAP_TAG, type BootstrapPlan, type PlannedResource, resourceLabel } from './plan.ts';

/** The SDK clients the bootstrap uses (built by the caller from the default credential chain). */
export interface BootstrapClients {
  iam: IAMClient;
  sqs: SQSClient;
  events: EventBridgeClient;
}

/** What happened to one resource. */
export type Result =
  | 'created'
  | 'updated'
  | 'unchanged'
  | 'deleted'
  | 'absent'
  | 'exists'
  | 'refused'
  | 'failed'
  /** Created by this run, then a later call on it failed: it exists, not yet as planned. */
  | 'incomplete'
  | 'not attempted';

/** One line of the report. */
export interface ResourceOutcome {
  type: PlannedResource['type'];
  /** Upstream's CloudFormation logical ID. */
  key: string;
  /** `Type name` label. */
  resource: string;
  result: Result;
  /** What changed, why it was refused, or the failed action and error. */
  detail?: string;
}

/** The report of an apply or delete run. */
export interface BootstrapReport {
  clusterName: string;
  region: string;
  accountId: string;
  /** True when every resource ended as planned. */
  ok: boolean;
  /** One sentence: "created 12", "nothing to change", "refused: …", "failed: …". */
  summary: string;
  resources: ResourceOutcome[];
}

/** A failed AWS call: the action (`iam:CreateRole`), the resource, the SDK error name and message. */
export class BootstrapCallError extends Error {
  readonly code = 'BootstrapCallFailed';
  constructor(
    readonly action: string,
    readonly resource: string,
    readonly errorName: string,
    message: string,
  ) {
    super(
      `${action} on ${resource} failed: ${errorName}: ${message}${
        /AccessDenied|UnauthorizedOperation|not authorized/i.test(`${errorName} ${message}`)
          ? ` — the caller lacks permission ${action}`
          : ''
      }`,
    );
  }
}

const NOT_FOUND = new Set([
  'NoSuchEntityException',
  'NoSuchEntity',
  'QueueDoesNotExist',
  'AWS.SimpleQueueService.NonExistentQueue',
  'ResourceNotFoundException',
]);

function isNotFound(err: unknown): boolean {
  const e = err as { name?: string; Code?: string };
  return NOT_FOUND.has(e?.name ?? '') || NOT_FOUND.has(e?.Code ?? '');
}

async function call<T>(action: string, resource: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (isNotFound(err)) throw err;
    const e = err as { name?: string; message?: string };
    throw new BootstrapCallError(action, resource, e.name ?? 'Error', e.message ?? String(err));
  }
}

async function orUndefined<T>(p: Promise<T>): Promise<T | undefined> {
  try {
    return await p;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

const tagList = (tags: Record<string, string>) =>
  Object.entries(tags).map(([Key, Value]) => ({ Key, Value }));
const ours = (
  tags: Array<{ Key?: string | undefined; Value?: string | undefined }> | Record<string, string> | undefined,
  cluster: string,
) =>
  Array.isArray(tags)
    ? tags.some((t) => t.Key === BOOTSTRAP_TAG && t.Value === cluster)
    : tags?.[BOOTSTRAP_TAG] === cluster;
const sameJson = (a: unknown, b: unknown) => JSON.stringify(sortKeys(a)) === JSON.stringify(sortKeys(b));
function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v && typeof v === 'object')
    return Object.fromEntries(
      Object.keys(v as object)
        .sort()
        .map((k) => [k, sortKeys((v as Record<string, unknown>)[k])]),
    );
  return v;
}
const decodeDoc = (s: string | undefined): unknown => (s ? JSON.parse(decodeURIComponent(s)) : undefined);

/** The inspected state of one resource. */
type State = { kind: 'absent' } | { kind: 'foreign'; why: string } | { kind: 'ours'; changes: string[] };

/** Reads one resource and compares it with the plan (read-only calls). */
async function inspect(c: BootstrapClients, plan: BootstrapPlan, r: PlannedResource): Promise<State> {
  const cluster = plan.input.clusterName;
  const label = resourceLabel(r);
  switch (r.type) {
    case 'IAMRole': {
      const got = await orUndefined(
        call('iam:GetRole', label, () => c.iam.send(new GetRoleCommand({ RoleName: r.name }))),
      );
      if (!got?.Role) return { kind: 'absent' };
      if (!ours(got.Role.Tags, cluster))
        return { kind: 'foreign', why: `role ${r.name} exists without tag ${BOOTSTRAP_TAG}=${cluster}` };
      const changes: string[] = [];
      if (!sameJson(decodeDoc(got.Role.AssumeRolePolicyDocument), r.trustPolicy))
        changes.push('trust policy');
      const attached = await call('iam:ListAttachedRolePolicies', label, () =>
        c.iam.send(new ListAttachedRolePoliciesCommand({ RoleName: r.name })),
      );
      const have = new Set((attached.AttachedPolicies ?? []).map((p) => p.PolicyArn));
      const missing = r.managedPolicyArns.filter((a) => !have.has(a));
      if (missing.length) changes.push(`attach ${missing.map((m) => m.replace(/^.*\//, '')).join(', ')}`);
      return { kind: 'ours', changes };
    }
    case 'IAMInstanceProfile': {
      const got = await orUndefined(
        call('iam:GetInstanceProfile', label, () =>
          c.iam.send(new GetInstanceProfileCommand({ InstanceProfileName: r.name })),
        ),
      );
      if (!got?.InstanceProfile) return { kind: 'absent' };
      // GetInstanceProfile returns the tags (ListInstanceProfileTags is not needed, and moto lacks it).
      if (!ours(got.InstanceProfile.Tags, cluster))
        return {
          kind: 'foreign',
          why: `instance profile ${r.name} exists without tag ${BOOTSTRAP_TAG}=${cluster}`,
        };
      const roles = (got.InstanceProfile.Roles ?? []).map((x) => x.RoleName);
      return { kind: 'ours', changes: roles.includes(r.roleName) ? [] : [`add role ${r.roleName}`] };
    }
    case 'IAMManagedPolicy': {
      const got = await orUndefined(
        call('iam:GetPolicy', label, () => c.iam.send(new GetPolicyCommand({ PolicyArn: r.arn }))),
      );
      if (!got?.Policy) return { kind: 'absent' };
      const tags = await call('iam:ListPolicyTags', label, () =>
        c.iam.send(new ListPolicyTagsCommand({ PolicyArn: r.arn })),
      );
      if (!ours(tags.Tags, cluster))
        return { kind: 'foreign', why: `policy ${r.name} exists without tag ${BOOTSTRAP_TAG}=${cluster}` };
      const v = await call('iam:GetPolicyVersion', label, () =>
        c.iam.send(
          new GetPolicyVersionCommand({ PolicyArn: r.arn, VersionId: got.Policy?.DefaultVersionId }),
        ),
      );
      return {
        kind: 'ours',
        changes: sameJson(decodeDoc(v.PolicyVersion?.Document), r.document) ? [] : ['policy document'],
      };
    }
    case 'SQSQueue': {
      const url = await orUndefined(
        call('sqs:GetQueueUrl', label, () => c.sqs.send(new GetQueueUrlCommand({ QueueName: r.name }))),
      );
      if (!url?.QueueUrl) return { kind: 'absent' };
      const tags = await call('sqs:ListQueueTags', label, () =>
        c.sqs.send(new ListQueueTagsCommand({ QueueUrl: url.QueueUrl })),
      );
      if (!ours(tags.Tags, cluster))
        return { kind: 'foreign', why: `queue ${r.name} exists without tag ${BOOTSTRAP_TAG}=${cluster}` };
      const attrs = await call('sqs:GetQueueAttributes', label, () =>
        c.sqs.send(new GetQueueAttributesCommand({ QueueUrl: url.QueueUrl, AttributeNames: ['All'] })),
      );
      const a: Record<string, string | undefined> = attrs.Attributes ?? {};
      const changes: string[] = [];
      for (const [k, v] of Object.entries(r.attributes))
        if (a[k] !== v) changes.push(`${k} ${a[k] ?? 'unset'} → ${v}`);
      if (!a.Policy || !sameJson(JSON.parse(a.Policy), r.policy)) changes.push('queue policy');
      return { kind: 'ours', changes };
    }
    case 'EventBridgeRule': {
      const got = await orUndefined(
        call('events:DescribeRule', label, () => c.events.send(new DescribeRuleCommand({ Name: r.name }))),
      );
      if (!got?.Arn) return { kind: 'absent' };
      const tags = await call('events:ListTagsForResource', label, () =>
        c.events.send(new ListTagsForResourceCommand({ ResourceARN: got.Arn })),
      );
      if (!ours(tags.Tags, cluster))
        return { kind: 'foreign', why: `rule ${r.name} exists without tag ${BOOTSTRAP_TAG}=${cluster}` };
      const changes: string[] = [];
      if (!got.EventPattern || !sameJson(JSON.parse(got.EventPattern), r.pattern))
        changes.push('event pattern');
      const targets = await call('events:ListTargetsByRule', label, () =>
        c.events.send(new ListTargetsByRuleCommand({ Rule: r.name })),
      );
      if (!(targets.Targets ?? []).some((t) => t.Arn === r.targetArn)) changes.push('target');
      return { kind: 'ours', changes };
    }
    case 'RolePolicyAttachment': {
      const attached = await call('iam:ListAttachedRolePolicies', label, () =>
        c.iam.send(new ListAttachedRolePoliciesCommand({ RoleName: r.roleName })),
      );
      return (attached.AttachedPolicies ?? []).some((p) => p.PolicyArn === r.policyArn)
        ? { kind: 'ours', changes: [] }
        : { kind: 'absent' };
    }
  }
}

/** A planned resource of one type. */
type Planned<T extends PlannedResource['type']> = Extract<PlannedResource, { type: T }>;
/** Resource tags in the IAM/EventBridge list form. */
type Tag = { Key: string; Value: string };
/**
 * How far a `put` got: `created` turns true as soon as the call that creates the resource returned, so a failure
 * in a later call on it (AttachRolePolicy, AddRoleToInstanceProfile, PutTargets) is reported as a resource that
 * exists, not as one that was never made.
 */
type Progress = { created: boolean };

/** Creates the node role (or updates its trust policy) and attaches its managed policies. */
async function putRole(
  c: BootstrapClients,
  r: Planned<'IAMRole'>,
  Tags: Tag[],
  create: boolean,
  progress: Progress,
): Promise<void> {
  const label = resourceLabel(r);
  if (create) {
    await call('iam:CreateRole', label, () =>
      c.iam.send(
        new CreateRoleCommand({
          RoleName: r.name,
          Path: '/',
          AssumeRolePolicyDocument: JSON.stringify(r.trustPolicy),
          Tags,
        }),
      ),
    );
    progress.created = true;
  } else
    await call('iam:UpdateAssumeRolePolicy', label, () =>
      c.iam.send(
        new UpdateAssumeRolePolicyCommand({
          RoleName: r.name,
          PolicyDocument: JSON.stringify(r.trustPolicy),
        }),
      ),
    );
  for (const arn of r.managedPolicyArns)
    await call('iam:AttachRolePolicy', label, () =>
      c.iam.send(new AttachRolePolicyCommand({ RoleName: r.name, PolicyArn: arn })),
    );
}

/**
 * Creates a managed policy, or gives an existing one a new default version with the planned document (IAM keeps
 * at most 5 versions: at 5, the oldest non-default one is deleted first).
 */
async function putManagedPolicy(
  c: BootstrapClients,
  r: Planned<'IAMManagedPolicy'>,
  Tags: Tag[],
  create: boolean,
): Promise<void> {
  const label = resourceLabel(r);
  if (create) {
    await call('iam:CreatePolicy', label, () =>
      c.iam.send(
        new CreatePolicyCommand({
          PolicyName: r.name,
          Path: '/',
          PolicyDocument: JSON.stringify(r.document),
          Tags,
        }),
      ),
    );
    return;
  }
  const versions = await call('iam:ListPolicyVersions', label, () =>
    c.iam.send(new ListPolicyVersionsCommand({ PolicyArn: r.arn })),
  );
  const old = (versions.Versions ?? []).filter((v) => !v.IsDefaultVersion);
  if ((versions.Versions ?? []).length >= 5 && old.length)
    await call('iam:DeletePolicyVersion', label, () =>
      c.iam.send(
        new DeletePolicyVersionCommand({ PolicyArn: r.arn, VersionId: old[old.length - 1]!.VersionId }),
      ),
    );
  await call('iam:CreatePolicyVersion', label, () =>
    c.iam.send(
      new CreatePolicyVersionCommand({
        PolicyArn: r.arn,
        PolicyDocument: JSON.stringify(r.document),
        SetAsDefault: true,
      }),
    ),
  );
}

/** Creates the interruption queue (tagged), or sets the attributes and policy of the existing one. */
async function putQueue(
  c: BootstrapClients,
  plan: BootstrapPlan,
  r: Planned<'SQSQueue'>,
  create: boolean,
): Promise<void> {
  const label = resourceLabel(r);
  const Attributes = { ...r.attributes, Policy: JSON.stringify(r.policy) };
  if (create) {
    await call('sqs:CreateQueue', label, () =>
      c.sqs.send(new CreateQueueCommand({ QueueName: r.name, Attributes, tags: plan.tags })),
    );
    return;
  }
  const url = await call('sqs:GetQueueUrl', label, () =>
    c.sqs.send(new GetQueueUrlCommand({ QueueName: r.name })),
  );
  await call('sqs:SetQueueAttributes', label, () =>
    c.sqs.send(new SetQueueAttributesCommand({ QueueUrl: url.QueueUrl, Attributes })),
  );
}

/** Puts an EventBridge rule (tagged when created) and its target, the interruption queue. */
async function putRule(
  c: BootstrapClients,
  plan: BootstrapPlan,
  r: Planned<'EventBridgeRule'>,
  Tags: Tag[],
  create: boolean,
  progress: Progress,
): Promise<void> {
  const label = resourceLabel(r);
  await call('events:PutRule', label, () =>
    c.events.send(
      new PutRuleCommand({
        Name: r.name,
        EventPattern: JSON.stringify(r.pattern),
        State: 'ENABLED',
        Description: `Karpenter interruption events for cluster ${plan.input.clusterName} (capenter bootstrap)`,
        ...(create ? { Tags } : {}),
      }),
    ),
  );
  if (create) progress.created = true;
  await call('events:PutTargets', label, () =>
    c.events.send(
      new PutTargetsCommand({
        Rule: r.name,
        Targets: [{ Id: 'KarpenterInterruptionQueueTarget', Arn: r.targetArn }],
      }),
    ),
  );
}

/** Creates (or brings up to date) one resource. */
async function put(
  c: BootstrapClients,
  plan: BootstrapPlan,
  r: PlannedResource,
  state: State,
  progress: Progress,
): Promise<void> {
  const label = resourceLabel(r);
  const Tags = tagList(plan.tags);
  const create = state.kind === 'absent';
  switch (r.type) {
    case 'IAMRole':
      return putRole(c, r, Tags, create, progress);
    case 'IAMInstanceProfile':
      if (create) {
        await call('iam:CreateInstanceProfile', label, () =>
          c.iam.send(new CreateInstanceProfileCommand({ InstanceProfileName: r.name, Path: '/', Tags })),
        );
        progress.created = true;
      }
      await call('iam:AddRoleToInstanceProfile', label, () =>
        c.iam.send(
          new AddRoleToInstanceProfileCommand({ InstanceProfileName: r.name, RoleName: r.roleName }),
        ),
      );
      return;
    case 'IAMManagedPolicy':
      return putManagedPolicy(c, r, Tags, create);
    case 'SQSQueue':
      return putQueue(c, plan, r, create);
    case 'EventBridgeRule':
      return putRule(c, plan, r, Tags, create, progress);
    case 'RolePolicyAttachment':
      await call('iam:AttachRolePolicy', label, () =>
        c.iam.send(new AttachRolePolicyCommand({ RoleName: r.roleName, PolicyArn: r.policyArn })),
      );
      return;
  }
}

function outcome(r: PlannedResource, result: Result, detail?: string): ResourceOutcome {
  return { type: r.type, key: r.key, resource: resourceLabel(r), result, ...(detail ? { detail } : {}) };
}

function report(
  plan: BootstrapPlan,
  resources: ResourceOutcome[],
  ok: boolean,
  summary: string,
): BootstrapReport {
  return {
    clusterName: plan.input.clusterName,
    region: plan.input.region,
    accountId: plan.input.accountId,
    ok,
    summary,
    resources,
  };
}

/**
 * The sentence that says what a failed run left behind: every resource this run created, in creation order,
 * including the one whose later call failed (`(incomplete)`); "Nothing was created" only when that list is empty.
 */
function createdBeforeFailure(rows: ResourceOutcome[]): string {
  const made = rows.flatMap((x) =>
    x.result === 'created' ? [x.resource] : x.result === 'incomplete' ? [`${x.resource} (incomplete)`] : [],
  );
  return made.length
    ? `Created by this run and left in place (run again to finish, or --delete to remove): ${made.join(', ')}`
    : 'Nothing was created';
}

/**
 * Creates or updates everything in the plan. Never throws for AWS errors: they end the run and are reported.
 */
export async function applyBootstrap(c: BootstrapClients, plan: BootstrapPlan): Promise<BootstrapReport> {
  const states: State[] = [];
  try {
    for (const r of plan.resources) states.push(await inspect(c, plan, r));
  } catch (err) {
    const done = plan.resources
      .slice(0, states.length)
      .map((r, i) => outcome(r, states[i]!.kind === 'absent' ? 'absent' : 'exists'));
    const failed = outcome(plan.resources[states.length]!, 'failed', (err as Error).message);
    return report(
      plan,
      [...done, failed],
      false,
      `failed while reading: ${(err as Error).message}; nothing was changed`,
    );
  }
  const foreign = states.flatMap((s, i) =>
    s.kind === 'foreign' ? [{ r: plan.resources[i]!, why: s.why }] : [],
  );
  if (foreign.length > 0) {
    const rows = plan.resources.map((r, i) => {
      const s = states[i]!;
      return s.kind === 'foreign'
        ? outcome(
            r,
            'refused',
            `${s.why}: rename or delete it, or tag it ${BOOTSTRAP_TAG}=${plan.input.clusterName} to adopt it`,
          )
        : outcome(r, s.kind === 'absent' ? 'not attempted' : 'exists');
    });
    return report(
      plan,
      rows,
      false,
      `refused: ${foreign.map((f) => resourceLabel(f.r)).join(', ')} already exist${foreign.length === 1 ? 's' : ''} and ${foreign.length === 1 ? 'was' : 'were'} not created by capenter bootstrap; nothing was changed`,
    );
  }
  const rows: ResourceOutcome[] = [];
  for (let i = 0; i < plan.resources.length; i++) {
    const r = plan.resources[i]!;
    const s = states[i]!;
    if (s.kind === 'ours' && s.changes.length === 0) {
      rows.push(outcome(r, 'unchanged'));
      continue;
    }
    const progress: Progress = { created: false };
    try {
      await put(c, plan, r, s, progress);
      rows.push(
        outcome(
          r,
          s.kind === 'absent' ? 'created' : 'updated',
          s.kind === 'ours' ? s.changes.join('; ') : undefined,
        ),
      );
    } catch (err) {
      const msg = (err as Error).message;
      rows.push(outcome(r, progress.created ? 'incomplete' : 'failed', msg));
      for (const rest of plan.resources.slice(i + 1)) {
        const st = states[plan.resources.indexOf(rest)]!;
        rows.push(outcome(rest, st.kind === 'absent' ? 'not attempted' : 'exists'));
      }
      return report(plan, rows, false, `failed: ${msg}. ${createdBeforeFailure(rows)}`);
    }
  }
  const counts = (k: Result) => rows.filter((x) => x.result === k).length;
  const changed = counts('created') + counts('updated');
  return report(
    plan,
    rows,
    true,
    changed === 0
      ? `nothing to change: all ${rows.length} resources exist as planned`
      : `created ${counts('created')}, updated ${counts('updated')}, unchanged ${counts('unchanged')}`,
  );
}

/** Deletes, in reverse order, every planned resource that carries the bootstrap tag (and the attachments). */
export async function deleteBootstrap(c: BootstrapClients, plan: BootstrapPlan): Promise<BootstrapReport> {
  const rows: ResourceOutcome[] = [];
  const cluster = plan.input.clusterName;
  for (const r of [...plan.resources].reverse()) {
    const label = resourceLabel(r);
    try {
      const s = await inspect(c, plan, r);
      if (s.kind === 'absent') {
        rows.push(outcome(r, 'absent'));
        continue;
      }
      if (s.kind === 'foreign') {
        rows.push(outcome(r, 'refused', `${s.why}: not created by capenter bootstrap, left in place`));
        continue;
      }
      switch (r.type) {
        case 'RolePolicyAttachment':
          await call('iam:DetachRolePolicy', label, () =>
            c.iam.send(new DetachRolePolicyCommand({ RoleName: r.roleName, PolicyArn: r.policyArn })),
          );
          break;
        case 'IAMManagedPolicy': {
          const ents = await call('iam:ListEntitiesForPolicy', label, () =>
            c.iam.send(new ListEntitiesForPolicyCommand({ PolicyArn: r.arn })),
          );
          for (const role of ents.PolicyRoles ?? [])
            await call('iam:DetachRolePolicy', label, () =>
              c.iam.send(new DetachRolePolicyCommand({ RoleName: role.RoleName, PolicyArn: r.arn })),
            );
          const versions = await call('iam:ListPolicyVersions', label, () =>
            c.iam.send(new ListPolicyVersionsCommand({ PolicyArn: r.arn })),
          );
          for (const v of versions.Versions ?? [])
            if (!v.IsDefaultVersion)
              await call('iam:DeletePolicyVersion', label, () =>
                c.iam.send(new DeletePolicyVersionCommand({ PolicyArn: r.arn, VersionId: v.VersionId })),
              );
          await call('iam:DeletePolicy', label, () =>
            c.iam.send(new DeletePolicyCommand({ PolicyArn: r.arn })),
          );
          break;
        }
        case 'EventBridgeRule':
          await call('events:RemoveTargets', label, () =>
            c.events.send(
              new RemoveTargetsCommand({ Rule: r.name, Ids: ['KarpenterInterruptionQueueTarget'] }),
            ),
          );
          await call('events:DeleteRule', label, () =>
            c.events.send(new DeleteRuleCommand({ Name: r.name })),
          );
          break;
        case 'SQSQueue': {
          const url = await call('sqs:GetQueueUrl', label, () =>
            c.sqs.send(new GetQueueUrlCommand({ QueueName: r.name })),
          );
          await call('sqs:DeleteQueue', label, () =>
            c.sqs.send(new DeleteQueueCommand({ QueueUrl: url.QueueUrl })),
          );
          break;
        }
        case 'IAMInstanceProfile': {
          const got = await call('iam:GetInstanceProfile', label, () =>
            c.iam.send(new GetInstanceProfileCommand({ InstanceProfileName: r.name })),
          );
          for (const role of got.InstanceProfile?.Roles ?? [])
            await call('iam:RemoveRoleFromInstanceProfile', label, () =>
              c.iam.send(
                new RemoveRoleFromInstanceProfileCommand({
                  InstanceProfileName: r.name,
                  RoleName: role.RoleName,
                }),
              ),
            );
          await call('iam:DeleteInstanceProfile', label, () =>
            c.iam.send(new DeleteInstanceProfileCommand({ InstanceProfileName: r.name })),
          );
          break;
        }
        case 'IAMRole': {
          const attached = await call('iam:ListAttachedRolePolicies', label, () =>
            c.iam.send(new ListAttachedRolePoliciesCommand({ RoleName: r.name })),
          );
          for (const p of attached.AttachedPolicies ?? [])
            await call('iam:DetachRolePolicy', label, () =>
              c.iam.send(new DetachRolePolicyCommand({ RoleName: r.name, PolicyArn: p.PolicyArn })),
            );
          await call('iam:DeleteRole', label, () => c.iam.send(new DeleteRoleCommand({ RoleName: r.name })));
          break;
        }
      }
      rows.push(outcome(r, 'deleted'));
    } catch (err) {
      rows.push(outcome(r, 'failed', (err as Error).message));
      return report(
        plan,
        rows.reverse(),
        false,
        `failed: ${(err as Error).message}; the resources not listed as deleted still exist`,
      );
    }
  }
  rows.reverse();
  const deleted = rows.filter((x) => x.result === 'deleted').length;
  const refused = rows.filter((x) => x.result === 'refused').length;
  return report(
    plan,
    rows,
    true,
    deleted === 0
      ? `nothing to delete for cluster ${cluster}${refused ? ` (${refused} same-named resources not created by capenter left in place)` : ''}`
      : `deleted ${deleted}${refused ? `, left ${refused} not created by capenter` : ''}`,
  );
}
