/**
 * The EC2NodeClass hash step (upstream aws/karpenter-provider-aws `pkg/controllers/nodeclass/hash/controller.go`):
 * when the class's `karpenter.k8s.aws/ec2nodeclass-hash-version` is not {@link EC2NodeClassHashVersion} (a class
 * stamped by upstream v1.3 to v1.11, `v4`, or never stamped), re-stamp its NodeClaims that carry another version:
 * the version always, the hash only when they have no `Drifted` condition (drifted ones stay drifted, as upstream
 * cannot tell either); then stamp the class with its current hash and version. A NodeClaim whose version already
 * matches is never touched, so a switch from upstream v1.12 to v1.14 (`v5`, the same hash) changes nothing.
 */
import type { EC2NodeClass, NodeClaim } from '../../../apis/karpenter.ts';
import type { KubeClient } from '../../../kube/client.ts';
import { isNotFound } from '../../../kube/errors.ts';
import { EC2NodeClassHashVersion, ec2NodeClassHash } from '../nodeclass-hash.ts';
import { AnnotationEC2NodeClassHash, AnnotationEC2NodeClassHashVersion } from '../provider.ts';

/**
 * Runs the hash step for `nodeClass` with the controller's cluster CA bundle (base64, '' when none). Returns the
 * names of the NodeClaims re-stamped and the class as stored after its own patch (undefined when unchanged).
 * Throws on API errors other than NotFound (a conflict on the class is the caller's to retry).
 */
export async function reconcileEC2NodeClassHash(
  client: KubeClient,
  nodeClass: EC2NodeClass,
  caBundle: string,
): Promise<{ restamped: string[]; stored?: EC2NodeClass }> {
  const hash = ec2NodeClassHash(nodeClass, caBundle);
  const ann = nodeClass.metadata.annotations ?? {};
  const restamped: string[] = [];
  if (ann[AnnotationEC2NodeClassHashVersion] !== EC2NodeClassHashVersion) {
    const claims = (await client.list('NodeClaim')).items as NodeClaim[];
    for (const nc of claims) {
      const ref = nc.spec?.nodeClassRef;
      if (
        ref?.kind !== 'EC2NodeClass' ||
        ref.group !== 'karpenter.k8s.aws' ||
        ref.name !== nodeClass.metadata.name
      )
        continue;
      if (nc.metadata.annotations?.[AnnotationEC2NodeClassHashVersion] === EC2NodeClassHashVersion) continue;
      const drifted = (nc.status?.conditions ?? []).some((c) => c.type === 'Drifted');
      const annotations: Record<string, string> = {
        [AnnotationEC2NodeClassHashVersion]: EC2NodeClassHashVersion,
      };
      if (!drifted) annotations[AnnotationEC2NodeClassHash] = hash;
      try {
        await client.patch(
          'NodeClaim',
          nc.metadata.name as string,
          undefined,
          { metadata: { annotations } },
          {
            type: 'merge',
          },
        );
        restamped.push(nc.metadata.name as string);
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    }
  }
  if (
    ann[AnnotationEC2NodeClassHash] === hash &&
    ann[AnnotationEC2NodeClassHashVersion] === EC2NodeClassHashVersion
  )
    return { restamped };
  const stored = (await client.patch(
    'EC2NodeClass',
    nodeClass.metadata.name as string,
    undefined,
    {
      metadata: {
        annotations: {
          [AnnotationEC2NodeClassHash]: hash,
          [AnnotationEC2NodeClassHashVersion]: EC2NodeClassHashVersion,
        },
      },
    },
    { type: 'merge' },
  )) as EC2NodeClass;
  return { restamped, stored };
}
