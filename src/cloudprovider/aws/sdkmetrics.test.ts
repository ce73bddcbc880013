import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DescribeAvailabilityZonesCommand, EC2Client } from '@aws-sdk/client-ec2';
import { Registry } from 'prom-client';
import { afterAll, describe, expect, it } from 'vitest';
import type { MiddlewareClient } from './callhealth.ts';
import { watchAwsSdkMetrics } from './sdkmetrics.ts';

/** `name{labels} value` lines of one metric family in the exposition text. */
async function lines(registry: Registry, name: string): Promise<string[]> {
  return (await registry.getSingleMetricAsString(name))
    .split('\n')
    .filter((l) => l.startsWith(name) && !l.startsWith('#'));
}

const ZONES =
  '<DescribeAvailabilityZonesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>r1</requestId>' +
  '<availabilityZoneInfo><item><zoneName>us-east-1a</zoneName><zoneId>use1-az1</zoneId></item></availabilityZoneInfo>' +
  '</DescribeAvailabilityZonesResponse>';
const error = (code: string) =>
  `<Response><Errors><Error><Code>${code}</Code><Message>${code}</Message></Error></Errors><RequestID>r2</RequestID></Response>`;

let server: Server | undefined;
afterAll(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

describe('aws_sdk_go_* metrics (aws-sdk-go-prometheus v0.1.1)', () => {
  it('counts calls with their final code, attempts with theirs, retries per call, and 0 without a response', async () => {
    // EC2 stand-in: the first call is throttled once (503) then answers; the second is refused (400, not retried)
    const answers = [
      [503, error('RequestLimitExceeded')],
      [200, ZONES],
      [400, error('InvalidParameterValue')],
    ] as const;
    let n = 0;
    server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const [status, body] = answers[Math.min(n++, answers.length - 1)]!;
        res.writeHead(status, { 'content-type': 'text/xml' });
        res.end(body);
      });
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const credentials = { accessKeyId: 'testing', secretAccessKey: 'testing' };
    const registry = new Registry();
    const ec2 = new EC2Client({ endpoint, region: 'us-east-1', credentials, maxAttempts: 3 });
    watchAwsSdkMetrics(ec2 as unknown as MiddlewareClient, 'EC2', registry);
    const zones = await ec2.send(new DescribeAvailabilityZonesCommand({}));
    expect(zones.AvailabilityZones?.map((z) => z.ZoneName)).toEqual(['us-east-1a']);
    const refused = await ec2.send(new DescribeAvailabilityZonesCommand({})).catch((e: Error) => e);
    expect((refused as Error).name).toBe('InvalidParameterValue');
    // nothing listens on port 1: no response, code 0
    const nowhere = new EC2Client({
      endpoint: 'http://127.0.0.1:1',
      region: 'us-east-1',
      credentials,
      maxAttempts: 1,
    });
    watchAwsSdkMetrics(nowhere as unknown as MiddlewareClient, 'EC2', registry);
    await expect(nowhere.send(new DescribeAvailabilityZonesCommand({}))).rejects.toThrow();

    const l = (code: number) => `{service="EC2",action="DescribeAvailabilityZones",code="${code}"}`;
    expect((await lines(registry, 'aws_sdk_go_request_total')).sort()).toEqual(
      [
        `aws_sdk_go_request_total${l(200)} 1`,
        `aws_sdk_go_request_total${l(400)} 1`,
        `aws_sdk_go_request_total${l(0)} 1`,
      ].sort(),
    );
    expect((await lines(registry, 'aws_sdk_go_request_attempt_total')).sort()).toEqual(
      [
        `aws_sdk_go_request_attempt_total${l(503)} 1`,
        `aws_sdk_go_request_attempt_total${l(200)} 1`,
        `aws_sdk_go_request_attempt_total${l(400)} 1`,
        `aws_sdk_go_request_attempt_total${l(0)} 1`,
      ].sort(),
    );
    const retries = await lines(registry, 'aws_sdk_go_request_retry_count');
    expect(retries).toContain(`aws_sdk_go_request_retry_count_sum${l(200)} 1`);
    expect(retries).toContain(`aws_sdk_go_request_retry_count_sum${l(400)} 0`);
    expect(retries).toContain(`aws_sdk_go_request_retry_count_count${l(0)} 1`);
    for (const name of ['aws_sdk_go_request_duration_seconds', 'aws_sdk_go_request_attempt_duration_seconds'])
      expect(await lines(registry, name)).toContain(`${name}_count${l(200)} 1`);
    expect(await lines(registry, 'aws_sdk_go_request_attempt_duration_seconds')).toContain(
      `aws_sdk_go_request_attempt_duration_seconds_count${l(503)} 1`,
    );
    ec2.destroy();
    nowhere.destroy();
  });
});
