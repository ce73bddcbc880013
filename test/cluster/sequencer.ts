/**
 * File order of `npm run test:cluster` (one file at a time on one shared control plane): the conformance
 * suite first (it installs and deletes the upstream NodeClaim CRD), then test/cluster/ (which starts from a
 * cluster without capenter's CRDs and leaves them installed, with NodeClaims whose finalizers only a running
 * controller removes), then test/differential/ (it installs capenter's CRDs itself), each group in path order,
 * and last test/cluster/realcapi*.test.ts (they replace the CAPI CRDs by the real ones, with conversion webhooks
 * served by a manager that is gone once the file ends; each file starts its own).
 */
import { BaseSequencer, type TestSpecification } from 'vitest/node';

export default class ClusterSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (f: TestSpecification): number =>
      f.moduleId.includes('/test/cluster/realcapi')
        ? 3
        : f.moduleId.includes('/test/differential/')
          ? 2
          : f.moduleId.includes('/test/cluster/')
            ? 1
            : 0;
    return [...files].sort((a, b) => rank(a) - rank(b) || a.moduleId.localeCompare(b.moduleId));
  }
}
