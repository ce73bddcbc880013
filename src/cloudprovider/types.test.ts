import { describe, expect, it } from 'vitest';
import {
  CreateError,
  InsufficientCapacityError,
  ignoreNodeClaimNotFound,
  isCreateError,
  isInsufficientCapacityError,
  isNodeClaimNotFoundError,
  isNodeClassNotReadyError,
  NodeClaimNotFoundError,
  NodeClassNotReadyError,
} from './types.ts';

describe('CloudProvider errors', () => {
  it('carry a stable code and upstream message prefixes', () => {
    const nf = new NodeClaimNotFoundError('instance i-1 is gone', { providerID: 'kwok://r/z/i-1' });
    expect([nf.code, nf.name, nf.message, nf.providerID]).toEqual([
      'NodeClaimNotFound',
      'NodeClaimNotFoundError',
      'nodeclaim not found, instance i-1 is gone',
      'kwok://r/z/i-1',
    ]);
    const ice = new InsufficientCapacityError('no capacity', [
      { instanceType: 'm5.large', zone: 'us-east-1a', capacityType: 'spot' },
    ]);
    expect([ice.code, ice.message, ice.offerings.length]).toEqual([
      'InsufficientCapacity',
      'insufficient capacity, no capacity',
      1,
    ]);
    const nr = new NodeClassNotReadyError('EC2NodeClass/default has Ready=False', {
      nodeClass: 'EC2NodeClass/default',
    });
    expect([nr.code, nr.message]).toEqual([
      'NodeClassNotReady',
      'NodeClassRef not ready, EC2NodeClass/default has Ready=False',
    ]);
    const cause = new Error('UnauthorizedOperation');
    const ce = new CreateError(
      'launch template rejected',
      'LaunchTemplateInvalid',
      'the launch template is invalid',
      {
        cause,
      },
    );
    expect([ce.code, ce.conditionReason, ce.conditionMessage, ce.message, ce.cause]).toEqual([
      'CreateError',
      'LaunchTemplateInvalid',
      'the launch template is invalid',
      'creating nodeclaim, launch template rejected',
      cause,
    ]);
    expect(new CreateError('x', 'R').conditionMessage).toBe('x');
  });

  it('guards recognise errors by code, also plain objects from another module copy', () => {
    expect(isNodeClaimNotFoundError({ code: 'NodeClaimNotFound' })).toBe(true);
    expect(isNodeClaimNotFoundError(new InsufficientCapacityError('x'))).toBe(false);
    expect(isInsufficientCapacityError(new InsufficientCapacityError('x'))).toBe(true);
    expect(isNodeClassNotReadyError(new NodeClassNotReadyError('x'))).toBe(true);
    expect(isCreateError(new CreateError('x', 'R'))).toBe(true);
    expect(isCreateError(null)).toBe(false);
    expect(isCreateError('CreateError')).toBe(false);
  });

  it('ignoreNodeClaimNotFound swallows only NodeClaimNotFound', async () => {
    expect(await ignoreNodeClaimNotFound(Promise.reject(new NodeClaimNotFoundError('x')))).toBeUndefined();
    expect(await ignoreNodeClaimNotFound(Promise.resolve(3))).toBe(3);
    await expect(ignoreNodeClaimNotFound(Promise.reject(new Error('boom')))).rejects.toThrow('boom');
  });
});
