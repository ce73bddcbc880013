/** `capenter controller --cloud-provider aws` option handling (no emulator needed). */
import { describe, expect, it } from 'vitest';
import { runController } from '../../src/cli/controller.ts';

describe('capenter controller --cloud-provider aws', () => {
  it('exits 2 naming the missing cluster name, an invalid setting, or an unknown provider', async () => {
    let err = '';
    const io = (env: Record<string, string>) => ({ stderr: (t: string) => (err += t), env });
    expect(await runController({ cloudProvider: 'aws' }, io({}))).toBe(2);
    expect(err).toMatch(
      /--cluster-name: "" is not valid \(required with --cloud-provider aws\); CLUSTER_NAME accepts/,
    );
    err = '';
    expect(await runController({ cloudProvider: 'aws', clusterName: 'bad name!' }, io({}))).toBe(2);
    expect(err).toMatch(/--cluster-name: "bad name!" is not valid/);
    err = '';
    expect(await runController({ cloudProvider: 'gcp' }, io({ CLUSTER_NAME: 'c' }))).toBe(2);
    expect(err).toMatch(/--cloud-provider must be "kwok" or "aws", got "gcp"/);
  });
});
