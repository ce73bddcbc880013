/**
 * The EC2 authorization checks of the EC2NodeClass `ValidationSucceeded` condition, after aws/karpenter-provider-aws
 * v1.14.1 `pkg/controllers/nodeclass/validation.go`: with the class's launch template ensured (a real
 * CreateLaunchTemplate when not cached), a `DryRun` CreateFleet and then `DryRun` RunInstances (one per subnet until
 * one is allowed). EC2's `DryRunOperation` means allowed; `UnauthorizedOperation` makes the condition False with
 * upstream's reason (`CreateLaunchTemplateAuthCheckFailed`, `CreateFleetAuthCheckFailed`,
 * `RunInstancesAuthCheckFailed`) and message (`Controller isn't authorized to call ec2:<Action>: <why>`, `<why>` as
 * upstream `ToReasonMessage`), to which capenter adds the fix. Throttling, a server fault, a transport failure or
 * any other answer is returned as {@link DryRunVerdict} `retry` (the condition stays as it was, the reconcile is
 * retried with backoff), as upstream's `Requeue`/error returns. A 2xx answer (EC2 never gives one to a dry run; an
 * emulator ignoring `DryRun`, moto without capenter's proxy, does) counts as allowed: the call was authorized.
 *
 * Verdicts (allowed and refused) are cached for {@link ValidationTTLSeconds} (upstream `ValidationTTL`, 30 min) per
 * class and a hash of its resolved status, spec and annotations (upstream `cacheKey`), so a class is checked again
 * at once when it changes and otherwise at most every 30 minutes. With `DISABLE_DRY_RUN=true` no call is made and
 * the verdict is allowed (upstream `dryRunDisabled`).
 */
import { createHash } from 'node:crypto';
import { CreateFleetCommand, type EC2Client, RunInstancesCommand } from '@aws-sdk/client-ec2';
import type { EC2NodeClass } from '../../../apis/karpenter.ts';
import { errorMessage } from '../../../controllers/runtime/index.ts';
import { isServerFault } from '../cluster.ts';
import type { ValidationLaunch } from '../provider.ts';
import { awsErrorCode, isThrottle } from '../retry.ts';

/** `ValidationSucceeded=False` reasons (upstream `ConditionReason*AuthFailed`, verbatim). */
export const ReasonCreateFleetAuthFailed = 'CreateFleetAuthCheckFailed';
export const ReasonCreateLaunchTemplateAuthFailed = 'CreateLaunchTemplateAuthCheckFailed';
export const ReasonRunInstancesAuthFailed = 'RunInstancesAuthCheckFailed';

/** The start of each reason's message (upstream `ValidationConditionMessages`, verbatim). */
export const ValidationConditionMessages: Readonly<Record<string, string>> = {
  [ReasonCreateFleetAuthFailed]: "Controller isn't authorized to call ec2:CreateFleet",
  [ReasonCreateLaunchTemplateAuthFailed]: "Controller isn't authorized to call ec2:CreateLaunchTemplate",
  [ReasonRunInstancesAuthFailed]: "Controller isn't authorized to call ec2:RunInstances",
};

/** Seconds a verdict is kept (upstream `pkg/cache` `ValidationTTL`). */
export const ValidationTTLSeconds = 30 * 60;

/** What {@link DryRunValidation.validate} found. */
export type DryRunVerdict =
  | { kind: 'allowed' }
  | { kind: 'refused'; reason: string; message: string }
  /** EC2 did not say (throttled, server fault, transport failure, unexpected answer): keep the condition, retry. */
  | { kind: 'retry'; error: string };

/** Options of {@link DryRunValidation}. */
export interface DryRunValidationOptions {
  /** The provider module's EC2 client (the dry-run calls). */
  ec2: Pick<EC2Client, 'send'>;
  /** Ensures the class's launch template and builds the dry-run requests (the provider's `validationLaunch`). */
  launch: (nodeClass: EC2NodeClass) => Promise<ValidationLaunch>;
  /** `DISABLE_DRY_RUN`: make no call, every class is allowed. */
  disabled?: boolean;
  /** Epoch ms now (the controller's clock). */
  now: () => number;
}

/** `UnauthorizedOperation` (upstream `IsUnauthorizedOperationError`). */
function isUnauthorized(err: unknown): boolean {
  return awsErrorCode(err) === 'UnauthorizedOperation';
}

/** `DryRunOperation`: the call would have succeeded (upstream `IsDryRunError`). */
function isDryRunOK(err: unknown): boolean {
  return awsErrorCode(err) === 'DryRunOperation';
}

/**
 * The condition message's explanation of an authorization error (upstream `awserrors.ToReasonMessage`'s message for
 * `UnauthorizedOperation`/`AccessDenied`/`AuthFailure`).
 */
export function unauthorizedMessage(err: unknown): string {
  const text = errorMessage(err);
  if (text.includes('with an explicit deny in a permissions boundary'))
    return 'User is not authorized to perform this operation due to a permission boundary';
  if (text.includes('with an explicit deny in a service control policy'))
    return 'User is not authorized to perform this operation due to a service control policy';
  if (text.includes('Not authorized for images'))
    return 'User is not authorized for AMI used in instance launch';
  return 'User is not authorized to perform this operation because no identity-based policy allows it';
}

/** The EC2 authorization checks of EC2NodeClass validation, with their verdict cache (see the module doc). */
export class DryRunValidation {
  private readonly cache = new Map<string, { verdict: DryRunVerdict; at: number }>();

  constructor(private readonly opts: DryRunValidationOptions) {}

  /** Whether `DISABLE_DRY_RUN` is set (no EC2 call is ever made). */
  get disabled(): boolean {
    return this.opts.disabled === true;
  }

  /**
   * The verdict for `nodeClass` (its `status.subnets`, `securityGroups`, `amis` and `instanceProfile` resolved):
   * cached when the class is unchanged and the verdict younger than {@link ValidationTTLSeconds}, else asked of EC2.
   * Never rejects: an error is a `retry` verdict (not cached).
   */
  async validate(nodeClass: EC2NodeClass): Promise<DryRunVerdict> {
    if (this.disabled) return { kind: 'allowed' };
    const key = cacheKey(nodeClass);
    const now = this.opts.now();
    const hit = this.cache.get(key);
    if (hit && now - hit.at < ValidationTTLSeconds * 1000) return hit.verdict;
    let verdict: DryRunVerdict;
    try {
      verdict = await this.check(nodeClass);
    } catch (err) {
      verdict = { kind: 'retry', error: errorMessage(err) };
    }
    if (verdict.kind !== 'retry') {
      this.forget(nodeClass.metadata.name);
      this.cache.set(key, { verdict, at: now });
    }
    return verdict;
  }

  /** Drops the cached verdicts of class `name` (upstream `clearCacheEntries`, on deletion). */
  forget(name: string): void {
    for (const k of this.cache.keys()) if (k.startsWith(`${name}:`)) this.cache.delete(k);
  }

  private async check(nodeClass: EC2NodeClass): Promise<DryRunVerdict> {
    let launch: ValidationLaunch;
    try {
      launch = await this.opts.launch(nodeClass);
    } catch (err) {
      return classify(err, ReasonCreateLaunchTemplateAuthFailed, nodeClass, 'CreateLaunchTemplate');
    }
    try {
      // EC2 never answers a dry run 2xx; an emulator ignoring DryRun (moto) does: the call was authorized
      await this.opts.ec2.send(new CreateFleetCommand(launch.createFleet));
    } catch (err) {
      if (!isDryRunOK(err)) return classify(err, ReasonCreateFleetAuthFailed, nodeClass, 'CreateFleet');
    }
    let first: unknown;
    for (const input of launch.runInstances) {
      try {
        await this.opts.ec2.send(new RunInstancesCommand(input));
        return { kind: 'allowed' }; // answered 2xx (an emulator ignoring DryRun): authorized
      } catch (err) {
        if (isDryRunOK(err)) return { kind: 'allowed' }; // one subnet allowed is enough (upstream)
        first ??= err;
      }
    }
    if (first === undefined) return { kind: 'allowed' };
    return classify(first, ReasonRunInstancesAuthFailed, nodeClass, 'RunInstances');
  }
}

/** The verdict for an error of `action`: refused with `reason` for `UnauthorizedOperation`, else retry. */
function classify(err: unknown, reason: string, nodeClass: EC2NodeClass, action: string): DryRunVerdict {
  if (isUnauthorized(err)) {
    return {
      kind: 'refused',
      reason,
      message:
        `${ValidationConditionMessages[reason]}: ${unauthorizedMessage(err)}; grant ec2:${action} to the ` +
        `controller's IAM role (see the Karpenter controller policy), or set DISABLE_DRY_RUN=true to skip the ` +
        `check (EC2NodeClass ${nodeClass.metadata.name})`,
    };
  }
  // throttling and server faults are retried as upstream's Requeue; any other error (a transport failure, an
  // answer a dry run should never give) as upstream's returned error: both leave the condition as it was
  const why = isThrottle(err) ? ' (throttled)' : isServerFault(err) ? ' (server fault)' : '';
  return { kind: 'retry', error: `validating ec2:${action} authorization${why}, ${errorMessage(err)}` };
}

/**
 * `name:hash` of what the verdict depends on (upstream `cacheKey`: the resolved subnets, security groups, AMIs and
 * instance profile, the spec and the annotations).
 */
export function cacheKey(nodeClass: EC2NodeClass): string {
  const st = (nodeClass.status ?? {}) as Record<string, unknown>;
  const hash = createHash('sha256')
    .update(
      JSON.stringify([
        st.subnets,
        st.securityGroups,
        st.amis,
        st.instanceProfile,
        nodeClass.spec,
        nodeClass.metadata.annotations ?? {},
      ]),
    )
    .digest('hex')
    .slice(0, 16);
  return `${nodeClass.metadata.name}:${hash}`;
}
