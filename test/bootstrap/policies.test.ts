/**
 * The controller policies are data: `test/fixtures/bootstrap/controller-policies.json` holds the JSON that
 * `controllerPolicies` produced before it was split into one builder per policy (issue 25 item 6), for two sets
 * of variables whose every value differs; the output must stay byte-identical (statement order, key order,
 * values).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { controllerPolicies, type PolicyVars } from '../../src/cloudprovider/aws/bootstrap/policies.ts';

const VARS: PolicyVars[] = [
  {
    partition: 'aws',
    region: 'us-west-2',
    accountId: '123456789012',
    clusterName: 'demo',
    queueArn: 'arn:aws:sqs:us-west-2:123456789012:demo',
    nodeRoleArn: 'arn:aws:iam::123456789012:role/KarpenterNodeRole-demo',
  },
  {
    partition: 'aws-cn',
    region: 'cn-north-1',
    accountId: '210987654321',
    clusterName: 'other',
    queueArn: 'QUEUE-ARN',
    nodeRoleArn: 'NODE-ROLE-ARN',
  },
];

describe('controllerPolicies', () => {
  it('produces byte-identical JSON to the golden file', () => {
    const golden = readFileSync(
      join(import.meta.dirname, '..', 'fixtures', 'bootstrap', 'controller-policies.json'),
      'utf8',
    );
    expect(`${JSON.stringify(VARS.map(controllerPolicies), null, 2)}\n`).toBe(golden);
    expect(golden).toContain('"Sid": "AllowScopedEC2InstanceAccessActions"');
    expect(golden).toContain('arn:aws-cn:ec2:cn-north-1:*:fleet/*');
  });
});
