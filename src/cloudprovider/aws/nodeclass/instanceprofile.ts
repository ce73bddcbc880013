/**
 * The instance profile of an EC2NodeClass, after aws/karpenter-provider-aws
 * `pkg/providers/instanceprofile/instanceprofile.go`, `pkg/controllers/nodeclass/instanceprofile.go` and
 * `pkg/apis/v1/ec2nodeclass.go` (`InstanceProfileName`, `InstanceProfileTags`):
 * - with `spec.role`, a profile named `<cluster>_<uint64 hash of region+name+uuid>` is created under the path
 *   `/karpenter/<region>/<cluster>/<nodeclass uid>/`, tagged `kubernetes.io/cluster/<cluster>=owned`,
 *   `eks:eks-cluster-name=<cluster>`, `karpenter.k8s.aws/ec2nodeclass=<name>`,
 *   `topology.kubernetes.io/region=<region>` (plus the class's `spec.tags`), and the role added to it; a new
 *   profile is made only when the current one does not carry `spec.role`;
 * - with `spec.instanceProfile`, that name is used as is (nothing is created);
 * - when the class is deleted, every profile under its path is deleted (role removed first);
 * - a profile just created, or just replaced by another one, is protected for {@link ProtectedProfileTTLMs} from the
 *   instance-profile garbage collector (`../controllers/instanceprofile-gc.ts`), as upstream's
 *   `protectedProfileCache` (`SetProtectedState`, `IsProtected`; TTL `ProtectedProfilesTTL`, 1 hour).
 */
import { createHash, randomUUID } from 'node:crypto';
import {
  AddRoleToInstanceProfileCommand,
  CreateInstanceProfileCommand,
  DeleteInstanceProfileCommand,
  GetInstanceProfileCommand,
  type IAMClient,
  type InstanceProfile,
  ListInstanceProfilesCommand,
  RemoveRoleFromInstanceProfileCommand,
} from '@aws-sdk/client-iam';
import type { EC2NodeClass } from '../../../apis/karpenter.ts';

/** How long a created or replaced profile is protected from garbage collection (upstream `ProtectedProfilesTTL`). */
export const ProtectedProfileTTLMs = 60 * 60 * 1000;

/** IAM path prefix of every managed profile of the cluster: `/karpenter/<region>/<cluster>/` (upstream `FormatPath`). */
export function clusterInstanceProfilePath(region: string, clusterName: string): string {
  return `/karpenter/${region}/${clusterName}/`;
}

/** IAM path of a class's managed profiles: `/karpenter/<region>/<cluster>/<uid>/`. */
export function instanceProfilePath(region: string, clusterName: string, uid: string): string {
  return `/karpenter/${region}/${clusterName}/${uid}/`;
}

/** A fresh managed profile name `<cluster>_<decimal uint64>` (random per call, as upstream). */
export function newInstanceProfileName(clusterName: string, region: string, nodeClassName: string): string {
  const digest = createHash('sha256').update(`${region}${nodeClassName}${randomUUID()}`).digest();
  return `${clusterName}_${digest.readBigUInt64BE(0).toString()}`;
}

/** Tags of a managed profile (class tags first, the four ownership tags win). */
export function instanceProfileTags(
  nodeClass: EC2NodeClass,
  clusterName: string,
  region: string,
): Record<string, string> {
  return {
    ...(nodeClass.spec.tags ?? {}),
    [`kubernetes.io/cluster/${clusterName}`]: 'owned',
    'eks:eks-cluster-name': clusterName,
    'karpenter.k8s.aws/ec2nodeclass': nodeClass.metadata.name,
    'topology.kubernetes.io/region': region,
  };
}

function isNoSuchEntity(err: unknown): boolean {
  return (
    (err as { name?: string }).name === 'NoSuchEntityException' ||
    (err as { name?: string }).name === 'NoSuchEntity'
  );
}

/** Dependencies of {@link InstanceProfileResolver}. */
export interface InstanceProfileDeps {
  iam: IAMClient;
  region: string;
  clusterName: string;
  /** Milliseconds since the epoch (the operator's clock); protection times are measured with it. Default `Date.now`. */
  now?: () => number;
}

/** Creates, checks and deletes the managed instance profiles of EC2NodeClasses. */
export class InstanceProfileResolver {
  /** `<role>/<uid>` → profile created for it (survives a failed status write, like upstream's recreation cache). */
  private readonly created = new Map<string, string>();
  /** Profile name → when it was protected (ms, `deps.now`). */
  private readonly protectedAt = new Map<string, number>();

  constructor(private readonly deps: InstanceProfileDeps) {}

  /**
   * The instance profile name the class's instances use, creating one from `spec.role` when the current one
   * (`current`, from `status.instanceProfile`) does not carry that role.
   * @throws Error when IAM fails (e.g. the role does not exist: the message names it).
   */
  async ensure(nodeClass: EC2NodeClass, current: string | undefined): Promise<string> {
    const role = nodeClass.spec.role;
    if (!role) {
      if (!nodeClass.spec.instanceProfile)
        throw new Error(
          `EC2NodeClass ${nodeClass.metadata.name} sets neither spec.role nor spec.instanceProfile`,
        );
      // a class moving from spec.role to spec.instanceProfile: its old managed profile may still be in use
      if (current && current !== nodeClass.spec.instanceProfile) this.protect(current);
      return nodeClass.spec.instanceProfile;
    }
    const key = `${role}/${nodeClass.metadata.uid ?? ''}`;
    const name = this.created.get(key) ?? current;
    if (name) {
      const profile = await this.get(name);
      if (profile?.Roles?.[0]?.RoleName === roleName(role)) {
        // the status moves to this profile: the one it leaves may still be used by launching instances
        if (current && current !== name) this.protect(current);
        return name;
      }
    }
    const fresh = newInstanceProfileName(this.deps.clusterName, this.deps.region, nodeClass.metadata.name);
    try {
      await this.deps.iam.send(
        new CreateInstanceProfileCommand({
          InstanceProfileName: fresh,
          Path: instanceProfilePath(this.deps.region, this.deps.clusterName, nodeClass.metadata.uid ?? ''),
          Tags: Object.entries(instanceProfileTags(nodeClass, this.deps.clusterName, this.deps.region)).map(
            ([Key, Value]) => ({ Key, Value }),
          ),
        }),
      );
      await this.deps.iam.send(
        new AddRoleToInstanceProfileCommand({ InstanceProfileName: fresh, RoleName: roleName(role) }),
      );
    } catch (err) {
      await this.delete(fresh).catch(() => {});
      throw new Error(
        `creating instance profile ${fresh} for role "${role}": ${(err as Error).message}${isNoSuchEntity(err) ? ' (does the IAM role exist?)' : ''}`,
        { cause: err },
      );
    }
    this.created.set(key, fresh);
    // the new profile until the class's status shows it; the old one while instances launched with it appear
    this.protect(fresh);
    if (current) this.protect(current);
    return fresh;
  }

  /**
   * Protects `name` from the garbage collector for {@link ProtectedProfileTTLMs} from now (upstream
   * `SetProtectedState(name, true)`); an empty name is ignored.
   */
  protect(name: string | undefined): void {
    if (name) this.protectedAt.set(name, this.now());
  }

  /** Whether `name` was protected less than {@link ProtectedProfileTTLMs} ago (upstream `IsProtected`). */
  isProtected(name: string): boolean {
    const at = this.protectedAt.get(name);
    if (at === undefined) return false;
    if (this.now() - at < ProtectedProfileTTLMs) return true;
    this.protectedAt.delete(name);
    return false;
  }

  /**
   * Every profile whose IAM path starts with `pathPrefix` (all pages of ListInstanceProfiles; upstream
   * `ListProfiles`). @throws on IAM errors.
   */
  async list(pathPrefix: string): Promise<InstanceProfile[]> {
    const out: InstanceProfile[] = [];
    let marker: string | undefined;
    do {
      const page = await this.deps.iam.send(
        new ListInstanceProfilesCommand({ PathPrefix: pathPrefix, ...(marker ? { Marker: marker } : {}) }),
      );
      // the prefix is checked here too: an emulator (moto 5) ignores PathPrefix and lists every profile
      out.push(...(page.InstanceProfiles ?? []).filter((p) => (p.Path ?? '/').startsWith(pathPrefix)));
      marker = page.IsTruncated ? page.Marker : undefined;
    } while (marker);
    return out;
  }

  private now(): number {
    return this.deps.now ? this.deps.now() : Date.now();
  }

  /** The profile, `undefined` when it does not exist. */
  async get(name: string): Promise<InstanceProfile | undefined> {
    try {
      return (await this.deps.iam.send(new GetInstanceProfileCommand({ InstanceProfileName: name })))
        .InstanceProfile;
    } catch (err) {
      if (isNoSuchEntity(err)) return undefined;
      throw err;
    }
  }

  /** Deletes a profile (role removed first; its protection dropped, as upstream); a missing profile is not an error. */
  async delete(name: string): Promise<void> {
    this.protectedAt.delete(name);
    const profile = await this.get(name);
    if (!profile) return;
    for (const r of profile.Roles ?? [])
      await this.deps.iam.send(
        new RemoveRoleFromInstanceProfileCommand({ InstanceProfileName: name, RoleName: r.RoleName }),
      );
    try {
      await this.deps.iam.send(new DeleteInstanceProfileCommand({ InstanceProfileName: name }));
    } catch (err) {
      if (!isNoSuchEntity(err)) throw err;
    }
  }

  /** Deletes every profile managed for the class (under its path); returns their names. */
  async deleteAll(nodeClass: EC2NodeClass): Promise<string[]> {
    const prefix = instanceProfilePath(this.deps.region, this.deps.clusterName, nodeClass.metadata.uid ?? '');
    const names = (await this.list(prefix)).flatMap((p) =>
      p.InstanceProfileName ? [p.InstanceProfileName] : [],
    );
    for (const n of names) await this.delete(n);
    for (const [k, v] of this.created) if (names.includes(v)) this.created.delete(k);
    return names;
  }
}

/** The role name of `spec.role` (an ARN-ish `path/name` keeps its last segment, as upstream). */
function roleName(role: string): string {
  return role.split('/').pop() ?? role;
}
