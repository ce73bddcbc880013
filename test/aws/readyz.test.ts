/**
 * `capenter controller --cloud-provider aws` with no AWS credentials, or with an endpoint nothing listens on: `/readyz`
 * answers 503 naming what is missing and the fix (issue 26 item 7: it answered 200 while logging "Could not load
 * credentials" every 5 s), and the unreachable endpoint's error names its URL.
 */

import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DescribeInstancesCommand } from '@aws-sdk/client-ec2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runController } from '../../src/cli/controller.ts';
import { awsReadinessProblem } from '../../src/cloudprovider/aws/callhealth.ts';
import { createAwsClients } from '../../src/cloudprovider/aws/clients.ts';
import { type SimulatedCluster, startSimulatedCluster } from '../../src/embedded/cluster.ts';
import { RealClock } from '../../src/kube/clock.ts';
import { eventually } from '../../src/testing/eventually.ts';

/** A port nothing listens on (bound, then closed). */
function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** The SDK's credential and config sources, emptied for the test (restored after). */
const CREDENTIAL_ENV = [
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
  'AWS_PROFILE',
  'AWS_WEB_IDENTITY_TOKEN_FILE',
  'AWS_ROLE_ARN',
  'AWS_CONTAINER_CREDENTIALS_FULL_URI',
  'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI',
  'AWS_ENDPOINT_URL',
  'AWS_ENDPOINT_URL_EC2',
];

describe('aws readiness', () => {
  const dir = mkdtempSync(join(tmpdir(), 'capenter-readyz-'));
  let sim: SimulatedCluster;
  const saved: Record<string, string | undefined> = {};
  beforeAll(async () => {
    for (const k of [
      ...CREDENTIAL_ENV,
      'AWS_EC2_METADATA_DISABLED',
      'AWS_CONFIG_FILE',
      'AWS_SHARED_CREDENTIALS_FILE',
    ])
      saved[k] = process.env[k];
    for (const k of CREDENTIAL_ENV) delete process.env[k];
    process.env.AWS_EC2_METADATA_DISABLED = 'true';
    process.env.AWS_CONFIG_FILE = join(dir, 'no-config');
    process.env.AWS_SHARED_CREDENTIALS_FILE = join(dir, 'no-credentials');
    sim = await startSimulatedCluster({
      clock: new RealClock(),
      kubeconfigPath: join(dir, 'kubeconfig'),
      components: { workloads: false },
    });
  });
  afterAll(async () => {
    await sim?.stop();
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('an endpoint nothing listens on: the error and the readiness reason name its URL', async () => {
    const port = await closedPort();
    const url = `http://127.0.0.1:${port}`;
    const clients = createAwsClients({
      region: 'us-east-1',
      endpoint: url,
      credentials: { accessKeyId: 'testing', secretAccessKey: 'testing' },
      maxAttempts: 1,
    });
    try {
      const err = await clients.ec2.send(new DescribeInstancesCommand({})).catch((e: Error) => e);
      expect((err as Error).message).toBe(`connect ECONNREFUSED 127.0.0.1:${port} (${url})`);
      expect(clients.health?.problem()).toBe(
        `cannot reach the AWS API (EC2 DescribeInstances): connection refused to ${url} — check AWS_ENDPOINT_URL, the region and the network path`,
      );
    } finally {
      clients.destroy();
    }
    // errors of one call are not readiness problems
    expect(
      awsReadinessProblem({ name: 'UnauthorizedOperation' }, 'EC2', 'CreateFleetCommand'),
    ).toBeUndefined();
    expect(
      awsReadinessProblem(
        { name: 'AuthFailure', message: 'AWS was not able to validate' },
        'EC2',
        'DescribeSubnetsCommand',
      ),
    ).toBe(
      "AWS refused the controller's credentials (EC2 DescribeSubnets: AuthFailure): fix or rotate them (AWS was not able to validate)",
    );
  });

  it('no credentials anywhere: /readyz answers 503 naming them and the fix, while /healthz stays 200', async () => {
    const healthPort = await closedPort();
    const ac = new AbortController();
    let err = '';
    let last = '';
    const run = runController(
      {
        cloudProvider: 'aws',
        clusterName: 'readyz',
        kubeconfig: join(dir, 'kubeconfig'),
        leaderElect: false,
        metricsPort: '0',
        healthProbePort: String(healthPort),
        logLevel: 'error',
      },
      {
        stderr: (t) => (err += t),
        env: { AWS_REGION: 'us-east-1', CLUSTER_CA_BUNDLE: 'Y2E=' },
        signal: ac.signal,
      },
    );
    try {
      const body = await eventually(
        async () => {
          const r = await fetch(`http://127.0.0.1:${healthPort}/readyz`).catch(() => undefined);
          const text = r ? await r.text() : '';
          last = `${r?.status} ${text}`;
          return r?.status === 503 && text.includes('AWS credentials') ? text : undefined;
        },
        '/readyz 503 naming the credentials',
        { timeoutMs: 60_000, intervalMs: 100 },
      ).catch((e: Error) => {
        throw new Error(`${e.message}; last /readyz: ${last}; stderr: ${err}`);
      });
      expect(body).toMatch(
        /^not ready: no AWS credentials \((EC2|SSM|Pricing|SQS|EKS|IAM) \w+\): the SDK's default chain found none — set AWS_ACCESS_KEY_ID\/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, IRSA or EKS Pod Identity on the ServiceAccount, or run where instance metadata gives a role \(/,
      );
      expect((await fetch(`http://127.0.0.1:${healthPort}/healthz`)).status).toBe(200);
    } finally {
      ac.abort();
      expect(await run, err).toBe(0);
    }
  }, 90_000);
});
