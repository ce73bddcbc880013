import { defineConfig } from 'vitest/config';
import ClusterSequencer from './test/cluster/sequencer.ts';

/**
 * `npm run test:cluster`: the conformance suite, the cluster tests and the differential suite (each request to the
 * embedded server and to the real one, answers compared) against one real control plane that
 * test/cluster/global-setup.ts starts (and stops). Not part of `npm test`. Files run one at a time: they
 * share the cluster, and test/cluster/controller.test.ts needs it without capenter's CRDs at its start (order:
 * test/cluster/sequencer.ts).
 */
export default defineConfig({
  test: {
    include: ['test/conformance/**/*.test.ts', 'test/cluster/**/*.test.ts', 'test/differential/**/*.test.ts'],
    globalSetup: ['test/cluster/global-setup.ts'],
    testTimeout: 300_000,
    hookTimeout: 120_000,
    pool: 'forks',
    fileParallelism: false,
    sequence: { sequencer: ClusterSequencer },
    reporters: ['default', './test/summary-reporter.ts'],
  },
});
