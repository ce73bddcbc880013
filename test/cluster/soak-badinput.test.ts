/**
 * The bad-input generator's expectations (test/soak/badinput.ts) checked against a real kube-apiserver with
 * capenter's CRDs: every family the generator says a real server refuses is refused (4xx), the valid one is
 * stored; and the embedded API server gives the same verdict for the same object (issue 16 §2: "the server
 * rejects what the real one rejects").
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeClient } from '../../src/kube/client.ts';
import { startEmbeddedCluster } from '../../src/sim/apiserver/index.ts';
import { capenterCRDs } from '../../src/sim/cluster.ts';
import { BAD_FAMILIES, badCases } from '../soak/badinput.ts';
import { clusterKubeconfig, kubectl, until } from './helpers.ts';

/**
 * The HTTP status a server answers `obj`'s create with (201 stored). A transport failure (no HTTP answer: reset,
 * timeout) is not a verdict: it is tried once more, and a second one throws with its message, so a failure says what
 * happened instead of "answered 0" (it happened once, for the embedded server, with the kwok soak beside the shard).
 */
async function verdict(client: KubeClient, obj: object, what: string): Promise<number> {
  let transport = '';
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await client.create(structuredClone(obj) as never);
      return 201;
    } catch (err) {
      const e = err as { statusCode?: number; code?: number; message?: string };
      const status = e.statusCode ?? (typeof e.code === 'number' ? e.code : 0);
      if (status > 0) return status;
      transport = `${e.message ?? String(err)}${attempt === 0 ? '; ' : ''}${transport}`;
    }
  }
  throw new Error(`${what}: no HTTP answer twice: ${transport}`);
}

describe('bad input: real API server vs. embedded', () => {
  let embedded: Awaited<ReturnType<typeof startEmbeddedCluster>>;
  beforeAll(async () => {
    const kubeconfig = clusterKubeconfig();
    const applied = await kubectl(kubeconfig, ['apply', '-f', 'crds/']);
    expect(applied.code, applied.stderr).toBe(0);
    await until(
      async () =>
        (await kubectl(kubeconfig, ['get', 'nodepools.karpenter.sh', '-o', 'name'])).code === 0 &&
        (await kubectl(kubeconfig, ['get', 'kwoknodeclasses.karpenter.kwok.sh', '-o', 'name'])).code === 0,
      'the capenter CRDs served',
    );
    embedded = await startEmbeddedCluster({ tls: false, token: 'bad-input-compare' });
    for (const crd of capenterCRDs()) embedded.installCRD(crd);
  });
  afterAll(async () => {
    await embedded?.stop();
  });

  it('one object of each family: both servers give the verdict the generator expects', async () => {
    const real = KubeClient.fromKubeconfig(clusterKubeconfig());
    const sim = KubeClient.fromKubeconfig(embedded.kubeconfig);
    // unique names on the shared cluster
    const cases = badCases(Date.now() % 100_000, BAD_FAMILIES.length);
    const rows: string[] = [];
    for (const c of cases) {
      const r = await verdict(real, c.object, `${c.family} (real)`);
      const s = await verdict(sim, c.object, `${c.family} (embedded)`);
      rows.push(`${c.family}: real ${r}, embedded ${s}`);
      if (c.apiServer === 'accept') {
        expect([r, s], c.family).toEqual([201, 201]);
        await real.tryDelete(c.object.kind as string, c.object.metadata?.name as string);
      } else {
        expect(r >= 400 && r < 500, `${c.family}: real answered ${r}`).toBe(true);
        expect(s >= 400 && s < 500, `${c.family}: embedded answered ${s}`).toBe(true);
      }
    }
    expect(rows).toHaveLength(BAD_FAMILIES.length);
    console.log(rows.join('\n'));
  });
});
