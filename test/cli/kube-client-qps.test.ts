/**
 * `KUBE_CLIENT_QPS` / `KUBE_CLIENT_BURST` reach the client: a token bucket (client-go's) lets `burst` requests
 * through at once and then `qps` per second.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { KubeClient, TokenBucket } from '../../src/kube/client.ts';
import { resolveKubeconfig } from '../../src/kube/kubeconfig.ts';
import { resolveOperatorOptions } from '../../src/operator/options.ts';
import { type EmbeddedCluster, startEmbeddedCluster } from '../../src/sim/apiserver/index.ts';

let server: EmbeddedCluster | undefined;
afterAll(async () => {
  await server?.stop();
});

describe('kube client rate limit', () => {
  it('holds requests to KUBE_CLIENT_QPS after KUBE_CLIENT_BURST', async () => {
    server = await startEmbeddedCluster();
    const o = resolveOperatorOptions({ env: { KUBE_CLIENT_QPS: '20', KUBE_CLIENT_BURST: '2' } });
    const client = new KubeClient(resolveKubeconfig(server.kubeconfig), {
      qps: o.kubeClientQPS,
      burst: o.kubeClientBurst,
    });
    const t0 = performance.now();
    await Promise.all(Array.from({ length: 8 }, () => client.request('GET', '/version')));
    // 2 at once, then 6 more at 20/s: at least 300 ms
    expect(performance.now() - t0).toBeGreaterThanOrEqual(290);
    client.close();
  });

  it('rejects a non-positive rate', () => {
    expect(() => new TokenBucket(0, 1)).toThrow(/qps must be > 0/);
  });
});
