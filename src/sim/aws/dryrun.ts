/**
 * The emulator proxy's answers to EC2 `DryRun=true` requests and its emulated IAM denies (moto 5.2.3 ignores
 * `DryRun` on `CreateFleet` and `RunInstances`: it launches and returns a `FleetId` or instances, and has no IAM
 * evaluation for EC2). Real EC2 answers a dry run with HTTP 412 `DryRunOperation` "Request would have succeeded, but
 * DryRun flag is set." when the caller is allowed, and with HTTP 403 `UnauthorizedOperation` when it is not; a denied
 * action is refused the same way without `DryRun`. Used by `proxy.ts` for the actions of {@link DRY_RUN_ACTIONS}
 * (what upstream's EC2NodeClass validation, aws/karpenter-provider-aws `pkg/controllers/nodeclass/validation.go`,
 * calls) and any action given to {@link DeniedActions.deny}.
 */

/** EC2 actions the proxy answers itself when `DryRun=true` (moto would act on them). */
export const DRY_RUN_ACTIONS: ReadonlySet<string> = new Set([
  'CreateFleet',
  'RunInstances',
  'CreateLaunchTemplate',
]);

/** Whether a request of `service` and `action` with form `form` is a dry run of one of {@link DRY_RUN_ACTIONS}. */
export function isDryRun(service: string, action: string, form: URLSearchParams): boolean {
  return service === 'ec2' && DRY_RUN_ACTIONS.has(action) && form.get('DryRun')?.toLowerCase() === 'true';
}

/** EC2's answer to an allowed dry run (HTTP 412), verbatim. */
export const DryRunOperationMessage = 'Request would have succeeded, but DryRun flag is set.';

/** An EC2 error the proxy answers with instead of forwarding. */
export interface EC2ErrorAnswer {
  status: number;
  code: string;
  message: string;
}

/** The EC2 actions the emulated identity is denied (cleared by `clear`, which the proxy's reset calls). */
export class DeniedActions {
  private readonly denied = new Set<string>();

  /**
   * From now on every call of EC2 `action` (e.g. `CreateFleet`; dry run or not) is answered 403
   * `UnauthorizedOperation`, as with an IAM policy without `ec2:<action>`.
   * @throws Error when `action` is not an EC2 action name (letters only, starting upper-case).
   */
  deny(action: string): void {
    if (!/^[A-Z][A-Za-z]+$/.test(action))
      throw new Error(`deny: "${action}" is not an EC2 action name (e.g. "CreateFleet")`);
    this.denied.add(action);
  }

  /** Allows every action again. */
  clear(): void {
    this.denied.clear();
  }

  /**
   * The answer for EC2 `action` with request form `form`: 403 `UnauthorizedOperation` when denied, 412
   * `DryRunOperation` for `DryRun=true` on one of {@link DRY_RUN_ACTIONS}, else undefined (forward to moto).
   */
  answer(action: string, form: URLSearchParams): EC2ErrorAnswer | undefined {
    if (this.denied.has(action)) {
      return {
        status: 403,
        code: 'UnauthorizedOperation',
        message:
          `You are not authorized to perform this operation. User: arn:aws:iam::123456789012:user/capenter-emulator ` +
          `is not authorized to perform: ec2:${action} because no identity-based policy allows the ec2:${action} action`,
      };
    }
    if (isDryRun('ec2', action, form))
      return { status: 412, code: 'DryRunOperation', message: DryRunOperationMessage };
    return undefined;
  }
}
