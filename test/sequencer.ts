/**
 * File order of `npm test`: the known-slow files first, slowest first, then the rest in vitest's own order (its
 * duration cache, else file size). On a clean clone vitest has no duration cache and would start files by size, so
 * a one-minute file could start last and run alone on one worker while the others sit idle (issue 24: `npm test` ≤
 * 5 minutes on 2 cores). The list is the one place naming them; `test/sequencer.test.ts` checks each still exists.
 */
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Test files that take 10 s or more on their own, slowest first (seconds in the CI run of issue 24, per file, 3
 * workers on 2 cores; after the speed-ups of h-npmtest24 some are faster, their order still fits). Paths from the
 * repository root.
 */
export const SLOW_TEST_FILES: readonly string[] = [
  'test/aws/e2e-disruption.test.ts',
  'test/soak/soak.test.ts',
  'test/dashboard/cli.test.ts',
  'test/e2e/events-metrics.test.ts',
  'test/dashboard/browser.test.ts',
  'test/aws/e2e-provisioning.test.ts',
  'test/e2e/cases.test.ts',
  'test/clusterapi/e2e.test.ts',
  'test/capi/e2e.test.ts',
  'test/clusterapi/issue29.test.ts',
  'test/capi/issue29.test.ts',
  'test/cli/rbac.test.ts',
  'test/aws/nodeclass-controller.test.ts',
  'test/capi/aws.test.ts',
  'src/cloudprovider/aws/provider.test.ts',
  'test/controllers/disruption/scenarios.test.ts',
  'test/aws/capacity-reservations.test.ts',
  'test/bootstrap/aws.test.ts',
  'src/cloudprovider/aws/aws.conformance.test.ts',
  'test/cli/compiled.test.ts',
  'test/controllers/disruption/cases.test.ts',
  'test/e2e/provisioning.test.ts',
  'test/e2e/start.test.ts',
  'test/aws/proxy.test.ts',
  'test/aws/instance-status.test.ts',
];

/**
 * `items` (test files; `id` gives an item's absolute module path) with those of {@link SLOW_TEST_FILES} first, in
 * that list's order, the others after them in their given order (a stable sort).
 */
export function slowFirst<T>(items: readonly T[], id: (item: T) => string): T[] {
  const rank = (item: T): number => {
    const path = id(item);
    const i = SLOW_TEST_FILES.findIndex((f) => path.endsWith(`/${f}`));
    return i < 0 ? SLOW_TEST_FILES.length : i;
  };
  return [...items].sort((a, b) => rank(a) - rank(b));
}

/** vitest's order (failed first, then by cached duration or size) with the known-slow files moved to the front. */
export default class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    return slowFirst(await super.sort(files), (f) => f.moduleId);
  }
}
