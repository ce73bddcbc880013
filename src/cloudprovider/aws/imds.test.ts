import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeClient } from '../../kube/client.ts';
import { silentLogger } from '../../kube/logger.ts';
import { regionFromIMDS } from './imds.ts';
import { awsModule } from './module.ts';

/** A fake instance metadata service: IMDSv2 only (a GET without the session token gets 401). */
let server: Server;
let endpoint: string;
const requests: string[] = [];
beforeAll(async () => {
  server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    if (req.method === 'PUT' && req.url === '/latest/api/token') {
      expect(req.headers['x-aws-ec2-metadata-token-ttl-seconds']).toBe('21600');
      res.end('session-token');
    } else if (req.url === '/latest/meta-data/placement/region') {
      if (req.headers['x-aws-ec2-metadata-token'] !== 'session-token') res.writeHead(401).end();
      else res.end('eu-central-1');
    } else res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe('region from the instance metadata service when AWS_REGION is unset (aws:pkg/operator/operator.go)', () => {
  it('regionFromIMDS takes an IMDSv2 token, then reads placement/region', async () => {
    requests.length = 0;
    expect(await regionFromIMDS({ endpoint })).toBe('eu-central-1');
    expect(requests).toEqual(['PUT /latest/api/token', 'GET /latest/meta-data/placement/region']);
  });

  it('capenter controller --cloud-provider aws without AWS_REGION: the module loads with the IMDS region', async () => {
    const core = { region: 'us-east-1', clusterName: 'cluster-1' };
    const settings = awsModule.configure(
      { env: { CLUSTER_NAME: 'prod', AWS_EC2_METADATA_SERVICE_ENDPOINT: endpoint } },
      core,
    );
    expect([settings.region, settings.imds.endpoint]).toEqual(['', endpoint]);
    const client = KubeClient.fromKubeconfig(
      'apiVersion: v1\nclusters: [{name: c, cluster: {server: "http://127.0.0.1:9"}}]\ncontexts: [{name: c, context: {cluster: c}}]\ncurrent-context: c\n',
    );
    const setup = await awsModule.load(settings, { client, logger: silentLogger(), region: core.region });
    expect(setup.region).toBe('eu-central-1');
    setup.close?.();
    client.close();
    // AWS_REGION or --region win, and IMDS is not asked
    expect(
      awsModule.configure({ env: { CLUSTER_NAME: 'prod', AWS_REGION: 'ap-south-1' } }, core).region,
    ).toBe('ap-south-1');
    expect(
      awsModule.configure(
        { env: { CLUSTER_NAME: 'prod' }, flags: { region: 'us-west-2' } },
        { ...core, region: 'us-west-2' },
      ).region,
    ).toBe('us-west-2');
  });

  it('no metadata service: the error names the endpoint and the fix', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    await expect(regionFromIMDS({ endpoint: `http://127.0.0.1:${port}` })).rejects.toThrow(
      `unable to determine the region from the instance metadata service (http://127.0.0.1:${port}): ECONNREFUSED; set AWS_REGION (or --region)`,
    );
    await expect(regionFromIMDS({ endpoint, disabled: true })).rejects.toThrow(
      `unable to determine the region from the instance metadata service (${endpoint}): AWS_EC2_METADATA_DISABLED=true; set AWS_REGION (or --region)`,
    );
  });
});
