import { describe, expect, it } from 'vitest';
import type { EC2NodeClass } from '../../../apis/karpenter.ts';
import { cacheKey, unauthorizedMessage } from './validation.ts';

describe('EC2NodeClass validation helpers (upstream validation.go, errors.go ToReasonMessage)', () => {
  it("explains UnauthorizedOperation as upstream's ToReasonMessage", () => {
    const err = (m: string) => Object.assign(new Error(m), { name: 'UnauthorizedOperation' });
    expect(
      unauthorizedMessage(
        err(
          '... is not authorized to perform: ec2:CreateFleet with an explicit deny in a permissions boundary',
        ),
      ),
    ).toBe('User is not authorized to perform this operation due to a permission boundary');
    expect(unauthorizedMessage(err('... with an explicit deny in a service control policy'))).toBe(
      'User is not authorized to perform this operation due to a service control policy',
    );
    expect(unauthorizedMessage(err('Not authorized for images: [ami-1]'))).toBe(
      'User is not authorized for AMI used in instance launch',
    );
    expect(unauthorizedMessage(err('You are not authorized to perform this operation.'))).toBe(
      'User is not authorized to perform this operation because no identity-based policy allows it',
    );
  });

  it('keys a verdict by class name and state: resolved status, spec and annotations (not conditions)', () => {
    const base: EC2NodeClass = {
      apiVersion: 'karpenter.k8s.aws/v1',
      kind: 'EC2NodeClass',
      metadata: { name: 'a' },
      spec: { role: 'r' },
      status: { subnets: [{ id: 'subnet-1', zone: 'us-west-2a' }], conditions: [] },
    } as EC2NodeClass;
    const k = cacheKey(base);
    expect(k).toMatch(/^a:[0-9a-f]{16}$/);
    expect(
      cacheKey({ ...base, status: { ...base.status, conditions: [{ type: 'Ready' }] } } as EC2NodeClass),
    ).toBe(k);
    expect(cacheKey({ ...base, spec: { role: 'other' } } as EC2NodeClass)).not.toBe(k);
    expect(cacheKey({ ...base, status: { subnets: [] } } as EC2NodeClass)).not.toBe(k);
    expect(cacheKey({ ...base, metadata: { name: 'a', annotations: { x: 'y' } } } as EC2NodeClass)).not.toBe(
      k,
    );
  });
});
