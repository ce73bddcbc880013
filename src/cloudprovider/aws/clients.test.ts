import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { DescribeInstancesCommand } from '@aws-sdk/client-ec2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAwsClients, pricingRegion } from './clients.ts';

describe('createAwsClients', () => {
  // an endpoint that takes every request and never answers (a stalled server)
  let server: http.Server;
  let endpoint: string;
  const held: http.ServerResponse[] = [];
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      req.resume();
      held.push(res);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });

  it('a call to an endpoint that never answers fails with TimeoutError after requestTimeoutSeconds (each attempt)', async () => {
    const clients = createAwsClients({
      region: 'us-west-2',
      endpoint,
      credentials: { accessKeyId: 'testing', secretAccessKey: 'testing' },
      maxAttempts: 2,
      requestTimeoutSeconds: 0.2,
    });
    try {
      const err = await clients.ec2.send(new DescribeInstancesCommand({})).catch((e: unknown) => e);
      expect((err as Error).name).toBe('TimeoutError');
      // retried as a transient error: both attempts reached the endpoint
      expect(held.length).toBe(2);
    } finally {
      clients.destroy();
    }
  });

  it('the Pricing API region for a region (upstream pricing.PricingAPIRegion)', () => {
    expect(pricingRegion('us-west-2')).toBe('us-east-1');
    expect(pricingRegion('ap-northeast-1')).toBe('ap-south-1');
    expect(pricingRegion('eu-west-1')).toBe('eu-central-1');
    expect(pricingRegion('me-south-1')).toBe('eu-central-1');
    expect(pricingRegion('cn-north-1')).toBe('cn-northwest-1');
  });
});
